"""What a columnar ``$group``'s shape fixes is made once per shape and shared by its queries
(``groupstate.facts``: the accumulators' state layouts, the ``_id`` template facts, the BSON tail of
its documents): a shape run again with other constants
(time window, hosts, accumulators' order) answers each query from its own data, exactly as the generic
``$group`` + ``$sort`` over the same buckets (forced by a no-op ``$skip: 0``), BSON types and order
included; and a collection dropped and created again with its time field swapped gives the same
pipeline text the new collection's answer (the shape is the planner's per (spec, time field), and the
facts are its)."""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "insert", "create", "drop")

T0 = dt.datetime(2024, 5, 1)
HOSTS = ["h0", "h1", "h2", "h3"]
ACCUMULATORS = {
    "max": {"$max": "$v"}, "min": {"$min": "$w"}, "sum": {"$sum": "$w"}, "avg": {"$avg": "$v"},
    "first": {"$first": "$v"}, "last": {"$last": "$w"}, "count": {"$count": {}}, "tmax": {"$max": "$t"},
}
IDS = {
    "minute": {"$dateTrunc": {"date": "$t", "unit": "minute"}},
    "minute-host": {"t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "h": "$m.h"},
    "host": "$m.h",
}


@pytest.fixture(scope="module")
def db(client):
    db = client["t_ts_group_shape_facts"]
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    rows = [{"t": T0 + dt.timedelta(seconds=10 * i + k), "m": {"h": host}, "v": float((i * 7 + k) % 23) / 4,
             "w": float((i + 3 * k) % 11)}
            for i in range(3 * 360) for k, host in enumerate(HOSTS)]  # 3 hours, every 10 s per host
    db.ts.insert_many(rows[: len(rows) // 2])
    db.ts.delete_many({"_id": "none"})  # the first half stored (closed buckets), the rest in memory
    db.ts.insert_many(rows[len(rows) // 2:])
    yield db
    client.drop_database("t_ts_group_shape_facts")


def _encoded(docs) -> list[bytes]:
    return [bson.encode(d) for d in docs]  # types and field order count


@st.composite
def _constants(draw):
    """One query's constants: a window of 1 to 120 minutes in the 3 hours, and the hosts."""
    start = draw(st.integers(0, 170))
    window = {"$gte": T0 + dt.timedelta(minutes=start, seconds=draw(st.integers(0, 59))),
              "$lt": T0 + dt.timedelta(minutes=start + draw(st.integers(1, 120)))}
    return window, draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=4, unique=True))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(id_name=st.sampled_from(sorted(IDS)),
       names=st.lists(st.sampled_from(sorted(ACCUMULATORS)), min_size=1, max_size=4, unique=True),
       runs=st.lists(_constants(), min_size=2, max_size=3))
def test_one_group_shape_with_other_constants_answers_each_query(db, id_name, names, runs):
    group = {"$group": {"_id": IDS[id_name], **{name: ACCUMULATORS[name] for name in names}}}
    for window, hosts in runs:  # the same shape each time: its facts made by the first query
        match = {"$match": {"t": window, "m.h": {"$in": hosts}}}
        pipeline = [match, group, {"$sort": {"_id": 1}}]
        columnar = _encoded(db.ts.aggregate(pipeline))
        generic = _encoded(db.ts.aggregate([match, {"$skip": 0}, group, {"$sort": {"_id": 1}}]))
        assert columnar == generic, pipeline


def test_the_same_pipeline_after_the_time_field_swapped_by_drop_and_create(client):
    """``$max: "$a"`` is time-valued (an int64 state, a date) while ``a`` is the time field, a double
    once the collection is made again with ``b`` as the time field: the pipeline text is the same, the
    second answer is the new collection's."""
    db = client["t_ts_group_shape_facts_ddl"]
    pipeline = [{"$group": {"_id": "$m", "x": {"$max": "$a"}, "n": {"$count": {}}}}, {"$sort": {"_id": 1}}]
    answers = []
    for time_field, other in (("a", "b"), ("b", "a")):
        db.drop_collection("ts")
        db.create_collection("ts", timeseries={"timeField": time_field, "metaField": "m"})
        db.ts.insert_many([{time_field: T0 + dt.timedelta(minutes=i), other: float(i % 7), "m": i % 40}
                           for i in range(400)])
        got = list(db.ts.aggregate(pipeline))
        assert _encoded(got) == _encoded(db.ts.aggregate([{"$skip": 0}, *pipeline]))
        answers.append(got)
    assert [type(d["x"]) for d in answers[0]] == [dt.datetime] * 40
    assert [type(d["x"]) for d in answers[1]] == [float] * 40
    assert [d["x"] for d in answers[1]] == [6.0] * 40
    client.drop_database("t_ts_group_shape_facts_ddl")
