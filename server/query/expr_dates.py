"""Date expressions: $year $month $dayOfMonth $hour $minute $second $millisecond $dayOfYear $dayOfWeek
$week $isoWeek $isoWeekYear $isoDayOfWeek, $dateTrunc $dateAdd $dateSubtract $dateDiff $dateToString
$dateFromString $dateToParts $dateFromParts, $tsSecond $tsIncrement.

Calendar math lives in ``dates``; this module parses the operator arguments, fixes constant ones
(unit, timezone, binSize) at compile time, and applies mongod's null and type rules. $dateTrunc of a
datetime in UTC to second/minute/hour/day takes a ``datetime.replace`` fast path (the TSBS hot path).
"""

from __future__ import annotations

import datetime as _dt
from typing import cast

from bson.timestamp import Timestamp

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.expr_base import args_list, int_arg, nullish, num_kind, require_object, type_name
from tidemark.query.values import MISSING

_DATE_TYPES = ("datetime", "DatetimeMS", "Timestamp", "ObjectId")


def _timezone_fn(cc, expr):
    """Compile a timezone argument into fn(doc, vars) -> TimeZone | None (None = null input)."""
    if expr is None:
        return lambda doc, vars: dates.UTC
    if isinstance(expr, str) and not expr.startswith("$"):
        tz = dates.parse_timezone(expr)
        return lambda doc, vars: tz
    f = cc(expr)

    def tz_fn(doc, vars):
        v = f(doc, vars)
        if nullish(v):
            return None
        if type(v) is not str:
            raise MongoError(40517, f"timezone must evaluate to a string, found {type_name(v)}")
        return dates.parse_timezone(v)
    return tz_fn


def _millis(v, error):
    ms = dates.to_millis(v) if type(v).__name__ in _DATE_TYPES else None
    if ms is None:
        raise error(v)
    return ms


def _extract(name, part):
    """$year & co: argument is a date, [date], or {date, timezone}."""
    def compile_op(args, cc):
        if isinstance(args, list):
            if len(args) != 1:
                raise MongoError(16020, f"Expression {name} takes exactly 1 arguments. {len(args)} were passed in.")
            args = args[0]
        if isinstance(args, dict) and args and not next(iter(args)).startswith("$"):
            spec = require_object(name, args, {"date", "timezone"}, ("date",))
            date_fn, tz_fn = cc(spec["date"]), _timezone_fn(cc, spec.get("timezone"))
        else:
            date_fn, tz_fn = cc(args), (lambda doc, vars: dates.UTC)

        def err(v):
            return MongoError(16006, f"can't convert from BSON type {type_name(v)} to Date")

        def op(doc, vars):
            v = date_fn(doc, vars)
            if nullish(v):
                return None
            tz = tz_fn(doc, vars)
            if tz is None:
                return None
            return part(tz.to_local(_millis(v, err)))
        return op
    return compile_op


def _lp(i):
    return lambda local: dates.local_parts(local)[i]


