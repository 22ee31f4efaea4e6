"""$sum/$avg/$max over windows whose lower bound moves, end to end: mongod 7.0 computes them with its
removable window functions (RemovableSum, WindowFunctionAvg, WindowFunctionMax: window_function_sum.cpp,
window_function_avg.h, window_function_min_max.h), not with the $group accumulators, so an infinity or
NaN that has left the window no longer counts, the result narrows to the types the window holds (an int
when the integer sum fits 32 bits, even of longs), and of equal largest values $max answers the latest
(its multiset's last; $min its first, as $group). A window starting at 'unbounded' keeps the $group
accumulator's answer. The unit ports of mongod's
window_function_sum_test.cpp / window_function_avg_test.cpp are tests/query/test_window_removable_sum.py.

The Hypothesis family checks the property those rules give: the value (and BSON type) of a sliding
window depends only on the documents in it — the same as a window over those documents alone, from
which nothing has left — on a regular and a time-series collection alike."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from bson import Decimal128, Int64
from harness.jstests import canon, ts_pair
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("insert", "aggregate", "create")

INF, NAN = math.inf, math.nan
BASE = dt.datetime(2024, 1, 1)


def window(coll, op, values, lo, hi, *, arg="$v"):
    """The ``op`` output of each document of ``values`` (in order) under ``documents: [lo, hi]``."""
    coll.insert_many([{"_id": i, "t": BASE + dt.timedelta(seconds=i), "v": v} for i, v in enumerate(values)])
    pipeline = [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"r": {op: arg, "window": {"documents": [lo, hi]}}}}},
                {"$project": {"_id": 0, "r": 1}}]
    return [canon(d["r"]) for d in coll.aggregate(pipeline)]


CASES = [
    # (id, op, values, window, mongod 7.0's outputs)
    ("inf-leaves", "$sum", [INF, 1.0, 2.0, 3.0], (-1, 0), [INF, INF, 3.0, 5.0]),
    ("nan-leaves", "$sum", [NAN, 1.0, 2.0, 3.0], (-1, 0), [NAN, NAN, 3.0, 5.0]),
    ("both-infinities", "$sum", [INF, -INF, 1, 2], (-1, 0), [INF, NAN, -INF, 3]),
    ("decimal-nan-leaves", "$sum", [Decimal128("NaN"), 1, 2, 3], (-1, 0),
     [Decimal128("NaN"), Decimal128("NaN"), 3, 5]),
    ("decimal-inf-leaves", "$sum", [Decimal128("-Infinity"), 1, 2], (-1, 0),
     [Decimal128("-Infinity"), Decimal128("-Infinity"), 3]),
    ("double-leaves", "$sum", [1.5, 1, 2, 3], (-1, 0), [1.5, 2.5, 3, 5]),
    ("decimal-leaves", "$sum", [Decimal128("1.5"), 1, 2, 3], (-1, 0),
     [Decimal128("1.5"), Decimal128("2.5"), 3, 5]),
    ("decimal-leaves-doubles-stay", "$sum", [Decimal128("1.5"), 1.25, 2], (-1, 0),
     [Decimal128("1.5"), Decimal128("2.75"), 3.25]),
    ("longs-narrow-to-int", "$sum", [Int64(5), Int64(6), Int64(2**31), Int64(-1)], (-1, 0),
     [5, 11, Int64(2**31 + 6), 2147483647]),
    ("int-overflow-and-back", "$sum", [-(2**31), -1, 7], (-1, 0), [-(2**31), Int64(-(2**31) - 1), 6]),
    ("long-overflow-to-double", "$sum", [Int64(2**63 - 1), Int64(1), 2], (-1, 0),
     [Int64(2**63 - 1), float(2**63), 3]),
    ("look-ahead", "$sum", [INF, 1, 2], (0, 1), [INF, 3, 2]),
    ("avg-inf-leaves", "$avg", [INF, 1.0, 2.0, 3.0], (-1, 0), [INF, INF, 1.5, 2.5]),
    ("avg-decimal-leaves", "$avg", [Decimal128("1"), 2, 4], (-1, 0), [Decimal128("1"), Decimal128("1.5"), 3.0]),
    ("avg-non-numbers", "$avg", ["a", None, 4], (-1, 0), [None, None, 4.0]),
    ("max-latest-of-equals", "$max", [1, 1.0, Int64(1), None], (-1, 0), [1, 1.0, Int64(1), Int64(1)]),
    ("min-earliest-of-equals", "$min", [1, 1.0, Int64(1), None], (-1, 0), [1, 1, 1.0, Int64(1)]),
    ("max-latest-of-zeros", "$max", [-0.0, 0.0, -5], (-2, 0), [-0.0, 0.0, 0.0]),
    # an unbounded lower bound: the $group accumulator (an infinity stays, longs stay longs)
    ("unbounded-keeps-infinity", "$sum", [INF, 1.0, 2.0], ("unbounded", 0), [INF, INF, INF]),
    ("unbounded-keeps-longs", "$sum", [Int64(5), Int64(6)], ("unbounded", "current"), [Int64(5), Int64(11)]),
    ("unbounded-max-keeps-first", "$max", [1, 1.0, Int64(1)], ("unbounded", 0), [1, 1, 1]),
]


@pytest.mark.parametrize("op,values,bounds,expected", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_sliding_window_functions_as_mongod(db, op, values, bounds, expected):
    plain, ts = ts_pair(db, [], "t")
    assert window(plain, op, values, *bounds) == [canon(v) for v in expected]
    assert window(ts, op, values, *bounds) == [canon(v) for v in expected]


def test_count_over_a_sliding_window_is_an_int(db):
    assert window(db.c, "$count", [1, 2, 3], -1, 0, arg={}) == [canon(1), canon(2), canon(2)]


# Finite doubles are multiples of 1/8 below 2**40 so that every partial sum is exact: with inexact
# partial sums the last bits of a sliding double sum legitimately depend on what has left (mongod's
# double-double keeps a residue too); the property is about types, infinities, NaN and narrowing. Longs
# stay within 2**53 for the same reason: past it, a double that has left the window can leave the one
# running total a double no long equals (CI drew [0.0, 0, 2**63 - 1], whose last window [0, 2**63 - 1]
# answered the double 2**63), as mongod's RemovableSum keeps one running total too.
_values = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from([2**31 - 1, -(2**31)]),
    st.integers(-(2**53), 2**53).map(Int64),
    st.sampled_from([Int64(2**53), Int64(-(2**53)), Int64(2**31)]),
    st.integers(-(2**43), 2**43).map(lambda i: i / 8),
    st.sampled_from([INF, -INF, NAN, -0.0]),
    st.integers(-(10**6), 10**6).map(lambda i: Decimal128(f"{i}E-2")),
    st.sampled_from([Decimal128("NaN"), Decimal128("Infinity"), Decimal128("-Infinity")]),
    st.sampled_from([None, "s", True, [1]]),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.lists(_values, min_size=1, max_size=9), before=st.integers(1, 3), after=st.integers(0, 2),
       op=st.sampled_from(["$sum", "$avg", "$max", "$min"]))
def test_sliding_window_depends_only_on_its_documents(db, values, before, after, op):
    for name in ("plain", "ts", "alone"):
        db.drop_collection(name)
    plain, ts = ts_pair(db, [], "t")
    slid = window(plain, op, values, -before, after)
    assert window(ts, op, values, -before, after) == slid
    for i, got in enumerate(slid):
        inside = values[max(0, i - before): i + after + 1]
        db.drop_collection("alone")
        # the same function over exactly these documents, nothing having left: the last one's window
        alone = window(db.alone, op, inside, -len(inside), 0)
        assert got == alone[-1], (i, inside)


def test_max_n_ties_as_mongod(db):
    """$maxN among equal values (tests/query/test_minmaxn_ties.py has the rules): $group and a window
    from 'unbounded' keep the earlier ones a full set met (a later equal one does not enter; a larger one
    evicts the earliest) and output the later first; a sliding window outputs the latest of its own."""
    values = [1, 1.0, Int64(1), 2]
    db.c.insert_many([{"_id": i, "v": v} for i, v in enumerate(values)])
    (group,) = db.c.aggregate([{"$sort": {"_id": 1}},
                               {"$group": {"_id": None, "three": {"$maxN": {"n": 3, "input": "$v"}},
                                           "two": {"$maxN": {"n": 2, "input": "$v"}}}}])
    assert canon(group["three"]) == canon([2, Int64(1), 1.0])
    assert canon(group["two"]) == canon([2, 1.0])
    for bounds, expected in [((-2, 0), [[1], [1.0, 1], [Int64(1), 1.0], [2, Int64(1)]]),
                             (("unbounded", 0), [[1], [1.0, 1], [1.0, 1], [2, 1.0]])]:
        db.drop_collection("w")
        assert window(db.w, "$maxN", values, *bounds, arg={"n": 2, "input": "$v"}) == [canon(v) for v in expected]
