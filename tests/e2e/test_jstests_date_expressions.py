"""MongoDB's date-expression jstests (group G), ported to pymongo against a real Tidemark server: the
values ``$dateTrunc``, ``$dateDiff``, ``$dateAdd`` / ``$dateSubtract``, ``$dateFromParts`` /
``$dateToParts``, ``$dateFromString`` / ``$dateToString``, the date-part extractors (``$year`` …
``$isoWeek``) and date arithmetic compute, and the error codes (and messages, where the jstest pins
them) they fail with.

Ported from 7.0-era copies in mongodb/mongo ``jstests/aggregation/expressions/``: date_trunc.js,
date_diff.js, date_add_subtract.js, date_expressions_with_timezones.js, date_from_parts.js,
date_to_parts.js, date_from_string.js, date_from_string_on_error.js, date_from_string_on_null.js,
date_to_string.js, date_to_string_on_null.js, date_expr_before_1970.js, day_of_expressions.js,
iso_date_exprs.js, extract_missing_date.js, add_subtract_dates.js; and from ``jstests/aggregation/bugs/``
server11118.js ($dateToString formats) and server6190.js ($week). SBE-only error-code mappings and
explain shapes are out of scope (a 7.0 standalone on the classic engine).

The shell stores JavaScript ``undefined`` as the BSON undefined type; pymongo cannot encode it, so the
cases that use it build their documents / stages as raw BSON (``raw``). Where Tidemark answers otherwise
than MongoDB 7.0, the test keeps MongoDB's answer and ``KNOWN_DIFFERENCES`` (end of the module, grouped
by cause) marks it ``xfail(strict=True)``."""

from __future__ import annotations

import datetime as dt

import pytest
from bson import ObjectId
from bson.codec_options import CodecOptions
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument
from bson.timestamp import Timestamp
from harness.jstests import UNDEFINED, iso, ms, raw
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "aggregate", "drop")

EPOCH = dt.datetime(1970, 1, 1)
CONVERSION_FAILURE = 241
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
DURATION_OVERFLOW = 159  # ErrorCodes.DurationOverflow (15 is Overflow)


def millis(d: dt.datetime) -> int:
    return (d - EPOCH) // dt.timedelta(milliseconds=1)


# --------------------------------------------------------------------------------------------------
# raw BSON, for JavaScript's ``undefined``

# --------------------------------------------------------------------------------------------------
# helpers


def fill(db, docs, name: str = "c"):
    coll = db[name]
    coll.drop()
    if docs:
        coll.insert_many([raw(d) if any(v is UNDEFINED for v in d.values()) else d for d in docs])
    return coll


def _failure(coll, pipeline) -> tuple[list | None, OperationFailure | None]:
    """The aggregate's documents (first batch and getMores), or the server's error."""
    try:
        return list(coll.aggregate(pipeline)), None
    except OperationFailure as error:
        return None, error


def run(coll, pipeline) -> list:
    """The aggregate's documents; a server error fails the test with a short report (no pymongo frames:
    formatting those for every expected failure would cost seconds)."""
    __tracebackhide__ = True
    docs, error = _failure(coll, pipeline)
    if error is not None:
        raise AssertionError(f"aggregate failed: {error.code} {error.details.get('errmsg')!r}; pipeline {pipeline!r}")
    return docs


def expect_error(coll, pipeline, code, message: str | None = None):
    """The aggregate (its first batch or a later getMore) fails with ``code`` (an int or a tuple of the
    codes the jstest accepts), and the message contains ``message`` when given."""
    __tracebackhide__ = True
    codes = code if isinstance(code, tuple) else (code,)
    docs, error = _failure(coll, pipeline)
    assert error is not None, f"expected error {codes}, got documents {docs!r}"
    assert error.code in codes, error.details
    if message is not None:
        assert message in error.details.get("errmsg", ""), error.details
    return error


def value_of(coll, expression):
    """The value ``expression`` computes on the collection's single document (MISSING when absent)."""
    (doc,) = run(coll, [{"$project": {"_id": 0, "v": expression}}])
    return doc.get("v", MISSING)


MISSING = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


def strict(value):
    """A form of ``value`` that keeps int / long / double apart (Python's ``6 == Int64(6) == 6.0``)."""
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strict(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | Decimal128):
        return (type(value).__name__, value)
    return value


# ==================================================================================================
# date_trunc.js


SOME_DATE = iso("2020-11-01T18:23:36Z")
TRUNC = [{"$project": {"_id": False, "date_trunc": {
    "$dateTrunc": {"date": "$date", "unit": "$unit", "binSize": "$binSize", "timezone": "$timeZone"}}}}]
TRUNC_WEEK = [{"$project": {"_id": False, "date_trunc": {"$dateTrunc": {
    "date": "$date", "unit": "$unit", "binSize": "$binSize", "timezone": "$timeZone",
    "startOfWeek": "$startOfWeek"}}}}]


def _trunc_literal(spec):
    return [{"$project": {"_id": False, "date_trunc": {"$dateTrunc": spec}}}]


DATE_TRUNC_CASES = [
    # (id, pipeline, input documents, expected documents or an error code)
    ("constants", [{"$project": {"_id": True, "date_trunc": {"$dateTrunc": {
        "date": SOME_DATE, "unit": "hour", "binSize": 2}}}}],
     [{"_id": 1}], [{"_id": 1, "date_trunc": iso("2020-11-01T18:00:00Z")}]),
    ("field-paths", TRUNC_WEEK, [{"date": iso("2021-12-01T18:23:36Z"), "unit": "hour", "binSize": 4,
                                  "timeZone": "America/New_York", "startOfWeek": "IGNORED"}],
     [{"date_trunc": iso("2021-12-01T17:00:00Z")}]),
    ("not-an-object", _trunc_literal("A"), [], 5439007),
    ("unknown-argument", _trunc_literal({"endDate": 1}), [], 5439008),
    ("no-date", _trunc_literal({"unit": "week"}), [], 5439009),
    ("no-unit", _trunc_literal({"date": SOME_DATE}), [], 5439010),
    ("defaults", _trunc_literal({"date": "$date", "unit": "week"}), [{"date": iso("2021-02-15T18:23:36Z")}],
     [{"date_trunc": iso("2021-02-14T00:00:00Z")}]),
    ("optional-arguments", TRUNC_WEEK, [{"date": iso("2000-01-30T18:00:00Z"), "unit": "week", "binSize": 2,
                                         "timeZone": "America/New_York", "startOfWeek": "mon"}],
     [{"date_trunc": iso("2000-01-17T05:00:00Z")}]),
    ("objectid-date", _trunc_literal({"date": "$_id", "unit": "minute", "binSize": 10}),
     [{"_id": ObjectId("507c7f79bcf86cd7994f6c0e")}], [{"date_trunc": iso("2012-10-15T21:20:00Z")}]),
    ("timestamp-date", _trunc_literal({"date": "$ts", "unit": "second", "binSize": 10}),
     [{"ts": Timestamp(1350336377, 0)}], [{"date_trunc": iso("2012-10-15T21:26:10Z")}]),
    ("date-string", TRUNC, [{"date": "string", "unit": "hour", "binSize": 1, "timeZone": "UTC"}], 5439012),
    ("date-missing", TRUNC, [{"unit": "H", "binSize": "string", "timeZone": 1}], [{"date_trunc": None}]),
    ("date-null", TRUNC, [{"date": None, "unit": "hour", "binSize": 1, "timeZone": "UTC"}],
     [{"date_trunc": None}]),
    ("unit-null", TRUNC, [{"date": SOME_DATE, "unit": None, "binSize": 1, "timeZone": "UTC"}],
     [{"date_trunc": None}]),
    ("unit-missing", TRUNC, [{"date": "Invalid", "binSize": "Invalid", "timeZone": "Invalid"}],
     [{"date_trunc": None}]),
    ("unit-number", TRUNC, [{"date": SOME_DATE, "unit": 1, "binSize": 1, "timeZone": "UTC"}], 5439013),
    ("unit-unknown", TRUNC, [{"date": SOME_DATE, "unit": "century", "binSize": 1, "timeZone": "UTC"}], 5439014),
    ("binsize-null", TRUNC, [{"date": SOME_DATE, "unit": "hour", "binSize": None, "timeZone": "UTC"}],
     [{"date_trunc": None}]),
    ("binsize-missing", TRUNC, [{"date": "Invalid", "unit": "invalid", "timeZone": "Invalid"}],
     [{"date_trunc": None}]),
    ("binsize-string", TRUNC, [{"date": SOME_DATE, "unit": "hour", "binSize": "Number", "timeZone": "UTC"}],
     5439017),
    ("binsize-zero", TRUNC, [{"date": SOME_DATE, "unit": "hour", "binSize": 0, "timeZone": "UTC"}], 5439018),
    ("binsize-fraction", TRUNC, [{"date": SOME_DATE, "unit": "hour", "binSize": 2.5, "timeZone": "UTC"}],
     5439017),
    ("binsize-decimal", TRUNC, [{"date": iso("2020-01-30T18:59:00Z"), "unit": "minute",
                                 "binSize": Decimal128("15"), "timeZone": "UTC"}],
     [{"date_trunc": iso("2020-01-30T18:45:00Z")}]),
    ("binsize-long", TRUNC, [{"date": iso("2020-01-30T18:59:00Z"), "unit": "day", "binSize": Int64(1),
                              "timeZone": "UTC"}], [{"date_trunc": iso("2020-01-30T00:00:00Z")}]),
    ("binsize-int", TRUNC, [{"date": iso("2020-01-30T18:59:00.003Z"), "unit": "millisecond", "binSize": 1000,
                             "timeZone": "UTC"}], [{"date_trunc": iso("2020-01-30T18:59:00Z")}]),
    ("timezone-null", TRUNC, [{"date": SOME_DATE, "unit": "hour", "binSize": 1, "timeZone": None}],
     [{"date_trunc": None}]),
    ("timezone-missing", TRUNC, [{"date": 1, "unit": "century", "binSize": "1"}], [{"date_trunc": None}]),
    ("timezone-number", TRUNC, [{"date": SOME_DATE, "unit": "hour", "binSize": 1, "timeZone": 1}], 40517),
    ("timezone-unknown", TRUNC, [{"date": SOME_DATE, "unit": "hour", "binSize": 1,
                                  "timeZone": "America/Invalid"}], 40485),
    ("startofweek-null", TRUNC_WEEK, [{"date": SOME_DATE, "unit": "week", "startOfWeek": None}],
     [{"date_trunc": None}]),
    ("startofweek-missing", TRUNC_WEEK, [{"date": 1, "unit": "week", "binSize": "", "timeZone": 1}],
     [{"date_trunc": None}]),
    ("startofweek-number", TRUNC_WEEK, [{"date": SOME_DATE, "unit": "week", "binSize": 1, "timeZone": "GMT",
                                         "startOfWeek": 1}], 5439015),
    ("startofweek-number-not-week", TRUNC_WEEK, [{"date": iso("2020-01-30T18:59:00Z"), "binSize": 1,
                                                  "unit": "year", "timeZone": "GMT", "startOfWeek": 1}],
     [{"date_trunc": iso("2020-01-01T00:00:00Z")}]),
    ("startofweek-unknown", TRUNC_WEEK, [{"date": SOME_DATE, "unit": "week", "binSize": 1, "timeZone": "GMT",
                                          "startOfWeek": "FRIDIE"}], 5439016),
]


def _check_case(db, pipeline, docs, expected):
    coll = fill(db, docs)
    if isinstance(expected, int):
        expect_error(coll, pipeline, expected)
    else:
        assert run(coll, pipeline) == expected


@pytest.mark.parametrize("pipeline, docs, expected", [c[1:] for c in DATE_TRUNC_CASES],
                         ids=[c[0] for c in DATE_TRUNC_CASES])
def test_date_trunc(db, pipeline, docs, expected):
    """date_trunc.js: $dateTrunc's result for each argument shape (constants, field paths, ObjectId and
    Timestamp dates, numeric binSize types, startOfWeek / timezone), null for a nullish argument even
    when the others are invalid, and the parse-time (5439007-5439010, with no documents) and run-time
    (5439012-5439018, 40517, 40485) error codes."""
    _check_case(db, pipeline, docs, expected)


# ==================================================================================================
# date_diff.js


DIFF = [{"$project": {"_id": False, "date_diff": {"$dateDiff": {
    "startDate": "$startDate", "endDate": "$endDate", "unit": "$unit", "timezone": "$timeZone"}}}}]
DIFF_WEEK = [{"$project": {"_id": False, "date_diff": {"$dateDiff": {
    "startDate": "$startDate", "endDate": "$endDate", "unit": "$unit", "timezone": "$timeZone",
    "startOfWeek": "$startOfWeek"}}}}]


def _diff_literal(spec, keep_id=False):
    return [{"$project": {"_id": keep_id, "date_diff": {"$dateDiff": spec}}}]


