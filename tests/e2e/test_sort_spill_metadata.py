"""Document metadata survives a sort that spills to disk.

mongod's sorter spills a Document with its metadata and reads both back
(noPassthroughWithMongod/external_sort_text_agg.js: a $text match, a $sort spilling under
allowDiskUse, then {$meta: "textScore"} still 2.0). Tidemark keeps metadata beside documents
(``DocMeta``, by identity) and its spilled runs held only the documents: a document read back from
disk was a new object without metadata, so textScore, geoNearDistance, geoNearPoint and indexKey
vanished from every document that went through a run (a {$meta: "sortKey"} sort stayed in memory
to dodge it). Each metadata kind is checked here through a spilling sort against the same read
without the sort (which spills nothing).
"""

from __future__ import annotations

import pytest
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "find", "setParameter", "getParameter")

LIMIT = 64 * 1024
PAD = "p" * 2048  # ~40 documents fill the limit: the sorts below write several runs

HYPO = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def small_sort_memory(client):
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", LIMIT):
        yield


def load(coll, keys: list[int], repeats: list[int]) -> None:
    coll.drop()
    coll.insert_many([
        {"_id": i, "k": k, "t": "asdf " * r + "qwer", "loc": [i % 13, i % 7], "pad": PAD}
        for i, (k, r) in enumerate(zip(keys, repeats, strict=True))
    ])
    coll.create_index([("t", "text")])
    coll.create_index([("loc", "2d")])
    coll.create_index([("k", 1)])


def by_id(docs) -> dict:
    return {d["_id"]: d for d in docs}


def spills(coll, pipeline, **kwargs) -> None:
    """The sort cannot run in memory: without allowDiskUse it answers 292."""
    with pytest.raises(OperationFailure) as err:
        list(coll.aggregate(pipeline, allowDiskUse=False, **kwargs))
    assert err.value.code == 292


families = given(
    data=st.integers(60, 120).flatmap(lambda n: st.tuples(
        st.lists(st.integers(-3, 3), min_size=n, max_size=n),
        st.lists(st.integers(1, 40), min_size=n, max_size=n))),
    direction=st.sampled_from([1, -1]),
)


@HYPO
@families
def test_text_score_and_sort_key_survive_a_spill(db, small_sort_memory, data, direction):
    load(db.c, *data)
    match = {"$match": {"$text": {"$search": "asdf"}}}
    score = {"$project": {"s": {"$meta": "textScore"}, "k": 1}}
    with_key = {"$project": {"s": {"$meta": "textScore"}, "sk": {"$meta": "sortKey"}, "k": 1}}
    sort = {"$sort": {"k": direction, "_id": 1}}
    unsorted = {i: d["s"] for i, d in by_id(db.c.aggregate([match, score])).items()}
    for shown in (score, with_key):  # a sortKey projection no longer keeps the sort in memory
        spills(db.c, [match, sort, shown])
        got = list(db.c.aggregate([match, sort, shown], allowDiskUse=True))
        assert [d["_id"] for d in got] == [d["_id"] for d in sorted(got, key=lambda d: (direction * d["k"], d["_id"]))]
        assert {d["_id"]: d["s"] for d in got} == unsorted
    assert all(d["sk"] == [d["k"], d["_id"]] for d in got)


@HYPO
@families
def test_geo_near_distance_and_point_survive_a_spill(db, small_sort_memory, data, direction):
    load(db.c, *data)
    near = {"$geoNear": {"near": [1, 2], "key": "loc", "distanceField": "dist", "includeLocs": "at"}}
    shown = {"$project": {"d": {"$meta": "geoNearDistance"}, "p": {"$meta": "geoNearPoint"}, "dist": 1,
                          "at": 1}}
    sort = {"$sort": {"k": direction, "_id": 1}}
    spills(db.c, [near, sort, shown])
    got = list(db.c.aggregate([near, sort, shown], allowDiskUse=True))
    assert len(got) == len(data[0])
    for doc in got:  # the fields $geoNear wrote travel in the document, the metadata beside it
        assert doc["d"] == doc["dist"] and doc["p"] == doc["at"]


@HYPO
@families
def test_index_key_survives_a_spill(db, small_sort_memory, data, direction):
    load(db.c, *data)
    flt, shown = {"k": {"$gte": -3}}, {"ik": {"$meta": "indexKey"}, "k": 1}
    with pytest.raises(OperationFailure) as err:
        list(db.c.find(flt, shown, allow_disk_use=False).hint("k_1").sort("_id", direction))
    assert err.value.code == 292
    got = list(db.c.find(flt, shown, allow_disk_use=True).hint("k_1").sort("_id", direction))
    assert [d["_id"] for d in got] == sorted(range(len(data[0])), reverse=direction == -1)
    assert all(d["ik"] == {"k": d["k"]} for d in got)
