"""Date expressions against a live server: mongod's date arithmetic rules checked as properties over
random dates (before 1970 too), DST edges (America/New_York, Europe/London, the half-hour change of
Australia/Lord_Howe, Asia/Kathmandu's +05:45), units, bin sizes, start days of the week and fixed
offsets, plus the wire shape of mongod's overflow errors.

The rules come from mongod 7.0's src/mongo/db/query/datetime/date_time_support.cpp (truncateDate,
dateAdd, dateDiff) and timelib's wall-time resolution (tm2unixtime.c do_adjust_timezone), which its
unit tests pin (date_time_support_test.cpp: DateAdd.DateAddWithTimezoneDST, LordHoweTimezoneDST):
a skipped wall time moves forward by the gap; a repeated wall time reached by $dateAdd keeps the start
date's DST flag; one built by $dateFromParts is the standard-time instant. The oracles here are
written against Python's zoneinfo (fold), not against Tidemark's ``dates`` module.

Properties (mongod's own definitions; each example runs one aggregate over many dates):
- $dateTrunc: ``t <= date < $dateAdd(t, unit, binSize)`` and ``$dateTrunc(t) == t``;
- ``$dateDiff(d, $dateAdd(d, u, n), u) == n`` (month ends clamp; sub-day units where the offset is
  the same at both ends, since mongod counts local hour boundaries);
- ``$dateAdd`` by days keeps the local wall time and resolves it as timelib does;
- ``$dateFromParts($dateToParts(d))`` is ``d``, or the standard-time instant of a repeated wall time;
- a time-series collection and a regular one group by ``$dateTrunc`` identically (the columnar path
  of the bare UTC ``{date, unit}`` form included)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from bson.datetime_ms import DatetimeMS
from bson.objectid import ObjectId
from bson.timestamp import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "aggregate", "create", "drop")

HYPO = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
EPOCH = dt.datetime(1970, 1, 1)
MS_HOUR, MS_DAY = 3_600_000, 86_400_000
ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu"]
ALL_ZONES = ZONES + ["UTC", "+05:45", "-03:30"]
UNITS = ["year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond"]
DAYS = ["monday", "tue", "Wednesday", "THU", "fri", "saturday", "sun"]
# Instants (UTC) where these zones' offsets change: DST both ways, Lord Howe's 30 minutes, Kathmandu's
# move from +05:30 to +05:45, and older New York / London changes.
CHANGES = [
    ("America/New_York", "2021-03-14T07:00"), ("America/New_York", "2021-11-07T06:00"),
    ("America/New_York", "1966-10-30T06:00"), ("Europe/London", "2021-03-28T01:00"),
    ("Europe/London", "2021-10-31T01:00"), ("Europe/London", "1961-10-29T02:00"),
    ("Australia/Lord_Howe", "2021-04-03T15:00"), ("Australia/Lord_Howe", "2021-10-02T15:30"),
    ("Asia/Kathmandu", "1985-12-31T18:30"),
]


def millis(d: dt.datetime) -> int:
    return (d - EPOCH) // dt.timedelta(milliseconds=1)


def date_of(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


def zone_info(name: str) -> dt.tzinfo:
    if name[0] in "+-":
        sign = -1 if name[0] == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(name[1:3]), minutes=int(name[4:6])))
    return zoneinfo.ZoneInfo(name)


def local_of(ms: int, zone: str) -> dt.datetime:
    return date_of(ms).replace(tzinfo=dt.UTC).astimezone(zone_info(zone))


def resolve(wall: dt.datetime, zone: str, dst: bool) -> int:
    """timelib's instant for a naive wall time: a skipped time keeps the offset before the change
    (moves forward); a repeated one is the earlier (DST) instant when ``dst`` is set, else the later."""
    tz = zone_info(zone)
    first, second = wall.replace(tzinfo=tz), wall.replace(tzinfo=tz, fold=1)
    a, b = first.utcoffset(), second.utcoffset()
    assert a is not None and b is not None
    offset = a if a <= b or dst else b
    return millis(wall - offset)


near_change = st.builds(lambda change, delta: millis(dt.datetime.fromisoformat(change[1])) + delta,
                        st.sampled_from(CHANGES), st.integers(-3 * MS_HOUR, 3 * MS_HOUR))
any_date = st.integers(millis(dt.datetime(1900, 1, 1)), millis(dt.datetime(2100, 1, 1)))
dates = st.lists(st.one_of(any_date, near_change), min_size=1, max_size=25)


def project(db, values: list[int], expressions: dict) -> list[dict]:
    """Each date (millis) as ``{d}``, the ``expressions`` computed on it, in input order."""
    coll = db.c
    coll.drop()
    coll.insert_many([{"_id": i, "d": date_of(v)} for i, v in enumerate(values)])
    return list(coll.aggregate([{"$addFields": expressions}, {"$sort": {"_id": 1}}]))


# ------------------------------------------------------------------------------------------ $dateTrunc

@pytest.mark.slow
@HYPO
@given(values=dates, unit=st.sampled_from(UNITS), size=st.sampled_from([1, 1, 2, 3, 5, 7, 15, 100]),
       zone=st.sampled_from(ALL_ZONES), week_start=st.sampled_from(DAYS))
def test_date_trunc_bin_holds_the_date(db, values, unit, size, zone, week_start):
    """truncateDate: the bin's start is at or before the date, the next bin's start (the start plus
    ``binSize`` units, $dateAdd) after it, and truncating a bin start gives it back."""
    trunc = {"date": "$d", "unit": unit, "binSize": size, "timezone": zone, "startOfWeek": week_start}
    docs = project(db, values, {"t": {"$dateTrunc": trunc}})
    again = project(db, [millis(d["t"]) for d in docs], {
        "t": {"$dateTrunc": trunc},
        "next": {"$dateAdd": {"startDate": "$d", "unit": unit, "amount": size, "timezone": zone}}})
    for doc, back in zip(docs, again, strict=True):
        assert back["t"] == doc["t"] <= doc["d"] < back["next"], (doc, back)


# -------------------------------------------------------------------------------- $dateAdd / $dateDiff

@HYPO
@given(values=dates, unit=st.sampled_from(UNITS), amount=st.integers(-400, 400), zone=st.sampled_from(ALL_ZONES),
       week_start=st.sampled_from(DAYS))
def test_date_diff_counts_what_date_add_added(db, values, unit, amount, zone, week_start):
    """$dateDiff(d, $dateAdd(d, unit, n), unit) == n: month ends clamp (Jan 31 + 1 month is Feb 28/29,
    one month boundary); weeks are 7 local days whatever the start of the week; hours and smaller
    when the zone's offset is the same at both ends (mongod counts local hour boundaries, so a
    30-minute DST change can make 1.5 elapsed hours 1)."""
    add = {"$dateAdd": {"startDate": "$d", "unit": unit, "amount": amount, "timezone": zone}}
    project(db, values, {})
    got = list(db.c.aggregate([{"$addFields": {"e": add}}, {"$addFields": {"n": {"$dateDiff": {
        "startDate": "$d", "endDate": "$e", "unit": unit, "timezone": zone, "startOfWeek": week_start}}}},
        {"$sort": {"_id": 1}}]))
    for doc in got:
        same_offset = local_of(millis(doc["d"]), zone).utcoffset() == local_of(millis(doc["e"]), zone).utcoffset()
        if unit in ("hour", "minute", "second", "millisecond") and not same_offset:
            continue
        assert doc["n"] == amount, doc


@HYPO
@given(start=st.builds(lambda change, days, delta: (change[0], millis(dt.datetime.fromisoformat(change[1]))
                                                    - days * MS_DAY + delta, days),
                       st.sampled_from(CHANGES), st.integers(-40, 40), st.integers(-3 * MS_HOUR, 3 * MS_HOUR)),
       unit=st.sampled_from(["day", "week"]))
def test_date_add_of_days_keeps_the_wall_time_and_the_dst_flag(db, start, unit):
    """dateAdd by days / weeks computes in local time: the wall time is kept; a skipped one moves
    forward by the gap, a repeated one is the instant with the start date's DST flag (timelib)."""
    zone, ms, days = start
    amount = days if unit == "day" else days // 7
    (doc,) = project(db, [ms], {"e": {"$dateAdd": {"startDate": "$d", "unit": unit, "amount": amount,
                                                   "timezone": zone}}})
    local = local_of(ms, zone)
    wall = local.replace(tzinfo=None) + dt.timedelta(days=amount * (1 if unit == "day" else 7))
    assert millis(doc["e"]) == resolve(wall, zone, bool(local.dst())), (zone, date_of(ms), amount)