DATE_DIFF_CASES = [
    ("constants", _diff_literal({"startDate": SOME_DATE, "endDate": iso("2020-11-02T00:00:00Z"), "unit": "hour"},
                                keep_id=True), [{"_id": 1}], [{"_id": 1, "date_diff": Int64(6)}]),
    ("field-paths", DIFF_WEEK, [{"startDate": SOME_DATE, "endDate": iso("2020-11-02T00:00:00Z"), "unit": "hour",
                                 "timeZone": "America/New_York", "startOfWeek": "IGNORED"}],
     [{"date_diff": Int64(6)}]),
    ("field-paths-no-timezone", _diff_literal({"startDate": "$startDate", "endDate": "$endDate", "unit": "$unit"}),
     [{"startDate": SOME_DATE, "endDate": iso("2020-11-02T00:00:00Z"), "unit": "hour"}],
     [{"date_diff": Int64(6)}]),
    ("objectids", _diff_literal({"startDate": "$_id", "endDate": "$_id", "unit": "millisecond",
                                 "timezone": "America/New_York"}), [{}], [{"date_diff": Int64(0)}]),
    ("timestamps", _diff_literal({"startDate": "$ts", "endDate": "$ts", "unit": "millisecond"}),
     [{"ts": Timestamp(1600000000, 7)}], [{"date_diff": Int64(0)}]),
    ("startdate-string", DIFF, [{"startDate": "string", "endDate": SOME_DATE, "unit": "hour", "timeZone": "UTC"}],
     5166307),
    ("startdate-missing", DIFF, [{"endDate": 1, "unit": "century", "timeZone": "INVALID"}], [{"date_diff": None}]),
    ("startdate-null", DIFF, [{"startDate": None, "endDate": SOME_DATE, "unit": "hour", "timeZone": "UTC"}],
     [{"date_diff": None}]),
    ("enddate-number", DIFF, [{"startDate": SOME_DATE, "endDate": 1, "unit": "hour", "timeZone": "UTC"}], 5166307),
    ("enddate-missing", DIFF, [{"startDate": "", "unit": "epoch", "timeZone": "INVALID"}], [{"date_diff": None}]),
    ("unit-null", DIFF, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": None, "timeZone": "UTC"}],
     [{"date_diff": None}]),
    ("unit-missing", DIFF, [{"startDate": 1, "endDate": 2, "timeZone": "INVALID"}], [{"date_diff": None}]),
    ("unit-number", DIFF, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": 5, "timeZone": "UTC"}], 5439013),
    ("unit-unknown", DIFF, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "decade", "timeZone": "UTC"}],
     5439014),
    ("timezone-null", DIFF, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "hour", "timeZone": None}],
     [{"date_diff": None}]),
    ("timezone-missing", DIFF, [{"startDate": 1, "endDate": 2, "unit": "century"}], [{"date_diff": None}]),
    ("timezone-number", DIFF, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "hour", "timeZone": 1}],
     40517),
    ("timezone-unknown", DIFF, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "hour",
                                 "timeZone": "America/Invalid"}], 40485),
    ("startofweek-monday", DIFF_WEEK, [{"startDate": iso("2021-01-24T18:23:36Z"), "endDate": iso("2021-01-25T02:23:36Z"),
                                        "unit": "week", "timeZone": "GMT", "startOfWeek": "MONDAY"}],
     [{"date_diff": Int64(1)}]),
    ("startofweek-and-timezone", DIFF_WEEK, [{"startDate": iso("2021-01-17T05:00:00Z"),
                                              "endDate": iso("2021-01-17T04:59:00Z"), "unit": "week",
                                              "timeZone": "America/New_York", "startOfWeek": "sunday"}],
     [{"date_diff": Int64(-1)}]),
    ("startofweek-default-sunday", _diff_literal({"startDate": "$startDate", "endDate": "$endDate", "unit": "week"}),
     [{"startDate": iso("2021-01-24T18:23:36Z"), "endDate": iso("2021-01-25T02:23:36Z")}],
     [{"date_diff": Int64(0)}]),
    ("startofweek-null", DIFF_WEEK, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "week",
                                      "startOfWeek": None}], [{"date_diff": None}]),
    ("startofweek-missing", DIFF_WEEK, [{"startDate": 1, "endDate": 2, "unit": "week", "timeZone": 1}],
     [{"date_diff": None}]),
    ("startofweek-number", DIFF_WEEK, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "week",
                                        "timeZone": "GMT", "startOfWeek": 1}], 5439015),
    ("startofweek-number-not-week", DIFF_WEEK, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "hour",
                                                 "timeZone": "GMT", "startOfWeek": 1}], [{"date_diff": Int64(0)}]),
    ("startofweek-unknown", DIFF_WEEK, [{"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "week",
                                         "timeZone": "GMT", "startOfWeek": "FRIDIE"}], 5439016),
]


@pytest.mark.parametrize("pipeline, docs, expected", [c[1:] for c in DATE_DIFF_CASES],
                         ids=[c[0] for c in DATE_DIFF_CASES])
def test_date_diff(db, pipeline, docs, expected):
    """date_diff.js: $dateDiff returns a long (checked by type) for constants, field paths, ObjectIds and
    Timestamps, honours startOfWeek and timezone for 'week', is null for any nullish argument whatever
    the others hold, and fails with 5166307 / 5439013-5439016 / 40517 / 40485."""
    coll = fill(db, docs)
    if isinstance(expected, int):
        expect_error(coll, pipeline, expected)
    else:
        assert strict(run(coll, pipeline)) == strict(expected)


# ==================================================================================================
# date_add_subtract.js


ADD_DOC = {"_id": 1, "date": iso("2020-12-31T12:10:05Z"), "unit": "month", "timezone": "Europe/Paris"}


def _add(start, unit, amount, tz=MISSING, op="$dateAdd"):
    spec = {"startDate": start, "unit": unit, "amount": amount}
    if tz is not MISSING:
        spec["timezone"] = tz
    return {op: spec}


def _sub(start, unit, amount, tz=MISSING):
    return _add(start, unit, amount, tz, op="$dateSubtract")


DATE_ADD_CASES = [
    (_add(iso("2020-11-30T12:10:05Z"), "day", 1), iso("2020-12-01T12:10:05Z")),
    (_add("$dateSent", "day", 1), None),
    (_add("$date", "$timeunit", 1), None),
    (_add("$date", "day", None), None),
    (_add("$date", "$unit", 1, None), None),
    # a nullish argument wins over invalid ones
    (_add("$dateSent", "workday", 1), None),
    (_add("New year day", "$timeunit", 1), None),
    (_add("$date", "workday", "$amount", "Unknown"), None),
    (_add("$date", "$unit", 1.5, None), None),
    # across the end of daylight saving time: 24 hours vs one calendar day
    (_add(iso("2020-10-24T18:10:00Z"), "hour", 24, "Europe/Paris"), iso("2020-10-25T18:10:00Z")),
    (_add(iso("2020-10-24T18:10:00Z"), "day", 1, "Europe/Paris"), iso("2020-10-25T19:10:00Z")),
    (_add(iso("2021-01-30T23:30:00Z"), "month", 1, "Europe/Paris"), iso("2021-02-27T23:30:00Z")),
    (_add("$date", "year", -1), iso("2019-12-31T12:10:05Z")),
    (_add("$date", "quarter", 1), iso("2021-03-31T12:10:05Z")),
    (_add("$date", "month", 2), iso("2021-02-28T12:10:05Z")),
    (_add("$date", "week", 1), iso("2021-01-07T12:10:05Z")),
    (_add("$date", "day", 1), iso("2021-01-01T12:10:05Z")),
    (_add("$date", "hour", 2), iso("2020-12-31T14:10:05Z")),
    (_add("$date", "minute", -20), iso("2020-12-31T11:50:05Z")),
    (_add("$date", "minute", 50), iso("2020-12-31T13:00:05Z")),
    (_add("$date", "millisecond", 1050), iso("2020-12-31T12:10:06.050Z")),
    (_add("$date", "$unit", 1), iso("2021-01-31T12:10:05Z")),
    (_add("$date", "month", 2, "$timezone"), iso("2021-02-28T12:10:05Z")),
    (_add("$date", "hour", 2, "$timezone"), iso("2020-12-31T14:10:05Z")),
    (_sub("$date", "year", 1), iso("2019-12-31T12:10:05Z")),
    (_sub("$date", "year", 2), iso("2018-12-31T12:10:05Z")),
    (_sub("$date", "quarter", 2), iso("2020-06-30T12:10:05Z")),
    (_sub("$date", "$unit", 1), iso("2020-11-30T12:10:05Z")),
    (_sub("$date", "day", 15), iso("2020-12-16T12:10:05Z")),
    (_sub("$date", "hour", 48), iso("2020-12-29T12:10:05Z")),
    (_sub("$date", "minute", 15), iso("2020-12-31T11:55:05Z")),
    (_sub("$date", "second", 125), iso("2020-12-31T12:08:00Z")),
    (_sub("$date", "$unit", 3), iso("2020-09-30T12:10:05Z")),
    (_sub("$date", "$unit", 3, "$timezone"), iso("2020-09-30T11:10:05Z")),
    (_sub(iso("2021-01-31T03:00:00Z"), "month", 2), iso("2020-11-30T03:00:00Z")),
    (_sub(iso("2021-01-31T03:00:00Z"), "month", 2, "America/New_York"), iso("2020-12-01T03:00:00Z")),
    (_sub(_add("$date", "hour", 2), "hour", 2), iso("2020-12-31T12:10:05Z")),
]


@pytest.mark.parametrize("spec, expected", DATE_ADD_CASES, ids=[str(i) for i in range(len(DATE_ADD_CASES))])
def test_date_add_subtract(db, spec, expected):
    """date_add_subtract.js: $dateAdd / $dateSubtract for every unit, with the last-day-of-month
    adjustment, the daylight-saving change in a timezone, unit / timezone from fields, nesting, and null
    whenever an argument is nullish (even if another is invalid)."""
    coll = fill(db, [ADD_DOC])
    assert run(coll, [{"$project": {"_id": 0, "newDate": spec}}]) == [{"newDate": expected}]


def test_date_add_subtract_equivalence(db):
    """date_add_subtract.js: subtracting a month from 2020-12-31T12:10:05Z gives the same document as
    adding 5 seconds to 2020-11-30T12:10:00Z."""
    coll = fill(db, [ADD_DOC])
    left = run(coll, [{"$project": {"newDate": _sub("$date", "month", 1)}}])
    right = run(coll, [{"$project": {"newDate": _add(iso("2020-11-30T12:10:00Z"), "second", 5)}}])
    assert left == right == [{"_id": 1, "newDate": iso("2020-11-30T12:10:05Z")}]


DATE_ADD_ERRORS = [
    ("no-startdate", {"$dateAdd": {"unit": "second", "amount": 120}}, 5166402),
    ("no-unit", {"$dateSubtract": {"startDate": "$date", "amount": 1}}, 5166402),
    ("unknown-argument", {"$dateSubtract": {"startDate": "$date", "units": "day", "amount": 1}}, 5166401),
    ("startdate-string", _sub("myBirthDate", "year", 10), 5166403),
    ("unit-number", _add("$date", 1, 10), 5166404),
    ("unit-unknown", _add("$date", "epoch", 10), FAILED_TO_PARSE),
    ("amount-fraction", _sub("$date", "year", 1.001), 5166405),
    ("overflow", _sub("$date", "month", 12.0 * 300000000), 5166406),
    ("amount-too-large", _sub("$date", "month", -30000000000.0), 5976500),
    ("amount-not-negatable", _sub("$date", "day", -9223372036854775808.0), 6045000),
    ("timezone-unknown", _add("$date", "year", 1, "Unknown"), 40485),
]


@pytest.mark.parametrize("spec, code", [c[1:] for c in DATE_ADD_ERRORS], ids=[c[0] for c in DATE_ADD_ERRORS])
def test_date_add_subtract_errors(db, spec, code):
    """date_add_subtract.js: the error codes of $dateAdd / $dateSubtract (missing or unknown arguments,
    wrong types, an unknown unit, a fractional amount, overflow, an amount that cannot be negated, an
    unknown timezone). Amounts are sent as doubles, as the shell does."""
    coll = fill(db, [ADD_DOC])
    expect_error(coll, [{"$project": {"newDate": spec}}], code)


# ==================================================================================================
# date_expressions_with_timezones.js


SALES = [
    {"_id": 0, "date": iso("2017-06-16T00:00:00.000Z"), "sales": 1},
    {"_id": 1, "date": iso("2017-06-16T12:02:21.013Z"), "sales": 2},
    {"_id": 2, "date": iso("2017-06-17T00:00:00.000Z"), "sales": 2},
    {"_id": 3, "date": iso("2017-06-17T12:02:21.013Z"), "sales": 2},
    {"_id": 4, "date": iso("2017-06-17T15:00:33.101Z"), "sales": 2},
]


