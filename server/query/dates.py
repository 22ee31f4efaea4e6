"""Calendar math for the date expressions: time zones, truncation, add, diff, parts, formats.

Contract: every function works on **milliseconds since the Unix epoch (UTC)** as Python ints; the
expression layer converts BSON dates with ``to_millis`` / ``from_millis``. Local wall-clock time is
represented as "local milliseconds" (UTC millis plus the zone's offset at that instant), so all
calendar arithmetic is integer arithmetic on proleptic Gregorian days (no datetime range limits).

- Time zones: IANA names via ``zoneinfo`` (tzdata installed) and fixed offsets "+hh:mm", "+hhmm",
  "+hh" (and "-" forms). ``parse_timezone`` raises mongod's 40485 for anything else.
- ``date_trunc`` follows mongod: bins are counted from the reference point 2000-01-01T00:00:00 in the
  given zone; units up to hour bin absolute time, day and longer bin the local calendar.
- ``date_add`` adds hours and smaller as absolute durations, days/weeks as local calendar days, and
  months/quarters/years with month-end clamping (Jan 31 + 1 month = Feb 28/29).
- ``date_diff`` counts unit boundaries crossed (not elapsed whole units), like mongod.
- ``format_date``: $dateToString's specifiers. Reading date strings ($dateFromString, $toDate) is
  ``date_strings.py``.
"""

from __future__ import annotations

import datetime as _dt
import re
import zoneinfo
from functools import lru_cache
from typing import cast

from bson.datetime_ms import DatetimeMS
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import INT64_MAX, INT64_MIN

MS_PER_SECOND = 1000
MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000
MS_PER_DAY = 86_400_000
FIXED_UNIT_MS = {
    "millisecond": 1,
    "second": MS_PER_SECOND,
    "minute": MS_PER_MINUTE,
    "hour": MS_PER_HOUR,
    "day": MS_PER_DAY,
    "week": 7 * MS_PER_DAY,
}
TIME_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
DAYS_OF_WEEK = {  # name -> ISO day number (Monday = 1)
    "monday": 1, "mon": 1, "tuesday": 2, "tue": 2, "wednesday": 3, "wed": 3, "thursday": 4, "thu": 4,
    "friday": 5, "fri": 5, "saturday": 6, "sat": 6, "sunday": 7, "sun": 7,
}

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MIN_DATETIME_MS = -62135596800000  # 0001-01-01
_MAX_DATETIME_MS = 253402300799999  # 9999-12-31T23:59:59.999
_REF_DAYS = 10957  # days from 1970-01-01 to 2000-01-01


# ---------------------------------------------------------------------------------------- conversion

def to_millis(v) -> int | None:
    """Millis of a date-like BSON value (date, Timestamp, ObjectId), else None."""
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.UTC).replace(tzinfo=None)
        d = v - _EPOCH
        return (d.days * 86400 + d.seconds) * 1000 + d.microseconds // 1000
    if isinstance(v, DatetimeMS):
        return int(v)
    if isinstance(v, Timestamp):
        return v.time * 1000
    if isinstance(v, ObjectId):
        return int.from_bytes(v.binary[:4], "big") * 1000
    return None


def from_millis(ms: int):
    """The BSON date for ``ms``: a naive-UTC datetime when representable, else DatetimeMS; 15 Overflow
    past a BSON date's 64-bit range (date arithmetic near the extremes)."""
    if _MIN_DATETIME_MS <= ms <= _MAX_DATETIME_MS:
        return _EPOCH + _dt.timedelta(milliseconds=ms)
    if not -(2**63) <= ms < 2**63:
        raise MongoError(ErrorCode.Overflow, "date overflow")
    return DatetimeMS(ms)


# ----------------------------------------------------------------------------------------- civil days

