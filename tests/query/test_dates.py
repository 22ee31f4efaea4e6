"""Calendar math and date expressions, with expected values from MongoDB's documentation."""

import datetime as dt

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query import dates
from tidemark.query.expressions import evaluate

D = dt.datetime


def ms(d):
    return dates.to_millis(d)


@pytest.mark.parametrize("spec,expected_offset_min", [
    ("+05:30", 330), ("-0800", -480), ("+03", 180), ("UTC", 0), ("Asia/Kolkata", 330),
])
def test_parse_timezone_accepts_offsets_and_iana_names(spec, expected_offset_min):
    tz = dates.parse_timezone(spec)
    assert tz.offset_ms(ms(D(2021, 1, 1))) == expected_offset_min * 60_000


@pytest.mark.parametrize("bad", ["Mars/Phobos", "+5:3", "", "../etc/passwd"])
def test_unknown_timezone_is_40485(bad):
    with pytest.raises(MongoError) as e:
        dates.parse_timezone(bad)
    assert e.value.code == 40485 and e.value.message == f'unrecognized time zone identifier: "{bad}"'


def test_dst_offset_changes_with_the_instant():
    ny = dates.parse_timezone("America/New_York")
    assert ny.offset_ms(ms(D(2021, 1, 15))) == -5 * 3_600_000
    assert ny.offset_ms(ms(D(2021, 7, 15))) == -4 * 3_600_000


@pytest.mark.parametrize("days", [-800000, -1, 0, 59, 10957, 2932896])
def test_civil_day_round_trip(days):
    assert dates.days_from_civil(*dates.civil_from_days(days)) == days


# The $dateTrunc example from MongoDB's documentation (binSize 2 weeks, Los Angeles, Monday start).
@pytest.mark.parametrize("order_date,expected", [
    (D(2020, 5, 18, 14, 10, 30), D(2020, 5, 11, 7)),
    (D(2021, 3, 20, 11, 30, 5), D(2021, 3, 15, 7)),
    (D(2021, 1, 11, 6, 31, 15), D(2021, 1, 4, 8)),
    (D(2020, 2, 8, 13, 13, 13), D(2020, 2, 3, 8)),
])
def test_date_trunc_documented_two_week_bins(order_date, expected):
    expr = {"$dateTrunc": {"date": "$d", "unit": "week", "binSize": 2, "timezone": "America/Los_Angeles",
                           "startOfWeek": "Monday"}}
    assert evaluate(expr, {"d": order_date}) == expected


@pytest.mark.parametrize("unit,bin_size,tz,expected", [
    ("minute", 1, None, D(2020, 11, 1, 18, 23)),
    ("minute", 15, None, D(2020, 11, 1, 18, 15)),
    ("hour", 1, "+05:30", D(2020, 11, 1, 17, 30)),
    ("hour", 6, None, D(2020, 11, 1, 18)),
    ("day", 1, "America/New_York", D(2020, 11, 1, 4)),
    ("month", 1, None, D(2020, 11, 1)),
    ("quarter", 1, None, D(2020, 10, 1)),
    ("year", 1, None, D(2020, 1, 1)),
    ("year", 5, None, D(2020, 1, 1)),
    ("week", 1, None, D(2020, 11, 1)),  # 2020-11-01 is a Sunday
    ("millisecond", 100, None, D(2020, 11, 1, 18, 23, 36, 500000)),
])
def test_date_trunc_units(unit, bin_size, tz, expected):
    spec = {"date": D(2020, 11, 1, 18, 23, 36, 567000), "unit": unit, "binSize": bin_size}
    if tz:
        spec["timezone"] = tz
    assert evaluate({"$dateTrunc": spec}, {}) == expected


def test_date_trunc_null_date_is_null_and_bad_unit_errors():
    assert evaluate({"$dateTrunc": {"date": "$missing", "unit": "hour"}}, {}) is None
    with pytest.raises(MongoError) as e:
        evaluate({"$dateTrunc": {"date": D(2020, 1, 1), "unit": "fortnight"}}, {})
    assert e.value.code == 5439014
    with pytest.raises(MongoError) as e:
        evaluate({"$dateTrunc": {"date": "x", "unit": "hour"}}, {})
    assert e.value.code == 5439012