@pytest.mark.parametrize("timezone, expected", [
    (None, [(16, 3), (17, 6)]),
    ("America/New_York", [(15, 1), (16, 4), (17, 4)]),
    ("Australia/Sydney", [(16, 3), (17, 4), (18, 2)]),
])
def test_date_parts_with_timezones(db, timezone, expected):
    """date_expressions_with_timezones.js: grouping sales by {$year, $month, $dayOfMonth} in UTC, New York
    and Sydney moves the sales near midnight to the neighbouring day."""
    coll = fill(db, SALES)

    def part(op):
        return {op: "$date"} if timezone is None else {op: {"date": "$date", "timezone": timezone}}

    got = run(coll, [
        {"$group": {"_id": {"year": part("$year"), "month": part("$month"), "day": part("$dayOfMonth")},
                    "totalSales": {"$sum": "$sales"}}},
        {"$sort": {"_id.year": 1, "_id.month": 1, "_id.day": 1}},
    ])
    assert got == [{"_id": {"year": 2017, "month": 6, "day": day}, "totalSales": n} for day, n in expected]


# ==================================================================================================
# date_from_parts.js


def test_date_from_parts_basics(db):
    """date_from_parts.js (basic sanity): a year alone in Amsterdam / Tokyo, year-month-day from a
    sub-document with its own timezone, and the argument errors on that collection: a non-object
    (40519), no year (40516), a boolean year (40515), an unknown (40485) or numeric (40517) timezone."""
    parts = {"year": 2017, "month": 6, "day": 19, "hour": 15, "minute": 13, "second": 25, "millisecond": 713}
    coll = fill(db, [
        {"_id": 0, **parts},
        {"_id": 1, **parts, "timezone": "Europe/Amsterdam"},
        {"_id": 2, **parts, "timezone": "Asia/Tokyo"},
        {"_id": 3, "date": {**parts, "timezone": "America/Chicago"}},
    ])
    got = run(coll, [{"$match": {"year": {"$exists": True}, "timezone": {"$exists": True}}},
                     {"$project": {"date": {"$dateFromParts": {"year": "$year", "timezone": "$timezone"}}}}])
    assert sorted(got, key=lambda d: d["_id"]) == [{"_id": 1, "date": iso("2016-12-31T23:00:00Z")},
                                                   {"_id": 2, "date": iso("2016-12-31T15:00:00Z")}]
    got = run(coll, [{"$match": {"date.year": {"$exists": True}}},
                     {"$project": {"date": {"$dateFromParts": {"year": "$date.year", "month": "$date.month",
                                                               "day": "$date.day", "timezone": "$date.timezone"}}}}])
    assert got == [{"_id": 3, "date": iso("2017-06-19T05:00:00Z")}]
    for spec, code in [("$date", 40519), ({"timezone": "$timezone"}, 40516), ({"year": False}, 40515),
                       ({"year": 2012, "timezone": "DoesNot/Exist"}, 40485), ({"year": 2012, "timezone": 5}, 40517)]:
        expect_error(coll, [{"$project": {"date": {"$dateFromParts": spec}}}], code)


BERLIN = {"_id": 0, "year": 2017, "month": 6, "day": 23, "hour": 14, "minute": 27, "second": 37,
          "millisecond": 742, "timezone": "Europe/Berlin"}
BERLIN_PARTS = {"timezone": "Europe/Berlin", "year": 2017, "month": 6, "day": 23, "hour": 14, "minute": 27,
                "second": 37, "millisecond": 742}


def _typed(kind):
    return {k: (v if k == "timezone" else kind(v)) for k, v in BERLIN_PARTS.items()}


FROM_PARTS_SAME_INSTANT = [
    ("doubles", {k: (float(v) if k != "timezone" else v) for k, v in BERLIN_PARTS.items()}),
    ("ints", _typed(int)),
    ("longs", _typed(Int64)),
    ("decimals", _typed(lambda v: Decimal128(str(v)))),
    ("offset-+02:00", {**BERLIN_PARTS, "timezone": "+02:00"}),
    ("offset--02", {**BERLIN_PARTS, "timezone": "-02", "hour": 10}),
    ("offset-+04:15", {**BERLIN_PARTS, "timezone": "+04:15", "hour": 16, "minute": 42}),
    ("timezone-field", {**BERLIN_PARTS, "timezone": "$timezone"}),
    *[(f"{name}-field", {**BERLIN_PARTS, name: f"${name}"})
      for name in ("year", "month", "day", "hour", "minute", "second", "millisecond")],
]


@pytest.mark.parametrize("parts", [c[1] for c in FROM_PARTS_SAME_INSTANT], ids=[c[0] for c in FROM_PARTS_SAME_INSTANT])
def test_date_from_parts_same_instant(db, parts):
    """date_from_parts.js: every spelling of 2017-06-23 14:27:37.742 in Berlin — numbers as double / int /
    long / decimal, fixed offsets (+02:00, -02, +04:15), each part from a field — is the same instant."""
    coll = fill(db, [BERLIN])
    assert run(coll, [{"$project": {"date": {"$dateFromParts": parts}}}]) == [
        {"_id": 0, "date": iso("2017-06-23T12:27:37.742Z")}]


FROM_PARTS_MISSING = [{"year": "$year"}, {"year": 2017, "month": "$month"}, {"year": 2017, "day": "$day"},
                      {"year": 2017, "hour": "$hour"}, {"year": 2017, "minute": "$minute"},
                      {"year": 2017, "second": "$second"}, {"year": 2017, "millisecond": "$millisecond"},
                      {"isoWeekYear": "$isoWeekYear"}, {"isoWeekYear": 2017, "isoWeek": "$isoWeek"},
                      {"isoWeekYear": 2017, "isoDayOfWeek": "$isoDayOfWeek"}, {"year": 2017, "timezone": "$timezone"}]


@pytest.mark.parametrize("parts", FROM_PARTS_MISSING, ids=[str(i) for i in range(len(FROM_PARTS_MISSING))])
def test_date_from_parts_missing_part_is_null(db, parts):
    """date_from_parts.js: a part (or the timezone) that refers to a missing field makes the result null."""
    coll = fill(db, [{"_id": 0}])
    assert run(coll, [{"$project": {"date": {"$dateFromParts": parts}}}]) == [{"_id": 0, "date": None}]


def _false_parts():
    cases = []
    for parts in FROM_PARTS_MISSING[:-1]:
        (name,) = [k for k, v in parts.items() if isinstance(v, str)]
        cases.append(({**parts, name: "$falseValue"}, 40515))
    cases.append(({"year": 2017, "timezone": "$falseValue"}, 40517))
    return cases


@pytest.mark.parametrize("parts, code", _false_parts(), ids=[str(i) for i in range(11)])
def test_date_from_parts_uncoercible_part(db, parts, code):
    """date_from_parts.js: a part that evaluates to false fails with 40515 (a timezone with 40517)."""
    coll = fill(db, [{"_id": 0, "falseValue": False}])
    expect_error(coll, [{"$project": {"date": {"$dateFromParts": parts}}}], code)


@pytest.mark.parametrize("parts", [{"year": "$outOfRangeValue"}, {"year": -1}, {"year": 0}, {"year": 10000}])
def test_date_from_parts_year_out_of_range(db, parts):
    """date_from_parts.js: a year outside 1..9999 (10002 from a field, -1, 0, 10000) fails with 40523."""
    coll = fill(db, [{"_id": 0, "outOfRangeValue": 10002}])
    expect_error(coll, [{"$project": {"date": {"$dateFromParts": parts}}}], 40523)


FROM_PARTS_CARRY = [
    ("0001-01-01T00:00:00.000Z", {"year": "$one"}),
    ("9999-01-01T00:00:00.000Z", {"year": "$tenThousandMinusOne"}),
    ("2016-11-01T00:00:00.000Z", {"year": 2017, "month": "$minusOne"}),
    ("2016-12-01T00:00:00.000Z", {"year": 2017, "month": "$zero"}),
    ("2018-01-01T00:00:00.000Z", {"year": 2017, "month": "$thirteen"}),
    ("2016-12-30T00:00:00.000Z", {"year": 2017, "day": "$minusOne"}),
    ("2016-12-31T00:00:00.000Z", {"year": 2017, "day": "$zero"}),
    ("2017-03-02T00:00:00.000Z", {"year": 2017, "day": "$sixtyOne"}),
    ("2016-12-31T23:00:00.000Z", {"year": 2017, "hour": "$minusOne"}),
    ("2017-01-02T01:00:00.000Z", {"year": 2017, "hour": "$twentyFive"}),
    ("2016-12-31T23:59:00.000Z", {"year": 2017, "minute": "$minusOne"}),
    ("2017-01-01T00:00:00.000Z", {"year": 2017, "minute": "$zero"}),
    ("2017-01-01T01:01:00.000Z", {"year": 2017, "minute": "$sixtyOne"}),
    ("2016-12-31T23:59:59.000Z", {"year": 2017, "second": "$minusOne"}),
    ("2017-01-01T00:01:01.000Z", {"year": 2017, "second": "$sixtyOne"}),
    ("2019-04-12T11:50:12.000Z", {"year": 2017, "second": "$seventyMillionAndSomething"}),
    ("1972-04-11T11:50:12.000Z", {"year": 1970, "second": "$seventyMillionAndSomething"}),
    ("2017-08-07T08:51:58.000Z", {"year": 1970, "second": "$secondsSinceEpoch"}),
    ("2016-12-31T23:59:59.999Z", {"year": 2017, "millisecond": "$minusOne"}),
    ("2017-01-01T00:00:01.001Z", {"year": 2017, "millisecond": "$thousandAndOne"}),
    ("2017-01-01T19:57:21.012Z", {"year": 2017, "millisecond": "$seventyMillionAndSomething"}),
    ("2017-01-18T09:14:55.918Z", {"year": 2017, "millisecond": "$secondsSinceEpoch"}),
    ("1970-01-01T19:57:21.012Z", {"year": 1970, "millisecond": "$seventyMillionAndSomething"}),
    ("2017-08-07T08:51:58.551Z", {"year": 1970, "millisecond": "$millisSinceEpoch"}),
]


@pytest.mark.parametrize("expected, parts", FROM_PARTS_CARRY, ids=[str(i) for i in range(len(FROM_PARTS_CARRY))])
def test_date_from_parts_carries_out_of_range_parts(db, expected, parts):
    """date_from_parts.js: parts outside their natural range (-1, 0, 13, 25, 61, 1001, 71841012, epoch
    seconds / milliseconds) carry into the larger units."""
    coll = fill(db, [{"_id": 0, "minusOne": -1, "zero": 0, "one": 1, "thirteen": 13, "twentyFive": 25,
                      "sixtyOne": 61, "thousandAndOne": 1001, "tenThousandMinusOne": 9999,
                      "tenThousandAndOne": 10001, "seventyMillionAndSomething": 71841012,
                      "secondsSinceEpoch": 1502095918, "millisSinceEpoch": Int64(1502095918551)}])
    assert run(coll, [{"$project": {"date": {"$dateFromParts": parts}}}]) == [{"_id": 0, "date": iso(expected)}]


FROM_PARTS_BIG_MILLIS = [
    ("veryBigDoubleA", DURATION_OVERFLOW,
     "Overflow casting from a lower-precision duration to a higher-precision duration"),
    ("veryBigDecimal128A", DURATION_OVERFLOW,
     "Overflow casting from a lower-precision duration to a higher-precision duration"),
    ("veryBigDoubleB", 40515, "'millisecond' must evaluate to an integer"),
    ("veryBigDecimal128B", 40515, "'millisecond' must evaluate to an integer"),
]


@pytest.mark.parametrize("field, code, message", FROM_PARTS_BIG_MILLIS, ids=[c[0] for c in FROM_PARTS_BIG_MILLIS])
def test_date_from_parts_huge_millisecond(db, field, code, message):
    """date_from_parts.js: a millisecond that fits a 64-bit integer but overflows microseconds fails with
    DurationOverflow; one that does not fit a 64-bit integer fails with 40515."""
    coll = fill(db, [{"_id": 0, "veryBigDoubleA": 18014398509481984.0,
                      "veryBigDecimal128A": Decimal128("9223372036854775807"),
                      "veryBigDoubleB": 18014398509481984000.0,
                      "veryBigDecimal128B": Decimal128("9223372036854775807000")}])
    expect_error(coll, [{"$project": {"date": {"$dateFromParts": {"year": 1970, "millisecond": f"${field}"}}}}],
                 code, message)


def _range_case(parts, code, name, bound):
    if code == 31034:
        message = f"'{name}' must evaluate to a value in the range [-32768, 32767]"
    else:
        message = f"'{name}' must evaluate to an integer in the range 1 to 9999"
    return pytest.param(parts, code, message, id=f"{name}-{bound}")


