"""bucketdoc's date conversions over the whole range of both representations: ``date_ms`` of a datetime is
its microseconds since the epoch floored to ms (before 1970 too), ``ms_to_date`` the datetime of a ms count
where one exists and otherwise a DatetimeMS clamped to 64 bits, and the two round-trip."""

import datetime as dt

from bson.datetime_ms import DatetimeMS
from hypothesis import given
from hypothesis import strategies as st

from tidemark.timeseries.bucketdoc import date_ms, ms_to_date

EPOCH = dt.datetime(1970, 1, 1)
_US_MIN = (dt.datetime.min - EPOCH) // dt.timedelta(microseconds=1)
_US_MAX = (dt.datetime.max - EPOCH) // dt.timedelta(microseconds=1)


@given(us=st.integers(_US_MIN, _US_MAX))
def test_date_ms_floors_the_microseconds_since_the_epoch(us):
    value = EPOCH + dt.timedelta(microseconds=us)
    assert date_ms(value) == us // 1000
    assert date_ms(value.replace(tzinfo=dt.UTC)) == us // 1000
    assert date_ms(DatetimeMS(us // 1000)) == us // 1000


@given(ms=st.integers(-(2**63), 2**63 - 1) | st.integers(_US_MIN // 1000, _US_MAX // 1000))
def test_ms_to_date_is_a_datetime_where_one_exists_and_round_trips(ms):
    value = ms_to_date(ms)
    if _US_MIN // 1000 <= ms <= _US_MAX // 1000:
        assert type(value) is dt.datetime
    else:
        assert isinstance(value, DatetimeMS)
    assert date_ms(value) == ms


def test_ms_to_date_clamps_past_64_bits():
    assert int(ms_to_date(2**70)) == 2**63 - 1
    assert int(ms_to_date(-(2**70))) == -(2**63)
