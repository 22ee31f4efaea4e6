"""mongod's own unit tests of its date arithmetic, ported: src/mongo/db/query/datetime/
date_time_support_test.cpp (TEST(DateDiff, *), TEST(TruncateDate, *), TEST(DateAdd, *)), run against
``tidemark.query.dates``, the one implementation behind $dateDiff / $dateTrunc / $dateAdd /
$dateSubtract / $dateFromParts (the time-series columnar path included).

``parts(zone, y, m, d, h, mi, s, ms)`` is the C++ tests' ``zone.createFromDateParts(...)``: a wall
time read back as timelib reads a newly built time (the zone's DST flag at the Unix epoch), so a
repeated wall time (fall back) is the standard-time instant. The C++ tests build the DST instant of
a repeated time as ``createFromDateParts(<a second before the repeat>) + 2000 ms``; so do these.
The TruncateDate loops over all zones run over every zone Python's zoneinfo knows plus "-10:00"
(the C++ test uses timelib's built-in list)."""

from __future__ import annotations

import zoneinfo

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query import date_strings, dates
from tidemark.query.expressions import evaluate

UTC = dates.UTC
NY = dates.parse_timezone("America/New_York")
EUCLA = dates.parse_timezone("Australia/Eucla")  # +08:45
SOFIA = dates.parse_timezone("Europe/Sofia")
LORD_HOWE = dates.parse_timezone("Australia/Lord_Howe")  # a 30-minute DST change
MADRID = dates.parse_timezone("Europe/Madrid")
AMSTERDAM = dates.parse_timezone("Europe/Amsterdam")
SYDNEY = dates.parse_timezone("Australia/Sydney")
MINUS10 = dates.parse_timezone("-10:00")
PLUS2 = dates.parse_timezone("+02:00")
ZONES = [UTC, NY, EUCLA, SOFIA, SYDNEY, MINUS10]  # the C++ kTimezones
ALL_ZONES = [dates.parse_timezone(name) for name in sorted(zoneinfo.available_timezones())
             if not name.startswith(("posix/", "right/")) and name != "localtime"] + [MINUS10]
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def parts(zone: dates.TimeZone, y: int, mo: int = 1, d: int = 1, h: int = 0, mi: int = 0, s: int = 0,
          ms: int = 0) -> int:
    """``zone.createFromDateParts(y, mo, d, h, mi, s, ms)`` in millis."""
    return zone.to_utc(dates.local_from_parts(y, mo, d, h, mi, s, ms))


def code_of(fn, *args) -> int | None:
    try:
        fn(*args)
    except MongoError as e:
        return e.code
    return None


# ------------------------------------------------------------------- parts, weeks, formats, strings

FORMAT = "%Y/%m/%d %H:%M:%S:%L, dayOfYear: %j, dayOfWeek: %w, week: %U, isoYear: %G, isoWeek: %V, " \
         "isoDayOfWeek: %u, percent: %%"


@pytest.mark.parametrize("ms, zone, expected", [
    (-123456789, UTC, "1969/12/30 13:42:23:211, dayOfYear: 364, dayOfWeek: 3, week: 52, isoYear: 1970, "
                      "isoWeek: 01, isoDayOfWeek: 2, percent: %"),
    (-123456789, NY, "1969/12/30 08:42:23:211, dayOfYear: 364, dayOfWeek: 3, week: 52, isoYear: 1970, "
                     "isoWeek: 01, isoDayOfWeek: 2, percent: %"),
    (0, NY, "1969/12/31 19:00:00:000, dayOfYear: 365, dayOfWeek: 4, week: 52, isoYear: 1970, isoWeek: 01, "
            "isoDayOfWeek: 3, percent: %"),
    (1496777923234, UTC, "2017/06/06 19:38:43:234, dayOfYear: 157, dayOfWeek: 3, week: 23, isoYear: 2017, "
                         "isoWeek: 23, isoDayOfWeek: 2, percent: %"),
    (1496777923234, dates.parse_timezone("+02:30"), "2017/06/06 22:08:43:234, dayOfYear: 157, dayOfWeek: 3, "
                                                    "week: 23, isoYear: 2017, isoWeek: 23, isoDayOfWeek: 2, percent: %"),
], ids=["utc-1969", "ny-1969", "ny-epoch", "utc-2017", "plus0230-2017"])
def test_format_date(ms, zone, expected):
    """TEST(*TimeBeforeEpoch / AtEpoch / AfterEpoch, DoesFormatDate)."""
    assert dates.format_date(ms, FORMAT, zone) == expected