@pytest.mark.parametrize("arg,code,message", [
    ("$d", 5439007, "$dateTrunc only supports an object as its argument"),
    ({"date": "$d", "unit": "day", "weekStartDay": 1}, 5439008,
     "Unrecognized argument to $dateTrunc: weekStartDay. Expected arguments: date, unit, and optionally, binSize, "
     "timezone, startOfWeek."),
    ({"unit": "day"}, 5439009, "Missing 'date' parameter to $dateTrunc"),
    ({"date": "$d"}, 5439010, "Missing 'unit' parameter to $dateTrunc"),
])
def test_date_trunc_parse_errors_use_its_own_codes(arg, code, message):
    with pytest.raises(MongoError) as e:
        evaluate({"$dateTrunc": arg}, {})
    assert (e.value.code, str(e.value)) == (code, message)


def test_date_trunc_of_a_missing_or_null_date_is_null_whatever_the_other_arguments():
    for spec in ({"date": "$nope", "unit": "month", "binSize": 3, "timezone": "Europe/Paris"},
                 {"date": None, "unit": "week", "startOfWeek": "monday"},
                 {"date": "$nope", "unit": "$u"}):
        assert evaluate({"$dateTrunc": spec}, {"u": "day"}) is None


@pytest.mark.parametrize("start,unit,amount,tz,expected", [
    (D(2021, 1, 31), "month", 1, None, D(2021, 2, 28)),          # month-end clamping
    (D(2020, 1, 31), "month", 1, None, D(2020, 2, 29)),          # leap year
    (D(2020, 2, 29), "year", 1, None, D(2021, 2, 28)),
    (D(2021, 3, 31), "quarter", -1, None, D(2020, 12, 31)),
    (D(2020, 12, 31, 12), "hour", 36, None, D(2021, 1, 2)),
    # Across the 2021-03-14 DST change in New York a day keeps local wall-clock time (23 h elapsed).
    (D(2021, 3, 13, 17), "day", 1, "America/New_York", D(2021, 3, 14, 16)),
    (D(2021, 3, 13, 17), "hour", 24, "America/New_York", D(2021, 3, 14, 17)),
])
def test_date_add(start, unit, amount, tz, expected):
    spec = {"startDate": start, "unit": unit, "amount": amount}
    if tz:
        spec["timezone"] = tz
    assert evaluate({"$dateAdd": spec}, {}) == expected


def test_date_subtract_is_negative_add():
    spec = {"startDate": D(2021, 3, 31), "unit": "month", "amount": 1}
    assert evaluate({"$dateSubtract": spec}, {}) == D(2021, 2, 28)


@pytest.mark.parametrize("start,end,unit,extra,expected", [
    (D(2020, 12, 31, 23, 59), D(2021, 1, 1, 0, 1), "year", {}, 1),       # boundaries crossed, not elapsed
    (D(2021, 1, 1), D(2021, 12, 31, 23), "year", {}, 0),
    (D(2021, 1, 31), D(2021, 2, 1), "month", {}, 1),
    (D(2021, 3, 1), D(2021, 1, 1), "month", {}, -2),
    (D(2021, 1, 1, 10, 59), D(2021, 1, 1, 11, 0), "hour", {}, 1),
    (D(2021, 1, 1), D(2021, 1, 1, 0, 0, 0, 999000), "second", {}, 0),
    (D(2021, 1, 2), D(2021, 1, 4), "week", {}, 1),                          # Sunday Jan 3 is crossed
    (D(2021, 1, 2), D(2021, 1, 4), "week", {"startOfWeek": "monday"}, 1),
    (D(2021, 1, 4), D(2021, 1, 9), "week", {"startOfWeek": "monday"}, 0),
    (D(2021, 1, 1, 3), D(2021, 1, 1, 6), "day", {"timezone": "America/New_York"}, 1),
])
def test_date_diff(start, end, unit, extra, expected):
    assert evaluate({"$dateDiff": {"startDate": start, "endDate": end, "unit": unit, **extra}}, {}) == expected


