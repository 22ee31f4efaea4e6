"""$in membership (match_leaf.in_predicate) against the definition: a value matches when it compares
equal (values.compare, BSON order) to a member. Plain int/float/str members are kept as they are and
only the other members' sort keys are built (a million-element $in); the property shows that the
split changes no answer across BSON types, numeric types that compare equal (int, Int64, double,
Decimal128, NaN, -0.0) and strings."""

from __future__ import annotations

import datetime

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match_leaf import in_predicate
from tidemark.query.values import compare

_small_ints = st.integers(-3, 3)
_numbers = st.one_of(
    _small_ints,
    _small_ints.map(Int64),
    _small_ints.map(float),
    st.sampled_from([0.5, -0.0, float("nan"), float("inf"), 2.0**53, 2**53 + 1]),
    _small_ints.map(lambda i: Decimal128(str(i))),
    st.sampled_from([Decimal128("0.5"), Decimal128("NaN"), Decimal128("-0"), Decimal128("Infinity")]),
)
_scalars = st.one_of(
    _numbers,
    st.sampled_from(["", "a", "b", "1"]),
    st.booleans(),
    st.just(None),
    st.just(datetime.datetime(2026, 1, 1)),
    st.just(ObjectId(b"\x01" * 12)),
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=2), st.dictionaries(st.sampled_from("xy"), _scalars,
                                                                            max_size=2))


@settings(max_examples=400, deadline=None)
@given(members=st.lists(_values, max_size=6), probes=st.lists(_values, min_size=1, max_size=6))
def test_membership_is_bson_equality(members: list, probes: list) -> None:
    pred = in_predicate(tuple(members), ())
    for probe in probes:
        expected = any(compare(probe, m) == 0 for m in members)
        assert pred(probe) is expected, (probe, members)


def test_numeric_types_meet_across_the_split() -> None:
    pred = in_predicate((1, 2.5, "a", Decimal128("7"), float("nan")), ())
    assert all(pred(v) for v in (1, 1.0, Int64(1), Decimal128("1"), Decimal128("2.5"), 2.5, "a", Decimal128("7"), 7,
                                 7.0, float("nan"), Decimal128("NaN")))
    assert not any(pred(v) for v in (True, "b", 3, "1", Decimal128("2.4")))