# ------------------------------------------------------------------------------ $dateToParts round trip

@HYPO
@given(values=dates, zone=st.sampled_from(ALL_ZONES), iso=st.booleans())
def test_date_from_parts_of_date_to_parts(db, values, zone, iso):
    """$dateFromParts($dateToParts(d)) is d, except for a repeated wall time (fall back), where a date
    built from parts is the standard-time instant (timelib's DST flag at the epoch, off in these
    zones); the parts of the rebuilt date are the same."""
    to_parts = {"$dateToParts": {"date": "$d", "timezone": zone, "iso8601": iso}}
    names = (["isoWeekYear", "isoWeek", "isoDayOfWeek"] if iso else ["year", "month", "day"]) + \
        ["hour", "minute", "second", "millisecond"]
    from_parts = {"$dateFromParts": {**{k: f"$p.{k}" for k in names}, "timezone": zone}}
    docs = project(db, values, {"p": to_parts})
    coll = db.c
    back = list(coll.aggregate([{"$addFields": {"p": to_parts}}, {"$addFields": {"r": from_parts}},
                                {"$addFields": {"q": {"$dateToParts": {"date": "$r", "timezone": zone,
                                                                       "iso8601": iso}}}},
                                {"$sort": {"_id": 1}}]))
    for doc, rebuilt in zip(docs, back, strict=True):
        ms = millis(doc["d"])
        expected = resolve(local_of(ms, zone).replace(tzinfo=None), zone, False)
        assert (millis(rebuilt["r"]), rebuilt["q"]) == (expected, doc["p"]), doc