@pytest.mark.parametrize("ms, week, iso_week, iso_year, day_of_year, day_of_week", [
    (-345600000, 51, 52, 1969, 361, 7), (-126230400000, 52, 52, 1965, 365, 6), (1104537600000, 52, 53, 2004, 366, 6),
    (1167609600000, 53, 52, 2006, 365, 1), (1230768000000, 52, 1, 2009, 366, 4),
], ids=["1969-12-28", "1966-01-01", "2005-01-01", "2007-01-01", "2009-01-01"])
def test_new_york_week_parts(ms, week, iso_week, iso_year, day_of_year, day_of_week):
    """TEST(NewYorkTime*, DoesCompute{Week, ISOWeek, ISOYear, DayOfYear, DayOfWeek}): a UTC midnight
    is the previous day in New York."""
    date = {"date": dates.from_millis(ms), "timezone": "America/New_York"}
    got = [evaluate({op: date}, {}) for op in ("$week", "$isoWeek", "$isoWeekYear", "$dayOfYear", "$dayOfWeek")]
    assert got == [week, iso_week, iso_year, day_of_year, day_of_week]


def test_format_date_years_outside_0_to_9999_are_18537():
    """TEST(DateFormat, ProducesNonOKStatusGivenDateBeforeYear0 / IfGivenDateAfterYear9999)."""
    year_ms = 31556926000
    assert code_of(dates.format_date, -(year_ms * 1971), "%Y", UTC) == 18537
    assert code_of(dates.format_date, -(year_ms * 1971), "%G", UTC) == 18537
    assert dates.format_date(-(year_ms * 1970), "%Y", UTC) == "0000"
    assert code_of(dates.format_date, INT64_MAX, "%Y", UTC) == 18537
    assert code_of(dates.format_date, INT64_MAX, "%G", UTC) == 18537


@pytest.mark.parametrize("text, fmt", [
    ("201", "%Y"), ("20i7", "%Y"), ("2017-01-01T00:1:00", "%Y-%m-%dT%H%M%S"), ("2017-01-01T00:0i:00", "%Y-%m-%dT%H%M%S"),
    ("2017-01-01T00:00:1", "%Y-%m-%dT%H%M%S"), ("2017-01-01T00:00:i0", "%Y-%m-%dT%H%M%S"),
    ("2017-01-01T00:00:00.i", "%Y-%m-%dT%H:%M:%S.%L"), ("20i7", "%G"), ("2017-55", "%G-%V"), ("2017-FF", "%G-%V"),
    ("2017-8", "%G-%u"), ("2017-0", "%G-%u"), ("2017-a", "%G-%u"), ("2017-11", "%G-%u"), ("2017-123", "%G-%u"),
    ("2017 500", "%G %Z"), ("2017 0500", "%G %Z"), ("2017 +i00", "%G %Z"), ("1/1/2017", ""), ("", ""),
])
def test_date_from_string_rejects(text, fmt):
    """TEST(DateFromString, Rejects* / EmptyFormatStringThrowsForAllInputs): ConversionFailure."""
    with pytest.raises(date_strings.DateParseError):
        date_strings.parse_date_string(text, fmt, UTC)


def test_date_from_string_reads_its_format_back():
    """TEST(DateFromString, CorrectlyParsesStringThatMatchesFormat / WithDayFromYearFormat)."""
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    assert dates.format_date(date_strings.parse_date_string("2017-07-04T10:56:02Z", fmt, UTC), fmt, UTC) == \
        "2017-07-04T10:56:02Z"
    assert dates.format_date(date_strings.parse_date_string("2017-302", "%Y-%j", UTC), "%Y, Day %j", UTC) == \
        "2017, Day 303"


def test_iso_week_and_day_numbers_carry():
    """TEST(DayOfWeek, WeekNumber / DayNumber): ISO week w and day d of 2019 are whole weeks and days
    from week 1 / week 34, for w and d from -10000 to 10000."""
    week1 = dates.local_from_iso_parts(2019, 1, 1)
    week34 = dates.local_from_iso_parts(2019, 34, 1)
    for n in range(-10000, 10000, 37):
        assert dates.local_from_iso_parts(2019, n, 1) == week1 + (n - 1) * 7 * dates.MS_PER_DAY
        assert dates.local_from_iso_parts(2019, 34, n) == week34 + (n - 1) * dates.MS_PER_DAY


