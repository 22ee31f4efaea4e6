"""Date expressions: $year $month $dayOfMonth $hour $minute $second $millisecond $dayOfYear $dayOfWeek
$week $isoWeek $isoWeekYear $isoDayOfWeek, $dateTrunc $dateAdd $dateSubtract $dateDiff $dateToString
$dateFromString $dateToParts $dateFromParts, $tsSecond $tsIncrement.

Calendar math lives in ``dates``; this module parses the operator arguments with mongod's codes and
evaluates them in mongod 7.0's order, which decides which answer wins when several arguments are
wrong: for $dateTrunc / $dateDiff / $dateAdd every nullish argument answers null before any argument is
checked; $dateToString / $dateFromString / $dateToParts read the timezone (and its errors) before the
date. A literal null (or undefined, which decodes as null) timezone is given, and nullish, not absent.
$dateTrunc of a datetime in UTC to second/minute/hour/day takes a ``datetime.replace`` fast path (the
TSBS hot path).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any, cast

from bson.int64 import Int64
from bson.timestamp import Timestamp

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import date_strings, dates
from tidemark.query.expr_base import INT64_MAX, INT64_MIN, args_list, int_arg, named_args, nullish, type_name
from tidemark.query.values import MISSING

_DATE_TYPES = ("datetime", "DatetimeMS", "Timestamp", "ObjectId")
_Fn = Callable[[Any, dict], Any]


def _object(args: Any, not_object: tuple[int, str], unknown: int, allowed: tuple[str, ...],
            required: tuple[tuple[str, int, str], ...], unknown_message: str = "Unrecognized argument to {op}: {k}",
            op: str = "") -> dict:
    """A date operator's object of named arguments (``named_args``, its unknown-argument message
    naming the operator ``op`` and the argument ``k``)."""
    return named_args(args, allowed, (not_object[0], not_object[1].replace("{", "{{").replace("}", "}}")),
                      (unknown, unknown_message.format(op=op, k="{}")), required)


def _timezone_fn(cc, spec: dict, op: str | None = None) -> _Fn:
    """Compile the ``timezone`` argument into fn(doc, vars) -> TimeZone | None (None: nullish, the
    result is null). Absent is UTC. Checked when evaluated, in the operator's order: a non-string is
    40517 (40533 for the date-part extractors, which name ``op``), an unknown zone 40485."""
    if "timezone" not in spec:
        return lambda doc, vars: dates.UTC
    f = cc(spec["timezone"])

    def tz_fn(doc, vars):
        v = f(doc, vars)
        if nullish(v):
            return None
        if type(v) is not str:
            if op is not None:
                raise MongoError(40533, f"{op} requires a string for the timezone argument, but was given a "
                                        f"{type_name(v)} ({v})")
            raise MongoError(40517, f"timezone must evaluate to a string, found {type_name(v)}")
        return dates.parse_timezone(v)
    return tz_fn


def _in_context(fn: _Fn, context: str) -> _Fn:
    """mongod's addContextToAssertionException: the same code, the message prefixed with ``context``."""
    def wrapped(doc, vars):
        try:
            return fn(doc, vars)
        except MongoError as e:
            raise MongoError(e.code, f"{context} :: caused by :: {e.message}") from None
    return wrapped


def _date_millis(v: Any) -> int | None:
    return dates.to_millis(v) if type(v).__name__ in _DATE_TYPES else None


def _coerce_date(v: Any) -> int:
    """mongod's coerceToDate: a date, Timestamp or ObjectId, else 16006."""
    ms = _date_millis(v)
    if ms is None:
        raise MongoError(16006, f"can't convert from BSON type {type_name(v)} to Date")
    return ms


def _int64(v: Any) -> int | None:
    """mongod's integral64Bit: an integral number (2.0 counts) that fits a 64-bit integer, else None."""
    n = int_arg(v)
    return n if n is not None and INT64_MIN <= n <= INT64_MAX else None