# ------------------------------------------------------------------------ time-series against regular

@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(any_date, near_change), min_size=1, max_size=60),
       unit=st.sampled_from(UNITS), size=st.sampled_from([1, 1, 3, 7]), zone=st.sampled_from(ALL_ZONES),
       week_start=st.sampled_from(DAYS))
def test_time_series_groups_by_date_trunc_like_a_regular_collection(db, values, unit, size, zone, week_start):
    """$group by $dateTrunc over a time-series collection (bucket unpacking, and the columnar path for
    the bare UTC ``{date, unit}`` form) answers what the same measurements in a regular collection do."""
    db.drop_collection("ts")
    db.drop_collection("reg")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    docs = [{"_id": i, "t": date_of(v), "m": i % 3, "v": i} for i, v in enumerate(values)]
    db.ts.insert_many(docs)
    db.reg.insert_many(docs)
    full = {"date": "$t", "unit": unit, "binSize": size, "timezone": zone, "startOfWeek": week_start}
    bare = {"date": "$t", "unit": unit}
    for trunc in (full, bare):
        pipeline = [{"$group": {"_id": {"$dateTrunc": trunc}, "n": {"$sum": 1}, "s": {"$sum": "$v"},
                                "lo": {"$min": "$t"}}}, {"$sort": {"_id": 1}}]
        assert list(db.ts.aggregate(pipeline)) == list(db.reg.aggregate(pipeline)), trunc
        by_meta = [{"$group": {"_id": {"m": "$m", "t": {"$dateTrunc": trunc}}, "n": {"$sum": 1}}},
                   {"$sort": {"_id.m": 1, "_id.t": 1}}]
        assert list(db.ts.aggregate(by_meta)) == list(db.reg.aggregate(by_meta)), trunc


# -------------------------------------------------------------------- Timestamp and ObjectId as dates

@HYPO
@given(seconds=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=20), unit=st.sampled_from(UNITS),
       zone=st.sampled_from(ALL_ZONES))
def test_timestamps_and_object_ids_are_the_dates_of_their_seconds(db, seconds, unit, zone):
    """coerceToDate: a Timestamp is its seconds, an ObjectId its creation second; every date
    expression answers for them what it answers for that date."""
    coll = db.c
    coll.drop()
    coll.insert_many([{"_id": i, "d": date_of(s * 1000), "ts": Timestamp(s, 7),
                       "oid": ObjectId(s.to_bytes(4, "big") + bytes(8))} for i, s in enumerate(seconds)])

    def of(path: str) -> dict:
        return {"trunc": {"$dateTrunc": {"date": path, "unit": unit, "binSize": 3, "timezone": zone}},
                "add": {"$dateAdd": {"startDate": path, "unit": unit, "amount": -5, "timezone": zone}},
                "diff": {"$dateDiff": {"startDate": path, "endDate": dt.datetime(2000, 1, 1), "unit": unit,
                                       "timezone": zone}},
                "parts": {"$dateToParts": {"date": path, "timezone": zone, "iso8601": True}},
                "week": {"$week": {"date": path, "timezone": zone}},
                "text": {"$dateToString": {"date": path, "timezone": zone, "format": "%G-%V-%u %H:%M:%S %z"}}}

    docs = list(coll.aggregate([{"$project": {"d": of("$d"), "ts": of("$ts"), "oid": of("$oid")}},
                                {"$sort": {"_id": 1}}]))
    for doc in docs:
        assert doc["ts"] == doc["oid"] == doc["d"], doc