def test_date_to_string_formats():
    d = D(2014, 1, 1, 8, 15, 39, 736000)  # the $dateToString documentation example
    f = lambda fmt, tz=None: evaluate({"$dateToString": {"date": d, "format": fmt, **({"timezone": tz} if tz else {})}}, {})  # noqa: E731
    assert f("%Y-%m-%d") == "2014-01-01"
    assert f("%H:%M:%S:%L%z", "America/New_York") == "03:15:39:736-0500"
    assert f("%Z", "America/New_York") == "-300"
    assert f("%Z", "+04:45") == "285"  # no sign before a positive offset
    assert f("%j %w %u %U %V %G") == "001 4 3 00 01 2014"
    assert f("%%Y") == "%Y"
    assert evaluate({"$dateToString": {"date": d}}, {}) == "2014-01-01T08:15:39.736Z"
    # 7.0 keeps the 'Z' of the default format whatever the timezone (7.1 drops it).
    assert evaluate({"$dateToString": {"date": d, "timezone": "+01:00"}}, {}) == "2014-01-01T09:15:39.736Z"


def test_date_to_string_null_and_on_null():
    assert evaluate({"$dateToString": {"date": "$x"}}, {}) is None
    assert evaluate({"$dateToString": {"date": "$x", "onNull": "n/a"}}, {}) == "n/a"
    with pytest.raises(MongoError) as e:
        evaluate({"$dateToString": {"date": D(2020, 1, 1), "format": "%Q"}}, {})
    assert e.value.code == 18536


@pytest.mark.parametrize("spec,expected", [
    ({"dateString": "2017-02-08T12:10:40.787"}, D(2017, 2, 8, 12, 10, 40, 787000)),
    ({"dateString": "2017-02-08T12:10:40.787", "timezone": "America/New_York"}, D(2017, 2, 8, 17, 10, 40, 787000)),
    ({"dateString": "2017-02-08T12:10:40.787+0500"}, D(2017, 2, 8, 7, 10, 40, 787000)),
    ({"dateString": "2017-02-08"}, D(2017, 2, 8)),
    ({"dateString": "15-06-2018", "format": "%d-%m-%Y"}, D(2018, 6, 15)),
    ({"dateString": "2018/06/15 10:05", "format": "%Y/%m/%d %H:%M", "timezone": "+02:00"}, D(2018, 6, 15, 8, 5)),
])
def test_date_from_string(spec, expected):
    assert evaluate({"$dateFromString": spec}, {}) == expected


def test_date_from_string_errors_and_fallbacks():
    with pytest.raises(MongoError) as e:
        evaluate({"$dateFromString": {"dateString": "not a date"}}, {})
    assert e.value.code == 241
    assert evaluate({"$dateFromString": {"dateString": "nope", "onError": "bad"}}, {}) == "bad"
    assert evaluate({"$dateFromString": {"dateString": "$x", "onNull": 0}}, {}) == 0
    assert evaluate({"$dateFromString": {"dateString": "$x"}}, {}) is None