# ------------------------------------------------------------------------------------------ DateDiff

def test_date_diff_year_month_quarter():
    """TEST(DateDiff, Year / Month / Quarter): calendar boundaries crossed, in New York."""
    for start, end, unit, expected in [
        ((2000, 12, 31, 23, 59, 59, 500), (2000, 12, 31, 23, 59, 59, 999), "year", 0),
        ((2000, 12, 31, 23, 59, 59, 500), (2001, 1, 1), "year", 1), ((2001, 1, 1), (2000, 12, 31, 23, 59, 59, 500), "year", -1),
        ((1002, 1, 1), (2001, 1, 1), "year", 999),
        ((2020, 2, 28, 23, 59, 59, 500), (2020, 2, 29, 23, 59, 59, 999), "month", 0),
        ((2020, 2, 29, 23, 59, 59, 999), (2020, 3, 1), "month", 1),
        ((2010, 2, 28, 23, 59, 59, 999), (2008, 12, 31, 23, 59, 59, 500), "month", -14),
        ((520, 3, 1), (2020, 3, 1), "month", 1500 * 12),
        ((2020, 1, 1), (2020, 3, 31, 23, 59, 59, 999), "quarter", 0), ((2020, 1, 1), (2020, 4, 1), "quarter", 1),
        ((2000, 12, 31, 23, 59, 59, 500), (1500, 9, 30, 23, 59, 59, 999), "quarter", -2001),
    ]:
        assert dates.date_diff(parts(NY, *start), parts(NY, *end), unit, NY) == expected, (start, end, unit)


def test_date_diff_week_day_and_hour_in_new_york():
    """TEST(DateDiff, Week / Day / Hour) (the new-york cases)."""
    assert dates.date_diff(parts(NY, 2020, 11, 10), parts(NY, 2020, 10, 8), "week", NY, 1) == -5
    assert dates.date_diff(parts(NY, 2020, 11, 7), parts(NY, 2020, 11, 15), "week", NY, 7) == 2
    assert dates.date_diff(parts(NY, 2020, 11, 4), parts(NY, 2020, 11, 10), "week", NY, 3) == 0
    assert dates.date_diff(parts(NY, 1999, 12, 30), parts(NY, 2001, 1, 2), "day", NY) == 369
    assert dates.date_diff(parts(NY, 1583, 1, 1), parts(NY, 1601, 1, 1), "day", NY) == 6575
    assert dates.date_diff(parts(EUCLA, 2005, 2, 10), parts(EUCLA, 2005, 3, 10), "day", EUCLA) == 28
    for year in range(-1000, 3000, 7):
        days = 366 if dates.is_leap(year) else 365  # from Feb 3 to Feb 3 crosses this year's Feb 29
        assert dates.date_diff(parts(NY, year, 2, 3), parts(NY, year + 1, 2, 3), "day", NY) == days, year
    assert dates.date_diff(parts(NY, 2020, 11, 10), parts(NY, 2020, 11, 8, 23, 59, 59, 999), "hour", NY) == -25
    assert dates.date_diff(parts(EUCLA, 2020, 11, 10, 20, 55), parts(EUCLA, 2020, 11, 10, 21, 5), "hour", EUCLA) == 1
    assert dates.date_diff(parts(UTC, 2020, 11, 1, 5), parts(UTC, 2020, 11, 1, 6), "hour", NY) == 1
    assert dates.date_diff(parts(UTC, 2020, 11, 1, 6), parts(UTC, 2020, 11, 1, 5), "hour", NY) == -1
    assert dates.date_diff(parts(UTC, 2020, 3, 8, 6, 45), parts(UTC, 2020, 3, 8, 7), "hour", NY) == 1
    assert dates.date_diff(parts(NY, 1999, 1, 1), parts(NY, 2001, 1, 1, 1), "hour", NY) == 17545


def test_date_diff_across_lord_howe_half_hour_changes_counts_local_hours_and_elapsed_minutes():
    """TEST(DateDiff, Hour / Minute / Second): 1.5 h pass across the fall-back but the hour difference
    is 1 (local hours); minutes and seconds are elapsed time. The 04-04 01:00 and 02:00 wall times are
    read as timelib builds them (01:00 is DST +11, 02:00 standard +10:30)."""
    start, end = parts(LORD_HOWE, 2021, 4, 4, 1), parts(LORD_HOWE, 2021, 4, 4, 2)
    assert (start, end) == (parts(UTC, 2021, 4, 3, 14), parts(UTC, 2021, 4, 3, 15, 30))
    assert dates.date_diff(start, end, "hour", LORD_HOWE) == 1
    assert dates.date_diff(start, end, "minute", LORD_HOWE) == 90
    assert dates.date_diff(start, end, "second", LORD_HOWE) == 90 * 60
    start, end = parts(LORD_HOWE, 2021, 10, 3, 1), parts(LORD_HOWE, 2021, 10, 3, 2, 30)
    assert dates.date_diff(start, end, "hour", LORD_HOWE) == 1
    assert dates.date_diff(start, end, "minute", LORD_HOWE) == 60