FROM_PARTS_RANGES = [
    _range_case({"year": "$bigYear"}, 40523, "year", "big"),
    _range_case({"year": "$smallYear"}, 40523, "year", "small"),
    *[_range_case({"year": 1970, **extra, name: f"${bound}"}, 31034, name, bound)
      for name, extra in [("month", {}), ("day", {"month": 1}), ("hour", {}), ("minute", {"hour": 0})]
      for bound in ("prettyBigInt", "prettyBigNegativeInt")],
    _range_case({"isoWeekYear": "$bigYear"}, 31095, "isoWeekYear", "big"),
    _range_case({"isoWeekYear": "$smallYear"}, 31095, "isoWeekYear", "small"),
    *[_range_case({"isoWeekYear": 1970, name: f"${bound}"}, 31034, name, bound)
      for name in ("isoWeek", "isoDayOfWeek") for bound in ("prettyBigInt", "prettyBigNegativeInt")],
]


@pytest.mark.parametrize("parts, code, message", FROM_PARTS_RANGES)
def test_date_from_parts_part_ranges(db, parts, code, message):
    """date_from_parts.js: year / isoWeekYear must be in 1..9999 (40523 / 31095) and month, day, hour,
    minute, isoWeek, isoDayOfWeek in [-32768, 32767] (31034), with those messages."""
    coll = fill(db, [{"_id": 0, "bigYear": 10000, "smallYear": 0, "prettyBigInt": 32768,
                      "prettyBigNegativeInt": -32769}])
    expect_error(coll, [{"$project": {"date": {"$dateFromParts": parts}}}], code, message)


FROM_PARTS_BAD_ARGUMENTS = [
    (True, 40519), ([], 40519), ({"unknown": True}, 40518), ({}, 40516),
    ({"year": 2017, "isoWeekYear": 2017}, 40489), ({"year": 2017, "isoWeek": 3}, 40489),
    ({"year": 2017, "isoDayOfWeek": 5}, 40489), ({"isoWeekYear": 2017, "year": 2017}, 40489),
    ({"isoWeekYear": 2017, "month": 12}, 40525), ({"isoWeekYear": 2017, "day": 17}, 40525),
    ({"year": "2017"}, 40515), ({"year": 2017.3}, 40515), ({"year": Decimal128("2017.3")}, 40515),
    ({"year": "$floatField"}, 40515), ({"year": "$decimalField"}, 40515),
]


@pytest.mark.parametrize("spec, code", FROM_PARTS_BAD_ARGUMENTS,
                         ids=[str(i) for i in range(len(FROM_PARTS_BAD_ARGUMENTS))])
def test_date_from_parts_bad_arguments(db, spec, code):
    """date_from_parts.js: a non-object (40519), an unknown argument (40518), no year (40516), mixing
    ISO and calendar parts (40489 / 40525), and a non-integral year (40515)."""
    coll = fill(db, [{"_id": 0, "floatField": 2017.5, "decimalField": Decimal128("2017.5")}])
    expect_error(coll, [{"$project": {"date": {"$dateFromParts": spec}}}], code)


def test_date_from_parts_mixed_numeric_types(db):
    """date_from_parts.js: parts given as decimal / double / int / long, calendar and ISO."""
    coll = fill(db, [
        {"_id": 0, "year": Decimal128("2017"), "month": 6.0, "day": 19, "hour": Int64(15)},
        {"_id": 1, "year": Decimal128("2017"), "minute": 6.0, "second": 19, "millisecond": Int64(15)},
        {"_id": 2, "isoWeekYear": Decimal128("2017"), "isoWeek": 6.0, "isoDayOfWeek": 4},
    ])
    cases = [
        (0, {"year": "$year", "month": "$month", "day": "$day", "hour": "$hour"}, "2017-06-19T15:00:00Z"),
        (1, {"year": "$year", "minute": "$minute", "second": "$second", "millisecond": "$millisecond"},
         "2017-01-01T00:06:19.015Z"),
        (2, {"isoWeekYear": "$isoWeekYear", "isoWeek": "$isoWeek", "isoDayOfWeek": "$isoDayOfWeek"},
         "2017-02-09T00:00:00Z"),
    ]
    for _id, parts, expected in cases:
        got = run(coll, [{"$match": {"_id": _id}}, {"$project": {"date": {"$dateFromParts": parts}}}])
        assert got == [{"_id": _id, "date": iso(expected)}], parts


FROM_PARTS_TIMEZONES = [("-04:00", "2017-06-19T19:01:51.551Z"), ("+03", "2017-06-19T12:01:51.551Z"),
                        ("-0320", "2017-06-19T18:21:51.551Z"), ("America/New_York", "2017-06-19T19:01:51.551Z"),
                        ("Europe/Amsterdam", "2017-06-19T13:01:51.551Z")]


@pytest.mark.parametrize("iso_week", [False, True], ids=["calendar", "iso"])
@pytest.mark.parametrize("timezone, expected", FROM_PARTS_TIMEZONES)
def test_date_from_parts_timezones(db, iso_week, timezone, expected):
    """date_from_parts.js: 2017-06-19 15:01:51.551 (calendar, or ISO 2017-W25-1) in offsets -04:00, +03,
    -0320 and in New York / Amsterdam."""
    common = {"hour": Int64(15), "minute": Decimal128("1"), "second": 51, "millisecond": 551}
    if iso_week:
        doc = {"isoWeekYear": Decimal128("2017"), "isoWeek": 25.0, "isoDayOfWeek": 1, **common}
    else:
        doc = {"year": Decimal128("2017"), "month": 6.0, "day": 19, **common}
    coll = fill(db, [{"_id": 0, **doc}])
    parts = {k: f"${k}" for k in doc}
    assert run(coll, [{"$project": {"date": {"$dateFromParts": {**parts, "timezone": timezone}}}}]) == [
        {"_id": 0, "date": iso(expected)}]


# ==================================================================================================
# date_to_parts.js


def _calendar(h, year=2017, month=6, day=19, minute=13, second=25, millisecond=713):
    return [("year", year), ("month", month), ("day", day), ("hour", h), ("minute", minute), ("second", second),
            ("millisecond", millisecond)]


def _iso_parts(h, year=2017, week=25, dow=1):
    return [("isoWeekYear", year), ("isoWeek", week), ("isoDayOfWeek", dow), ("hour", h), ("minute", 13),
            ("second", 25), ("millisecond", 713)]


def _items(docs):
    """Each result's ``date`` as (name, value) pairs, checking that every value is a 32-bit int."""
    out = []
    for d in docs:
        parts = d["date"]
        assert all(type(v) is int for v in parts.values()), parts
        out.append((d["_id"], list(parts.items())))
    return out


def test_date_to_parts(db):
    """date_to_parts.js: $dateToParts gives year..millisecond (in that order, as ints) in UTC or the given
    timezone, the ISO week parts when iso8601 is true (also from a field), and reads an ObjectId's
    timestamp."""
    coll = fill(db, [
        {"_id": 0, "date": iso("2017-06-19T15:13:25.713Z"), "tz": "UTC"},
        {"_id": 1, "date": iso("2017-06-19T15:13:25.713Z"), "tz": "Europe/London"},
        {"_id": 2, "date": iso("2017-06-19T15:13:25.713Z"), "tz": "America/New_York", "iso": True},
        {"_id": 3, "date": iso("2017-06-19T15:13:25.713Z"), "tz": "America/New_York", "iso": False},
    ])

    def parts(spec, match=None):
        pipeline = ([{"$match": match}] if match else []) + [{"$project": {"date": {"$dateToParts": spec}}},
                                                             {"$sort": {"_id": 1}}]
        return _items(run(coll, pipeline))

    assert parts({"date": "$date"}) == [(i, _calendar(15)) for i in range(4)]
    local = [(0, _calendar(15)), (1, _calendar(16)), (2, _calendar(11)), (3, _calendar(11))]
    assert parts({"date": "$date", "timezone": "$tz"}) == local
    assert parts({"date": "$date", "timezone": "$tz", "iso8601": False}) == local
    assert parts({"date": "$date", "timezone": "$tz", "iso8601": True}) == [
        (0, _iso_parts(15)), (1, _iso_parts(16)), (2, _iso_parts(11)), (3, _iso_parts(11))]
    assert parts({"date": "$date", "timezone": "$tz", "iso8601": "$iso"}, {"iso": {"$exists": True}}) == [
        (2, _iso_parts(11)), (3, _calendar(11))]

    oid = ObjectId("58c7cba47bbadf523cf2c313")
    coll = fill(db, [{"_id": oid, "date": iso("2017-06-19T15:13:25.713Z"), "tz": "Europe/London"}])
    assert parts({"date": "$date"}) == [(oid, _calendar(15))]
    assert parts({"date": "$date", "timezone": "$tz"}) == [(oid, _calendar(16))]
    assert parts({"date": "$date", "timezone": "$tz", "iso8601": False}) == [(oid, _calendar(16))]
    assert parts({"date": "$date", "timezone": "$tz", "iso8601": True}) == [(oid, _iso_parts(16))]
    assert parts({"date": "$_id", "timezone": "$tz", "iso8601": False}) == [
        (oid, _calendar(10, month=3, day=14, minute=53, second=24, millisecond=0))]


@pytest.mark.parametrize("spec", [{"date": "$date", "timezone": "$tz"}, {"date": "$date", "iso8601": "$iso8601"}])
def test_date_to_parts_nullish_option(db, spec):
    """date_to_parts.js: a missing timezone or iso8601 makes the result null."""
    coll = fill(db, [{"_id": 0, "date": iso("2017-06-27T12:00:20Z")}])
    assert run(coll, [{"$project": {"date": {"$dateToParts": spec}}}]) == [{"_id": 0, "date": None}]


DATE_TO_PARTS_ERRORS = [
    ({"timezone": "$tz"}, 40522),
    ({"date": "$date", "timezone": "$tz", "iso8601": 5}, 40521),
    ({"date": 42}, 16006),
    ({"date": "$date", "timezone": 5}, 40517),
    ({"date": "$date", "timezone": "DoesNot/Exist"}, 40485),
]


def test_date_to_parts_missing_date_is_null(db):
    """date_to_parts.js: a missing date gives null."""
    coll = fill(db, [{"_id": 0, "tz": "Europe/London"}])
    assert run(coll, [{"$project": {"date": {"$dateToParts": {"date": "$date"}}}}]) == [{"_id": 0, "date": None}]


@pytest.mark.parametrize("spec, code", DATE_TO_PARTS_ERRORS, ids=[str(c[1]) for c in DATE_TO_PARTS_ERRORS])
def test_date_to_parts_errors(db, spec, code):
    """date_to_parts.js: no date (40522), a non-boolean iso8601 (40521, checked although the date is
    missing), a number as date (16006), a numeric (40517) or unknown (40485) timezone."""
    coll = fill(db, [{"_id": 0, "tz": "Europe/London"}])
    expect_error(coll, [{"$project": {"date": {"$dateToParts": spec}}}], code)


# ==================================================================================================
# date_from_string.js


def _from_string(coll, **spec):
    return run(coll, [{"$project": {"date": {"$dateFromString": spec}}}])


NORMAL_FORMATS = [
    ("2017-07-04T11:56:02Z", "2017-07-04T11:56:02Z", "%Y-%m-%dT%H:%M:%SZ"),
    ("2017-07-04T11:56:02.813Z", "2017-07-04T11:56:02.813Z", "%Y-%m-%dT%H:%M:%S.%LZ"),
    ("2017-07-04T11:56:02.810Z", "2017-07-04T11:56:02.81Z", "%Y-%m-%dT%H:%M:%S.%LZ"),
    ("2017-07-04T11:56:02.800Z", "2017-07-04T11:56:02.8Z", "%Y-%m-%dT%H:%M:%S.%LZ"),
    ("2017-07-04T11:56:02Z", "2017-07-04T11:56.02", "%Y-%m-%dT%H:%M.%S"),
    ("2017-07-04T11:56:02.813Z", "2017-07-04T11:56.02.813", "%Y-%m-%dT%H:%M.%S.%L"),
    ("2017-07-04T11:56:02.810Z", "2017-07-04T11:56.02.81", "%Y-%m-%dT%H:%M.%S.%L"),
    ("2017-07-04T11:56:02.800Z", "2017-07-04T11:56.02.8", "%Y-%m-%dT%H:%M.%S.%L"),
]


@pytest.mark.parametrize("with_format", [False, True], ids=["no-format", "format"])
@pytest.mark.parametrize("expected, text, fmt", NORMAL_FORMATS, ids=[c[1] for c in NORMAL_FORMATS])
def test_date_from_string_normal_formats(db, expected, text, fmt, with_format):
    """date_from_string.js: ISO-like strings (fractions of one to three digits, '.' between minutes and
    seconds) parse, with or without the matching format."""
    coll = fill(db, [{"_id": 0}])
    spec = {"dateString": text, **({"format": fmt} if with_format else {})}
    assert _from_string(coll, **spec) == [{"_id": 0, "date": iso(expected)}]


