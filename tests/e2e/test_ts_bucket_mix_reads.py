"""Reads of a time-series collection whose buckets are partly stored and partly in memory (new ones,
and stored ones reopened by an insert), or all stored (nothing of it in memory: the read skips the
in-memory lookup, its predicate's meta points never worked out), against the same documents in a
regular collection.

The property: for any series (string, ObjectId, bool and object metas, a number: no meta point), any
spread of times (one bucket per hour: up to a few hundred buckets in one series, more than one
storage chunk of an index read), with or without a ``{m.h: 1, t: -1}`` index, and any meta equality / ``$in`` filter (alone,
with a time window, with a measurement filter), ``find`` and the TSBS-like ``$match`` + ``$group`` by
minute + ``$sort`` answer what the regular collection answers — after each of: the first inserts (in
memory), a direct write (every bucket stored), more inserts (some into the stored buckets: reopened)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson import ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.commands("find", "insert", "delete", "create", "drop", "aggregate", "createIndexes"),
              pytest.mark.slow]

T0 = dt.datetime(2024, 5, 1)
OID = ObjectId("650000000000000000000001")
HOSTS = ("a", "b", "c", OID, True, 1)
metas = st.one_of(st.sampled_from(HOSTS), st.builds(lambda h: {"h": h, "d": "x"}, st.sampled_from(HOSTS)))
rows = st.lists(st.tuples(metas, st.integers(0, 300), st.integers(0, 59), st.integers(-5, 5)), max_size=40)
values = st.sampled_from(HOSTS + ("nope",))


def _clause(path: str, chosen: list) -> dict:
    return {path: chosen[0]} if len(chosen) == 1 else {path: {"$in": chosen}}


clauses = st.builds(_clause, st.sampled_from(["m", "m.h"]), st.lists(values, min_size=1, max_size=4))
filters = st.one_of(
    clauses,
    st.builds(lambda a, h: {**a, "t": {"$gte": T0 + dt.timedelta(hours=h), "$lt": T0 + dt.timedelta(hours=h + 30)}},
              clauses, st.integers(0, 280)),
    st.builds(lambda a: {**a, "v": {"$gte": 0}}, clauses),
)


def _answers(coll, query: dict) -> tuple[list, list]:
    found = sorted((d["t"], d["v"]) for d in coll.find(query, {"_id": 0, "t": 1, "v": 1}))
    grouped = list(coll.aggregate([
        {"$match": query},
        {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "top": {"$max": "$v"}}},
        {"$sort": {"_id": 1}}]))
    return found, grouped


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(first=rows, hourly=st.integers(0, 300), later=rows, indexed=st.booleans(),
       queries=st.lists(filters, min_size=1, max_size=4))
def test_reads_over_stored_and_in_memory_buckets_answer_as_a_regular_collection(db, first, hourly, later, indexed,
                                                                                queries):
    for name in ("ts", "reg"):
        db.drop_collection(name)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    ts, reg = db["ts"], db["reg"]
    if indexed:
        ts.create_index([("m.h", 1), ("t", -1)])
    n = 0

    def insert(batch: list) -> None:
        nonlocal n
        docs = []
        for meta, hour, minute, v in batch:
            docs.append({"t": T0 + dt.timedelta(hours=hour, minutes=minute, milliseconds=n), "m": meta, "v": v})
            n += 1
        if docs:
            ts.insert_many(docs)
            reg.insert_many(docs)

    def check() -> None:
        for query in [{"m.h": "a"}, *queries]:  # (the first: the whole hourly series)
            assert _answers(ts, query) == _answers(reg, query), query

    # (one series over ``hourly`` hours: a bucket each, more than one storage chunk of an index read)
    insert(first + [({"h": "a", "d": "x"}, hour, 0, hour % 7) for hour in range(hourly)])
    check()  # in memory
    ts.delete_many({"v": 100})  # a direct write: every bucket stored, none left in memory
    check()
    insert(later)  # new buckets, and stored ones with room reopened
    check()