# -------------------------------------------------------------------------------- date-part extractors

def _extract(name: str, part: Callable[[int], int]):
    """$year & co: the argument is a date, [date], or {date, timezone}."""
    def compile_op(args, cc):
        if isinstance(args, list):
            if len(args) != 1:
                raise MongoError(40536, f"{name} accepts exactly one argument if given an array, but was given "
                                        f"{len(args)}")
            args = args[0]
        # An object whose first field is not an operator holds the options ({} included).
        if isinstance(args, dict) and not next(iter(args), "").startswith("$"):
            for k in args:
                if k not in ("date", "timezone"):
                    raise MongoError(40535, f'unrecognized option to {name}: "{k}"')
            if "date" not in args:
                raise MongoError(40539, f"missing 'date' argument to {name}, provided: {args}")
            date_fn, tz_fn = cc(args["date"]), _timezone_fn(cc, args, name)
        else:
            date_fn, tz_fn = cc(args), (lambda doc, vars: dates.UTC)

        def op(doc, vars):
            v = date_fn(doc, vars)
            if nullish(v):
                return None
            ms = _coerce_date(v)  # the date is checked before the timezone is read
            tz = tz_fn(doc, vars)
            if tz is None:
                return None
            return part(tz.to_local(ms))
        return op
    return compile_op


def _lp(i: int) -> Callable[[int], int]:
    return lambda local: dates.local_parts(local)[i]