@pytest.mark.parametrize("timezone", ["Europe/London", "+01:00"])
@pytest.mark.parametrize("with_format", [False, True], ids=["no-format", "format"])
@pytest.mark.parametrize("expected, text, fmt", NORMAL_FORMATS[4:], ids=[c[1] for c in NORMAL_FORMATS[4:]])
def test_date_from_string_normal_formats_in_timezone(db, expected, text, fmt, with_format, timezone):
    """date_from_string.js: the same strings read in Europe/London (summer) or at +01:00 are an hour
    earlier in UTC."""
    coll = fill(db, [{"_id": 0}])
    spec = {"dateString": text, "timezone": timezone, **({"format": fmt} if with_format else {})}
    assert _from_string(coll, **spec) == [{"_id": 0, "date": iso(expected) - dt.timedelta(hours=1)}]


def test_date_from_string_from_fields(db):
    """date_from_string.js: dateString / format / timezone read from documents (including a 1960 date),
    a constant string in a timezone from the documents, and a field string in Asia/Tokyo."""
    coll = fill(db, [
        {"_id": 0, "dateString": "2017-07-06T12:35:37Z", "format": "%Y-%m-%dT%H:%M:%SZ"},
        {"_id": 1, "dateString": "2017-07-06T12:35:37.513Z", "format": "%Y-%m-%dT%H:%M:%S.%LZ"},
        {"_id": 2, "dateString": "2017-07-06T12:35:37", "format": "%Y-%m-%dT%H:%M:%S"},
        {"_id": 3, "dateString": "2017-07-06T12:35:37.513", "format": "%Y-%m-%dT%H:%M:%S.%L"},
        {"_id": 4, "dateString": "1960-07-10T12:10:37.448", "format": "%Y-%m-%dT%H:%M:%S.%L"},
    ])
    expected = [{"_id": i, "date": ms(n)} for i, n in enumerate(
        [1499344537000, 1499344537513, 1499344537000, 1499344537513, -299072962552])]
    for spec in ({"dateString": "$dateString"}, {"dateString": "$dateString", "format": "$format"}):
        assert run(coll, [{"$project": {"date": {"$dateFromString": spec}}}, {"$sort": {"_id": 1}}]) == expected

    coll = fill(db, [
        {"_id": 0, "dateString": "2017-07-06T12:35:37.513", "timezone": "GMT"},
        {"_id": 1, "dateString": "2017-07-06T12:35:37.513", "timezone": "UTC"},
        {"_id": 2, "dateString": "1960-07-10T12:35:37.513", "timezone": "America/New_York"},
        {"_id": 3, "dateString": "1960-07-10T12:35:37.513", "timezone": "Europe/London"},
        {"_id": 4, "dateString": "2017-07-06T12:35:37.513", "timezone": "America/Los_Angeles"},
        {"_id": 5, "dateString": "2017-07-06T12:35:37.513", "timezone": "Europe/Paris"},
        {"_id": 6, "dateString": "2017-07-06T12:35:37.513", "timezone": "+04:00"},
    ])
    expected = [{"_id": i, "date": iso(s)} for i, s in enumerate([
        "2017-07-06T12:35:37.513Z", "2017-07-06T12:35:37.513Z", "1960-07-10T16:35:37.513Z",
        "1960-07-10T11:35:37.513Z", "2017-07-06T19:35:37.513Z", "2017-07-06T10:35:37.513Z",
        "2017-07-06T08:35:37.513Z"])]
    for extra in ({}, {"format": "%Y-%m-%dT%H:%M:%S.%L"}):
        spec = {"dateString": "$dateString", "timezone": "$timezone", **extra}
        assert run(coll, [{"$project": {"date": {"$dateFromString": spec}}}, {"$sort": {"_id": 1}}]) == expected

    coll = fill(db, [{"_id": 0, "dateString": "2017-07-06T12:35:37"}])
    assert _from_string(coll, dateString="$dateString", timezone="Asia/Tokyo") == [
        {"_id": 0, "date": iso("2017-07-06T03:35:37Z")}]

    coll = fill(db, [{"_id": 0, "timezone": "Europe/London"}, {"_id": 1, "timezone": "America/New_York"},
                     {"_id": 2, "timezone": "-05:00"}])
    got = run(coll, [{"$project": {"date": {"$dateFromString": {"dateString": "2017-07-19T18:52:35.199",
                                                                "timezone": "$timezone"}}}},
                     {"$sort": {"_id": 1}}])
    assert got == [{"_id": 0, "date": iso("2017-07-19T17:52:35.199Z")},
                   {"_id": 1, "date": iso("2017-07-19T22:52:35.199Z")},
                   {"_id": 2, "date": iso("2017-07-19T23:52:35.199Z")}]


BI_FORMATS = [("2017-01-01 00:00:00", "2017-01-01T00:00:00Z"), ("2017-07-01 00:00:00", "2017-07-01T00:00:00Z"),
              ("2017-07-06", "2017-07-06T00:00:00Z"), ("2017-07-06 00:00:00", "2017-07-06T00:00:00Z"),
              ("2017-07-06 11:00:00", "2017-07-06T11:00:00Z"), ("2017-07-06 11:36:00", "2017-07-06T11:36:00Z"),
              ("2017-07-06 11:36:54", "2017-07-06T11:36:54Z")]


def test_date_from_string_bi_formats(db):
    """date_from_string.js: 'YYYY-MM-DD[ HH:MM:SS]' strings, as constants and from documents."""
    coll = fill(db, [{"_id": 0}])
    for text, expected in BI_FORMATS:
        assert _from_string(coll, dateString=text) == [{"_id": 0, "date": iso(expected)}], text
    coll = fill(db, [{"_id": i, "dateString": text} for i, (text, _) in enumerate(BI_FORMATS)])
    got = run(coll, [{"$project": {"date": {"$dateFromString": {"dateString": "$dateString"}}}}, {"$sort": {"_id": 1}}])
    assert got == [{"_id": i, "date": iso(expected)} for i, (_, expected) in enumerate(BI_FORMATS)]


TIMEZONE_SUFFIXES = [
    ("2017-07-14T12:02:44.771Z", " GMT"), ("2017-07-14T12:02:44.771Z", " GMT+00"),
    ("2017-07-14T12:02:44.771Z", " GMT+00:00"), ("2017-07-14T10:02:44.771Z", " GMT+02"),
    ("2017-07-14T10:02:44.771Z", " GMT+02:00"), ("2017-07-14T09:02:44.771Z", "+03"),
    ("2017-07-14T08:32:44.771Z", "+0330"), ("2017-07-14T08:32:44.771Z", "+03:30"),
    ("2017-07-14T12:02:44.771Z", " UTC"), ("2017-07-14T10:02:44.771Z", " CEST"),
    ("2017-07-14T17:02:44.771Z", " EST"), ("2017-07-14T19:02:44.771Z", " PDT"),
    # military time zones
    ("2017-07-14T11:02:44.771Z", " A"), ("2017-07-14T01:02:44.771Z", " L"),
    ("2017-07-14T15:02:44.771Z", " P"), ("2017-07-14T12:02:44.771Z", " Z"),
]


@pytest.mark.parametrize("with_format", [False, True], ids=["no-format", "format"])
@pytest.mark.parametrize("expected, suffix", TIMEZONE_SUFFIXES, ids=[c[1].strip() for c in TIMEZONE_SUFFIXES])
def test_date_from_string_timezone_in_string(db, expected, suffix, with_format):
    """date_from_string.js: a GMT offset, numeric offset, abbreviation or military zone letter at the end
    of the string, with no format or with '%Y-%m-%dT%H:%M:%S.%L%z'."""
    coll = fill(db, [{"_id": 0}])
    spec = {"dateString": "2017-07-14T12:02:44.771" + suffix}
    if with_format:
        spec["format"] = "%Y-%m-%dT%H:%M:%S.%L%z"
    assert _from_string(coll, **spec) == [{"_id": 0, "date": iso(expected)}]


WACKY_FORMATS = [
    ("July 4th, 2017", "2017-07-04T00:00:00Z"), ("July 4th, 2017 12:39:30 BST", "2017-07-04T11:39:30Z"),
    ("July 4th, 2017 11am", "2017-07-04T11:00:00Z"), ("July 4th, 2017 12pm", "2017-07-04T12:00:00Z"),
    ("7/4/17", "2017-07-04T00:00:00Z"), ("04-07-2017", "2017-07-04T00:00:00Z"),
    ("2017-Jul-04 noon", "2017-07-04T12:00:00Z"), ("2017-07-04 12:48:07 GMT+0545", "2017-07-04T07:03:07Z"),
    ("2017-07-04 12:48:07 GMT-0200", "2017-07-04T14:48:07Z"),
]


@pytest.mark.parametrize("text, expected", WACKY_FORMATS, ids=[c[0] for c in WACKY_FORMATS])
def test_date_from_string_wacky_formats(db, text, expected):
    """date_from_string.js ("wacky format tests from data"): free-form strings the parser accepts without
    a format — month names, ordinals, am/pm, 'noon', m/d/yy, dd-mm-yyyy, GMT offsets."""
    coll = fill(db, [{"_id": 0, "dateString": text}])
    assert _from_string(coll, dateString="$dateString") == [{"_id": 0, "date": iso(expected)}]


EXPLICIT_FORMATS = [
    ("05 12 1988", "%d %m %Y", "1988-12-05T00:00:00Z"),
    ("1992 04 26", "%Y %m %d", "1992-04-26T00:00:00Z"),
    ("05*12*1988", "%d*%m*%Y", "1988-12-05T00:00:00Z"),
    ("1992/04/26", "%Y/%m/%d", "1992-04-26T00:00:00Z"),
    ("1992 % 04 % 26", "%Y %% %m %% %d", "1992-04-26T00:00:00Z"),
    ("Day: 05 Month: 12 Year: 1988", "Day: %d Month: %m Year: %Y", "1988-12-05T00:00:00Z"),
    ("Date: 1992/04/26", "Date: %Y/%m/%d", "1992-04-26T00:00:00Z"),
    ("4/26/1992:+0445", "%m/%d/%Y:%z", "1992-04-25T19:15:00Z"),
    ("4/26/1992:+285", "%m/%d/%Y:%Z", "1992-04-25T19:15:00Z"),
    # ISO year, week and day of week
    ("2017", "%G", "2017-01-02T00:00:00Z"),
    ("2017, Week 53", "%G, Week %V", "2018-01-01T00:00:00Z"),
    ("2017, Day 5", "%G, Day %u", "2017-01-06T00:00:00Z"),
    ("53.7.2017", "%V.%u.%G", "2018-01-07T00:00:00Z"),
    ("1.1.1", "%V.%u.%G", "0001-01-01T00:00:00Z"),
]


@pytest.mark.parametrize("text, fmt, expected", EXPLICIT_FORMATS, ids=[c[1] for c in EXPLICIT_FORMATS])
def test_date_from_string_explicit_formats(db, text, fmt, expected):
    """date_from_string.js: layouts only a format string can read (literal text, '%%', %z / %Z offsets)
    and the ISO year / week / weekday specifiers %G, %V, %u."""
    coll = fill(db, [{"_id": 0}])
    assert _from_string(coll, dateString=text, format=fmt) == [{"_id": 0, "date": iso(expected)}]


@pytest.mark.parametrize("spec", [{"dateString": "$tz"}, {"dateString": "2017-07-11T17:05:19Z", "timezone": "$tz"}],
                         ids=["dateString", "timezone"])
def test_date_from_string_nullish_arguments(db, spec):
    """date_from_string.js ("NULL returns"): a dateString or timezone that is missing, null or undefined
    gives null."""
    coll = fill(db, [{"_id": 0, "date": iso("2017-06-19T15:13:25.713Z")},
                     {"_id": 1, "date": iso("2017-06-19T15:13:25.713Z"), "tz": None},
                     {"_id": 2, "date": iso("2017-06-19T15:13:25.713Z"), "tz": UNDEFINED}])
    got = run(coll, [{"$project": {"date": {"$dateFromString": spec}}}, {"$sort": {"_id": 1}}])
    assert got == [{"_id": 0, "date": None}, {"_id": 1, "date": None}, {"_id": 2, "date": None}]


def test_date_from_string_nullish_format(db):
    """date_from_string.js ("NULL returns"): a format that is missing, null or undefined gives null."""
    coll = fill(db, [{"_id": 0}, {"_id": 1, "format": None}, {"_id": 2, "format": UNDEFINED}])
    got = run(coll, [{"$project": {"date": {"$dateFromString": {"dateString": "2017-07-11T17:05:19Z",
                                                                "format": "$format"}}}}])
    assert sorted(got, key=lambda d: d["_id"]) == [{"_id": 0, "date": None}, {"_id": 1, "date": None},
                                                   {"_id": 2, "date": None}]