def test_date_diff_minutes_with_a_local_mean_time_offset_use_local_minutes():
    """TEST(DateDiff, Minute): New York before 1883 is at -4:56:02; mongod counts local minute
    boundaries corrected by the offset change in whole minutes (truncated), not UTC minutes."""
    assert dates.date_diff(parts(NY, 1585, 11, 8, 1, 55), parts(NY, 2030, 11, 8, 1, 30, 59, 999), "minute",
                           NY) == 234047498
    assert dates.date_diff(parts(NY, 2020, 11, 8, 1, 55), parts(NY, 2020, 11, 8, 1, 30, 59, 999), "minute",
                           NY) == -25


def test_date_diff_seconds_and_milliseconds():
    """TEST(DateDiff, Second / Millisecond): Madrid skips 0:14:44 at 1900-12-31 23:45:15 (one second
    passes); negative millis floor; a millisecond difference past 64 bits is 5166308."""
    assert dates.date_diff(parts(MADRID, 1900, 12, 31, 23, 45, 15), parts(MADRID, 1901, 1, 1), "second", MADRID) == 1
    assert dates.date_diff(parts(UTC, 1969, 12, 31, 23, 59, 59, 999), parts(UTC, 1970, 1, 1, 0, 0, 1), "second",
                           UTC) == 2
    assert dates.date_diff(parts(NY, 2020, 11, 8, 2, 10, 16, 999), parts(NY, 2020, 11, 8, 1, 30, 15, 999), "second",
                           NY) == -2401
    assert dates.date_diff(0, parts(UTC, 2020, 11, 10, 1, 30, 16), "millisecond", NY) == 1604971816000
    assert code_of(dates.date_diff, INT64_MIN, INT64_MAX, "millisecond", NY) == 5166308


# -------------------------------------------------------------------------------------- TruncateDate

@pytest.mark.parametrize("zone", ZONES, ids=lambda z: z.name)
def test_truncate_hour_and_smaller(zone):
    """TEST(TruncateDate, Millisecond / Second / Minute / Hour) over kTimezones."""
    p = lambda *a: parts(zone, *a)  # noqa: E731
    cases = [
        ((2000, 1, 1, 0, 0, 2, 0), "millisecond", 1020, (2000, 1, 1, 0, 0, 1, 20)),
        ((2000, 1, 1, 0, 0, 2, 39), "millisecond", 1020, (2000, 1, 1, 0, 0, 1, 20)),
        ((2000, 1, 1, 0, 0, 2, 40), "millisecond", 1020, (2000, 1, 1, 0, 0, 2, 40)),
        ((1999, 12, 31, 23, 59, 59, 999), "millisecond", 1500, (1999, 12, 31, 23, 59, 58, 500)),
        ((2000, 1, 1, 0, 0, 9, 999), "second", 5, (2000, 1, 1, 0, 0, 5, 0)),
        ((1999, 12, 31, 23, 59, 51, 0), "second", 5, (1999, 12, 31, 23, 59, 50, 0)),
        ((2000, 1, 1, 0, 9, 59, 999), "minute", 5, (2000, 1, 1, 0, 5, 0, 0)),
        ((1999, 12, 31, 23, 54, 0, 0), "minute", 5, (1999, 12, 31, 23, 50, 0, 0)),
        ((2020, 1, 1, 3, 59, 59, 999), "hour", 2, (2020, 1, 1, 2, 0, 0, 0)),
        ((2020, 1, 1, 4, 0, 0, 0), "hour", 2, (2020, 1, 1, 4, 0, 0, 0)),
        ((1999, 12, 31, 23, 59, 51, 0), "hour", 2, (1999, 12, 31, 22, 0, 0, 0)),
    ]
    for date, unit, size, expected in cases:
        assert dates.date_trunc(p(*date), unit, size, zone) == p(*expected), (date, unit, size)