@pytest.mark.parametrize("date, synthetic", [
    (dt.datetime(1960, 1, 2, 3, 4, 5, 6000), True), (dt.datetime(1960, 1, 2, 3, 4, 4, 999000), False),
    (dt.datetime(1960, 1, 2, 3, 4, 5), True), (dt.datetime(1960, 1, 2, 3, 4, 5, 1000), True),
    (dt.datetime(1960, 1, 2, 3, 4, 5, 999000), True), (dt.datetime(1860, 1, 2, 3, 4, 5, 6000), False),
    (dt.datetime(1969, 12, 31, 23, 59, 59), False), (EPOCH, False), (dt.datetime(2026, 12, 7, 8, 9, 10), False),
])
def test_server6189_date_parts_before_1970(db, date, synthetic):
    """jstests/aggregation/bugs/server6189.js: the date-part operators on dates before 1970 (seconds
    floor toward the past: 03:04:04.999 is second 4), before 1900, at -1 s and 0; 1960-01-02 is a
    Saturday (dayOfWeek 7), day 2 of the year, week 0."""
    coll = db.c
    coll.drop()
    coll.insert_one({"date": date})
    ops = ["year", "month", "dayOfMonth", "hour", "minute", "second", "millisecond"]
    (doc,) = coll.aggregate([{"$project": {"_id": 0, **{op: {f"${op}": "$date"} for op in ops},
                                           "week": {"$week": "$date"}, "dayOfWeek": {"$dayOfWeek": "$date"},
                                           "dayOfYear": {"$dayOfYear": "$date"}}}])
    assert [doc[op] for op in ops] == [date.year, date.month, date.day, date.hour, date.minute, date.second,
                                       date.microsecond // 1000]
    if synthetic:
        assert (doc["week"], doc["dayOfWeek"], doc["dayOfYear"]) == (0, 7, 2)


# ----------------------------------------------------------------------------------- wire-level cases

def failure(db, expression, doc=None) -> tuple[int, str]:
    coll = db.c
    coll.drop()
    coll.insert_one(doc or {"_id": 0})
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$project": {"v": expression}}]))
    return e.value.code, e.value.details["codeName"]


INT64_MAX = 2**63 - 1
OVERFLOWS = [
    # date_time_support_test.cpp TruncateDate.ErrorHandling / DateDiff.Millisecond / DateAdd.*
    ({"$dateTrunc": {"date": dt.datetime(2000, 1, 1, 2), "unit": "hour", "binSize": INT64_MAX // 64}}, 5439002),
    ({"$dateTrunc": {"date": dt.datetime(2000, 1, 1, 2), "unit": "week", "binSize": 100_000_000_001}}, 5439006),
    ({"$dateTrunc": {"date": dt.datetime(1980, 1, 1), "unit": "year", "binSize": 1_000_000_000}}, 5976500),
    ({"$dateTrunc": {"date": "$lo", "unit": "millisecond"}}, 5439000),
    ({"$dateDiff": {"startDate": "$lo", "endDate": "$hi", "unit": "millisecond"}}, 5166308),
    ({"$dateAdd": {"startDate": dt.datetime(2020, 12, 31), "unit": "millisecond", "amount": INT64_MAX}}, 159),
    ({"$dateFromParts": {"year": 1970, "millisecond": 18014398509481984.0}}, 159),
]


@pytest.mark.parametrize("expression, code", OVERFLOWS, ids=[f"{next(iter(e))}-{c}" for e, c in OVERFLOWS])
def test_date_overflows_answer_mongods_codes(db, expression, code):
    """Overflow in date arithmetic is mongod's code (DurationOverflow 159 where mongod's Duration
    overflows), never a wrong date or an internal error."""
    name = "DurationOverflow" if code == 159 else f"Location{code}"
    assert failure(db, expression, {"_id": 0, "lo": DatetimeMS(-(2**63)), "hi": DatetimeMS(INT64_MAX)}) == \
        (code, name)


@pytest.mark.parametrize("zone, wall, expected", [
    ("America/New_York", (2020, 11, 1, 1, 30), dt.datetime(2020, 11, 1, 6, 30)),
    ("Europe/London", (2021, 10, 31, 1, 30), dt.datetime(2021, 10, 31, 1, 30)),
    ("Australia/Lord_Howe", (2021, 4, 4, 1, 40, 5), dt.datetime(2021, 4, 3, 15, 10, 5)),
    ("America/New_York", (2021, 3, 14, 2, 30), dt.datetime(2021, 3, 14, 7, 30)),
], ids=["new_york-repeated", "london-repeated", "lord_howe-repeated", "new_york-skipped"])
def test_date_from_parts_of_a_repeated_wall_time_is_standard_time(db, zone, wall, expected):
    """date_time_support_test.cpp (DateAdd_LordHoweTimezoneDST): a repeated wall time built from parts
    is the standard-time instant; a skipped one moves forward by the gap. A string read in the zone
    ($dateFromString, free-form or with a format) is built the same way."""
    names = ["year", "month", "day", "hour", "minute", "second"]
    y, mo, d, h, mi, *rest = wall
    text = f"{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{(rest or [0])[0]:02}"
    (doc,) = project(db, [0], {
        "v": {"$dateFromParts": {**dict(zip(names, wall, strict=False)), "timezone": zone}},
        "s": {"$dateFromString": {"dateString": text, "timezone": zone}},
        "f": {"$dateFromString": {"dateString": text, "format": "%Y-%m-%dT%H:%M:%S", "timezone": zone}}})
    assert (doc["v"], doc["s"], doc["f"]) == (expected, expected, expected)


FORMAT_READS = [  # date_time_support_test.cpp TEST(DateFromString, *), through $dateFromString
    ("2017-302", "%Y-%j", dt.datetime(2017, 10, 30)),  # %j counts from 0 (timelib): "2017, Day 303"
    ("2017-07-04T10:56:02Z", "%Y-%m-%dT%H:%M:%SZ", dt.datetime(2017, 7, 4, 10, 56, 2)),
    ("4/26/1992 7:05:09", "%m/%d/%Y %H:%M:%S", dt.datetime(1992, 4, 26, 7, 5, 9)),  # one-digit m, d, H read
]
FORMAT_FAILURES = [
    ("2017", "%Y", 'an incomplete date/time string has been found, with elements missing: "2017"'),
    ("2017-05", "%Y-%m", 'an incomplete date/time string has been found, with elements missing: "2017-05"'),
    ("2017-01-01T00:1:00", "%Y-%m-%dT%H:%M:%S", "14: A two digit minute could not be found '1'"),
    ("2017-01-01T00:00:1", "%Y-%m-%dT%H:%M:%S", "17: A two digit second could not be found '1'"),
    ("2017-01-01T00:1:00", "%Y-%m-%dT%H%M%S",
     "Error parsing date string '2017-01-01T00:1:00'; 13: Unexpected data found. ':'; 13: A two digit minute could "
     "not be found ':'; 15: Unexpected data found. ':'"),
    ("2017-55", "%G-%V", "5: ISO Week must be between 1 and 53 '5'"),
    ("2017-8", "%G-%u", "5: Day of week must be between 1 and 7 '8'"),
    ("2017-0", "%G-%u", "5: Day of week must be between 1 and 7 '0'"),
    ("2017 500", "%G %Z", "5: Invalid timezone offset in minutes '5'"),
    ("302", "%j", "0: A 'day of year' can only come after a year has been found '3'"),
]


@pytest.mark.parametrize("text, fmt, expected", FORMAT_READS, ids=[f for _, f, _ in FORMAT_READS])
def test_date_from_string_reads_formats_as_timelib(db, text, fmt, expected):
    """timelib_parse_from_format: numbers skip what precedes them and may be shorter than the
    specifier's width (but %M and %S); %j is the 0-based day of the year."""
    (doc,) = project(db, [0], {"v": {"$dateFromString": {"dateString": text, "format": fmt}}})
    assert doc["v"] == expected


@pytest.mark.parametrize("text, fmt, message", FORMAT_FAILURES, ids=[f"{t}|{f}" for t, f, _ in FORMAT_FAILURES])
def test_date_from_string_format_failures(db, text, fmt, message):
    """ConversionFailure with timelib's errors, all of them (the reading goes on after one): a
    format that leaves the month or day unset is incomplete (no default); %M / %S need two digits;
    %V is 1-53, %u 1-7; %Z needs its sign."""
    coll = db.c
    coll.drop()
    coll.insert_one({"_id": 0})
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$project": {"v": {"$dateFromString": {"dateString": text, "format": fmt}}}}]))
    assert e.value.code == 241 and message in e.value.details["errmsg"], e.value.details