_PARTS: dict[str, Callable[[int], int | Int64]] = {
    "$year": _lp(0), "$month": _lp(1), "$dayOfMonth": _lp(2), "$hour": _lp(3), "$minute": _lp(4),
    "$second": _lp(5), "$millisecond": _lp(6),
    "$dayOfYear": lambda local: dates.day_of_year(local // dates.MS_PER_DAY),
    "$dayOfWeek": lambda local: dates.iso_weekday(local // dates.MS_PER_DAY) % 7 + 1,
    "$week": lambda local: dates.week_of_year(local // dates.MS_PER_DAY),
    "$isoWeek": lambda local: dates.iso_week_parts(local // dates.MS_PER_DAY)[1],
    # a long: mongod's TimeZone::isoYear returns long long (every other part is an int)
    "$isoWeekYear": lambda local: Int64(dates.iso_week_parts(local // dates.MS_PER_DAY)[0]),
    "$isoDayOfWeek": lambda local: dates.iso_weekday(local // dates.MS_PER_DAY),
}


# ------------------------------------------------------------------------------- $dateTrunc / $dateDiff

def _arg(cc, spec: dict, key: str, default: Any = MISSING) -> tuple[_Fn, Any]:
    """A compiled optional argument; (fn, constant value or MISSING if not constant)."""
    if key not in spec:
        return (lambda doc, vars: default), default
    expr = spec[key]
    if not isinstance(expr, (str, dict, list)) or (type(expr) is str and not expr.startswith("$")):
        return (lambda doc, vars: expr), expr
    return cc(expr), MISSING


def _unit(name: str, v: Any) -> str:
    """$dateTrunc / $dateDiff's unit: 5439013 for a non-string, 5439014 for an unknown unit."""
    if type(v) is not str:
        raise MongoError(5439013, f"{name} requires 'unit' to be a string, but got {type_name(v)}")
    if v not in dates.TIME_UNITS:
        raise MongoError(5439014, f"{name} parameter 'unit' value cannot be recognized as a time unit: {v}")
    return v


def _start_of_week(name: str, v: Any) -> int:
    """startOfWeek: 5439015 for a non-string, 5439016 for an unknown day."""
    if type(v) is not str:
        raise MongoError(5439015, f"{name} requires 'startOfWeek' to be a string, but got {type_name(v)}")
    d = dates.parse_day_of_week(v)
    if d is None:
        raise MongoError(5439016, f"{name} parameter 'startOfWeek' value cannot be recognized as a day of a week: {v}")
    return d


_FAST_TRUNC = {
    "second": lambda d: d.replace(microsecond=0),
    "minute": lambda d: d.replace(second=0, microsecond=0),
    "hour": lambda d: d.replace(minute=0, second=0, microsecond=0),
    "day": lambda d: d.replace(hour=0, minute=0, second=0, microsecond=0),
}


_LAST_BIN_START = {unit: _dt.datetime.max - _dt.timedelta(milliseconds=ms) for unit, ms in dates.FIXED_UNIT_MS.items()}


def _date_trunc_spec(args) -> dict:
    """ExpressionDateTrunc::parse: its own codes (5439007 object, 5439008 unknown argument, 5439009 /
    5439010 missing date / unit)."""
    if not isinstance(args, dict):
        raise MongoError(5439007, "$dateTrunc only supports an object as its argument")
    for k in args:
        if k not in ("date", "unit", "binSize", "timezone", "startOfWeek"):
            raise MongoError(5439008, f"Unrecognized argument to $dateTrunc: {k}. Expected arguments: date, unit, "
                                      "and optionally, binSize, timezone, startOfWeek.")
    if "date" not in args:
        raise MongoError(5439009, "Missing 'date' parameter to $dateTrunc")
    if "unit" not in args:
        raise MongoError(5439010, "Missing 'unit' parameter to $dateTrunc")
    return args


def _utc_constant(spec: dict) -> bool:
    """Whether the timezone is absent or a constant zone always at UTC (for the fast path). A bad
    constant is not: the slow path reports it in evaluation order."""
    if "timezone" not in spec:
        return True
    tz = spec["timezone"]
    if type(tz) is not str or tz.startswith("$"):
        return False
    try:
        return dates.parse_timezone(tz).is_utc
    except MongoError:
        return False


def compile_date_trunc(args, cc):
    spec = _date_trunc_spec(args)
    date_fn = cc(spec["date"])
    unit_fn, unit_c = _arg(cc, spec, "unit")
    bin_fn, bin_c = _arg(cc, spec, "binSize", 1)
    sow_fn = cc(spec["startOfWeek"]) if "startOfWeek" in spec else None
    tz_fn = _in_context(_timezone_fn(cc, spec), "$dateTrunc parameter 'timezone' value parsing failed")
    if bin_c is not MISSING and bin_c == 1 and unit_c in _FAST_TRUNC and _utc_constant(spec):
        fast = _FAST_TRUNC[unit_c]
        span = _dt.timedelta(milliseconds=dates.FIXED_UNIT_MS[unit_c])
        # The last bin [start, end) seen: consecutive documents usually share it. One tuple, replaced
        # whole, so that concurrent users of this compiled expression never see a torn pair.
        last = [(_dt.datetime.max, _dt.datetime.min)]

        def trunc_fast(doc, vars):
            v = date_fn(doc, vars)
            if type(v) is _dt.datetime and v.tzinfo is None:
                lo, hi = last[0]
                if lo <= v < hi:
                    return lo
                lo = fast(v)
                # the last bin of 9999-12-31 ends past datetime's range: remember none
                last[0] = (lo, lo + span) if lo <= _LAST_BIN_START[unit_c] else last[0]
                return lo
            if nullish(v):
                return None
            return _truncate(v, unit_c, 1, dates.UTC, 7)
        return trunc_fast

    def trunc(doc, vars):
        # mongod 7.0: every nullish argument answers null before any of them is checked.
        v = date_fn(doc, vars)
        if nullish(v):
            return None
        unit = unit_fn(doc, vars)
        if nullish(unit):
            return None
        bin_size = bin_fn(doc, vars)
        if nullish(bin_size):
            return None
        sow = sow_fn(doc, vars) if sow_fn is not None and unit == "week" else "sunday"
        if nullish(sow):
            return None
        tz = tz_fn(doc, vars)
        if tz is None:
            return None
        if _date_millis(v) is None:
            raise MongoError(5439012, f"$dateTrunc requires 'date' to be a date, but got {type_name(v)}")
        unit = _unit("$dateTrunc", unit)
        n = _int64(bin_size)
        if n is None:
            raise MongoError(5439017, f"$dateTrunc requires 'binSize' to be a 64-bit integer, but got value "
                                      f"'{bin_size}' of type {type_name(bin_size)}")
        if n <= 0:
            raise MongoError(5439018, f"$dateTrunc requires 'binSize' to be greater than 0, but got value {n}")
        week_start = _start_of_week("$dateTrunc", sow) if unit == "week" else 7
        return _truncate(v, unit, n, tz, week_start)
    return trunc


def _truncate(v, unit: str, n: int, tz: dates.TimeZone, week_start: int):
    ms = _date_millis(v)
    if ms is None:
        raise MongoError(5439012, f"$dateTrunc requires 'date' to be a date, but got {type_name(v)}")
    return dates.from_millis(dates.date_trunc(ms, unit, n, tz, week_start))


def compile_date_diff(args, cc):
    spec = _object(args, (5166301, "$dateDiff only supports an object as its argument"), 5166302,
                   ("startDate", "endDate", "unit", "timezone", "startOfWeek"),
                   (("startDate", 5166303, "Missing 'startDate' parameter to $dateDiff"),
                    ("endDate", 5166304, "Missing 'endDate' parameter to $dateDiff"),
                    ("unit", 5166305, "Missing 'unit' parameter to $dateDiff")), op="$dateDiff")
    s_fn, e_fn, unit_fn = cc(spec["startDate"]), cc(spec["endDate"]), cc(spec["unit"])
    sow_fn = cc(spec["startOfWeek"]) if "startOfWeek" in spec else None
    tz_fn = _in_context(_timezone_fn(cc, spec), "$dateDiff parameter 'timezone' value parsing failed")

    def diff(doc, vars):
        # mongod 7.0: every nullish argument answers null before any of them is checked.
        s = s_fn(doc, vars)
        if nullish(s):
            return None
        e = e_fn(doc, vars)
        if nullish(e):
            return None
        unit = unit_fn(doc, vars)
        if nullish(unit):
            return None
        sow = sow_fn(doc, vars) if sow_fn is not None and unit == "week" else "sunday"
        if nullish(sow):
            return None
        tz = tz_fn(doc, vars)
        if tz is None:
            return None
        start_ms, end_ms = _date_millis(s), _date_millis(e)
        for label, v, ms in (("startDate", s, start_ms), ("endDate", e, end_ms)):
            if ms is None:
                raise MongoError(5166307, f"$dateDiff requires '{label}' to be a date, but got {type_name(v)}")
        unit = _unit("$dateDiff", unit)
        week_start = _start_of_week("$dateDiff", sow) if unit == "week" else 7
        return Int64(dates.date_diff(cast(int, start_ms), cast(int, end_ms), unit, tz, week_start))
    return diff


# ------------------------------------------------------------------------------ $dateAdd / $dateSubtract

def _add_unit(name: str, v: Any) -> str:
    """$dateAdd / $dateSubtract's unit: 5166404 for a non-string, FailedToParse for an unknown unit."""
    if type(v) is not str:
        raise MongoError(5166404, f"{name} requires 'unit' to be a string, but got {type_name(v)}")
    if v not in dates.TIME_UNITS:
        raise MongoError(ErrorCode.FailedToParse, f"{name} parameter 'unit' value parsing failed :: caused by :: "
                                                  f"unknown time unit value: {v}")
    return v


def _compile_date_add(name: str, sign: int):
    def compile_op(args, cc):
        spec = _object(args, (5166400, f"{name} expects an object as its argument"), 5166401,
                       ("startDate", "unit", "amount", "timezone"),
                       tuple((k, 5166402, f"{name} requires startDate, unit, and amount to be present")
                             for k in ("startDate", "unit", "amount")),
                       "Unrecognized argument to {op}: {k}. Expected arguments: startDate, unit, amount, and "
                       "optionally timezone.", op=name)
        start_fn, unit_fn, amount_fn = cc(spec["startDate"]), cc(spec["unit"]), cc(spec["amount"])
        tz_fn = _timezone_fn(cc, spec)

        def add(doc, vars):
            # mongod 7.0: every nullish argument (a null timezone too) answers null before any check.
            start = start_fn(doc, vars)
            if nullish(start):
                return None
            unit = unit_fn(doc, vars)
            if nullish(unit):
                return None
            amount = amount_fn(doc, vars)
            if nullish(amount):
                return None
            tz = tz_fn(doc, vars)
            if tz is None:
                return None
            ms = _date_millis(start)
            if ms is None:
                raise MongoError(5166403, f"{name} requires startDate to be convertible to a date")
            unit = _add_unit(name, unit)
            n = _int64(amount)
            if n is None:
                raise MongoError(5166405, f"{name} expects integer amount of time units")
            if sign < 0:
                if n == INT64_MIN:
                    raise MongoError(6045000, f"invalid $dateSubtract 'amount' parameter value: {n}")
                n = -n
            return dates.from_millis(dates.date_add(ms, unit, n, tz))
        return add
    return compile_op


# ------------------------------------------------------------------------------------------ $dateToString

def compile_date_to_string(args, cc):
    spec = _object(args, (18629, "$dateToString only supports an object as its argument"), 18534,
                   ("date", "format", "timezone", "onNull"),
                   (("date", 18628, "Missing 'date' parameter to $dateToString"),), op="$dateToString")
    date_fn = cc(spec["date"])
    fmt_fn, fmt_c = _arg(cc, spec, "format", None)
    if type(fmt_c) is str:
        dates.validate_format(fmt_c)
    elif fmt_c is not MISSING and fmt_c is not None:
        raise MongoError(18533, f"$dateToString requires that 'format' be a string, found: {type_name(fmt_c)} with "
                                f"value {fmt_c}")
    tz_fn = _timezone_fn(cc, spec)
    on_null = cc(spec["onNull"]) if "onNull" in spec else None

    def to_string(doc, vars):
        v = date_fn(doc, vars)
        fmt = fmt_fn(doc, vars)
        if not nullish(fmt) and fmt_c is MISSING:
            if type(fmt) is not str:
                raise MongoError(18533, f"$dateToString requires that 'format' be a string, found: {type_name(fmt)}"
                                        f" with value {fmt}")
            dates.validate_format(fmt)
        tz = tz_fn(doc, vars)  # its errors come before the date's nullishness
        if nullish(v):
            return on_null(doc, vars) if on_null is not None else None
        if tz is None:
            return None
        if "format" in spec:
            if nullish(fmt):
                return None
        else:
            fmt = dates.ISO_FORMAT_Z  # 7.0 keeps the 'Z' whatever the timezone (7.1 drops it)
        return dates.format_date(_coerce_date(v), fmt, tz)
    return to_string


# ---------------------------------------------------------------------------------------- $dateFromString

def compile_date_from_string(args, cc):
    spec = _object(args, (40540, f"$dateFromString only supports an object as an argument, found: {type_name(args)}"),
                   40541, ("dateString", "format", "timezone", "onError", "onNull"),
                   (("dateString", 40542, "Missing 'dateString' parameter to $dateFromString"),),
                   op="$dateFromString")
    s_fn = cc(spec["dateString"])
    fmt_fn = cc(spec["format"]) if "format" in spec else None
    tz_fn = _timezone_fn(cc, spec)
    on_error = cc(spec["onError"]) if "onError" in spec else None
    on_null = cc(spec["onNull"]) if "onNull" in spec else None

    def parse(s, fmt, tz) -> Any:
        """The part where a ConversionFailure gives onError's value instead."""
        if type(s) is not str:
            raise MongoError(ErrorCode.ConversionFailure, f"$dateFromString requires that 'dateString' be a string, "
                                                          f"found: {type_name(s)} with value {s}")
        if tz is None:
            return None
        if fmt_fn is not None and nullish(fmt):
            return None
        return dates.from_millis(date_strings.parse_date_string(s, fmt, tz))

    def from_string(doc, vars):
        s = s_fn(doc, vars)
        fmt = fmt_fn(doc, vars) if fmt_fn is not None else None
        if not nullish(fmt):
            if type(fmt) is not str:
                raise MongoError(40684, f"$dateFromString requires that 'format' be a string, found: {type_name(fmt)}"
                                        f" with value {fmt}")
            dates.validate_format(fmt, "$dateFromString")
        tz = tz_fn(doc, vars)  # its errors come before the string's nullishness
        if nullish(s):
            return on_null(doc, vars) if on_null is not None else None
        try:
            return parse(s, None if nullish(fmt) else fmt, tz)
        except date_strings.DateParseError as e:
            if on_error is not None:
                return on_error(doc, vars)
            raise MongoError(ErrorCode.ConversionFailure, e.message) from None
        except MongoError as e:
            if e.code != ErrorCode.ConversionFailure or on_error is None:
                raise
            return on_error(doc, vars)
    return from_string


# ------------------------------------------------------------------------------ $dateToParts / FromParts

def compile_date_to_parts(args, cc):
    spec = _object(args, (40524, "$dateToParts only supports an object as its argument"), 40520,
                   ("date", "timezone", "iso8601"), (("date", 40522, "Missing 'date' parameter to $dateToParts"),),
                   op="$dateToParts")
    date_fn, tz_fn = cc(spec["date"]), _timezone_fn(cc, spec)
    iso_fn = cc(spec["iso8601"]) if "iso8601" in spec else (lambda d, v: False)

    def to_parts(doc, vars):
        # mongod's order: the timezone, then iso8601 (checked even when the date is missing), then the date.
        v = date_fn(doc, vars)
        tz = tz_fn(doc, vars)
        if tz is None:
            return None
        iso = iso_fn(doc, vars)
        if nullish(iso):
            return None
        if type(iso) is not bool:
            raise MongoError(40521, f"iso8601 must evaluate to a bool, found {type_name(iso)}")
        if nullish(v):
            return None
        y, mo, d, h, mi, s, milli, days = dates.local_parts(tz.to_local(_coerce_date(v)))
        if iso:
            iy, iw, idow = dates.iso_week_parts(days)
            return {"isoWeekYear": iy, "isoWeek": iw, "isoDayOfWeek": idow, "hour": h, "minute": mi,
                    "second": s, "millisecond": milli}
        return {"year": y, "month": mo, "day": d, "hour": h, "minute": mi, "second": s, "millisecond": milli}
    return to_parts


_CAL = ("year", "month", "day")
_ISO = ("isoWeekYear", "isoWeek", "isoDayOfWeek")
_TIME = ("hour", "minute", "second", "millisecond")
_PART_BOUND = 32767  # month, day, hour, minute, isoWeek and isoDayOfWeek fit a 16-bit integer (31034)
_CAST_OVERFLOW = "Overflow casting from a lower-precision duration to a higher-precision duration"


def compile_date_from_parts(args, cc):
    if not isinstance(args, dict):
        raise MongoError(40519, "$dateFromParts only supports an object as its argument")
    for k in args:
        if k not in _CAL + _ISO + _TIME + ("timezone",):
            raise MongoError(40518, f"Unrecognized argument to $dateFromParts: {k}")
    if "year" not in args and "isoWeekYear" not in args:
        raise MongoError(40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
    if "year" in args and any(k in args for k in _ISO):
        raise MongoError(40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
    if "isoWeekYear" in args and any(k in args for k in _CAL):
        raise MongoError(40525, "$dateFromParts does not allow mixing ISO dates with natural dates")
    iso = "year" not in args
    names = _ISO if iso else _CAL
    fns = {n: cc(args[n]) for n in names + _TIME if n in args}
    tz_fn = _timezone_fn(cc, args)

    def number(n: str, doc, vars, default: int, bounded: bool) -> int | None:
        """evaluateNumberWithDefault(AndBounds): None when nullish, 40515 when not a 64-bit integer."""
        f = fns.get(n)
        if f is None:
            return default
        v = f(doc, vars)
        if nullish(v):
            return None
        iv = _int64(v)
        if iv is None:
            raise MongoError(40515, f"'{n}' must evaluate to an integer, found {type_name(v)} with value {v}")
        if bounded and not -_PART_BOUND - 1 <= iv <= _PART_BOUND:
            raise MongoError(31034, f"'{n}' must evaluate to a value in the range [{-_PART_BOUND - 1}, "
                                    f"{_PART_BOUND}]; value {iv} is not in range")
        return iv

    def from_parts(doc, vars):
        # mongod's order: hour, minute, second, millisecond, the timezone, then the date parts; second
        # and millisecond are not bounded, they carry (timelib normalizes them).
        time = [number(n, doc, vars, 0, n in ("hour", "minute")) for n in _TIME]
        if None in time:
            return None
        tz = tz_fn(doc, vars)
        if tz is None:
            return None
        date = [number(n, doc, vars, 1970 if i == 0 else 1, i > 0) for i, n in enumerate(names)]
        if None in date:
            return None
        year, a, b = cast(list[int], date)
        if not 1 <= year <= 9999:
            raise MongoError(31095 if iso else 40523, f"'{names[0]}' must evaluate to an integer in the range 1 to "
                                                      f"9999, found {year}")
        hour, minute, second, milli = cast(list[int], time)
        # mongod holds the milliseconds as microseconds and the result as seconds of 64-bit integers.
        if not INT64_MIN <= milli * 1000 <= INT64_MAX:
            raise MongoError(dates.DURATION_OVERFLOW, _CAST_OVERFLOW)
        if iso:
            local = dates.local_from_iso_parts(year, a, b, hour, minute, second, milli)
        else:
            local = dates.local_from_parts(year, a, b, hour, minute, second, milli)
        utc = tz.to_utc(local)
        if not INT64_MIN <= utc <= INT64_MAX:
            raise MongoError(dates.DURATION_OVERFLOW, _CAST_OVERFLOW)
        return dates.from_millis(utc)
    return from_parts


# ------------------------------------------------------------------------------------ $tsSecond / $tsIncrement

def _ts_part(name: str, attr: str, code: int):
    def compile_op(args, cc):
        lst = args_list(args)
        if len(lst) != 1:
            raise MongoError(16020, f"Expression {name} takes exactly 1 arguments. {len(lst)} were passed in.")
        f = cc(lst[0])

        def op(doc, vars):
            v = f(doc, vars)
            if nullish(v):
                return None
            if type(v) is not Timestamp:
                raise MongoError(code, f"Argument to {name} must be a timestamp, but is {type_name(v)}")
            return Int64(getattr(v, attr))
        return op
    return compile_op


OPERATORS = {name: _extract(name, part) for name, part in _PARTS.items()}
OPERATORS.update({
    "$dateTrunc": compile_date_trunc,
    "$dateAdd": _compile_date_add("$dateAdd", 1),
    "$dateSubtract": _compile_date_add("$dateSubtract", -1),
    "$dateDiff": compile_date_diff,
    "$dateToString": compile_date_to_string,
    "$dateFromString": compile_date_from_string,
    "$dateToParts": compile_date_to_parts,
    "$dateFromParts": compile_date_from_parts,
    "$tsSecond": _ts_part("$tsSecond", "time", 5687301),
    "$tsIncrement": _ts_part("$tsIncrement", "inc", 5687302),
})