def test_truncate_day_and_longer_in_every_zone():
    """TEST(TruncateDate, Day / Week / Month / Quarter / Year) over kAllTimezones: every bin start is
    the wall time createFromDateParts builds, whatever the zone's DST history (zones whose clocks
    change at midnight included)."""
    cases = [
        ((2000, 1, 8, 0, 0, 2), "day", 2, 7, (2000, 1, 7)),
        ((2000, 1, 9), "day", 2, 7, (2000, 1, 9)),
        ((2000, 1, 10, 23, 59, 59, 999), "day", 2, 7, (2000, 1, 9)),
        ((1999, 12, 29, 23, 59, 59, 999), "day", 2, 7, (1999, 12, 28)),
        ((2000, 1, 26), "week", 2, 3, (2000, 1, 19)),
        ((2000, 1, 2), "week", 1, 6, (2000, 1, 1)),
        ((2021, 8, 1, 23, 59, 59, 999), "week", 1, 1, (2021, 7, 26)),
        ((1999, 12, 19, 23, 59, 59, 999), "week", 2, 1, (1999, 12, 6)),
        ((2021, 4, 30, 23, 59, 59, 999), "month", 2, 7, (2021, 3, 1)),
        ((2021, 5, 1), "month", 2, 7, (2021, 5, 1)),
        ((1900, 3, 31, 23, 59, 59, 999), "month", 3, 7, (1900, 1, 1)),
        ((2005, 2, 28, 23, 59, 59, 999), "month", 1, 7, (2005, 2, 1)),
        ((2021, 6, 30, 23, 59, 59, 999), "quarter", 2, 7, (2021, 1, 1)),
        ((1900, 3, 31, 23, 59, 59, 999), "quarter", 1, 7, (1900, 1, 1)),
        ((2021, 12, 31, 23, 59, 59, 999), "year", 2, 7, (2020, 1, 1)),
        ((1950, 12, 31, 23, 59, 59, 999), "year", 1, 7, (1950, 1, 1)),
    ]
    wrong = []
    for zone in ALL_ZONES:
        for date, unit, size, week_start, expected in cases:
            got = dates.date_trunc(parts(zone, *date), unit, size, zone, week_start)
            if got != parts(zone, *expected):
                wrong.append((zone.name, date, unit, size))
    assert wrong == []


def test_truncate_day_across_dst_changes():
    """TEST(TruncateDate, Day): New York and Sofia on the days their clocks change."""
    for zone, date, expected in [
        (NY, (2021, 3, 14, 4), (2021, 3, 14)), (NY, (2021, 11, 7, 0, 30), (2021, 11, 7)),
        (NY, (2021, 11, 7, 2), (2021, 11, 7)), (NY, (2021, 11, 8, 2), (2021, 11, 8)),
        (SOFIA, (2021, 3, 28, 4), (2021, 3, 28)), (SOFIA, (2021, 10, 31, 0, 30), (2021, 10, 31)),
        (SOFIA, (2021, 11, 1, 0, 0, 0, 1), (2021, 11, 1)),
    ]:
        assert dates.date_trunc(parts(zone, *date), "day", 1, zone) == parts(zone, *expected)