DATE_FROM_STRING_ERRORS = [
    ("incomplete-date", {"dateString": "July 4th"}, CONVERSION_FAILURE, "an incomplete date/time string has been found"),
    ("incomplete-time", {"dateString": "12:50:53"}, CONVERSION_FAILURE, "an incomplete date/time string has been found"),
    ("broken-1", {"dateString": "2017, 12:50:53"}, CONVERSION_FAILURE, "Error parsing date string"),
    ("broken-2", {"dateString": "60.Monday1770/06:59"}, CONVERSION_FAILURE, "Error parsing date string"),
    ("number", {"dateString": 5}, CONVERSION_FAILURE, "$dateFromString requires that 'dateString' be a string"),
    ("gmt-offset-and-timezone", {"dateString": "2017-07-12T22:23:55 GMT+02:00", "timezone": "Europe/Amsterdam"},
     CONVERSION_FAILURE, None),
    ("z-and-timezone", {"dateString": "2017-07-12T22:23:55Z", "timezone": "Europe/Amsterdam"},
     CONVERSION_FAILURE, None),
    ("zone-name-and-timezone", {"dateString": "2017-07-12T22:23:55 America/New_York",
                                "timezone": "Europe/Amsterdam"}, CONVERSION_FAILURE, None),
    ("zone-name-in-string", {"dateString": "2017-07-12T22:23:55 Europe/Amsterdam"}, CONVERSION_FAILURE, None),
    ("format-data-missing", {"dateString": "2018-01", "format": "%Y-%m-%d"}, CONVERSION_FAILURE, "Data missing"),
    ("format-trailing-data", {"dateString": "2018-01", "format": "%Y"}, CONVERSION_FAILURE, "Trailing data"),
    ("format-literal", {"dateString": "1992-26-04", "format": "Y-d-m"}, CONVERSION_FAILURE,
     "Format literal not found"),
    ("format-invalid-character", {"dateString": "1992", "format": "%n"}, 18536, "Invalid format character"),
    ("format-offset-and-timezone", {"dateString": "4/26/1992:+0445", "format": "%m/%d/%Y:%z", "timezone": "+0500"},
     CONVERSION_FAILURE, "you cannot pass in a date/time string with GMT offset together with a timezone argument"),
    ("format-number", {"dateString": "4/26/1992", "format": 5}, 40684,
     "$dateFromString requires that 'format' be a string"),
    ("format-object", {"dateString": "4/26/1992", "format": {}}, 40684,
     "$dateFromString requires that 'format' be a string"),
    ("iso-day-alone", {"dateString": "ISO Day 6", "format": "ISO Day %u"}, CONVERSION_FAILURE,
     "The parsed date was invalid"),
    ("iso-week-alone", {"dateString": "ISO Week 52", "format": "ISO Week %V"}, CONVERSION_FAILURE,
     "The parsed date was invalid"),
    ("iso-week-and-year", {"dateString": "ISO Week 1, 2018", "format": "ISO Week %V, %Y"}, CONVERSION_FAILURE,
     "Mixing of ISO dates with natural dates is not allowed"),
    ("iso-year-and-month", {"dateString": "12/31/2018", "format": "%m/%d/%G"}, CONVERSION_FAILURE,
     "Mixing of ISO dates with natural dates is not allowed"),
    ("nul-in-string", {"dateString": "12/31\0/2018", "format": "%m/%d/%Y"}, CONVERSION_FAILURE, "Data missing"),
    ("nul-in-format", {"dateString": "12/31/2018", "format": "%m/%d\0/%Y"}, CONVERSION_FAILURE, "Trailing data"),
]


@pytest.mark.parametrize("spec, code, message", [c[1:] for c in DATE_FROM_STRING_ERRORS],
                         ids=[c[0] for c in DATE_FROM_STRING_ERRORS])
def test_date_from_string_errors(db, spec, code, message):
    """date_from_string.js: ConversionFailure (241) for incomplete / broken strings, a non-string, a zone
    in the string together with a timezone argument, format mismatches, ISO parts without a year or mixed
    with calendar parts, embedded NULs; 18536 for an unknown specifier; 40684 for a non-string format —
    with the messages the jstest checks."""
    coll = fill(db, [{"_id": 0}])
    expect_error(coll, [{"$project": {"date": {"$dateFromString": spec}}}], code, message)


@pytest.mark.parametrize("argument, code, message", [
    ("no-object", 40540, "$dateFromString only supports an object as an argument"),
    ({"unknown": "$tz"}, 40541, "Unrecognized argument"),
], ids=["not-an-object", "unknown-argument"])
def test_date_from_string_parse_errors(db, argument, code, message):
    """date_from_string.js ("Parse errors"): a non-object argument (40540) and an unknown argument (40541)."""
    coll = fill(db, [{"_id": 0}])
    expect_error(coll, [{"$project": {"date": {"$dateFromString": argument}}}], code, message)


# ==================================================================================================
# date_from_string_on_error.js / date_from_string_on_null.js


ON_VALUE = iso("2017-07-04T11:56:02Z")


def _raw_results(coll, stage):
    __tracebackhide__ = True
    raw_coll = coll.with_options(codec_options=CodecOptions(document_class=RawBSONDocument))
    return [d.raw for d in run(raw_coll, [raw(stage)])]


def _project_date(spec):
    return {"$project": {"date": {"$dateFromString": spec}}}


@pytest.mark.parametrize("date_string", ["July 4th", "12:50:53", "2017", "60.Monday1770/06:59", "Not even close",
                                         "July 4th, 10000", 5, {"year": 2018, "month": 2, "day": 5}, ["2018-02-05"]],
                         ids=lambda v: repr(v))
def test_date_from_string_on_error_invalid_input(db, date_string):
    """date_from_string_on_error.js: onError's value replaces the result of an unparsable string or a
    non-string dateString (a literal number, document or array)."""
    coll = fill(db, [{"_id": 0}])
    assert run(coll, [_project_date({"dateString": date_string, "onError": ON_VALUE})]) == [{"_id": 0, "date": ON_VALUE}]


@pytest.mark.parametrize("fmt", ["%Y", "%Y-%m-%dT%H", "Y-m-d"])
def test_date_from_string_on_error_format_mismatch(db, fmt):
    """date_from_string_on_error.js: onError's value replaces the result when the format does not match."""
    coll = fill(db, [{"_id": 0}])
    got = run(coll, [_project_date({"dateString": "2018-02-06", "format": fmt, "onError": ON_VALUE})])
    assert got == [{"_id": 0, "date": ON_VALUE}]


NULLISH = [None, UNDEFINED, "$missing"]


@pytest.mark.parametrize("option", ["onError", "onNull"])
@pytest.mark.parametrize("nullish", NULLISH, ids=["null", "undefined", "missing"])
@pytest.mark.parametrize("key", ["dateString", "format", "timezone"])
def test_date_from_string_nullish_inputs(db, key, nullish, option):
    """date_from_string_on_error.js / date_from_string_on_null.js: a nullish dateString gives null despite
    onError and gives onNull's value; a nullish format or timezone gives null whatever onError / onNull
    say."""
    coll = fill(db, [{"_id": 0}])
    spec = {"dateString": "2018-02-06T11:56:02Z", key: nullish, option: ON_VALUE}
    expected = ON_VALUE if key == "dateString" and option == "onNull" else None
    assert _raw_results(coll, _project_date(spec)) == [raw({"_id": 0, "date": expected}).raw]


@pytest.mark.parametrize("date_string, expected", [(5, ON_VALUE), ("Invalid date string", None)],
                         ids=["number", "invalid-string"])
@pytest.mark.parametrize("extra", [{"format": None}, {"timezone": "$missing"}], ids=["format-null", "timezone-missing"])
def test_date_from_string_on_error_with_nullish_options(db, extra, date_string, expected):
    """date_from_string_on_error.js: a non-string dateString still gives onError when format / timezone is
    nullish, but an invalid string then gives null."""
    coll = fill(db, [{"_id": 0}])
    assert run(coll, [_project_date({"dateString": date_string, **extra, "onError": ON_VALUE})]) == [
        {"_id": 0, "date": expected}]


@pytest.mark.parametrize("option", ["onError", "onNull"])
@pytest.mark.parametrize("value", [{}, 5, "Not a date", None, UNDEFINED], ids=["doc", "int", "str", "null", "undef"])
def test_date_from_string_fallback_any_type(db, option, value):
    """date_from_string_on_error.js / date_from_string_on_null.js: onError / onNull may be any type and is
    returned as is (BSON undefined included, compared byte for byte)."""
    coll = fill(db, [{"_id": 0}])
    date_string = "invalid" if option == "onError" else "$missing"
    assert _raw_results(coll, _project_date({"dateString": date_string, option: value})) == [
        raw({"_id": 0, "date": value}).raw]


@pytest.mark.parametrize("option", ["onError", "onNull"])
def test_date_from_string_fallback_missing(db, option):
    """date_from_string_on_error.js / date_from_string_on_null.js: an onError / onNull that refers to a
    missing field leaves the $project output field out."""
    coll = fill(db, [{"_id": 0}])
    date_string = "invalid" if option == "onError" else "$missing"
    assert run(coll, [_project_date({"dateString": date_string, option: "$missing"})]) == [{"_id": 0}]


@pytest.mark.parametrize("fmt, code, message", [
    (5, 40684, "$dateFromString requires that 'format' be a string"),
    ("%n", 18536, "Invalid format character '%n' in format string"),
])
def test_date_from_string_on_error_does_not_cover_bad_format(db, fmt, code, message):
    """date_from_string_on_error.js: onError does not catch an invalid format (40684 / 18536)."""
    coll = fill(db, [{"_id": 0}])
    expect_error(coll, [_project_date({"dateString": "4/26/1992", "format": fmt, "onError": ON_VALUE})],
                 code, message)


# ==================================================================================================
# date_to_string.js / date_to_string_on_null.js / server11118.js


def _to_string(coll, spec, sort=True):
    pipeline = [{"$project": {"date": {"$dateToString": spec}}}] + ([{"$sort": {"_id": 1}}] if sort else [])
    return run(coll, pipeline)


OFFSET_FORMAT = "%Y-%m-%d %H:%M:%S %z (%Z minutes)"


TO_STRING_ZONES = [
    ("2017-07-04T14:56:42.911Z", "UTC", "2017-07-04 14:56:42 +0000 (0 minutes)"),
    ("2017-07-04T14:56:42.911Z", "Europe/London", "2017-07-04 15:56:42 +0100 (60 minutes)"),
    ("2017-07-04T14:56:42.911Z", "America/New_York", "2017-07-04 10:56:42 -0400 (-240 minutes)"),
    ("2017-07-04T14:56:42.911Z", "Australia/Eucla", "2017-07-04 23:41:42 +0845 (525 minutes)"),
    ("2017-07-04T14:56:42.911Z", "Asia/Kathmandu", "2017-07-04 20:41:42 +0545 (345 minutes)"),
    ("1935-07-10T11:36:37.133Z", "Europe/Amsterdam", "1935-07-10 12:56:09 +0119 (79 minutes)"),
    ("1900-07-10T11:41:22.418Z", "America/Caracas", "1900-07-10 07:13:42 -0427 (-267 minutes)"),
]


@pytest.mark.parametrize("date, timezone, expected", TO_STRING_ZONES, ids=[c[1] for c in TO_STRING_ZONES])
def test_date_to_string_timezones(db, date, timezone, expected):
    """date_to_string.js: '%z' / '%Z' offsets and local times in UTC, London, New York, Eucla (+08:45),
    Kathmandu (+05:45), and historical offsets that are not whole minutes (Amsterdam 1935 +01:19:32,
    Caracas 1900 -04:27:40)."""
    coll = fill(db, [{"_id": 0, "date": iso(date), "tz": timezone}])
    assert _to_string(coll, {"format": OFFSET_FORMAT, "date": "$date", "timezone": "$tz"}) == [
        {"_id": 0, "date": expected}]


THREE_DATES = [{"_id": 0, "date": iso("2017-01-04T15:08:51.911Z")},
               {"_id": 1, "date": iso("2017-07-04T15:09:12.911Z")},
               {"_id": 2, "date": iso("2017-12-04T15:09:14.911Z")}]
THREE_DATES_NEW_YEAR = [{"_id": 0, "date": iso("2017-01-01T15:08:51.911Z")}, *THREE_DATES[1:]]
TO_STRING_FORMATS = [
    ("new-york", THREE_DATES, {"format": OFFSET_FORMAT, "timezone": "America/New_York"},
     ["2017-01-04 10:08:51 -0500 (-300 minutes)", "2017-07-04 11:09:12 -0400 (-240 minutes)",
      "2017-12-04 10:09:14 -0500 (-300 minutes)"]),
    ("utc-default", THREE_DATES, {"format": OFFSET_FORMAT},
     ["2017-01-04 15:08:51 +0000 (0 minutes)", "2017-07-04 15:09:12 +0000 (0 minutes)",
      "2017-12-04 15:09:14 +0000 (0 minutes)"]),
    ("default-format", THREE_DATES, {"timezone": "America/New_York"},
     ["2017-01-04T10:08:51.911Z", "2017-07-04T11:09:12.911Z", "2017-12-04T10:09:14.911Z"]),
    ("iso-weeks", THREE_DATES_NEW_YEAR, {"format": "Natural: %Y-W%w-%U, ISO: %G-W%u-%V"},
     ["Natural: 2017-W1-01, ISO: 2016-W7-52", "Natural: 2017-W3-27, ISO: 2017-W2-27",
      "Natural: 2017-W2-49, ISO: 2017-W1-49"]),
    ("month-names", THREE_DATES_NEW_YEAR, {"format": "%b (%B) %d, %Y"},
     ["Jan (January) 01, 2017", "Jul (July) 04, 2017", "Dec (December) 04, 2017"]),
]


