"""Counting the measurements of a time-series collection. mongod runs ``count`` on a view (and so
``estimatedDocumentCount``) as the aggregation ``[$match, $skip, $limit, $count]`` (count_cmd.cpp),
``countDocuments`` is ``[$match, $skip, $limit, $group {_id: 1, n: {$sum: 1}}]``, and ``$count`` is a
``$group`` with a null ``_id`` (document_source_count.cpp): the answer is the number of measurements
the filter accepts, whatever the buckets. Tidemark made a document of every measurement to count it
(~100 s of CPU for a million series); it now counts per bucket (``rowfilter.count``: a bucket's rows
when the bucket filter decides the filter, the rows the column filter keeps when it decides it, and
documents of the filter's fields only otherwise). The counts must be exactly those of a regular
collection holding the same documents, for filters on the meta field, the time and other fields,
with skips and limits, from buckets in memory, stored, and both at once."""

from __future__ import annotations

import datetime as dt

import pytest
from harness.jstests import timeseries_read_details
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "count", "explain", "insert", "delete")

T0 = dt.datetime(2024, 3, 1)
METAS = ["a", "b", {"h": "c", "r": 1}, {"h": "d", "r": 2}, None, 5]
VALUES = [0, 1, 2.5, -3, None, "s", "t", [1, 2], True, dt.datetime(2020, 1, 1)]


@st.composite
def measurements(draw) -> list[dict]:
    docs = []
    for meta in draw(st.lists(st.sampled_from(range(len(METAS))), min_size=1, max_size=5, unique=True)):
        for _ in range(draw(st.integers(1, 12))):
            # minutes apart up to three hours: several buckets per series (hour spans), some reopened
            doc = {"t": T0 + dt.timedelta(minutes=draw(st.integers(0, 180)))}
            if METAS[meta] is not None or draw(st.booleans()):
                doc["m"] = METAS[meta]
            if draw(st.integers(0, 3)):
                doc["v"] = draw(st.sampled_from(VALUES))
            if draw(st.booleans()):
                doc["x"] = draw(st.integers(0, 9))
            docs.append(doc)
    return docs