def test_truncate_error_handling():
    """TEST(TruncateDate, ErrorHandling): mongod's overflow codes, the 1e11 bin limit for day and
    longer units, and bins reaching 200 million years back."""
    any_date, before_ref = parts(UTC, 2000, 1, 1, 2), parts(UTC, 1980)
    assert code_of(dates.date_trunc, INT64_MIN, "millisecond", 1, UTC) == 5439000
    assert code_of(dates.date_trunc, INT64_MIN // 4 * 3, "millisecond", INT64_MAX // 5 * 3, UTC) == 5439001
    for unit in ("second", "minute", "hour"):
        assert code_of(dates.date_trunc, any_date, unit, INT64_MAX // 64, UTC) == 5439002
    for unit in ("day", "week", "month", "quarter", "year"):
        assert code_of(dates.date_trunc, any_date, unit, 100_000_000_001, UTC) == 5439006
        dates.date_trunc(before_ref, unit, 200_000_000, UTC)
        assert dates.date_trunc(parts(UTC, 2000, 1, 1, 12), unit, 100_000_000_000, UTC, 6) == parts(UTC, 2000)
    assert code_of(dates.date_trunc, before_ref, "year", 1_000_000_000, UTC) == 5976500
    assert dates.date_trunc(before_ref, "year", 200_002_000, UTC) == parts(UTC, -200_000_000)


# ------------------------------------------------------------------------------------------- DateAdd

def test_date_add_large_amounts():
    """TEST(DateAdd, LargeAmountValues): 5976500 past the per-unit bound, 5166406 past a 64-bit date,
    and large amounts from 291 million years back."""
    any_date = parts(UTC, 2016)
    small = parts(UTC, -291_000_000, 3, 31)
    max_year, max_day = 584_942_417 + 1, 213_503_982_334 + 1
    for unit, invalid, large, expected in [
        ("year", max_year, 550_000_000, parts(UTC, 259_000_000, 3, 31)),
        ("quarter", max_year * 4, 550_000_000 * 4, parts(UTC, 259_000_000, 3, 31)),
        ("month", max_year * 12, 550_000_000 * 12, parts(UTC, 259_000_000, 3, 31)),
        ("day", max_day, 250_000_000 * 365, small + 250_000_000 * 365 * dates.MS_PER_DAY),
        ("hour", max_day * 24, 250_000_000 * 365 * 24, small + 250_000_000 * 365 * dates.MS_PER_DAY),
        ("minute", max_day * 1440, 250_000_000 * 365 * 1440, small + 250_000_000 * 365 * dates.MS_PER_DAY),
        ("second", max_day * 86400, 250_000_000 * 365 * 86400, small + 250_000_000 * 365 * dates.MS_PER_DAY),
    ]:
        assert code_of(dates.date_add, any_date, unit, invalid, UTC) == 5976500, unit
        assert code_of(dates.date_add, any_date, unit, -invalid, UTC) == 5976500, unit
        assert code_of(dates.date_add, parts(UTC, -200_000_000, 2, 29), unit, invalid - 1, UTC) == 5166406, unit
        assert dates.date_add(small, unit, large, UTC) == expected, unit
    assert code_of(dates.date_add, parts(UTC, 2020, 12, 31, 23, 59, 15, 1), "millisecond", INT64_MAX, UTC) == 159


def test_date_add_month_end_adjustment_in_zones():
    """TEST(DateAdd, DateAddDayAdjustmentWithTimezone): the month end is the local one."""
    ams = parts(AMSTERDAM, 2021, 5, 31, 0, 30, 0, 4)
    assert dates.date_add(ams, "month", 1, AMSTERDAM) == parts(AMSTERDAM, 2021, 6, 30, 0, 30, 0, 4)
    assert dates.date_add(ams, "quarter", -5, AMSTERDAM) == parts(AMSTERDAM, 2020, 2, 29, 0, 30, 0, 4)
    ny = parts(UTC, 2020, 12, 31, 3)  # 2020-12-30T22:00 in New York
    assert dates.date_add(ny, "month", -1, NY) == parts(UTC, 2020, 12, 1, 3)
    assert dates.date_add(ny, "month", 2, NY) == parts(UTC, 2021, 3, 1, 3)
    assert dates.date_add(ny, "quarter", -2, NY) == parts(UTC, 2020, 7, 1, 2)
    eucla = parts(EUCLA, 2021, 4, 30)
    assert dates.date_add(eucla, "quarter", 1, EUCLA) == parts(EUCLA, 2021, 7, 30)
    assert dates.date_add(parts(PLUS2, 2021, 3, 31, 1, 30), "month", 1, PLUS2) == parts(PLUS2, 2021, 4, 30, 1, 30)


AMSTERDAM_DST = [  # TEST(DateAdd, DateAddWithTimezoneDST), Amsterdam
    (parts(UTC, 2020, 10, 25, 0, 50, 5), "minute", 10, parts(UTC, 2020, 10, 25, 1, 0, 5)),
    (parts(UTC, 2020, 10, 25, 0, 50, 5), "hour", 1, parts(UTC, 2020, 10, 25, 1, 50, 5)),
    (parts(UTC, 2020, 10, 25, 1, 10, 5), "hour", -1, parts(UTC, 2020, 10, 25, 0, 10, 5)),
    (parts(AMSTERDAM, 2020, 10, 25, 1, 50), "day", 1, parts(AMSTERDAM, 2020, 10, 26, 1, 50)),
    (parts(AMSTERDAM, 2020, 10, 25, 2, 30), "day", 1, parts(AMSTERDAM, 2020, 10, 26, 2, 30)),
    # the repeated 02:00:01 reached from a DST date is the DST one
    (parts(AMSTERDAM, 2020, 10, 24, 2, 0, 1), "day", 1, parts(AMSTERDAM, 2020, 10, 25, 1, 59, 59) + 2000),
    (parts(AMSTERDAM, 2020, 10, 24, 3, 0, 1), "day", 1, parts(UTC, 2020, 10, 25, 2, 0, 1)),
    (parts(AMSTERDAM, 2020, 10, 25, 2, 30), "day", -1, parts(AMSTERDAM, 2020, 10, 24, 2, 30)),
    (parts(AMSTERDAM, 2020, 10, 26, 2, 30), "day", -1, parts(AMSTERDAM, 2020, 10, 25, 2, 30)),
    # a skipped wall time moves the clock forward by the gap
    (parts(AMSTERDAM, 2021, 3, 27, 2, 20), "day", 1, parts(AMSTERDAM, 2021, 3, 28, 3, 20)),
    (parts(AMSTERDAM, 2021, 3, 29, 2, 20), "day", -1, parts(AMSTERDAM, 2021, 3, 28, 3, 20)),
    (parts(AMSTERDAM, 2020, 11, 28, 2, 20), "month", 4, parts(AMSTERDAM, 2021, 3, 28, 3, 20)),
]
NEW_YORK_DST = [  # TEST(DateAdd, DateAddWithTimezoneDST), New York
    (parts(UTC, 2020, 3, 8, 6, 50), "minute", 15, parts(UTC, 2020, 3, 8, 7, 5)),
    (parts(UTC, 2020, 3, 8, 7, 20), "hour", -1, parts(UTC, 2020, 3, 8, 6, 20)),
    (parts(NY, 2020, 11, 1, 1, 30), "day", 1, parts(NY, 2020, 11, 2, 1, 30)),
    (parts(NY, 2020, 10, 31, 1, 0, 1), "day", 1, parts(NY, 2020, 11, 1, 0, 59, 59) + 2000),
    (parts(NY, 2020, 11, 1, 1, 30), "day", -1, parts(NY, 2020, 10, 31, 1, 30)),
    (parts(NY, 2020, 11, 2, 1, 30), "day", -1, parts(NY, 2020, 11, 1, 1, 30)),
    (parts(NY, 2021, 3, 13, 2, 20), "day", 1, parts(NY, 2021, 3, 14, 3, 20)),
    (parts(NY, 2021, 3, 15, 2, 20), "day", -1, parts(NY, 2021, 3, 14, 3, 20)),
    (parts(NY, 2021, 1, 14, 2, 20), "month", 2, parts(NY, 2021, 3, 14, 3, 20)),
]
LORD_HOWE_DST = [  # TEST(DateAdd, DateAdd_LordHoweTimezoneDST)
    (parts(LORD_HOWE, 2021, 4, 4, 1, 29, 59) + 1000, "day", 1, parts(LORD_HOWE, 2021, 4, 5, 1, 30)),
    (parts(LORD_HOWE, 2021, 4, 3, 1, 30, 1), "day", 1, parts(LORD_HOWE, 2021, 4, 4, 1, 29, 59) + 2000),
    (parts(LORD_HOWE, 2021, 4, 5, 1), "day", -1, parts(LORD_HOWE, 2021, 4, 4, 1)),
    (parts(LORD_HOWE, 2021, 3, 4, 5, 30, 0, 5), "month", 1, parts(LORD_HOWE, 2021, 4, 4, 5, 30, 0, 5)),
    (parts(UTC, 2021, 4, 3, 14, 50, 5), "minute", 20, parts(UTC, 2021, 4, 3, 15, 10, 5)),
    # the same instant: a repeated wall time built from parts is the standard (+10:30) one
    (parts(UTC, 2021, 4, 3, 14, 50, 5), "minute", 20, parts(LORD_HOWE, 2021, 4, 4, 1, 40, 5)),
    (parts(UTC, 2021, 4, 3, 14, 50, 5), "hour", 1, parts(LORD_HOWE, 2021, 4, 4, 2, 20, 5)),
    (parts(LORD_HOWE, 2020, 10, 3, 2, 15), "day", 1, parts(LORD_HOWE, 2020, 10, 4, 2, 45)),
    (parts(LORD_HOWE, 2020, 10, 5, 1, 0, 0, 8), "day", -1, parts(LORD_HOWE, 2020, 10, 4, 1, 0, 0, 8)),
    (parts(LORD_HOWE, 2021, 1, 3, 18, 25), "month", -3, parts(LORD_HOWE, 2020, 10, 3, 18, 25)),
    (parts(UTC, 2020, 10, 3, 15, 30, 20), "second", -50, parts(UTC, 2020, 10, 3, 15, 29, 30)),
]


@pytest.mark.parametrize("zone, cases", [(AMSTERDAM, AMSTERDAM_DST), (NY, NEW_YORK_DST), (LORD_HOWE, LORD_HOWE_DST)],
                         ids=["amsterdam", "new_york", "lord_howe"])
def test_date_add_across_dst_changes(zone, cases):
    """Hours and smaller add elapsed time; days and longer keep the local time, a skipped wall time
    moving forward and a repeated one resolved with the start date's DST flag."""
    for i, (start, unit, amount, expected) in enumerate(cases):
        assert dates.date_add(start, unit, amount, zone) == expected, i


def test_a_repeated_wall_time_built_from_parts_is_standard_time():
    """createFromDateParts (timelib's DST flag at the epoch, standard time in these zones) picks the
    later, standard-time instant of a repeated wall time, west or east of UTC."""
    assert parts(NY, 2020, 11, 1, 1, 30) == parts(UTC, 2020, 11, 1, 6, 30)
    assert parts(AMSTERDAM, 2020, 10, 25, 2, 30) == parts(UTC, 2020, 10, 25, 1, 30)
    assert parts(LORD_HOWE, 2021, 4, 4, 1, 40) == parts(UTC, 2021, 4, 3, 15, 10)
    # reached by $dateAdd from standard time the repeated time is standard too; from DST, DST
    assert dates.date_add(parts(AMSTERDAM, 2020, 1, 25, 2, 30), "month", 9, AMSTERDAM) == parts(UTC, 2020, 10, 25, 1, 30)
    assert dates.date_add(parts(AMSTERDAM, 2020, 9, 25, 2, 30), "month", 1, AMSTERDAM) == parts(UTC, 2020, 10, 25, 0, 30)


def test_a_zone_keeps_its_rules_past_year_9999():
    """Not from the C++ tests: timelib applies a tzfile's POSIX rule to any year, so a July date in
    New York 146 million years on is in daylight saving time (-04:00) as it is today; the Gregorian
    calendar repeats every 400 years, which is how ``dates`` looks the offset up."""
    for year in (2021, 10_021, 146_000_021):
        july, january = parts(UTC, year, 7, 4, 12), parts(UTC, year, 1, 4, 12)
        assert (NY.offset_ms(july), NY.offset_ms(january)) == (-4 * 3_600_000, -5 * 3_600_000), year
        assert NY.is_dst(july) and not NY.is_dst(january)
        assert dates.date_trunc(july, "day", 1, NY) == parts(UTC, year, 7, 4, 4)


EXTREMES = [-2**63, 2**63 - 1, -2**62, 2**62, -62135596800000, 253402300799999, 253402300800000, -62135596800001, 0, -1]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "+14:00",
                                  "-12:00"])