@pytest.mark.parametrize("docs, spec, expected", [c[1:] for c in TO_STRING_FORMATS],
                         ids=[c[0] for c in TO_STRING_FORMATS])
def test_date_to_string_formats(db, docs, spec, expected):
    """date_to_string.js: New York offsets across DST, UTC by default, the default format
    '%Y-%m-%dT%H:%M:%S.%LZ' (in local time), calendar vs ISO week specifiers (%w %U vs %u %V %G) and
    month names (%b %B)."""
    coll = fill(db, docs)
    assert _to_string(coll, {**spec, "date": "$date"}) == [{"_id": i, "date": e} for i, e in enumerate(expected)]


def test_date_to_string_nullish(db):
    """date_to_string.js: a missing / null / undefined date or timezone gives null; so does a null,
    undefined or missing format."""
    d = iso("2017-01-04T15:08:51.911Z")
    coll = fill(db, [{"_id": 0, "date": d}, {"_id": 1, "date": d, "timezone": None},
                     {"_id": 2, "date": d, "timezone": UNDEFINED}, {"_id": 3, "timezone": "Europe/Oslo"},
                     {"_id": 4, "date": None, "timezone": "Europe/Oslo"},
                     {"_id": 5, "date": UNDEFINED, "timezone": "Europe/Oslo"}])
    assert _to_string(coll, {"format": OFFSET_FORMAT, "date": "$date", "timezone": "$timezone"}) == [
        {"_id": i, "date": None} for i in range(6)]
    coll = fill(db, [{"_id": 0}])
    for fmt in NULLISH:
        stage = {"$project": {"date": {"$dateToString": {"date": d, "format": fmt}}}}
        assert _raw_results(coll, stage) == [raw({"_id": 0, "date": None}).raw], fmt


DATE_TO_STRING_ERRORS = [
    ("format-number", {"date": iso("2017-01-04T15:08:51.911Z"), "format": 5}, 18533, None),
    ("no-date", {"format": "%Y-%m-%d %H:%M:%S", "timezone": "$tz"}, 18628, "Missing 'date' parameter to $dateToString"),
    ("timezone-number", {"date": iso("2017-01-04T15:08:51.911Z"), "format": "%Y-%m-%d %H:%M:%S", "timezone": 5},
     40517, None),
    ("date-number", {"format": "%Y-%m-%d %H:%M:%S", "date": 42}, 16006, None),
    ("timezone-unknown", {"date": iso("2017-01-04T15:08:51.911Z"), "format": "%Y-%m-%d %H:%M:%S",
                          "timezone": "DoesNotExist"}, 40485, None),
    ("trailing-percent", {"date": iso("2017-01-04T15:08:51.911Z"), "format": "%"}, 18535,
     "Unmatched '%' at end of format string"),
    ("unknown-specifier", {"date": iso("2017-01-04T15:08:51.911Z"), "format": "%n"}, 18536,
     "Invalid format character '%n' in format string"),
]


@pytest.mark.parametrize("spec, code, message", [c[1:] for c in DATE_TO_STRING_ERRORS],
                         ids=[c[0] for c in DATE_TO_STRING_ERRORS])
def test_date_to_string_errors(db, spec, code, message):
    """date_to_string.js: the error codes (and pinned messages) of $dateToString's arguments."""
    coll = fill(db, [{"_id": 0}])
    expect_error(coll, [{"$project": {"date": {"$dateToString": spec}}}], code, message)


@pytest.mark.parametrize("nullish", NULLISH, ids=["null", "undefined", "missing"])
def test_date_to_string_on_null(db, nullish):
    """date_to_string_on_null.js: a nullish date gives onNull's value."""
    coll = fill(db, [{"_id": 0}])
    stage = {"$project": {"date": {"$dateToString": {"date": nullish, "format": "%Y-%m-%d %H:%M:%S",
                                                     "onNull": ON_VALUE}}}}
    assert _raw_results(coll, stage) == [raw({"_id": 0, "date": ON_VALUE}).raw]


@pytest.mark.parametrize("nullish", NULLISH, ids=["null", "undefined", "missing"])
def test_date_to_string_on_null_nullish_timezone(db, nullish):
    """date_to_string_on_null.js: a nullish timezone gives null even with onNull — checked before the
    date, which here is a string (an error otherwise)."""
    coll = fill(db, [{"_id": 0}])
    stage = {"$project": {"date": {"$dateToString": {"date": "2018-02-06T11:56:02Z", "format": "%Y-%m-%d %H:%M:%S",
                                                     "timezone": nullish, "onNull": ON_VALUE}}}}
    assert _raw_results(coll, stage) == [raw({"_id": 0, "date": None}).raw]


@pytest.mark.parametrize("value", [{}, 5, "Not a date", None, UNDEFINED, "$missing"],
                         ids=["doc", "int", "str", "null", "undef", "missing"])
def test_date_to_string_on_null_any_type(db, value):
    """date_to_string_on_null.js: onNull may be any type (returned as is) or missing (no output field)."""
    coll = fill(db, [{"_id": 0}])
    stage = {"$project": {"date": {"$dateToString": {"date": "$missing", "format": "%Y-%m-%d %H:%M:%S",
                                                     "onNull": value}}}}
    expected = {"_id": 0} if value == "$missing" else {"_id": 0, "date": value}
    assert _raw_results(coll, stage) == [raw(expected).raw]


PADME = iso("2001-02-03T04:05:06.007Z")
SERVER11118_FORMATS = [
    (PADME, "%%-%Y-%m-%d-%H-%M-%S-%L", "%-2001-02-03-04-05-06-007"),
    (PADME, "%%", "%"), (PADME, "%Y", "2001"), (PADME, "%m", "02"), (PADME, "%d", "03"), (PADME, "%H", "04"),
    (PADME, "%M", "05"), (PADME, "%S", "06"), (PADME, "%L", "007"),
    (PADME, "%d%d***%d***%d**%d*%d", "0303***03***03**03*03"),
    (iso("1999-01-02T03:04:05.006Z"), "%U-%w-%j", "00-7-002"),
    (iso("1999-08-29T00:00:00Z"), "%%d", "%d"),
    (iso("1999-08-29T00:00:00Z"), "%%" * 999, "%" * 999),
    (None, "%Y", None),
]


@pytest.mark.parametrize("date, fmt, expected", SERVER11118_FORMATS,
                         ids=[str(i) for i in range(len(SERVER11118_FORMATS))])
def test_date_to_string_server11118_formats(db, date, fmt, expected):
    """server11118.js: each specifier's zero padding, '%%', adjacent specifiers, %U-%w-%j, a long run of
    '%%', and null for a null date."""
    coll = fill(db, [{"date": date}])
    assert run(coll, [{"$project": {"_id": 0, "formatted": {"$dateToString": {"format": fmt, "date": "$date"}}}}]) == [
        {"formatted": expected}]


SERVER11118_FORMAT_ERRORS = [
    ({"format": "%Y"}, 18628),
    ({"format": "%Y", "date": "$date", "extra": "whyamIhere"}, 18534),
    (["%Y", "$date"], 18629),
    ({"format": "%Y-%q", "date": "$date"}, 18536),
    ({"format": "%U-%w-%j-%%%", "date": "$date"}, 18535),
    ({"format": "AAAAA%%%AAAAAA", "date": "$date"}, 18536),
    ({"format": {"iamalion": "roar"}, "date": "$date"}, 18533),
    ({"format": [], "date": "$date"}, 18533),
    ({"format": [1, 2, 3], "date": "$date"}, 18533),
    ({"format": 1, "date": "$date"}, 18533),
    ({"format": iso("2020-01-01T00:00:00Z"), "date": "$date"}, 18533),
]


@pytest.mark.parametrize("spec, code", SERVER11118_FORMAT_ERRORS,
                         ids=[str(i) for i in range(len(SERVER11118_FORMAT_ERRORS))])
def test_date_to_string_server11118_format_errors(db, spec, code):
    """server11118.js: no date (18628), an extra field (18534), a non-object (18629), an unknown specifier
    (18536), a lone trailing '%' (18535), a non-string format (18533)."""
    coll = fill(db, [{"date": dt.datetime(2020, 5, 6, 7, 8, 9)}])
    expect_error(coll, [{"$project": {"_id": 0, "formatted": {"$dateToString": spec}}}], code)


@pytest.mark.parametrize("value", [[], [1, 2, 3], {}, {"a": 1}, "blahblahblah", 1234], ids=repr)
def test_date_to_string_server11118_non_date(db, value):
    """server11118.js: an array, document, string or number as the date fails with 16006."""
    coll = fill(db, [{"date": value}])
    expect_error(coll, [{"$project": {"formatted": {"$dateToString": {"format": "%Y", "date": "$date"}}}}], 16006)


# ==================================================================================================
# date_expr_before_1970.js / day_of_expressions.js / iso_date_exprs.js / server6190.js