def _filter(draw) -> dict:
    kind = draw(st.sampled_from(["none", "meta", "meta_in", "meta_sub", "meta_range", "time", "time_window",
                                 "v", "v_str", "x_exists", "mixed"]))
    at = T0 + dt.timedelta(minutes=draw(st.integers(0, 180)))
    if kind == "none":
        return {}
    if kind == "meta":
        return {"m": draw(st.sampled_from(METAS))}
    if kind == "meta_in":
        return {"m": {"$in": draw(st.lists(st.sampled_from(METAS), min_size=1, max_size=3))}}
    if kind == "meta_sub":
        return {"m.r": {draw(st.sampled_from(["$eq", "$gte", "$lt"])): draw(st.integers(0, 3))}}
    if kind == "meta_range":
        return {"m": {"$gte": draw(st.sampled_from(["a", "b", "c"]))}}
    if kind == "time":
        return {"t": {draw(st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq"])): at}}
    if kind == "time_window":
        return {"t": {"$gte": at, "$lt": at + dt.timedelta(minutes=draw(st.integers(1, 90)))}}
    if kind == "v":
        return {"v": {draw(st.sampled_from(["$gt", "$gte", "$lt", "$ne"])): draw(st.sampled_from([0, 1, 2.5]))}}
    if kind == "v_str":
        return {"v": draw(st.sampled_from(["s", "t", "S"]))}
    if kind == "x_exists":
        return {"x": {"$exists": draw(st.booleans())}}
    return {"$and": [{"m": {"$in": ["a", "b"]}}, {"t": {"$lt": at}}, {"x": {"$gte": draw(st.integers(0, 9))}}]}


filters = st.composite(lambda draw: _filter(draw))


def _counts(coll, flt: dict, skip: int, limit: int, collation: dict | None = None) -> dict[str, int]:
    """Every way to count: the count command, countDocuments, aggregate $count, the countDocuments
    $group; with the skip and limit (0: none) and the collation (None: the collection's)."""
    cmd: dict = {"count": coll.name, "query": flt}
    steps: list[dict] = []
    kwargs: dict = {}
    collated: dict = {}
    if collation is not None:
        cmd["collation"] = kwargs["collation"] = collated["collation"] = collation
    if skip:
        cmd["skip"], kwargs["skip"] = skip, skip
        steps.append({"$skip": skip})
    if limit:
        cmd["limit"], kwargs["limit"] = limit, limit
        steps.append({"$limit": limit})
    counted = list(coll.aggregate([{"$match": flt}, *steps, {"$count": "n"}], **collated))
    grouped = list(coll.aggregate([{"$match": flt}, *steps, {"$group": {"_id": None, "n": {"$count": {}},
                                                                      "twice": {"$sum": 2}}}], **collated))
    return {"count": coll.database.command(cmd)["n"],
            "countDocuments": coll.count_documents(flt, **kwargs),
            "$count": counted[0]["n"] if counted else 0,
            "$group": grouped[0]["n"] if grouped else 0,
            "$group twice": grouped[0]["twice"] // 2 if grouped else 0}


@pytest.fixture
def pair(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "minutes"})
    return db["ts"], db["reg"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(docs=measurements(), cases=st.lists(st.tuples(filters(), st.sampled_from([0, 0, 1, 3]),
                                                      st.sampled_from([0, 0, 2, 7])), min_size=5, max_size=5),
       collation=st.sampled_from([None, None, {"locale": "en", "strength": 2}]))
def test_counts_are_those_of_a_regular_collection(pair, docs, cases, collation):
    ts, reg = pair
    ts.delete_many({})
    reg.delete_many({})
    for i, doc in enumerate(docs):
        doc["_id"] = i
    half = len(docs) // 2
    reg.insert_many([dict(d) for d in docs])
    # the first half stored (a delete naming no meta point settles every bucket), the rest in memory:
    # series continue in reopened buckets or new ones beside stored ones
    if half:
        ts.insert_many([dict(d) for d in docs[:half]])
        ts.delete_many({"_id": "none"})
    ts.insert_many([dict(d) for d in docs[half:]])
    for state in ("mixed", "stored"):
        for flt, skip, limit in cases:
            kwargs = {"collation": collation} if collation else {}
            found = len(list(reg.find(flt, **kwargs)))
            expected = min(max(0, found - skip), limit) if limit else max(0, found - skip)
            answers = _counts(ts, flt, skip, limit, collation)
            assert set(answers.values()) == {expected}, (flt, skip, limit, state, answers)
            assert len(list(ts.find(flt, **kwargs))) == found, (flt, state)
        assert ts.estimated_document_count() == len(docs)
        ts.delete_many({"_id": "none"})



@pytest.mark.parametrize("stored", [False, True], ids=["in_memory", "stored"])
@pytest.mark.parametrize("pipeline", [
    [{"$count": "n"}],
    [{"$match": {}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}],
    [{"$match": {"m": {"$in": ["h1", "h2"]}}}, {"$count": "n"}],
    [{"$match": {"t": {"$gte": T0 + dt.timedelta(minutes=30)}}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}],
    [{"$match": {"v": {"$gt": 10}}}, {"$skip": 5}, {"$count": "n"}],
], ids=["all", "countDocuments", "meta", "time", "value_skip"])
def test_a_count_makes_no_measurement_document(db, stored, pipeline):
    """Filters the buckets (meta) or the typed columns (time, numbers) decide are counted per bucket:
    explain's ``measurementsUnpacked`` (documents made) stays 0; the $skip still shows where it stood."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db["ts"].insert_many([{"t": T0 + dt.timedelta(minutes=i % 120), "m": f"h{i % 7}", "v": float(i)}
                          for i in range(700)])
    if stored:
        db["ts"].delete_many({"_id": "none"})
    plan = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                      verbosity="executionStats")
    info = timeseries_read_details(plan)
    assert info["measurementsUnpacked"] == 0, info
    assert info["measurementsReturned"] > 0
    shown = [next(iter(stage)) for stage in plan["stages"]]
    assert ("$skip" in shown) == any("$skip" in stage for stage in pipeline), shown


def test_count_of_a_view_keeps_its_reply(db):
    """The count command on a view (time-series or not) answers ``{n}`` as an int, 0 when nothing matches."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.create_collection("plain_view", viewOn="reg", pipeline=[{"$match": {"k": {"$gte": 2}}}])
    db["reg"].insert_many([{"k": i} for i in range(5)])
    assert db.command("count", "ts") == {"n": 0, "ok": 1.0}
    assert db.command("count", "plain_view", query={"k": {"$lt": 4}}) == {"n": 2, "ok": 1.0}
    db["ts"].insert_many([{"t": T0, "m": "a"}, {"t": T0, "m": "b"}])
    assert db.command("count", "ts", query={"m": "a"}) == {"n": 1, "ok": 1.0}
    assert db.command("count", "ts", skip=5) == {"n": 0, "ok": 1.0}
