"""A $group straight after the read of a time-series collection (the columnar path: no stage between
the read and the group but $match, as the TSBS queries run it) answers as the same $group over the same
documents in a regular collection, for random measurements of every numeric edge: int32 and int64 at
their limits (a $sum widening int -> long -> double), doubles with -0.0, infinities, NaN, values past
2**53 and fractions, Decimal128 (NaN and infinities too), and null, missing and strings, which the
accumulators ignore or keep as mongod does. Dense double columns are drawn often, so many buckets go
the columnar way (DenseGroups' NumPy totals, the per-run feed), the others one measurement at a time.

What may legitimately differ is only the order the documents reach a group, which no $sort fixes here:
a time-series read goes bucket by bucket (series by series), a regular one in insertion order.

- A group keyed by the whole meta sees its documents in time order both ways (one series, inserted in
  time order): every accumulator is compared exactly, $first/$last/$push and $min/$max ties included.
- A group keyed by time alone mixes series: only the order-free accumulators run ($sum, $avg, $count,
  $min, $max, $addToSet), and their answers are compared exactly — no tolerance: Tidemark's $sum/$avg
  are exact (fsum) whatever the order — except that of equal numbers of different types (1, 1.0,
  NumberLong(1), -0.0 and 0.0) $min/$max keep the first one seen, so those compare by value, and
  $addToSet as a set. Doubles there stay below 1e300 in magnitude: a sum that overflows to infinity
  part way depends on the order (mongod's too: its double-double falls back to the plain running sum).
  $stdDevPop/$stdDevSamp run only where the order is fixed: they are mongod's Welford update, whose
  rounding follows the input order, and over an ill-conditioned group (2**53 and 2**53 + 2) two orders
  differ in more than the last bits — mongod's answers too."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from bson import Decimal128, Int64
from harness.jstests import canon
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "aggregate", "create", "drop", "explain")

BASE = dt.datetime(2024, 1, 1)
MISSING = object()

_special_doubles = st.sampled_from([0.0, -0.0, math.inf, -math.inf, 1e15, -1e15, 2.0**53, 2.0**53 + 2, 1e300,
                                    0.1, 0.2, 2.5, 9007199254740991.0])
_dense = st.one_of(st.integers(-1000, 1000).map(float), st.integers(-8000, 8000).map(lambda i: i / 8),
                   st.floats(-1e6, 1e6, allow_nan=False), _special_doubles)
_mixed = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([2**31 - 1, -(2**31), 2**31 - 2]),
    st.sampled_from([Int64(2**63 - 1), Int64(-(2**63)), Int64(2**62), Int64(1), Int64(-5)]),
    st.sampled_from([math.nan, 1.0, -0.0, 0.0]),
    st.sampled_from([Decimal128(x) for x in ("1", "0.1", "-2.5", "NaN", "Infinity", "-Infinity", "1E+300", "-0")]),
    st.sampled_from([None, "s", MISSING, True]),
)


@st.composite
def measurements(draw):
    """Documents in time order, one second apart, meta one of three series; each field a run of dense
    doubles with now and then another value, or mixed throughout."""
    n = draw(st.integers(1, 250))
    metas = draw(st.lists(st.sampled_from(["a", "b", {"k": 1}]), min_size=n, max_size=n))
    columns = {}
    for f in "xy":
        kind = draw(st.sampled_from(["dense", "dense", "sparse", "mixed"]))
        values = draw(st.lists(_mixed if kind == "mixed" else _dense, min_size=n, max_size=n))
        if kind == "sparse":
            for i, v in draw(st.lists(st.tuples(st.integers(0, n - 1), _mixed), max_size=max(1, n // 10))):
                values[i] = v
        columns[f] = values
    docs = []
    for i in range(n):
        doc: dict = {"t": BASE + dt.timedelta(seconds=i * 17), "m": metas[i]}
        for f, values in columns.items():
            if values[i] is not MISSING:
                doc[f] = values[i]
        docs.append(doc)
    return docs


_ORDER_FREE = ["$sum", "$avg", "$count", "$min", "$max", "$addToSet"]
_ORDERED = [*_ORDER_FREE, "$stdDevPop", "$stdDevSamp", "$first", "$last", "$push"]
_TIME_KEYS = [{"$dateTrunc": {"date": "$t", "unit": u}} for u in ("minute", "hour")] + [None]
_META_KEYS = ["$m", {"m": "$m", "h": {"$dateTrunc": {"date": "$t", "unit": "minute"}}}]


@st.composite
def groups(draw):
    by_meta = draw(st.booleans())
    spec: dict = {"_id": draw(st.sampled_from(_META_KEYS if by_meta else _TIME_KEYS))}
    for i in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(_ORDERED if by_meta else _ORDER_FREE))
        spec[f"f{i}"] = {"$count": {}} if op == "$count" else {op: draw(st.sampled_from(["$x", "$y", 1, 2.5]))}
    match = draw(st.sampled_from([None, {"x": {"$gt": 0}}, {"y": {"$lte": 5}},
                                  {"t": {"$gte": BASE + dt.timedelta(minutes=30)}}]))
    return by_meta, ([{"$match": match}] if match else []) + [{"$group": spec}]


def _by_value(value):
    """A number by its value alone (-0.0 as 0.0: equal, and which one a group keeps follows the order)."""
    c = canon(value, by_value=True)
    return ("number", c[1] + 0.0) if c[0] == "number" else c


def _answer(coll, pipeline, by_meta: bool):
    try:
        docs = list(coll.aggregate(pipeline))
    except OperationFailure as e:
        return ("error", e.code)
    spec = pipeline[-1]["$group"]
    out = []
    for doc in docs:
        row = {}
        for name, value in doc.items():
            op = next(iter(spec[name])) if name != "_id" else None
            if op == "$addToSet":
                row[name] = sorted(canon(v) if by_meta else _by_value(v) for v in value)
            elif op in ("$min", "$max") and not by_meta:
                row[name] = _by_value(value)
            else:
                row[name] = canon(value)
        out.append(repr(sorted(row.items())))
    return sorted(out)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=measurements(), cases=st.lists(groups(), min_size=1, max_size=4))
def test_time_series_group_answers_as_the_collection(db, docs, cases):
    for name in ("ts", "plain"):
        db.drop_collection(name)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([dict(d) for d in docs])
    db.plain.insert_many([dict(d) for d in docs])
    for by_meta, pipeline in cases:
        assert _answer(db.ts, pipeline, by_meta) == _answer(db.plain, pipeline, by_meta), pipeline
