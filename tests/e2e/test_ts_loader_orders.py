"""Differential (issue 23): the same measurements inserted in the orders of the benchmark's loaders —
``ordered`` (time-major batches in turn), ``ranges`` (a parallel backfill: writer i sends the i-th
contiguous share, the writers' turns alternating) and ``interleaved`` (batch i to writer i mod n, the
writers drifting apart) — into time-series collections answer finds and aggregations exactly as a
regular collection holding them does. Many writers keep more live buckets per series than a series'
hot list once held (a switch between them was routed vectorized only while they fitted), and value
types that change now and then mix the vectorized path with the row-by-row rules path."""

import datetime as dt

import pytest
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.commands("insert", "find", "aggregate"), pytest.mark.slow]

T0 = dt.datetime(2024, 5, 1, 6, 0)


def _writers(batches, writers, mode):
    n = len(batches)
    if mode == "ranges":
        shares = [batches[n * i // writers:n * (i + 1) // writers] for i in range(writers)]
        lags = [0] * writers
    elif mode == "interleaved":
        shares = [batches[i::writers] for i in range(writers)]
        lags = [3 * i for i in range(writers)]
    else:
        return list(batches)
    out = []
    for turn in range(max(len(s) + lag for s, lag in zip(shares, lags, strict=True))):
        out += [s[turn - lag] for s, lag in zip(shares, lags, strict=True) if 0 <= turn - lag < len(s)]
    return out


@st.composite
def loads(draw):
    hosts = draw(st.integers(1, 5))
    ticks = draw(st.integers(20, 300))
    step = draw(st.sampled_from([10, 60, 97, 301]))
    per_batch = draw(st.integers(3, 40))
    writers = draw(st.integers(2, 12))
    odd = draw(st.sampled_from([0.0, 0.0, 0.02, 0.2]))  # how often a value changes type or a field appears
    seed = draw(st.integers(0, 2**16))
    rows, state = [], seed
    for tick in range(ticks):
        for host in range(hosts):
            state = (state * 1103515245 + 12345) % 2**31
            doc = {"_id": len(rows), "t": T0 + dt.timedelta(seconds=step * tick, milliseconds=host),
                   "m": {"host": f"h{host}", "rack": host % 2}, "v": (state % 1000) / 8, "n": state % 97}
            if odd and (state >> 8) % 1000 < 1000 * odd:
                kind = (state >> 4) % 3
                if kind == 0:
                    doc["v"] = Int64(state % 7)
                elif kind == 1:
                    doc["n"] = f"s{state % 5}"
                else:
                    doc["x"] = True
            rows.append(doc)
    batches = [rows[i:i + per_batch] for i in range(0, len(rows), per_batch)]
    return batches, writers


def _answers(collection):
    docs = sorted(collection.find({}), key=lambda d: d["_id"])
    window = list(collection.find({"t": {"$gte": T0 + dt.timedelta(hours=1), "$lt": T0 + dt.timedelta(hours=3)},
                                   "m.host": "h0"}).sort("t", 1))
    groups = sorted(collection.aggregate([
        {"$group": {"_id": "$m.host", "rows": {"$sum": 1}, "first": {"$min": "$t"}, "last": {"$max": "$t"},
                    "ids": {"$sum": "$_id"}, "low": {"$min": "$v"}, "high": {"$max": "$v"}}}]),
        key=lambda d: d["_id"])
    return docs, window, groups


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(load=loads())
def test_loader_orders_answer_like_a_regular_collection(db, load):
    batches, writers = load
    for name in ("reg", "ordered", "ranges", "interleaved"):
        db.drop_collection(name)
    db.create_collection("reg")
    for batch in batches:
        db.reg.insert_many([dict(d) for d in batch])
    expected = _answers(db.reg)
    for mode in ("ordered", "ranges", "interleaved"):
        db.create_collection(mode, timeseries={"timeField": "t", "metaField": "m"})
        for batch in _writers(batches, writers, mode):
            db[mode].insert_many([dict(d) for d in batch])
        got = _answers(db[mode])
        assert got[0] == expected[0], mode
        assert got[1] == expected[1], mode
        assert got[2] == expected[2], mode