def test_date_expressions_at_the_ends_of_a_64_bit_date_answer_or_raise_mongods_errors(zone):
    """Not from the C++ tests: at 64-bit millisecond extremes, datetime's year 1 / 9999 edges and
    around the epoch, every date expression answers a value or one of mongod's errors (never a Python
    exception: $dateTrunc's UTC fast path overflowed datetime on 9999-12-31T23:59:59.999)."""
    failures = []
    for ms in EXTREMES:
        date = dates.from_millis(ms)
        exprs = [{"$year": {"date": date, "timezone": zone}}, {"$isoWeekYear": {"date": date, "timezone": zone}},
                 {"$dateToParts": {"date": date, "timezone": zone, "iso8601": True}},
                 {"$dateToString": {"date": date, "timezone": zone}}, {"$week": {"date": date, "timezone": zone}}]
        for unit in dates.TIME_UNITS:
            exprs += [{"$dateTrunc": {"date": date, "unit": unit, "timezone": zone, "binSize": size}} for size in (1, 7)]
            exprs += [{"$dateAdd": {"startDate": date, "unit": unit, "amount": n, "timezone": zone}} for n in (1, -1)]
            exprs.append({"$dateDiff": {"startDate": date, "endDate": dates.from_millis(0), "unit": unit,
                                        "timezone": zone}})
        for expr in exprs:
            try:
                evaluate(expr, {})
            except MongoError:
                pass
            except Exception as e:  # noqa: BLE001  # what the test looks for
                failures.append((expr, repr(e)))
    assert failures == []
