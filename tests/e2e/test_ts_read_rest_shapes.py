"""A time-series read remembers what the rest of its pipeline fixes (``view._rest_of``: the fields it
reads, its counting plan, its columnar ``$group``, its time sort, whether it is a lastpoint) by that
pipeline's BSON with the collection's time and meta fields, and the fields its filter reads on the
filter's shape (``filters.FilterShape.fields``) when the shape fixes them. Reads of one shape with other
constants each get their own answer (the same as a regular collection holding the same measurements),
a ``$expr`` reading another field included; a collection dropped and created again with other time and
meta fields gets its own plans for the same pipeline."""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "insert", "create", "drop", "createIndexes")

T0 = dt.datetime(2024, 5, 1)
HOSTS = ["h0", "h1", "h2", "h3"]
FIELDS = ["v", "w", "z"]


def _rows() -> list[dict]:
    rows = []
    for i in range(4 * 30):  # 4 hours, every 2 minutes, one row per host
        for k, host in enumerate(HOSTS):
            rows.append({"t": T0 + dt.timedelta(minutes=2 * i, seconds=k), "m": {"h": host, "r": k % 2},
                         "v": float((i * 7 + k) % 23), "w": (i * 3 + k) % 11, "z": float((i + 5 * k) % 13)})
    return rows


@pytest.fixture(scope="module")
def db(client):
    db = client["t_ts_read_rest_shapes"]
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    rows = _rows()
    db.ts.insert_many(rows)
    db.reg.insert_many(rows)
    yield db
    client.drop_database("t_ts_read_rest_shapes")


def _same(db, pipeline: list[dict], ordered: bool) -> None:
    got = [bson.encode(d) for d in db.ts.aggregate(pipeline)]
    want = [bson.encode(d) for d in db.reg.aggregate(pipeline)]
    if not ordered:
        got, want = sorted(got), sorted(want)
    assert got == want, pipeline


_MINUTES = st.integers(0, 4 * 60)
_RESTS = st.sampled_from(["group", "group-limit", "group-newest", "count", "project", "sort-limit", "skip-limit"])


@st.composite
def _reads(draw) -> tuple[list[dict], bool]:
    """A read of a fixed family of shapes with drawn constants: the window, the hosts, the field a
    ``$expr`` reads, the fields and numbers of the stages after the ``$match``."""
    start = T0 + dt.timedelta(minutes=draw(_MINUTES))
    match: dict = {"t": {"$gte": start, "$lt": start + dt.timedelta(minutes=draw(st.integers(1, 120)))},
                   "m.h": {"$in": draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=3, unique=True))}}
    if draw(st.booleans()):
        match["$expr"] = {"$gt": [f"${draw(st.sampled_from(FIELDS))}", draw(st.integers(0, 12))]}
    elif draw(st.booleans()):
        match[draw(st.sampled_from(FIELDS))] = {"$lt": draw(st.integers(0, 12))}
    field = draw(st.sampled_from(FIELDS))
    unit = draw(st.sampled_from(["minute", "hour"]))
    group = {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": unit}}, "x": {"$max": f"${field}"}}}
    k = draw(st.integers(1, 6))
    rest = draw(_RESTS)
    if rest == "group":
        return [{"$match": match}, group, {"$sort": {"_id": 1}}], True
    if rest == "group-limit":
        return [{"$match": match}, group, {"$sort": {"_id": 1}}, {"$limit": k}], True
    if rest == "group-newest":
        return [{"$match": match}, group, {"$sort": {"_id": -1}}, {"$limit": k}], True
    if rest == "count":
        return [{"$match": match}, {"$count": draw(st.sampled_from(["n", "m2"]))}], True
    if rest == "project":
        return [{"$match": match}, {"$project": {"_id": 0, field: 1, "t": 1}}], False
    if rest == "sort-limit":
        return [{"$match": match}, {"$sort": {"t": draw(st.sampled_from([1, -1]))}}, {"$limit": k},
                {"$project": {"_id": 0, "t": 1, field: 1}}], True
    return [{"$match": match}, {"$sort": {"t": 1}}, {"$skip": k}, {"$limit": k},
            {"$project": {"_id": 0, "t": 1, field: 1}}], True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reads=st.lists(_reads(), min_size=2, max_size=5))
def test_reads_of_one_shape_each_get_their_own_answer(db, reads):
    # one after the other, memos warm: each read's plans made for it or bound to its own constants
    for pipeline, ordered in reads:
        _same(db, pipeline, ordered)


def test_an_expr_reading_another_field_reads_that_field(db):
    # the same filter shape ($expr nodes have no paths): the fields the filter reads are its own
    start = T0 + dt.timedelta(minutes=30)
    for field in FIELDS * 2:
        match = {"t": {"$gte": start, "$lt": start + dt.timedelta(minutes=40)}, "m.h": {"$in": ["h1"]},
                 "$expr": {"$gt": [f"${field}", 5]}}
        _same(db, [{"$match": match}, {"$project": {"_id": 0, "t": 1}}], False)
        _same(db, [{"$match": match}, {"$group": {"_id": None, "n": {"$sum": 1}}}], True)


def _lastpoint(mf: str) -> list[dict]:
    return [{"$sort": {mf: 1, "t": -1}}, {"$group": {"_id": f"${mf}", "last": {"$first": "$v"}}}]


def test_a_collection_created_again_with_other_fields_gets_its_own_plans(db):
    # the same pipelines before and after the collection is dropped and created with another meta
    # field: "$m.h" is then a measurement path (no columnar group by meta, no lastpoint read of "m")
    rows = [{**row, "x": row["m"]["r"]} for row in _rows()]
    windowed = [{"$match": {"t": {"$gte": T0, "$lt": T0 + dt.timedelta(hours=2)}}},
                {"$group": {"_id": {"t": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "h": "$m.h"},
                            "x": {"$max": "$v"}}},
                {"$sort": {"_id": 1}}]
    db.drop_collection("again")
    db.drop_collection("again_reg")
    db.again_reg.insert_many(rows)
    for meta in ("m", "x", "m"):
        db.drop_collection("again")
        db.create_collection("again", timeseries={"timeField": "t", "metaField": meta, "granularity": "seconds"})
        db.again.insert_many(rows)
        for pipeline in (windowed, _lastpoint("m")):
            got = sorted(bson.encode(d) for d in db.again.aggregate(pipeline))
            want = sorted(bson.encode(d) for d in db.again_reg.aggregate(pipeline))
            assert got == want, (meta, pipeline)
        db.again.create_index([("m.h", 1), ("t", 1)])  # (an index DDL between two runs of the same reads)
        for pipeline in (windowed, _lastpoint("m")):
            got = sorted(bson.encode(d) for d in db.again.aggregate(pipeline))
            want = sorted(bson.encode(d) for d in db.again_reg.aggregate(pipeline))
            assert got == want, (meta, pipeline)