_PARTS = {
    "$year": _lp(0), "$month": _lp(1), "$dayOfMonth": _lp(2), "$hour": _lp(3), "$minute": _lp(4),
    "$second": _lp(5), "$millisecond": _lp(6),
    "$dayOfYear": lambda local: dates.day_of_year(local // dates.MS_PER_DAY),
    "$dayOfWeek": lambda local: dates.iso_weekday(local // dates.MS_PER_DAY) % 7 + 1,
    "$week": lambda local: dates.week_of_year(local // dates.MS_PER_DAY),
    "$isoWeek": lambda local: dates.iso_week_parts(local // dates.MS_PER_DAY)[1],
    "$isoWeekYear": lambda local: dates.iso_week_parts(local // dates.MS_PER_DAY)[0],
    "$isoDayOfWeek": lambda local: dates.iso_weekday(local // dates.MS_PER_DAY),
}


def _arg(cc, spec, key, default=MISSING):
    """A compiled optional argument; (fn, constant value or MISSING if not constant)."""
    if key not in spec:
        return (lambda doc, vars: default), default
    expr = spec[key]
    if not isinstance(expr, (str, dict, list)) or (isinstance(expr, str) and not expr.startswith("$")):
        return (lambda doc, vars: expr), expr
    return cc(expr), MISSING


def _unit(name, v, code):
    if type(v) is not str:
        raise MongoError(code, f"{name} requires 'unit' to be a string, but got {type_name(v)}")
    if v not in dates.TIME_UNITS:
        raise MongoError(code, f"{name} parameter 'unit' value cannot be recognized as a time unit: {v}")
    return v


def _start_of_week(name, v, code):
    d = dates.parse_day_of_week(v)
    if d is None:
        if type(v) is not str:
            raise MongoError(code, f"{name} requires 'startOfWeek' to be a string, but got {type_name(v)}")
        raise MongoError(code, f"{name} parameter 'startOfWeek' value cannot be recognized as a day of a week: {v}")
    return d


_FAST_TRUNC = {
    "second": lambda d: d.replace(microsecond=0),
    "minute": lambda d: d.replace(second=0, microsecond=0),
    "hour": lambda d: d.replace(minute=0, second=0, microsecond=0),
    "day": lambda d: d.replace(hour=0, minute=0, second=0, microsecond=0),
}


def _date_trunc_spec(args) -> dict:
    """ExpressionDateTrunc::parse: its own codes (5439007 object, 5439008 unknown argument, 5439009 /
    5439010 missing date / unit). A date evaluating to null or missing answers null."""
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


def compile_date_trunc(args, cc):
    spec = _date_trunc_spec(args)
    date_fn = cc(spec["date"])
    unit_fn, unit_c = _arg(cc, spec, "unit")
    bin_fn, bin_c = _arg(cc, spec, "binSize", 1)
    sow_fn, sow_c = _arg(cc, spec, "startOfWeek", "sunday")
    tz_fn = _timezone_fn(cc, spec.get("timezone"))
    tz_const = "timezone" not in spec or (isinstance(spec["timezone"], str) and not spec["timezone"].startswith("$"))
    if unit_c is not MISSING:
        _unit("$dateTrunc", unit_c, 5439014)
    if bin_c is not MISSING and bin_c == 1 and unit_c in _FAST_TRUNC and tz_const and tz_fn(None, None).is_utc:
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
                last[0] = (lo, lo + span)
                return lo
            return _trunc_slow(v, unit_c, 1, dates.UTC, 7)
        return trunc_fast

    def trunc(doc, vars):
        v = date_fn(doc, vars)
        unit, bin_size, tz, sow = unit_fn(doc, vars), bin_fn(doc, vars), tz_fn(doc, vars), sow_fn(doc, vars)
        if nullish(v) or nullish(unit) or nullish(bin_size) or tz is None:
            return None
        unit = _unit("$dateTrunc", unit, 5439014)
        n = int_arg(bin_size)
        if n is None:
            raise MongoError(5439017, f"$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '{bin_size}' of type {type_name(bin_size)}")
        if n <= 0:
            raise MongoError(5439018, f"$dateTrunc requires 'binSize' to be greater than 0, but got value {n}")
        week_start = 7
        if unit == "week":
            if nullish(sow):
                return None
            week_start = _start_of_week("$dateTrunc", sow, 5439016)
        return _trunc_slow(v, unit, n, tz, week_start)
    return trunc


def _trunc_slow(v, unit, n, tz, week_start):
    if nullish(v):
        return None
    ms = dates.to_millis(v) if type(v).__name__ in _DATE_TYPES else None
    if ms is None:
        raise MongoError(5439012, f"$dateTrunc requires 'date' to be a date, but got {type_name(v)}")
    return dates.from_millis(dates.date_trunc(ms, unit, n, tz, week_start))


def _compile_date_add(name, sign):
    def compile_op(args, cc):
        spec = require_object(name, args, {"startDate", "unit", "amount", "timezone"}, ("startDate", "unit", "amount"))
        start_fn, unit_fn, amount_fn = cc(spec["startDate"]), cc(spec["unit"]), cc(spec["amount"])
        tz_fn = _timezone_fn(cc, spec.get("timezone"))

        def add(doc, vars):
            start, unit, amount, tz = start_fn(doc, vars), unit_fn(doc, vars), amount_fn(doc, vars), tz_fn(doc, vars)
            if nullish(start) or nullish(unit) or nullish(amount) or tz is None:
                return None
            ms = dates.to_millis(start) if type(start).__name__ in _DATE_TYPES else None
            if ms is None:
                raise MongoError(5166403, f"{name} requires startDate to be convertible to a date")
            unit = _unit(name, unit, 5166402)
            n = int_arg(amount)
            if n is None or num_kind(amount) is None:
                raise MongoError(5166405, f"{name} expects integer amount of time units")
            try:
                return dates.from_millis(dates.date_add(ms, unit, sign * n, tz))
            except (OverflowError, ValueError):
                raise MongoError(5166406, f"{name} overflowed") from None
        return add
    return compile_op


def compile_date_diff(args, cc):
    spec = require_object("$dateDiff", args, {"startDate", "endDate", "unit", "timezone", "startOfWeek"},
                          ("startDate", "endDate", "unit"))
    s_fn, e_fn, unit_fn = cc(spec["startDate"]), cc(spec["endDate"]), cc(spec["unit"])
    sow_fn = cc(spec["startOfWeek"]) if "startOfWeek" in spec else (lambda d, v: "sunday")
    tz_fn = _timezone_fn(cc, spec.get("timezone"))

    def diff(doc, vars):
        s, e, unit, tz = s_fn(doc, vars), e_fn(doc, vars), unit_fn(doc, vars), tz_fn(doc, vars)
        if nullish(s) or nullish(e) or nullish(unit) or tz is None:
            return None
        for label, v in (("startDate", s), ("endDate", e)):
            if type(v).__name__ not in _DATE_TYPES:
                raise MongoError(5166307, f"$dateDiff requires '{label}' to be a date, but got {type_name(v)}")
        unit = _unit("$dateDiff", unit, 5439013)
        week_start = 7
        if unit == "week":
            sow = sow_fn(doc, vars)
            if nullish(sow):
                return None
            week_start = _start_of_week("$dateDiff", sow, 5439015)
        from bson.int64 import Int64
        start_ms, end_ms = cast(int, dates.to_millis(s)), cast(int, dates.to_millis(e))  # both dates (checked above)
        return Int64(dates.date_diff(start_ms, end_ms, unit, tz, week_start))
    return diff


def compile_date_to_string(args, cc):
    spec = require_object("$dateToString", args, {"date", "format", "timezone", "onNull"}, ("date",))
    date_fn = cc(spec["date"])
    fmt_fn, fmt_c = _arg(cc, spec, "format", None)
    if type(fmt_c) is str:
        dates.validate_format(fmt_c)
    elif fmt_c is not MISSING and fmt_c is not None:
        raise MongoError(18533, f"$dateToString requires that 'format' be a string, found: {type_name(fmt_c)} with value {fmt_c}")
    tz_fn = _timezone_fn(cc, spec.get("timezone"))
    default_fmt = dates.ISO_FORMAT_Z if "timezone" not in spec else dates.ISO_FORMAT_LOCAL
    on_null = cc(spec["onNull"]) if "onNull" in spec else None

    def to_string(doc, vars):
        v = date_fn(doc, vars)
        fmt = fmt_fn(doc, vars)
        tz = tz_fn(doc, vars)
        if nullish(v):
            return on_null(doc, vars) if on_null is not None else None
        if tz is None or (fmt is None and "format" in spec) or fmt is MISSING:
            return None
        if fmt is None:
            fmt = default_fmt
        elif type(fmt) is not str:
            raise MongoError(18533, f"$dateToString requires that 'format' be a string, found: {type_name(fmt)}")
        elif fmt_c is MISSING:
            dates.validate_format(fmt)
        ms = dates.to_millis(v) if type(v).__name__ in _DATE_TYPES else None
        if ms is None:
            raise MongoError(16006, f"can't convert from BSON type {type_name(v)} to Date")
        return dates.format_date(ms, fmt, tz)
    return to_string


def compile_date_from_string(args, cc):
    spec = require_object("$dateFromString", args, {"dateString", "format", "timezone", "onError", "onNull"},
                          ("dateString",))
    s_fn = cc(spec["dateString"])
    fmt_fn = cc(spec["format"]) if "format" in spec else (lambda d, v: MISSING)
    tz_fn = _timezone_fn(cc, spec["timezone"]) if "timezone" in spec else (lambda d, v: MISSING)
    on_error = cc(spec["onError"]) if "onError" in spec else None
    on_null = cc(spec["onNull"]) if "onNull" in spec else None

    def from_string(doc, vars):
        s, fmt, tz = s_fn(doc, vars), fmt_fn(doc, vars), tz_fn(doc, vars)
        if nullish(s):
            return on_null(doc, vars) if on_null is not None else None
        if tz is None or fmt is None:
            return None
        if fmt is not MISSING:
            if type(fmt) is not str:
                raise MongoError(40684, f"$dateFromString requires that 'format' be a string, found: {type_name(fmt)}")
            dates.validate_format(fmt, "$dateFromString")
        if type(s) is not str:
            if on_error is not None:
                return on_error(doc, vars)
            raise MongoError(ErrorCode.ConversionFailure,
                             f"$dateFromString requires that 'dateString' be a string, found: {type_name(s)} with value {s}")
        try:
            ms = dates.parse_date_string(s, None if fmt is MISSING else fmt, None if tz is MISSING else tz)
        except dates.DateParseError as e:
            if on_error is not None:
                return on_error(doc, vars)
            raise MongoError(ErrorCode.ConversionFailure, f"Error parsing date string '{s}'; {e}") from None
        return dates.from_millis(ms)
    return from_string


def compile_date_to_parts(args, cc):
    spec = require_object("$dateToParts", args, {"date", "timezone", "iso8601"}, ("date",))
    date_fn, tz_fn = cc(spec["date"]), _timezone_fn(cc, spec.get("timezone"))
    iso_fn = cc(spec["iso8601"]) if "iso8601" in spec else (lambda d, v: False)

    def to_parts(doc, vars):
        v, tz, iso = date_fn(doc, vars), tz_fn(doc, vars), iso_fn(doc, vars)
        if nullish(v) or tz is None or nullish(iso):
            return None
        if type(iso) is not bool:
            raise MongoError(40521, f"iso8601 must evaluate to a bool, found {type_name(iso)}")
        ms = dates.to_millis(v) if type(v).__name__ in _DATE_TYPES else None
        if ms is None:
            raise MongoError(16006, f"can't convert from BSON type {type_name(v)} to Date")
        y, mo, d, h, mi, s, milli, days = dates.local_parts(tz.to_local(ms))
        if iso:
            iy, iw, idow = dates.iso_week_parts(days)
            return {"isoWeekYear": iy, "isoWeek": iw, "isoDayOfWeek": idow, "hour": h, "minute": mi,
                    "second": s, "millisecond": milli}
        return {"year": y, "month": mo, "day": d, "hour": h, "minute": mi, "second": s, "millisecond": milli}
    return to_parts


_CAL = ("year", "month", "day", "hour", "minute", "second", "millisecond")
_ISO = ("isoWeekYear", "isoWeek", "isoDayOfWeek", "hour", "minute", "second", "millisecond")


def compile_date_from_parts(args, cc):
    if not isinstance(args, dict):
        raise MongoError(40519, "$dateFromParts only supports an object as its argument")
    allowed = set(_CAL) | set(_ISO) | {"timezone"}
    for k in args:
        if k not in allowed:
            raise MongoError(40518, f"Unrecognized argument to $dateFromParts: {k}")
    iso = any(k in args for k in ("isoWeekYear", "isoWeek", "isoDayOfWeek"))
    if iso and any(k in args for k in ("year", "month", "day")):
        raise MongoError(40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
    names = _ISO if iso else _CAL
    if names[0] not in args:
        raise MongoError(40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
    defaults = (None, 1, 1, 0, 0, 0, 0)
    fns = [(n, cc(args[n]) if n in args else (lambda d, v, x=dflt: x)) for n, dflt in zip(names, defaults, strict=False)]
    tz_fn = _timezone_fn(cc, args.get("timezone"))

    def from_parts(doc, vars):
        vals = []
        for i, (n, f) in enumerate(fns):
            v = f(doc, vars)
            if nullish(v):
                return None
            iv = int_arg(v)
            if iv is None:
                raise MongoError(40515, f"'{n}' must evaluate to an integer, found {type_name(v)} with value {v}")
            lo, hi = (1, 9999) if i == 0 else (-32768, 32767)
            if not lo <= iv <= hi:
                raise MongoError(31034 if i else 40523, f"'{n}' must evaluate to an integer in the range {lo} to {hi}, found {iv}")
            vals.append(iv)
        tz = tz_fn(doc, vars)
        if tz is None:
            return None
        local = dates.local_from_iso_parts(*vals) if iso else dates.local_from_parts(*vals)
        return dates.from_millis(tz.to_utc(local))
    return from_parts


def _ts_part(name, attr):
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
                raise MongoError(5687301, f"Argument to {name} must be a timestamp, but is {type_name(v)}")
            from bson.int64 import Int64
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
    "$tsSecond": _ts_part("$tsSecond", "time"),
    "$tsIncrement": _ts_part("$tsIncrement", "inc"),
})