_NOW = dt.datetime.now(dt.UTC).replace(tzinfo=None)
BEFORE_1970_DATES = [
    (iso("1960-01-02T03:04:05.006Z"), True),
    (iso("1960-01-02T03:04:04.999Z"), False),
    (iso("1960-01-02T03:04:05.000Z"), True),
    (iso("1960-01-02T03:04:05.001Z"), True),
    (iso("1960-01-02T03:04:05.999Z"), True),
    (iso("1860-01-02T03:04:05.006Z"), False),
    (ms(-1000), False),
    (ms(0), False),
    (iso("1970-01-01T00:00:00.999Z"), False),
    (iso("1980-05-20T12:54:04.834Z"), False),  # the jstest's ISODate('1980-05-20 12:53:64.834Z')
    (iso("1999-12-31T00:00:00.000Z"), False),
    (iso("1999-12-31T23:59:59.999Z"), False),
    (_NOW.replace(microsecond=_NOW.microsecond // 1000 * 1000), False),
]


def _shell_json(d: dt.datetime) -> str:
    """The shell's ``tojson()`` of a date."""
    text = d.strftime("%Y-%m-%dT%H:%M:%S")
    if d.microsecond:
        text += f".{d.microsecond // 1000:03d}"
    return f'ISODate("{text}Z")'


@pytest.mark.parametrize("date, synthetics", BEFORE_1970_DATES,
                         ids=[d.isoformat(timespec="milliseconds") for d, _ in BEFORE_1970_DATES[:-1]] + ["now"])
def test_date_parts_before_1970(db, date, synthetics):
    """date_expr_before_1970.js (SERVER-6189): $year ... $millisecond, $millisecond of date + 10 ms, and
    $dateToString for dates before 1900, before 1970, at the epoch, -1 s, and later; for 1960-01-02 also
    $week 0, $dayOfWeek 7, $dayOfYear 2 and '%U-%w-%j' = '00-7-002'."""
    coll = fill(db, [{"date": date}])
    fmt = 'ISODate("%Y-%m-%dT%H:%M:%S.%LZ")' if date.microsecond else 'ISODate("%Y-%m-%dT%H:%M:%SZ")'
    got = run(coll, [{"$project": {
        "_id": 0, "year": {"$year": "$date"}, "month": {"$month": "$date"}, "dayOfMonth": {"$dayOfMonth": "$date"},
        "hour": {"$hour": "$date"}, "minute": {"$minute": "$date"}, "second": {"$second": "$date"},
        "millisecond": {"$millisecond": "$date"}, "millisecondPlusTen": {"$millisecond": {"$add": ["$date", 10]}},
        "format": {"$dateToString": {"format": fmt, "date": "$date"}}}}])
    milli = date.microsecond // 1000
    assert [list(d.items()) for d in got] == [[
        ("year", date.year), ("month", date.month), ("dayOfMonth", date.day), ("hour", date.hour),
        ("minute", date.minute), ("second", date.second), ("millisecond", milli),
        ("millisecondPlusTen", (milli + 10) % 1000), ("format", _shell_json(date))]]
    if synthetics:
        got = run(coll, [{"$project": {"_id": 0, "week": {"$week": "$date"}, "dayOfWeek": {"$dayOfWeek": "$date"},
                                       "dayOfYear": {"$dayOfYear": "$date"},
                                       "format": {"$dateToString": {"format": "%U-%w-%j", "date": "$date"}}}}])
        assert got == [{"week": 0, "dayOfWeek": 7, "dayOfYear": 2, "format": "00-7-002"}]


def test_day_of_expressions(db):
    """day_of_expressions.js: $dayOfYear / $dayOfMonth / $dayOfWeek for dates around 1960-1999 (the
    '12:53:64' seconds overflow included), the same answers for a Timestamp and the equal Date, and with
    a timezone (UTC, -0400)."""
    coll = fill(db, [{"date": iso("1960-01-02T03:04:05Z")}, {"date": iso("1970-01-01T00:00:00Z")},
                     {"date": iso("1980-05-20T12:54:04.834Z")}, {"date": iso("1999-12-31T00:00:00Z")}])
    project = {"_id": 0, "dayOfYear": {"$dayOfYear": "$date"}, "dayOfMonth": {"$dayOfMonth": "$date"},
               "dayOfWeek": {"$dayOfWeek": "$date"}}
    got = run(coll, [{"$project": project}])
    expected = [{"dayOfYear": 2, "dayOfMonth": 2, "dayOfWeek": 7}, {"dayOfYear": 1, "dayOfMonth": 1, "dayOfWeek": 5},
                {"dayOfYear": 141, "dayOfMonth": 20, "dayOfWeek": 3},
                {"dayOfYear": 365, "dayOfMonth": 31, "dayOfWeek": 6}]
    assert sorted(got, key=lambda d: d["dayOfYear"]) == sorted(expected, key=lambda d: d["dayOfYear"])

    coll = fill(db, [{"_id": 1, "date": Timestamp(1341337661, 1)}, {"_id": 2, "date": ms(1341337661000)}])
    first, second = run(coll, [{"$sort": {"_id": 1}}, {"$project": project}])
    assert first == second == {"dayOfYear": 185, "dayOfMonth": 3, "dayOfWeek": 3}

    coll = fill(db, [{"date": iso("2011-01-14T00:00:00Z"), "timezone": "UTC"},
                     {"date": iso("1998-11-07T00:00:00Z"), "timezone": "-0400"}])
    got = run(coll, [{"$project": {"_id": 0, **{
        name: {f"${name}": {"date": "$date", "timezone": "$timezone"}}
        for name in ("dayOfYear", "dayOfMonth", "dayOfWeek")}}}])
    assert sorted(got, key=lambda d: d["dayOfYear"]) == [{"dayOfYear": 14, "dayOfMonth": 14, "dayOfWeek": 6},
                                                         {"dayOfYear": 310, "dayOfMonth": 6, "dayOfWeek": 6}]


@pytest.mark.parametrize("argument, code", [
    ({"timezone": "$timezone"}, 40539),
    ({"date": 42}, 16006),
    ({"date": "$date", "timezone": 5}, 40533),
    ({"date": "$date", "timezone": "DoesNot/Exist"}, 40485),
], ids=["no-date", "number-date", "number-timezone", "unknown-timezone"])
def test_day_of_expressions_errors(db, argument, code):
    """day_of_expressions.js: no date (40539), a number as date (16006), a numeric timezone (40533), an
    unknown timezone (40485)."""
    coll = fill(db, [{"date": iso("1998-11-07T00:00:00Z"), "timezone": "-0400"}])
    expect_error(coll, [{"$project": {"dayOfYear": {"$dayOfYear": argument}}}], code)


ISO_YEARS = {  # the jstest's years, by the weekday (Monday = 1) of their 1 January
    "common": [1900, 2002, 2014, 2015, 2010, 2011, 2006],
    "leap": [1996, 2008, 1992, 2004, 2016, 2000, 2012],
    "commonAfterLeap": [2001, 2013, 1997, 2009, 1993, 2005, 2017],
}


def _iso_sample_dates(year: int, weekday: int, kind: str) -> list[dt.datetime]:
    leap = kind == "leap"
    return [
        dt.datetime(year, 1, 1),  # new year
        dt.datetime(year, 1, 8 - weekday, 23, 59, 59),  # end of the first week
        dt.datetime(year, 1, 9 - weekday),  # start of the second week
        dt.datetime(year, 7, 5, 19, 36),  # '-07-05T21:36:00+02:00'
        dt.datetime(year, 12, 31 - weekday - (1 if leap else 0), 23, 59, 59),  # end of the second-to-last week
        dt.datetime(year, 12, 31 - weekday + (0 if leap else 1)),  # start of the last week
        dt.datetime(year, 12, 31, 23, 59, 59),  # new year's eve
    ]


def test_iso_date_expressions(db):
    """iso_date_exprs.js (SERVER-7695): $isoDayOfWeek, $isoWeek, $isoWeekYear and '%G-W%V-%u' for the
    jstest's sample dates (new year, first / second week, 5 July, last weeks, new year's eve) of 21 years
    covering each weekday a common, leap and after-leap year can start on (1900 and 2000 included); ISO
    8601's week numbering is the oracle. Also '%V-%G' / '%G-%V' for 1900-12-31 and $isoDayOfWeek of a
    stored date."""
    coll = fill(db, [{"date": iso("2021-04-14T04:48:00Z")}])
    project, expected = {"_id": 0}, {}
    for kind, years in ISO_YEARS.items():
        for weekday, year in enumerate(years, start=1):
            assert dt.date(year, 1, 1).isoweekday() == weekday, year  # the table's premise
            for n, date in enumerate(_iso_sample_dates(year, weekday, kind)):
                iso_year, week, day = date.isocalendar()
                key = f"y{year}_{n}"
                project[key + "_dow"], expected[key + "_dow"] = {"$isoDayOfWeek": date}, day
                project[key + "_week"], expected[key + "_week"] = {"$isoWeek": date}, week
                project[key + "_year"], expected[key + "_year"] = {"$isoWeekYear": date}, iso_year
                project[key + "_str"] = {"$dateToString": {"format": "%G-W%V-%u", "date": date}}
                expected[key + "_str"] = f"{iso_year}-W{week:02d}-{day}"
    late_1900 = dt.datetime(1900, 12, 31, 23, 59, 59)
    project["v_g"] = {"$dateToString": {"date": late_1900, "format": "%V-%G"}}
    project["g_v"] = {"$dateToString": {"date": late_1900, "format": "%G-%V"}}
    project["stored"] = {"$isoDayOfWeek": "$date"}
    expected.update({"v_g": "01-1901", "g_v": "1901-01", "stored": 3})
    (got,) = run(coll, [{"$project": project}])
    assert {k: v for k, v in got.items() if v != expected[k]} == {}
    assert got == expected


SERVER6190_WEEKS = [
    (1, (1984, 1, 1)), (1, (1984, 1, 2)), (1, (1984, 1, 7)), (2, (1984, 1, 8)), (7, (1984, 2, 18)),
    (8, (1984, 2, 19)), (0, (2007, 1, 1)), (0, (2007, 1, 2)), (0, (2007, 1, 6)), (1, (2007, 1, 7)),
    (1, (2007, 1, 8)), (1, (2007, 1, 13)), (2, (2007, 1, 14)), (8, (2007, 3, 3)), (9, (2007, 3, 4)),
    (0, (2008, 1, 1)), (0, (2008, 1, 5)), (1, (2008, 1, 6)), (16, (2008, 4, 26)), (17, (2008, 4, 27)),
    (0, (2003, 1, 1)), (0, (2003, 1, 4)), (1, (2003, 1, 5)), (51, (2003, 12, 27)), (52, (2003, 12, 28)),
    (0, (2009, 1, 1)), (0, (2009, 1, 3)), (1, (2009, 1, 4)), (43, (2009, 10, 31)), (44, (2009, 11, 1)),
    (0, (2010, 1, 1)), (0, (2010, 1, 2)), (1, (2010, 1, 3)), (37, (2010, 9, 18)), (38, (2010, 9, 19)),
    (0, (2011, 1, 1)), (1, (2011, 1, 2)), (33, (2011, 8, 20)), (34, (2011, 8, 21)),
    (8, (2016, 2, 27)), (9, (2016, 2, 28)), (9, (2016, 2, 29)), (9, (2016, 3, 1)),
    (8, (2032, 2, 28)), (9, (2032, 2, 29)), (9, (2032, 3, 1)),
    (8, (2020, 2, 28)), (8, (2020, 2, 29)), (9, (2020, 3, 1)),
]


def test_week_server6190(db):
    """server6190.js: $week (weeks start on Sunday; days before the year's first Sunday are week 0) for
    dates in 1984-2032 around year starts and leap days, as an int; a Timestamp argument (any increment);
    a single-element array argument; a field path."""
    coll = fill(db, [{"_id": 0, "a": dt.datetime(2020, 3, 1)}])
    project = {f"w{i}": {"$week": dt.datetime(*ymd)} for i, (_, ymd) in enumerate(SERVER6190_WEEKS)}
    seconds = int((dt.datetime(1984, 1, 1) - EPOCH).total_seconds())
    project.update({"ts0": {"$week": Timestamp(seconds, 0)}, "ts1": {"$week": Timestamp(seconds, 1000000000)},
                    "array": {"$week": [dt.datetime(2016, 2, 27)]}, "field": {"$week": "$a"}})
    (got,) = run(coll, [{"$project": {"_id": 0, **project}}])
    expected = {f"w{i}": week for i, (week, _) in enumerate(SERVER6190_WEEKS)}
    expected.update({"ts0": 1, "ts1": 1, "array": 8, "field": 9})
    assert got == expected
    assert all(type(v) is int for v in got.values())


@pytest.mark.parametrize("argument, code", [
    (5, 16006), ("foo", 16006),
    ([], 40536), ([dt.datetime(2020, 2, 28), dt.datetime(2020, 2, 29)], 40536),
], ids=["number", "string", "empty-array", "two-element-array"])
def test_week_server6190_errors(db, argument, code):
    """server6190.js: a number or string argument fails with 16006; an array of other than one element is
    rejected (the jstest's early copy says 16020; 7.0 answers 40536, "$week accepts exactly one argument
    if given an array")."""
    coll = fill(db, [{"_id": 0}])
    expect_error(coll, [{"$project": {"a": {"$week": argument}}}], code)


# ==================================================================================================
# add_subtract_dates.js / extract_missing_date.js


ADD_SUBTRACT_DATES = [
    ({"$subtract": ["$date", "$date"]}, Int64(0)),
    ({"$subtract": ["$date", "$num"]}, ms(12345 - 54312)),
    ({"$add": ["$date", "$num"]}, ms(12345 + 54312)),
    ({"$add": ["$num", "$date"]}, ms(12345 + 54312)),
    ({"$add": ["$date"]}, ms(12345)),
    ({"$add": ["$num", "$date", "$num"]}, ms(12345 + 2 * 54312)),
]


@pytest.mark.parametrize("expression, expected", ADD_SUBTRACT_DATES, ids=[str(i) for i in range(len(ADD_SUBTRACT_DATES))])
def test_add_subtract_dates(db, expression, expected):
    """add_subtract_dates.js (SERVER-6239): date - date is a long number of milliseconds, date - number
    and number + date (any number of operands) are dates."""
    coll = fill(db, [{"date": ms(12345), "num": 54312}])
    assert strict(value_of(coll, expression)) == strict(expected)


DATE_ARITHMETIC_ERRORS = [
    ({"$subtract": ["$num", "$date"]}, (16556, TYPE_MISMATCH)),
    ({"$add": ["$date", "$date"]}, 16612),
    ({"$divide": ["$date", 2]}, (16609, TYPE_MISMATCH)),
    ({"$mod": ["$date", 2]}, 16611),
    ({"$multiply": ["$date", 2]}, (16555, TYPE_MISMATCH)),
    ({"$subtract": [2, "$date"]}, (16556, TYPE_MISMATCH)),
]


@pytest.mark.parametrize("expression, code", DATE_ARITHMETIC_ERRORS,
                         ids=[next(iter(e)) + str(i) for i, (e, _) in enumerate(DATE_ARITHMETIC_ERRORS)])
def test_date_arithmetic_errors(db, expression, code):
    """add_subtract_dates.js / extract_missing_date.js (SERVER-6240): number - date (16556), date + date
    (16612), and a date in $divide (16609), $mod (16611) or $multiply (16555) fail (TypeMismatch is the
    alternative the jstest accepts where it lists one)."""
    coll = fill(db, [{"date": ms(12345), "num": 54312}])
    expect_error(coll, [{"$project": {"out": expression}}], code)


# --------------------------------------------------------------------------------------------------
# Where Tidemark answers differently from MongoDB 7.0: the tests keep MongoDB's answer and are expected
# to fail (strictly) until Tidemark changes. Keyed by test node name, grouped by cause.

# pymongo's bson, which decodes every command, reads BSON undefined as None: by the time the server sees
# the pipeline an onError / onNull of undefined is null. Keeping it needs a codec change (protocol/codec.py).
_UNDEFINED_FALLBACK = "an onError / onNull of BSON undefined comes back as null; MongoDB 7.0 returns undefined"

KNOWN_DIFFERENCES = {
    **dict.fromkeys(["test_date_from_string_fallback_any_type[undef-onError]",
                     "test_date_from_string_fallback_any_type[undef-onNull]",
                     "test_date_to_string_on_null_any_type[undef]"], _UNDEFINED_FALLBACK),
}


@pytest.fixture(autouse=True)
def _known_difference(request):
    reason = KNOWN_DIFFERENCES.get(request.node.name)
    if reason is not None:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