def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of the proleptic Gregorian date y-m-d (Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """(year, month, day) of ``z`` days since 1970-01-01."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if is_leap(y) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def iso_weekday(days: int) -> int:
    """ISO day of week (Monday=1..Sunday=7) of a day number (1970-01-01 was a Thursday)."""
    return (days + 3) % 7 + 1


# ------------------------------------------------------------------------------------------ timezones

class TimeZone:
    """A time zone: UTC, a fixed offset, or an IANA zone. Converts UTC millis <-> local millis."""

    __slots__ = ("name", "fixed_ms", "zone", "epoch_dst", "ref_ms", "ref_dst")

    def __init__(self, name: str, fixed_ms: int | None, zone: zoneinfo.ZoneInfo | None):
        self.name = name
        self.fixed_ms = fixed_ms
        self.zone = zone
        # The DST flag timelib gives a time built in this zone (from parts, from a string): the
        # zone's flag at the Unix epoch, where a new timelib time starts.
        self.epoch_dst = self.is_dst(0)
        # $dateTrunc's reference point, 2000-01-01T00:00 local (the offset read at 2000-01-01T00:00Z,
        # as mongod reads it), and its DST flag, which resolves the wall times of bin starts.
        ref_utc = _REF_DAYS * MS_PER_DAY
        self.ref_ms = ref_utc - self.offset_ms(ref_utc)
        self.ref_dst = self.is_dst(self.ref_ms)

    @property
    def is_utc(self) -> bool:
        """A zero offset at every instant (what the fast paths need)."""
        return self.fixed_ms == 0

    @property
    def is_utc_zone(self) -> bool:
        """mongod's ``isUtcZone``: "UTC" itself or a zero UTC offset ("+00:00"). Zones that are named but
        always at +00:00 ("GMT", "Etc/UTC") are zone identifiers there: $dateFromString refuses a zone in
        the string together with them, as with any other named zone."""
        return self.fixed_ms == 0 and (self.name == "UTC" or self.name[:1] in "+-")

    def offset_and_dst(self, utc_ms: int) -> tuple[int, bool]:
        """The zone's UTC offset in millis at the instant ``utc_ms`` and whether it observes
        daylight saving time then (timelib's ``dst`` flag)."""
        if self.fixed_ms is not None:
            return self.fixed_ms, False
        local = (_EPOCH_UTC + _dt.timedelta(milliseconds=_zone_ms(utc_ms))).astimezone(self.zone)
        return _offset_ms(local), bool(local.dst())

    def offset_ms(self, utc_ms: int) -> int:
        """The zone's UTC offset in millis at the instant ``utc_ms``."""
        if self.fixed_ms is not None:
            return self.fixed_ms
        return self.offset_and_dst(utc_ms)[0]

    def to_local(self, utc_ms: int) -> int:
        return utc_ms + self.offset_ms(utc_ms)

    def is_dst(self, utc_ms: int) -> bool:
        return self.offset_and_dst(utc_ms)[1]

    def to_utc(self, local_ms: int, dst_hint: bool | None = None) -> int:
        """UTC millis of a local wall-clock time, resolved as mongod's timelib resolves it.

        A skipped time (spring forward) keeps the offset before the change, which moves the clock
        forward by the gap. A repeated time (fall back) depends on ``dst_hint``, the daylight-saving
        flag of the time being adjusted: $dateAdd's start date, $dateTrunc's reference point; a date
        built from parts or a string carries the zone's flag at the Unix epoch (None here). For the
        usual DST change the repeated time is the DST instant (the earlier) when the hint is set and
        the standard one (the later) when it is not; timelib's lookbehind (zones at or east of UTC)
        and lookahead (west of it) are reproduced for the other shapes of change."""
        if self.fixed_ms is not None:
            return local_ms - self.fixed_ms
        # Offsets change at whole seconds: the answer for the wall second holds for its millis.
        return local_ms - _wall_offset(self, local_ms // 1000, self.epoch_dst if dst_hint is None else dst_hint)

    def _wall_offset(self, local_ms: int, hint: bool) -> int:
        """``to_utc``'s offset for the wall time ``local_ms`` (a named zone)."""
        naive = _EPOCH + _dt.timedelta(milliseconds=_zone_ms(local_ms))
        before = _offset_ms(naive.replace(tzinfo=self.zone))
        after = _offset_ms(naive.replace(tzinfo=self.zone, fold=1))
        if before <= after:  # one reading, or a skipped time: the offset before the change
            return before
        # A repeated time: ``before`` is the offset of the earlier instant, ``after`` of the later one.
        # timelib first reads the offset at the wall time taken as a UTC instant ("current").
        current, current_dst = self.offset_and_dst(local_ms)
        if current == after:  # the change lies behind that instant (zones at or east of UTC)
            return before if current >= 0 and hint and not current_dst else after
        later = current == before and current <= 0 and current_dst and not hint
        return after if later else before


@lru_cache(maxsize=8192)
def _wall_offset(tz: TimeZone, local_s: int, hint: bool) -> int:
    """``TimeZone._wall_offset`` of a wall second, remembered: bin starts ($dateTrunc) and dates built
    from parts repeat."""
    return tz._wall_offset(local_s * 1000, hint)


_ERA_MS = 146097 * MS_PER_DAY  # 400 Gregorian years: the calendar (weekdays included) repeats


def _zone_ms(ms: int) -> int:
    """An instant zoneinfo can look up standing for ``ms``: past year 9999 the same point of an
    earlier 400-year cycle (the zone's last rule repeats with the calendar, as timelib applies the
    tzfile's POSIX rule to any year); before year 1 the zone's earliest offset (its first period)."""
    high = _MAX_DATETIME_MS - MS_PER_DAY
    if ms > high:
        ms -= ((ms - high) // _ERA_MS + 1) * _ERA_MS
    return max(ms, _MIN_DATETIME_MS + MS_PER_DAY)


def _offset_ms(aware: _dt.datetime) -> int:
    return int(cast(_dt.timedelta, aware.utcoffset()).total_seconds() * 1000)  # aware: an offset


UTC = TimeZone("UTC", 0, None)
_OFFSET_RE = re.compile(r"^([+-])(\d{2})(?::?(\d{2}))?$")


@lru_cache(maxsize=512)
def parse_timezone(spec: str) -> TimeZone:
    """A TimeZone from an IANA name or a UTC offset; mongod's 40485 for anything else."""
    if spec == "UTC":
        return UTC
    if spec in ("GMT", "Z", "Etc/UTC", "Etc/GMT"):
        return TimeZone(spec, 0, None)  # zero offset, but not mongod's UTC zone (see is_utc_zone)
    m = _OFFSET_RE.match(spec)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        hours, minutes = int(m.group(2)), int(m.group(3) or 0)
        return TimeZone(spec, sign * (hours * MS_PER_HOUR + minutes * MS_PER_MINUTE), None)
    try:
        if spec and not spec.startswith(("/", ".")) and ".." not in spec:
            return TimeZone(spec, None, zoneinfo.ZoneInfo(spec))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        pass
    raise MongoError(40485, f'unrecognized time zone identifier: "{spec}"')


# ---------------------------------------------------------------------------------------------- parts

def local_parts(local_ms: int) -> tuple[int, int, int, int, int, int, int, int]:
    """(year, month, day, hour, minute, second, millisecond, day_number) of local millis."""
    days, rem = divmod(local_ms, MS_PER_DAY)
    y, mo, d = civil_from_days(days)
    h, rem = divmod(rem, MS_PER_HOUR)
    mi, rem = divmod(rem, MS_PER_MINUTE)
    s, ms = divmod(rem, 1000)
    return y, mo, d, h, mi, s, ms, days


def iso_week_parts(days: int) -> tuple[int, int, int]:
    """(isoWeekYear, isoWeek, isoDayOfWeek) of a day number."""
    wd = iso_weekday(days)
    thursday = days - wd + 4
    y, _, _ = civil_from_days(thursday)
    week = (thursday - days_from_civil(y, 1, 1)) // 7 + 1
    return y, week, wd


def day_of_year(days: int) -> int:
    y, _, _ = civil_from_days(days)
    return days - days_from_civil(y, 1, 1) + 1


def week_of_year(days: int) -> int:
    """%U / $week: weeks start on Sunday; days before the year's first Sunday are week 0."""
    doy0 = day_of_year(days) - 1
    dow0 = iso_weekday(days) % 7  # Sunday = 0
    return (doy0 + 7 - dow0) // 7


def iso_week_start_days(iso_year: int) -> int:
    jan4 = days_from_civil(iso_year, 1, 4)
    return jan4 - iso_weekday(jan4) + 1


def local_from_parts(year, month=1, day=1, hour=0, minute=0, second=0, millisecond=0) -> int:
    """Local millis of possibly out-of-range parts (month 14 carries into the next year, ...)."""
    y, m0 = year + (month - 1) // 12, (month - 1) % 12
    days = days_from_civil(y, m0 + 1, 1) + day - 1
    return days * MS_PER_DAY + hour * MS_PER_HOUR + minute * MS_PER_MINUTE + second * 1000 + millisecond


def local_from_iso_parts(iso_year, iso_week=1, iso_dow=1, hour=0, minute=0, second=0, millisecond=0) -> int:
    days = iso_week_start_days(iso_year) + (iso_week - 1) * 7 + iso_dow - 1
    return days * MS_PER_DAY + hour * MS_PER_HOUR + minute * MS_PER_MINUTE + second * 1000 + millisecond


# ----------------------------------------------------------------------------------- trunc / add / diff

DURATION_OVERFLOW = 159  # mongod's DurationOverflow (a Duration or Date_t past 64 bits)
_MAX_TRUNC_BIN = 100_000_000_000  # mongod's limit on binSize for day and longer units (5439006)
_MONTHS_PER_UNIT = {"month": 1, "quarter": 3, "year": 12}
# mongod's bounds on |amount| per unit (isDateAddAmountValid): about the span of a 64-bit millisecond date.
_MAX_DAYS = (2**64 - 1) // MS_PER_DAY + 1
_MAX_YEARS = _MAX_DAYS // 365 + 1
_MAX_AMOUNT = {"year": _MAX_YEARS, "quarter": _MAX_YEARS * 4, "month": _MAX_YEARS * 12, "week": _MAX_DAYS // 7,
               "day": _MAX_DAYS, "hour": _MAX_DAYS * 24, "minute": _MAX_DAYS * 24 * 60,
               "second": _MAX_DAYS * 24 * 3600}


def _week_start_offset(start_of_week: int) -> int:
    """Day number of the first ``start_of_week`` day on or after 2000-01-01 (the week reference)."""
    return _REF_DAYS + (start_of_week - iso_weekday(_REF_DAYS)) % 7


def date_trunc(utc_ms: int, unit: str, bin_size: int = 1, tz: TimeZone = UTC, start_of_week: int = 7) -> int:
    """mongod's $dateTrunc (truncateDate): the start of the bin containing ``utc_ms``.

    Bins count from the reference point 2000-01-01T00:00 local (``tz.ref_ms``), moved to the first
    ``start_of_week`` day for weeks. Hours and smaller bin absolute time; longer units count whole
    units from the reference in the local calendar and the bin's start is the reference plus that
    many units by $dateAdd's rules (the reference's DST flag resolving the wall time). Overflows
    answer mongod's codes: 5439002 (bin size in millis), 5439000 / 5439001 (the shifted date or the
    result), 5439006 (a bin size over 1e11 units), 5976500 / 5166406 (from $dateAdd)."""
    if unit in ("millisecond", "second", "minute", "hour"):
        step = FIXED_UNIT_MS[unit] * bin_size
        if step > INT64_MAX:
            raise MongoError(5439002, "dateTrunc overflowed")
        shifted = utc_ms - tz.ref_ms
        if not INT64_MIN <= shifted <= INT64_MAX:
            raise MongoError(5439000, "dateTrunc overflowed")
        result = utc_ms - shifted % step
        if not INT64_MIN <= result <= INT64_MAX:
            raise MongoError(5439001, "dateTrunc overflowed")
        return result
    if bin_size > _MAX_TRUNC_BIN:
        raise MongoError(5439006, "dateTrunc unsupported binSize value")
    # The reference in local time is midnight of its day: no DST change in early January 2000.
    ref_days = _week_start_offset(start_of_week) if unit == "week" else _REF_DAYS
    days = tz.to_local(utc_ms) // MS_PER_DAY
    if unit == "day":
        distance = days - ref_days
    elif unit == "week":
        distance = (days - ref_days) // 7
    else:
        y, m, _ = civil_from_days(days)
        distance = ((y - 2000) * 12 + m - 1) // _MONTHS_PER_UNIT[unit]
    amount = distance // bin_size * bin_size
    _check_amount(unit, amount)
    return _checked(tz.to_utc(_add_local(ref_days * MS_PER_DAY, unit, amount), tz.ref_dst))


def add_months_local(local_ms: int, months: int) -> int:
    days, rem = divmod(local_ms, MS_PER_DAY)
    y, m, d = civil_from_days(days)
    total = y * 12 + (m - 1) + months
    ny, nm = total // 12, total % 12 + 1
    nd = min(d, days_in_month(ny, nm))
    return days_from_civil(ny, nm, nd) * MS_PER_DAY + rem


def _add_local(local_ms: int, unit: str, amount: int) -> int:
    """Local millis plus ``amount`` days / weeks / months / quarters / years (month ends clamp)."""
    if unit in ("day", "week"):
        return local_ms + amount * FIXED_UNIT_MS[unit]
    return add_months_local(local_ms, amount * _MONTHS_PER_UNIT[unit])


def _check_amount(unit: str, amount: int) -> None:
    """mongod's isDateAddAmountValid: |amount| roughly within a 64-bit millisecond date (5976500)."""
    if not -_MAX_AMOUNT[unit] < amount < _MAX_AMOUNT[unit]:
        raise MongoError(5976500, f"invalid dateAdd 'amount' parameter value: {amount} {unit}")


def _checked(result_ms: int) -> int:
    """A $dateAdd result, 5166406 past a 64-bit millisecond date (mongod checks seconds * 1000)."""
    if not INT64_MIN <= result_ms // 1000 * 1000 <= INT64_MAX:
        raise MongoError(5166406, "dateAdd overflowed")
    return result_ms


def date_add(utc_ms: int, unit: str, amount: int, tz: TimeZone = UTC) -> int:
    """mongod's $dateAdd (a negative amount for $dateSubtract).

    Milliseconds add to the instant (159 DurationOverflow past a 64-bit date). Otherwise |amount|
    is bounded per unit first (5976500); hours and smaller add absolute durations, days and weeks
    add local calendar days, months / quarters / years clamp to the month's end (Jan 31 + 1 month
    = Feb 28/29); the local result is read back with the start date's DST flag (``to_utc``), and a
    result past a 64-bit millisecond date is 5166406."""
    if unit == "millisecond":
        result = utc_ms + amount
        if not INT64_MIN <= result <= INT64_MAX:
            raise MongoError(DURATION_OVERFLOW, f"Overflow while adding {amount}ms to {utc_ms}ms")
        return result
    _check_amount(unit, amount)
    if unit in ("second", "minute", "hour"):
        return _checked(utc_ms + amount * FIXED_UNIT_MS[unit])
    offset, dst = tz.offset_and_dst(utc_ms)
    return _checked(tz.to_utc(_add_local(utc_ms + offset, unit, amount), dst))


def date_diff(start_ms: int, end_ms: int, unit: str, tz: TimeZone = UTC, start_of_week: int = 7) -> int:
    """mongod's $dateDiff: the number of ``unit`` boundaries crossed going from start to end.

    Milliseconds are the plain difference (5166308 past a 64-bit integer); seconds count whole
    seconds. Minutes and hours count local boundaries, corrected by the change of UTC offset in
    whole units truncated toward zero (mongod's utcOffsetCorrectionFor*): with a zone whose offset
    has seconds (local mean time before 1900) local minutes are not UTC minutes."""
    if unit == "millisecond":
        result = end_ms - start_ms
        if not INT64_MIN <= result <= INT64_MAX:
            raise MongoError(5166308, "dateDiff overflowed")
        return result
    if unit == "second":
        return end_ms // 1000 - start_ms // 1000
    off_s, off_e = tz.offset_ms(start_ms), tz.offset_ms(end_ms)
    ls, le = start_ms + off_s, end_ms + off_e
    if unit in ("minute", "hour"):
        step = FIXED_UNIT_MS[unit]
        change = off_s - off_e
        correction = abs(change) // step * (1 if change >= 0 else -1)
        return le // step - ls // step + correction
    ds, de = ls // MS_PER_DAY, le // MS_PER_DAY
    if unit == "day":
        return de - ds
    if unit == "week":
        ref = _week_start_offset(start_of_week)
        return (de - ref) // 7 - (ds - ref) // 7
    ys, ms_, _ = civil_from_days(ds)
    ye, me, _ = civil_from_days(de)
    if unit == "year":
        return ye - ys
    if unit == "quarter":
        return (ye * 4 + (me - 1) // 3) - (ys * 4 + (ms_ - 1) // 3)
    return (ye * 12 + me) - (ys * 12 + ms_)


def parse_day_of_week(name) -> int | None:
    return DAYS_OF_WEEK.get(name.lower()) if type(name) is str else None


# -------------------------------------------------------------------------------------------- formats

ISO_FORMAT_Z = "%Y-%m-%dT%H:%M:%S.%LZ"
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")
# mongod's specifier tables: $dateFromString has no %w / %U (timelib cannot read them back).
_TO_STRING_LETTERS = frozenset("bBdGHjLmMSwuUVYzZ%")
_FROM_STRING_LETTERS = frozenset("bBdGHjLmMSuVYzZ%")


def validate_format(fmt: str, op: str = "$dateToString") -> None:
    """mongod's checks on a format string (18535 trailing %, 18536 unknown specifier for ``op``)."""
    letters = _FROM_STRING_LETTERS if op == "$dateFromString" else _TO_STRING_LETTERS
    i = 0
    while i < len(fmt):
        if fmt[i] == "%":
            if i + 1 >= len(fmt):
                raise MongoError(18535, "Unmatched '%' at end of format string")
            if fmt[i + 1] not in letters:
                raise MongoError(18536, f"Invalid format character '%{fmt[i + 1]}' in format string")
            i += 2
        else:
            i += 1


def _padded(n: int, width: int) -> str:
    """mongod's insertPadded: a component outside 0..9999 (a year past 9999) cannot be printed."""
    if not 0 <= n <= 9999:
        raise MongoError(18537, "Could not convert date to string: date component was outside the supported "
                                f"range of 0-9999: {n}")
    return str(n).zfill(width)


def format_date(utc_ms: int, fmt: str, tz: TimeZone = UTC) -> str:
    """$dateToString: render ``utc_ms`` in ``tz`` with mongod's format specifiers."""
    off = tz.offset_ms(utc_ms)
    y, mo, d, h, mi, s, ms, days = local_parts(utc_ms + off)
    # Offsets are printed truncated toward zero, as mongod's duration casts do: Caracas in 1900 was at
    # -04:27:40, which is "-0427" and -267 minutes.
    off_minutes = abs(off) // MS_PER_MINUTE
    out: list[str] = []
    i, n = 0, len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        f = fmt[i + 1]
        i += 2
        if f == "Y":
            out.append(_padded(y, 4))
        elif f == "m":
            out.append(_padded(mo, 2))
        elif f == "d":
            out.append(_padded(d, 2))
        elif f == "H":
            out.append(_padded(h, 2))
        elif f == "M":
            out.append(_padded(mi, 2))
        elif f == "S":
            out.append(_padded(s, 2))
        elif f == "L":
            out.append(_padded(ms, 3))
        elif f == "j":
            out.append(_padded(day_of_year(days), 3))
        elif f == "w":
            out.append(str(iso_weekday(days) % 7 + 1))
        elif f == "u":
            out.append(str(iso_weekday(days)))
        elif f == "U":
            out.append(_padded(week_of_year(days), 2))
        elif f == "V":
            out.append(_padded(iso_week_parts(days)[1], 2))
        elif f == "G":
            out.append(_padded(iso_week_parts(days)[0], 4))
        elif f == "b":
            out.append(MONTH_NAMES[mo - 1][:3])
        elif f == "B":
            out.append(MONTH_NAMES[mo - 1])
        elif f == "Z":
            out.append(str(-off_minutes if off < 0 else off_minutes))  # no '+' before a positive offset
        elif f == "z":
            out.append(("-" if off < 0 else "+") + _padded(off_minutes // 60, 2) + _padded(off_minutes % 60, 2))
        elif f == "%":
            out.append("%")
        else:
            out.append("%" + f)
    return "".join(out)