def test_date_to_parts_and_back():
    d = D(2017, 1, 1, 1, 29, 9, 123000)  # documentation example
    parts = evaluate({"$dateToParts": {"date": d}}, {})
    assert parts == {"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}
    iso = evaluate({"$dateToParts": {"date": d, "iso8601": True}}, {})
    assert iso == {"isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29, "second": 9,
                   "millisecond": 123}
    local = evaluate({"$dateToParts": {"date": d, "timezone": "America/New_York"}}, {})
    assert (local["year"], local["month"], local["day"], local["hour"]) == (2016, 12, 31, 20)
    assert evaluate({"$dateFromParts": parts}, {}) == d
    assert evaluate({"$dateFromParts": {"year": 2017, "month": 14, "day": 1}}, {}) == D(2018, 2, 1)
    assert evaluate({"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 1, "isoDayOfWeek": 1}}, {}) == D(2017, 1, 2)
    with pytest.raises(MongoError) as e:
        evaluate({"$dateFromParts": {"year": 0}}, {})
    assert e.value.code == 40523


@pytest.mark.parametrize("op,expected", [
    ("$year", 2014), ("$month", 1), ("$dayOfMonth", 1), ("$hour", 8), ("$minute", 15), ("$second", 39),
    ("$millisecond", 736), ("$dayOfYear", 1), ("$dayOfWeek", 4), ("$week", 0), ("$isoWeek", 1),
    ("$isoWeekYear", 2014), ("$isoDayOfWeek", 3),
])
def test_date_part_extractors_documented_example(op, expected):
    assert evaluate({op: "$date"}, {"date": D(2014, 1, 1, 8, 15, 39, 736000)}) == expected


def test_date_part_extractors_timezone_null_and_type_error():
    d = D(2014, 1, 1, 8, 15, 39)
    assert evaluate({"$hour": {"date": d, "timezone": "+05:30"}}, {}) == 13
    assert evaluate({"$minute": {"date": d, "timezone": "+05:30"}}, {}) == 45
    assert evaluate({"$year": "$nope"}, {}) is None
    with pytest.raises(MongoError) as e:
        evaluate({"$year": "2014"}, {})
    assert e.value.code == 16006 and "string" in e.value.message


def test_date_diff_hours_across_a_dst_change_counts_elapsed_hours():
    # 2021-03-14 02:00 New York clocks jump to 03:00: 01:30 EST -> 03:30 EDT is one elapsed hour.
    spec = {"startDate": D(2021, 3, 14, 6, 30), "endDate": D(2021, 3, 14, 7, 30), "unit": "hour",
            "timezone": "America/New_York"}
    assert evaluate({"$dateDiff": spec}, {}) == 1
    spec["timezone"] = "+05:30"
    spec["startDate"], spec["endDate"] = D(2021, 1, 1, 0, 29), D(2021, 1, 1, 0, 31)  # crosses 06:00 local
    assert evaluate({"$dateDiff": spec}, {}) == 1


# ---------------------------------------------------------------------------------------------------
# mongod 7.0's argument order and codes (jstests date_trunc.js, date_diff.js, date_add_subtract.js, ...)

def _code(expr, doc=None):
    with pytest.raises(MongoError) as e:
        evaluate(expr, doc or {})
    return e.value.code


@pytest.mark.parametrize("op,spec", [
    ("$dateTrunc", {"date": "Invalid", "unit": "$u", "binSize": "Invalid", "timezone": "Invalid"}),
    ("$dateTrunc", {"date": 1, "unit": "week", "binSize": "", "timezone": 1, "startOfWeek": "$missing"}),
    ("$dateDiff", {"startDate": 1, "endDate": 2, "unit": "$u", "timezone": "INVALID"}),
    ("$dateDiff", {"startDate": 1, "endDate": 2, "unit": "week", "timezone": 1, "startOfWeek": "$missing"}),
    ("$dateAdd", {"startDate": "$d", "unit": "workday", "amount": "$missing", "timezone": "Unknown"}),
    ("$dateAdd", {"startDate": "$d", "unit": "$u", "amount": 1.5, "timezone": None}),
])
def test_a_nullish_argument_answers_null_before_the_others_are_checked(op, spec):
    assert evaluate({op: spec}, {"d": D(2020, 1, 1)}) is None


def test_a_literal_null_timezone_is_given_and_nullish_not_absent():
    d = D(2020, 12, 31, 12)
    assert evaluate({"$dateAdd": {"startDate": d, "unit": "hour", "amount": 1, "timezone": None}}, {}) is None
    assert evaluate({"$dateToString": {"date": "not a date", "timezone": None, "onNull": 1}}, {}) is None
    assert evaluate({"$hour": {"date": d, "timezone": None}}, {}) is None


@pytest.mark.parametrize("expr,code", [
    ({"$dateTrunc": {"date": D(2020, 1, 1), "unit": 1}}, 5439013),
    ({"$dateDiff": {"startDate": D(2020, 1, 1), "endDate": D(2020, 1, 1), "unit": "decade"}}, 5439014),
    ({"$dateTrunc": {"date": D(2020, 1, 1), "unit": "week", "startOfWeek": 1}}, 5439015),
    ({"$dateDiff": {"startDate": D(2020, 1, 1), "endDate": D(2020, 1, 1), "unit": "week", "startOfWeek": "x"}},
     5439016),
    ({"$dateAdd": "x"}, 5166400),
    ({"$dateAdd": {"startDate": D(2020, 1, 1), "units": "day", "amount": 1}}, 5166401),
    ({"$dateSubtract": {"startDate": D(2020, 1, 1), "amount": 1}}, 5166402),
    ({"$dateAdd": {"startDate": D(2020, 1, 1), "unit": 1, "amount": 1}}, 5166404),
    ({"$dateAdd": {"startDate": D(2020, 1, 1), "unit": "epoch", "amount": 1}}, 9),
    ({"$dateSubtract": {"startDate": D(2020, 1, 1), "unit": "month", "amount": 3.6e9}}, 5166406),
    ({"$dateSubtract": {"startDate": D(2020, 1, 1), "unit": "month", "amount": -3e10}}, 5976500),
    ({"$dateSubtract": {"startDate": D(2020, 1, 1), "unit": "day", "amount": -2.0**63}}, 6045000),
    ({"$dateDiff": []}, 5166301),
    ({"$dateToParts": {"timezone": "UTC"}}, 40522),
    ({"$dateToParts": {"date": "$missing", "iso8601": 5}}, 40521),
    ({"$dateToString": {"format": "%Y"}}, 18628),
    ({"$dateToString": {"date": D(2020, 1, 1), "extra": 1}}, 18534),
    ({"$dateToString": ["%Y", "$d"]}, 18629),
    ({"$dateFromString": "no-object"}, 40540),
    ({"$dateFromString": {"unknown": 1}}, 40541),
    ({"$dayOfYear": {"timezone": "UTC"}}, 40539),
    ({"$dayOfYear": {}}, 40539),
    ({"$dayOfYear": {"date": D(2020, 1, 1), "timezone": 5}}, 40533),
    ({"$week": []}, 40536),
    ({"$tsIncrement": 5}, 5687302),
])
def test_mongod_codes(expr, code):
    assert _code(expr) == code


def test_date_from_parts_carries_seconds_and_milliseconds_and_bounds_the_rest():
    assert evaluate({"$dateFromParts": {"year": 2017, "second": 71841012}}, {}) == D(2019, 4, 12, 11, 50, 12)
    assert evaluate({"$dateFromParts": {"year": 1970, "millisecond": 1502095918551}}, {}) == \
        D(2017, 8, 7, 8, 51, 58, 551000)
    with pytest.raises(MongoError) as e:
        evaluate({"$dateFromParts": {"year": 1970, "month": 32768}}, {})
    assert (e.value.code, e.value.message) == (31034, "'month' must evaluate to a value in the range [-32768, 32767];"
                                                      " value 32768 is not in range")
    assert _code({"$dateFromParts": {"year": 1970, "millisecond": 18014398509481984.0}}) == 159  # DurationOverflow
    assert _code({"$dateFromParts": {"year": 1970, "millisecond": 18014398509481984000.0}}) == 40515
    assert _code({"$dateFromParts": {"isoWeekYear": 10000}}) == 31095
    assert _code({"$dateFromParts": {"isoWeekYear": 2017, "month": 1}}) == 40525


@pytest.mark.parametrize("date,tz,expected", [
    (D(2017, 7, 4, 14, 56, 42), "UTC", "+0000 0"),
    (D(2017, 7, 4, 14, 56, 42), "Europe/London", "+0100 60"),
    (D(2017, 7, 4, 14, 56, 42), "America/New_York", "-0400 -240"),
    (D(1900, 7, 10, 11, 41, 22), "America/Caracas", "-0427 -267"),  # -04:27:40 truncates
    (D(1935, 7, 10, 11, 36, 37), "Europe/Amsterdam", "+0119 79"),   # +01:19:32
])
def test_date_to_string_offsets_truncate_toward_zero_without_a_plus_sign(date, tz, expected):
    assert evaluate({"$dateToString": {"date": date, "format": "%z %Z", "timezone": tz}}, {}) == expected


def test_date_to_string_month_names_and_year_range():
    d = D(2017, 7, 4)
    assert evaluate({"$dateToString": {"date": d, "format": "%b (%B) %d, %Y"}}, {}) == "Jul (July) 04, 2017"
    assert _code({"$dateToString": {"date": "$d", "format": "%Y"}}, {"d": dates.from_millis(253402300800000)}) == 18537


def _from_string(s, **spec):
    return evaluate({"$dateFromString": {"dateString": s, **spec}}, {})


@pytest.mark.parametrize("text,expected", [
    ("2017-07-04T11:56.02", D(2017, 7, 4, 11, 56, 2)),
    ("2017-07-04T11:56.02.81", D(2017, 7, 4, 11, 56, 2, 810000)),
    ("2017-07-14T12:02:44.771 GMT+02:00", D(2017, 7, 14, 10, 2, 44, 771000)),
    ("2017-07-14T12:02:44.771 CEST", D(2017, 7, 14, 10, 2, 44, 771000)),
    ("2017-07-14T12:02:44.771 L", D(2017, 7, 14, 1, 2, 44, 771000)),  # military zone: +11
    ("July 4th, 2017 12:39:30 BST", D(2017, 7, 4, 11, 39, 30)),
    ("July 4th, 2017 12pm", D(2017, 7, 4, 12)),
    ("7/4/17", D(2017, 7, 4)),
    ("04-07-2017", D(2017, 7, 4)),
    ("2017-Jul-04 noon", D(2017, 7, 4, 12)),
    ("2017-07-04 12:48:07 GMT+0545", D(2017, 7, 4, 7, 3, 7)),
    ("Tuesday, July 4th 2017", D(2017, 7, 4)),
    ("2017-W01-1", D(2017, 1, 2)),
    ("20170704T115602", D(2017, 7, 4, 11, 56, 2)),
])
def test_date_from_string_reads_free_form_strings_like_timelib(text, expected):
    assert _from_string(text) == expected


@pytest.mark.parametrize("spec,message", [
    ({"dateString": "July 4th"}, 'an incomplete date/time string has been found, with elements missing: "July 4th"'),
    ({"dateString": "2017, 12:50:53"}, "Error parsing date string '2017, 12:50:53'; 6: Double time specification '1'"),
    ({"dateString": "2017-02-30"}, "The parsed date was invalid"),
    ({"dateString": "2017-07-12T22:23:55 Europe/Amsterdam"},
     "passing a time zone identifier as part of the string is not allowed"),
    ({"dateString": "2017-07-12T22:23:55Z", "timezone": "Europe/Amsterdam"},
     "you cannot pass in a date/time string with time zone information ('Z') together with a timezone argument"),
    ({"dateString": "2018-01", "format": "%Y-%m-%d"}, "Data missing"),
    ({"dateString": "1992-26-04", "format": "Y-d-m"}, "0: Format literal not found '1'"),
    ({"dateString": "ISO Week 52", "format": "ISO Week %V"}, "The parsed date was invalid"),
    ({"dateString": "12/31/2018", "format": "%m/%d/%G"}, "Mixing of ISO dates with natural dates is not allowed"),
    ({"dateString": "12/31/2018", "format": "%m/%d\0/%Y"}, "Trailing data"),
])
def test_date_from_string_conversion_failures_carry_mongods_messages(spec, message):
    with pytest.raises(MongoError) as e:
        evaluate({"$dateFromString": spec}, {})
    assert e.value.code == 241 and message in e.value.message


def test_date_from_string_zone_in_string_is_allowed_with_the_utc_zone_only():
    assert _from_string("2017-07-12T22:23:55Z", timezone="UTC") == D(2017, 7, 12, 22, 23, 55)
    assert _from_string("2017-07-12T22:23:55+02:00", timezone="+00:00") == D(2017, 7, 12, 20, 23, 55)
    assert _code({"$dateFromString": {"dateString": "2017-07-12T22:23:55Z", "timezone": "GMT"}}) == 241


def test_date_from_string_format_z_reads_abbreviations_and_minutes():
    fmt = "%Y-%m-%dT%H:%M:%S.%L%z"
    assert _from_string("2017-07-14T12:02:44.771 PDT", format=fmt) == D(2017, 7, 14, 19, 2, 44, 771000)
    assert _from_string("4/26/1992:+285", format="%m/%d/%Y:%Z") == D(1992, 4, 25, 19, 15)
    assert _from_string("Jul 04 2017", format="%b %d %Y") == D(2017, 7, 4)


def test_date_from_string_nullish_format_or_timezone_and_on_error():
    assert _from_string("2017-07-11T17:05:19Z", format="$missing", onError=1) is None
    assert _from_string("2017-07-11T17:05:19Z", timezone=None, onNull=1) is None
    assert _from_string(5, format=None, onError="fallback") == "fallback"
    assert _from_string("Invalid date string", format=None, onError="fallback") is None
