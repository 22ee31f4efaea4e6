"""A $lookup with `let` and a pipeline keeps what its uncorrelated prefix yields (mongod's
SequentialDocumentCache): the foreign collection is read once, not once per input document, unless the
kept documents pass internalDocumentSourceLookupCacheSizeBytes (then the whole sub-pipeline runs per
input) or an index serves a correlated leading $match (then each input reads through it). Answers are
those of a reference join computed here, for a family of sub-pipelines."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

INPUTS = [{"_id": i, "k": i % 4, "w": i % 3} for i in range(8)]
FOREIGN = [{"_id": j, "fk": j % 5, "v": (j * 7) % 11} for j in range(20)]


@contextlib.contextmanager
def _parameter(client, name, value):
    before = client.admin.command({"getParameter": 1, name: 1})[name]
    client.admin.command({"setParameter": 1, name: value})
    try:
        yield
    finally:
        client.admin.command({"setParameter": 1, name: before})


def _lookup_stats(db, pipeline):
    reply = db.command("explain", {"aggregate": "c", "pipeline": pipeline, "cursor": {}}, verbosity="executionStats")
    (lookup,) = [s for s in reply["stages"] if "$lookup" in s]
    return lookup["totalDocsExamined"], lookup["collectionScans"], lookup["totalKeysExamined"]


CORRELATED = {"$lookup": {"from": "f", "let": {"k": "$k"}, "as": "m", "pipeline": [
    {"$match": {"$expr": {"$eq": ["$fk", "$$k"]}}}, {"$project": {"_id": 1}}]}}


def test_a_correlated_lookup_without_an_index_reads_the_foreign_collection_once(db):
    db.c.insert_many(INPUTS)
    db.f.insert_many(FOREIGN)
    # 8 inputs, 20 foreign documents: one scan of 20, not 8 scans of 160
    assert _lookup_stats(db, [CORRELATED]) == (20, 1, 0)
    got = {d["_id"]: [m["_id"] for m in d["m"]] for d in db.c.aggregate([CORRELATED])}
    assert got == {i: [j for j in range(20) if j % 5 == i % 4] for i in range(8)}


def test_an_uncorrelated_prefix_is_read_once_and_the_correlated_rest_runs_per_input(db):
    db.c.insert_many(INPUTS)
    db.f.insert_many(FOREIGN)
    pipeline = [{"$lookup": {"from": "f", "let": {"k": "$k"}, "as": "m", "pipeline": [
        {"$match": {"v": {"$gte": 3}}}, {"$sort": {"v": 1, "_id": 1}},
        {"$match": {"$expr": {"$eq": ["$fk", "$$k"]}}}, {"$project": {"_id": 1}}]}}]
    examined, _, _ = _lookup_stats(db, pipeline)
    # the leading $match is read (through the read core) once: its matches, not 8 times as many
    assert examined == sum(1 for f in FOREIGN if f["v"] >= 3)
    got = {d["_id"]: [m["_id"] for m in d["m"]] for d in db.c.aggregate(pipeline)}
    want = {i: [f["_id"] for f in sorted(FOREIGN, key=lambda f: (f["v"], f["_id"]))
                if f["v"] >= 3 and f["fk"] == i % 4] for i in range(8)}
    assert got == want


def test_past_the_cache_size_the_sub_pipeline_runs_for_each_input(client, db):
    db.c.insert_many(INPUTS)
    db.f.insert_many(FOREIGN)
    want = list(db.c.aggregate([CORRELATED]))
    with _parameter(client, "internalDocumentSourceLookupCacheSizeBytes", 100):
        # abandoned: each input reads its matches again (through the read core: its 4 matches)
        examined, _, _ = _lookup_stats(db, [CORRELATED])
        assert examined >= 8 * 4
        assert list(db.c.aggregate([CORRELATED])) == want


def test_an_index_serving_the_correlated_match_is_used_per_input(db):
    db.c.insert_many(INPUTS)
    db.f.insert_many(FOREIGN)
    db.f.create_index("fk")
    examined, scans, _ = _lookup_stats(db, [CORRELATED])
    assert (examined, scans) == (8 * 4, 0)  # each input's 4 matches, found through the index


# A family of sub-pipelines over small ints: stages uncorrelated or reading $$x, in any order.
_STAGES = st.sampled_from([
    ("match_x", {"$match": {"$expr": {"$eq": ["$fk", "$$x"]}}}),
    ("match_gt_x", {"$match": {"$expr": {"$gt": ["$v", "$$x"]}}}),
    ("match_v", {"$match": {"v": {"$lt": 8}}}),
    ("add_x", {"$addFields": {"s": {"$add": ["$v", "$$x"]}}}),
    ("add_v", {"$addFields": {"s": {"$multiply": ["$v", 2]}}}),
    ("sort", {"$sort": {"v": -1, "_id": 1}}),
    ("limit", {"$limit": 3}),
    ("project", {"$project": {"v": 1, "s": 1}}),
])


def _reference(stage: str, docs: list[dict], x: int) -> list[dict]:
    if stage == "match_x":
        return [d for d in docs if d.get("fk") == x]  # (missing: never equal)
    if stage == "match_gt_x":
        return [d for d in docs if d["v"] > x]
    if stage == "match_v":
        return [d for d in docs if d["v"] < 8]
    if stage == "add_x":
        return [{**d, "s": d["v"] + x} for d in docs]
    if stage == "add_v":
        return [{**d, "s": d["v"] * 2} for d in docs]
    if stage == "sort":
        return sorted(docs, key=lambda d: (-d["v"], d["_id"]))
    if stage == "limit":
        return docs[:3]
    return [{k: d[k] for k in ("_id", "v", "s") if k in d} for d in docs]


@pytest.fixture(scope="module")
def family_db(client):
    db = client["lookup_prefix_cache_family"]
    db.c.drop()
    db.f.drop()
    db.c.insert_many(INPUTS)
    db.f.insert_many(FOREIGN)
    yield db
    client.drop_database(db.name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stages=st.lists(_STAGES, min_size=1, max_size=4), cache_bytes=st.sampled_from([100, 100 * 1024 * 1024]))
def test_let_pipelines_answer_as_a_reference_join(client, family_db, stages, cache_bytes):
    pipeline = [{"$lookup": {"from": "f", "let": {"x": "$k"}, "as": "m", "pipeline": [s for _, s in stages]}},
                {"$sort": {"_id": 1}}]
    with _parameter(client, "internalDocumentSourceLookupCacheSizeBytes", cache_bytes):
        got = list(family_db.c.aggregate(pipeline))
    for doc in got:
        want = sorted(FOREIGN, key=lambda f: f["_id"])
        for name, _ in stages:
            want = _reference(name, want, doc["k"])
        assert doc["m"] == want, (doc["_id"], stages)
