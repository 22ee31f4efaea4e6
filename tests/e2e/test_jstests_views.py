"""MongoDB's jstests of views on ordinary collections ported to pymongo against a real Tidemark server:
view creation and validation codes, reads through views (find options translated to a pipeline,
count, distinct, aggregate), writes refused with 166, collMod on views, listCollections entries, drop
and rename.

Ported from ``jstests/core/views/`` in mongodb/mongo (21 files), MongoDB 7.0's behaviour as the
reference: ``views_basic.js``, ``views_creation.js``, ``views_validation.js``,
``views_aggregation.js``, ``views_find.js``, ``views_count.js``, ``views_distinct.js``,
``views_distinct_with_arrays.js``, ``views_collation.js``, ``views_drop.js``, ``views_rename.js``,
``views_change.js``, ``views_coll_stats.js``, ``views_stats.js``, ``duplicate_ns.js``,
``invalid_system_views.js``, ``invalid_view_prevents_creating_new_view.js``,
``view_with_invalid_dbname.js``, ``dbref_projection.js``, ``geo.js`` and ``views_all_commands.js``
(its table of which commands a view refuses, and with which code, for the commands Tidemark has).

Left out: explain shapes (the namespaces and stages explain reports), the ``allowDiskUse`` part of
views_aggregation (100 MB of documents), sharding/replication-only and auth-only branches, and SBE-only
checks. The jstests write invalid ``system.views`` documents directly; here ``applyOps`` writes them
(Tidemark refuses direct writes to ``system.views``, a difference of its own below). Hypothesis checks
two invariants the jstests state: a view graph never holds a cycle (creates that would close one fail
with 5, the others succeed), and ``distinct`` through an identity view equals ``distinct`` on its
collection.
"""

from __future__ import annotations

import math

import pytest
from bson import DBRef
from harness.jstests import command_fails, same_members
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands(
    "create", "collMod", "drop", "listCollections", "renameCollection", "find", "getMore", "aggregate", "count",
    "distinct", "insert", "update", "delete", "findAndModify", "killCursors", "applyOps",
)

GRAPH_CONTAINS_CYCLE = 5
INVALID_OPTIONS = 72
INVALID_NAMESPACE = 73
VIEW_DEPTH_LIMIT_EXCEEDED = 165  # (error_codes.yml: 149 is NoConfigPrimary)
COMMAND_NOT_SUPPORTED_ON_VIEW = 166
OPTION_NOT_SUPPORTED_ON_VIEW = 167
INVALID_PIPELINE_OPERATOR = 168
INVALID_VIEW_DEFINITION = 182
NAMESPACE_EXISTS = 48
MAX_VIEW_DEPTH = 20


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

CITIES = [
    {"_id": "New York", "state": "NY", "pop": 7},
    {"_id": "Newark", "state": "NJ", "pop": 3},
    {"_id": "Palo Alto", "state": "CA", "pop": 10},
    {"_id": "San Francisco", "state": "CA", "pop": 4},
    {"_id": "Trenton", "state": "NJ", "pop": 5},
]


def make_view(db, name: str, view_on: str, pipeline: list | None = None, code: int | None = None, **options):
    """``create`` a view (the jstests' ``makeView``): it succeeds, or fails with ``code``."""
    cmd = {"create": name, "viewOn": view_on, **options}
    if pipeline is not None:
        cmd["pipeline"] = pipeline
    if code is None:
        db.command(cmd)
    else:
        command_fails(db, cmd, code)


def find_all(db, cmd: dict) -> list:
    """Every document of a find/aggregate command, its getMores included."""
    reply = db.command(cmd)
    docs = list(reply["cursor"]["firstBatch"])
    cursor_id, coll = reply["cursor"]["id"], reply["cursor"]["ns"].split(".", 1)[1]
    while cursor_id:
        more = db.command("getMore", cursor_id, collection=coll)
        docs.extend(more["cursor"]["nextBatch"])
        cursor_id = more["cursor"]["id"]
    return docs


@pytest.fixture
def cities(db):
    db.coll.insert_many([dict(d) for d in CITIES])
    return db


def lookup(src: str) -> dict:
    return {"$lookup": {"from": src, "as": "as", "localField": "localField", "foreignField": "foreignField"}}


def graph_lookup(src: str) -> dict:
    return {"$graphLookup": {"from": src, "as": "as", "startWith": "startWith", "connectFromField": "connectFromField",
                             "connectToField": "connectToField"}}


def facet(src: str) -> dict:
    return {"$facet": {"Facet Key": [lookup(src)]}}


def union(src: str) -> dict:
    return {"$unionWith": src}


# --------------------------------------------------------------------------------------------------
# views_basic.js
# --------------------------------------------------------------------------------------------------

def _basic(db):
    db.collection.insert_many([
        {"_id": "New York", "state": "NY", "pop": 7}, {"_id": "Oakland", "state": "CA", "pop": 3},
        {"_id": "Palo Alto", "state": "CA", "pop": 10}, {"_id": "San Francisco", "state": "CA", "pop": 4},
        {"_id": "Trenton", "state": "NJ", "pop": 5}])
    db.command("create", "californiaCities", viewOn="collection", pipeline=[{"$match": {"state": "CA"}}])
    db.command("create", "largeCaliforniaCities", viewOn="californiaCities",
               pipeline=[{"$match": {"pop": {"$gte": 10}}}, {"$sort": {"pop": 1}}])


def test_basic_find_with_projection_on_a_view(db):
    _basic(db)
    got = find_all(db, {"find": "californiaCities", "filter": {}, "projection": {"_id": 1, "pop": 1}, "batchSize": 5})
    assert same_members(got, [{"_id": "Oakland", "pop": 3}, {"_id": "Palo Alto", "pop": 10},
                              {"_id": "San Francisco", "pop": 4}])


def test_basic_find_with_limit_on_a_view_of_a_view(db):
    _basic(db)
    got = find_all(db, {"find": "largeCaliforniaCities", "filter": {"pop": {"$lt": 50}}, "limit": 1})
    assert got == [{"_id": "Palo Alto", "state": "CA", "pop": 10}]


def test_basic_aggregate_group_on_a_view(db):
    _basic(db)
    got = find_all(db, {"aggregate": "californiaCities",
                        "pipeline": [{"$group": {"_id": "$state", "totalPop": {"$sum": "$pop"}}}], "cursor": {}})
    assert got == [{"_id": "CA", "totalPop": 17}]


# --------------------------------------------------------------------------------------------------
# views_creation.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["system.special", "system.foo", "system.views", "system.local.new", "dollar$"])
def test_creation_refuses_invalid_view_names(db, name):
    err = command_fails(db, {"create": name, "viewOn": "collection", "pipeline": []}, INVALID_NAMESPACE)
    if name == "system.views":
        assert err.details["errmsg"] == ("Cannot create a view called 'system.views': this is a reserved "
                                         "system namespace")


def test_creation_refuses_an_empty_view_name(db):
    command_fails(db, {"create": "", "viewOn": "collection", "pipeline": []})


def test_creation_list_collections_shows_the_view(db):
    db.command("create", "collection")
    db.command("create", "view", viewOn="collection", pipeline=[{"$match": {}}])
    assert sorted(n for n in db.list_collection_names() if not n.startswith("system.")) == ["collection", "view"]
    got = db.command("listCollections", filter={"type": "view"})["cursor"]["firstBatch"]
    assert got == [{"name": "view", "type": "view", "options": {"viewOn": "collection", "pipeline": [{"$match": {}}]},
                    "info": {"readOnly": True}}]


def test_creation_on_a_missing_collection_with_default_pipeline_and_on_a_view(db):
    db.command("create", "collection")
    db.command("create", "view", viewOn="collection", pipeline=[{"$match": {}}])
    db.command("create", "viewOnNonexistent", viewOn="nonexistent", pipeline=[{"$match": {}}])
    db.command("create", "viewWithDefaultPipeline", viewOn="collection")
    db.command("create", "viewOnView", viewOn="view", pipeline=[{"$match": {}}])
    entry = db.command("listCollections", filter={"name": "viewWithDefaultPipeline"})["cursor"]["firstBatch"][0]
    assert entry["options"] == {"viewOn": "collection", "pipeline": []}


def test_creation_pipeline_without_view_on_fails(db):
    command_fails(db, {"create": "viewNoViewNamespace", "pipeline": [{"$match": {}}]})


@pytest.mark.parametrize("pipeline, code", [
    ([{"$out": "nonExistentCollection"}], OPTION_NOT_SUPPORTED_ON_VIEW),
    ([{"$merge": "nonExistentCollection"}], OPTION_NOT_SUPPORTED_ON_VIEW),
    ([{"$lookup": {"from": "other", "pipeline": [{"$out": "nonExistentCollection"}], "as": "result"}}], 51047),
    ([{"$facet": {"output": [{"$out": "nonExistentCollection"}]}}], 40600),
], ids=["out", "merge", "out_in_lookup", "out_in_facet"])
def test_creation_refuses_out_and_merge_in_a_view_pipeline(db, pipeline, code):
    command_fails(db, {"create": "viewWithOut", "viewOn": "collection", "pipeline": pipeline}, code)


# --------------------------------------------------------------------------------------------------
# invalid_view_prevents_creating_new_view.js (and the same lines of views_creation.js)
# --------------------------------------------------------------------------------------------------

def test_stored_view_with_out_prevents_creating_a_new_view(client, db):
    db.command("create", "collection")
    db.command("create", "testView", viewOn="collection")
    client.admin.command("applyOps", [{"op": "i", "ns": f"{db.name}.system.views", "o": {
        "_id": f"{db.name}.invalidView", "viewOn": "collection",
        "pipeline": [{"$project": {"_id": False}}, {"$out": "notExistingCollection"}]}}])
    command_fails(db, {"create": "viewWithBadViewCatalog", "viewOn": "collection", "pipeline": []},
          OPTION_NOT_SUPPORTED_ON_VIEW)
    client.admin.command("applyOps", [{"op": "d", "ns": f"{db.name}.system.views",
                                       "o": {"_id": f"{db.name}.invalidView"}}])
    db.command("create", "viewWithBadViewCatalog", viewOn="collection", pipeline=[])


# --------------------------------------------------------------------------------------------------
# views_validation.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("setup, last", [
    ([], ("a", "a", [])),
    ([("a", "b", None)], ("b", "a", [])),
    ([("a", "b", None), ("b", "c", None)], ("c", "a", [])),
    ([], ("a", "b", [lookup("a")])),
    ([("a", "b", None)], ("b", "c", [lookup("a")])),
    ([], ("a", "b", [graph_lookup("a")])),
    ([("a", "b", [graph_lookup("b")])], ("b", "c", [graph_lookup("a")])),
    ([], ("a", "b", [facet("a")])),
    ([("a", "b", [facet("b")])], ("b", "c", [facet("a")])),
    ([], ("a", "b", [union("a")])),
    ([("a", "b", [union("b")])], ("b", "c", [union("a")])),
    ([], ("a", "b", [{"$unionWith": {"coll": "c", "pipeline": [{"$unionWith": "a"}]}}])),
], ids=["self", "two", "three", "lookup_self", "lookup_two", "graph_lookup_self", "graph_lookup_two",
        "facet_self", "facet_two", "union_self", "union_two", "nested_union"])
def test_validation_refuses_view_cycles(db, setup, last):
    for name, on, pipeline in setup:
        make_view(db, name, on, pipeline)
    name, on, pipeline = last
    err = command_fails(db, {"create": name, "viewOn": on, "pipeline": pipeline}, GRAPH_CONTAINS_CYCLE)
    assert err.details["errmsg"].startswith(f"View cycle detected: {db.name}.{name} => ")
    assert db.command("listCollections", filter={"name": name})["cursor"]["firstBatch"] == []


def test_validation_cycle_message_names_the_cycle(db):
    make_view(db, "a", "b")
    err = command_fails(db, {"create": "b", "viewOn": "a"}, GRAPH_CONTAINS_CYCLE)
    n = db.name
    assert err.details["errmsg"] == f"View cycle detected: {n}.b => {n}.b => {n}.a => {n}.b"


def _depth_tree(db):
    """v1 .. v20, each reading the next four times (viewOn, $lookup, $graphLookup, $facet, $unionWith)."""
    for i in range(1, MAX_VIEW_DEPTH + 1):
        child = f"v{i + 1}"
        make_view(db, f"v{i}", child, [lookup(child), graph_lookup(child), facet(child), union(child)])


def test_validation_view_tree_of_depth_20_is_created_without_walking_every_path(db):
    _depth_tree(db)  # 4**20 paths: validation must visit each view once
    assert len(db.command("listCollections", filter={"type": "view"})["cursor"]["firstBatch"]) == MAX_VIEW_DEPTH


@pytest.mark.parametrize("name, on, pipeline", [
    ("v21", "v22", []),
    ("v0", "v1", []),
    ("v0", "ok", [lookup("v1")]),
    ("v0", "ok", [graph_lookup("v1")]),
    ("v0", "ok", [facet("v1")]),
    ("v0", "ok", [union("v1")]),
], ids=["below", "above", "lookup", "graph_lookup", "facet", "union"])
def test_validation_refuses_views_deeper_than_20(db, name, on, pipeline):
    _depth_tree(db)
    err = command_fails(db, {"create": name, "viewOn": on, "pipeline": pipeline}, VIEW_DEPTH_LIMIT_EXCEEDED)
    assert err.details["errmsg"] == "View depth limit exceeded; maximum depth is 20"


@pytest.mark.parametrize("stage", [union("v1"), lookup("v1")], ids=["union", "lookup"])
def test_validation_query_reaching_more_than_20_views_fails(db, stage):
    _depth_tree(db)
    command_fails(db, {"aggregate": "v10", "pipeline": [stage], "cursor": {}}, VIEW_DEPTH_LIMIT_EXCEEDED)


def test_validation_view_in_the_middle_of_the_tree_is_fine(db):
    _depth_tree(db)
    make_view(db, "vMid", "v10")


def test_validation_coll_mod_refuses_a_cycle(db):
    make_view(db, "a", "b")
    make_view(db, "b", "c")
    command_fails(db, {"collMod": "b", "viewOn": "a", "pipeline": []}, GRAPH_CONTAINS_CYCLE)


@pytest.mark.parametrize("pipeline", [{}, {"0": {"$limit": 7}}], ids=["empty", "array_like"])
def test_validation_coll_mod_pipeline_must_be_an_array(db, pipeline):
    make_view(db, "a", "b")
    make_view(db, "b", "c")
    err = command_fails(db, {"collMod": "b", "viewOn": "c", "pipeline": pipeline}, 14)
    assert err.details["errmsg"] == "BSON field 'collMod.pipeline' is the wrong type 'object', expected type 'array'"


def test_validation_coll_mod_refuses_expire_after_seconds_on_a_view(db):
    make_view(db, "a", "b")
    command_fails(db, {"collMod": "a", "expireAfterSeconds": 1}, INVALID_OPTIONS)


def test_validation_refuses_an_invalid_lookup(db):
    make_view(db, "a", "b", [{"$lookup": {"from": "a", "localField": "b", "foreignField": "c"}}], 9)


@pytest.mark.parametrize("stage", [
    pytest.param({"$project": {"field": "$$undef"}}, id="project"),
    pytest.param({"$addFields": {"field": "$$undef"}}, id="addFields"),
    pytest.param({"$match": {"$expr": {"$eq": ["$a", "$$undef"]}}}, id="match-expr"),
])
def test_validation_refuses_free_variables(db, stage):
    make_view(db, "a", "b", [stage], 17276)


_NAMES = ["a", "b", "c", "d", "e", "f"]


def _closes_cycle(edges: dict[str, set[str]], name: str) -> bool:
    """The reference model: does ``name``'s new edges lead back to ``name``?"""
    stack, seen = list(edges[name]), set()
    while stack:
        node = stack.pop()
        if node == name:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edges.get(node, ()))
    return False


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(_NAMES),
       targets=st.lists(st.tuples(st.sampled_from(_NAMES + ["coll"]), st.sampled_from([None, "lookup", "union"]),
                                  st.sampled_from(_NAMES + ["coll"])), min_size=6, max_size=6))
def test_validation_view_graph_never_holds_a_cycle(client, order, targets):
    """views_validation's invariant over random graphs of 6 views (too shallow for the depth limit):
    a create succeeds exactly when its viewOn and the collections its pipeline reads do not lead back
    to it; the refused ones fail with 5 and leave nothing behind."""
    db = client["t_views_graph_property"]
    client.drop_database(db.name)
    edges: dict[str, set[str]] = {}
    for name, (view_on, kind, other) in zip(order, targets, strict=True):
        pipeline = [] if kind is None else [lookup(other) if kind == "lookup" else union(other)]
        edges[name] = {view_on} | ({other} if kind else set())
        if _closes_cycle(edges, name):
            del edges[name]
            make_view(db, name, view_on, pipeline, GRAPH_CONTAINS_CYCLE)
        else:
            make_view(db, name, view_on, pipeline)
    listed = {e["name"] for e in db.command("listCollections", filter={"type": "view"})["cursor"]["firstBatch"]}
    assert listed == set(edges)
    client.drop_database(db.name)


# --------------------------------------------------------------------------------------------------
# views_aggregation.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def agg_views(cities):
    db = cities
    db.command("create", "emptyPipelineView", viewOn="coll")
    db.command("create", "identityView", viewOn="coll", pipeline=[{"$match": {}}])
    db.command("create", "noIdView", viewOn="coll", pipeline=[{"$project": {"_id": 0, "state": 1, "pop": 1}}])
    db.command("create", "popSortedView", viewOn="identityView", pipeline=[{"$match": {"pop": {"$gte": 0}}},
                                                                           {"$sort": {"pop": 1}}])
    return db


def agg(db, name: str, pipeline: list, **kw) -> list:
    return find_all(db, {"aggregate": name, "pipeline": pipeline, "cursor": {}, **kw})


def test_aggregation_basic_aggregations_on_views(agg_views):
    db = agg_views
    assert same_members(agg(db, "emptyPipelineView", []), CITIES)
    assert same_members(agg(db, "identityView", []), CITIES)
    assert same_members(agg(db, "identityView", [{"$match": {}}]), CITIES)
    assert agg(db, "popSortedView", [{"$match": {"state": "NY"}}]) == [{"_id": "New York", "state": "NY", "pop": 7}]
    assert agg(db, "noIdView", [{"$match": {"state": "NY"}}]) == [{"state": "NY", "pop": 7}]
    assert agg(db, "popSortedView", []) == sorted(CITIES, key=lambda d: d["pop"])
    assert agg(db, "popSortedView", [{"$limit": 1}, {"$project": {"_id": 1}}]) == [{"_id": "Newark"}]


# the combinations $merge supports (assertMergeFailsForAllModesWithCode)
MERGE_MODES = [("replace", "insert"), ("replace", "fail"), ("replace", "discard"), ("merge", "insert"),
               ("merge", "fail"), ("merge", "discard"), ("keepExisting", "insert"), ("fail", "insert"),
               ([{"$set": {"x": 1}}], "insert"), ([{"$set": {"x": 1}}], "fail"), ([{"$set": {"x": 1}}], "discard")]


def test_aggregation_out_into_a_view_is_refused(agg_views):
    command_fails(agg_views, {"aggregate": "coll", "pipeline": [{"$out": "emptyPipelineView"}], "cursor": {}},
          COMMAND_NOT_SUPPORTED_ON_VIEW)


@pytest.mark.parametrize("matched, not_matched", MERGE_MODES)
def test_aggregation_merge_into_a_view_is_refused_in_every_mode(client, agg_views, matched, not_matched):
    db = agg_views
    for into in ("emptyPipelineView", {"db": db.name + "_foreign", "coll": "view"}):
        if isinstance(into, dict):
            client[into["db"]].command("create", "view", viewOn="coll", pipeline=[])
        stage = {"$merge": {"into": into, "whenMatched": matched, "whenNotMatched": not_matched}}
        command_fails(db, {"aggregate": "coll", "pipeline": [stage], "cursor": {}}, COMMAND_NOT_SUPPORTED_ON_VIEW)
    client.drop_database(db.name + "_foreign")


def test_aggregation_on_a_view_forwards_bypass_document_validation(db):
    db.create_collection("collectionWithValidator", validator={"illegalField": {"$exists": False}})
    db.invalidDocs.insert_one({"illegalField": "present"})
    db.command("create", "invalidDocsView", viewOn="invalidDocs", pipeline=[])
    db.command("aggregate", "invalidDocsView", pipeline=[{"$out": "collectionWithValidator"}], cursor={},
               bypassDocumentValidation=True)
    assert db.collectionWithValidator.count_documents({}) == 1


def test_aggregation_on_a_view_forwards_allow_disk_use(client, db):
    """views_aggregation's allowDiskUse check with the sort memory limit lowered to 1 MB (instead of
    100 MB of documents): with allowDiskUse false the sort through the view fails with 292 (absent, it
    is allowDiskUseByDefault's: true, as mongod 6.0+)."""
    db.largeColl.insert_many([{"x": i, "largeStr": "x" * 100_000} for i in range(20)])
    db.command("create", "largeView", viewOn="largeColl", pipeline=[])
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", 1024 * 1024):
        for source in ("largeColl", "largeView"):
            command_fails(db, {"aggregate": source, "pipeline": [{"$sort": {"x": -1}}], "cursor": {},
                               "allowDiskUse": False}, 292)
            assert len(agg(db, source, [{"$sort": {"x": -1}}, {"$project": {"largeStr": 0}}])) == 20
        got = agg(db, "largeView", [{"$sort": {"x": -1}}, {"$project": {"x": 1, "_id": 0}}], allowDiskUse=True)
        assert got == [{"x": i} for i in range(19, -1, -1)]


def test_aggregation_and_find_explain_work_on_views(agg_views):
    """The explain commands of views_aggregation/views_find/views_count/views_distinct succeed (their
    shapes are not compared)."""
    db = agg_views
    db.command("aggregate", "popSortedView", pipeline=[{"$limit": 1}, {"$match": {"pop": 3}}], explain=True)
    for verbosity in ("queryPlanner", "executionStats", "allPlansExecution"):
        for inner in ({"aggregate": "popSortedView", "pipeline": [{"$limit": 1}, {"$match": {"pop": 3}}],
                       "cursor": {}},
                      {"find": "identityView"}, {"count": "popSortedView", "query": {"pop": {"$gte": 5}}},
                      {"distinct": "popSortedView", "key": "pop"}):
            db.command("explain", inner, verbosity=verbosity)


def test_aggregation_lookup_and_graph_lookup_resolve_views(agg_views):
    db = agg_views
    got = agg(db, "coll", [{"$match": {"_id": "New York"}},
                           {"$lookup": {"from": "identityView", "localField": "_id", "foreignField": "_id",
                                        "as": "matched"}},
                           {"$unwind": "$matched"}, {"$project": {"_id": 1, "matchedId": "$matched._id"}}])
    assert got == [{"_id": "New York", "matchedId": "New York"}]
    got = agg(db, "coll", [{"$match": {"_id": "New York"}},
                           {"$graphLookup": {"from": "identityView", "startWith": "$_id", "connectFromField": "_id",
                                             "connectToField": "_id", "as": "matched"}},
                           {"$unwind": "$matched"}, {"$project": {"_id": 1, "matchedId": "$matched._id"}}])
    assert got == [{"_id": "New York", "matchedId": "New York"}]


def test_aggregation_nested_lookups_resolve_views(agg_views):
    db = agg_views
    db.command("create", "viewWithLookupInside", viewOn="coll", pipeline=[
        {"$lookup": {"from": "identityView", "localField": "_id", "foreignField": "_id", "as": "matched"}},
        {"$unwind": "$matched"}, {"$project": {"_id": 1, "matchedId": "$matched._id"}}])
    expected = [{"_id": "New York", "matchedId1": "New York", "matchedId2": "New York"}]
    got = agg(db, "coll", [{"$match": {"_id": "New York"}},
                           {"$lookup": {"from": "viewWithLookupInside", "localField": "_id",
                                        "foreignField": "matchedId", "as": "matched"}},
                           {"$unwind": "$matched"},
                           {"$project": {"_id": 1, "matchedId1": "$matched._id", "matchedId2": "$matched.matchedId"}}])
    assert got == expected
    graph = [{"$match": {"_id": "New York"}},
             {"$graphLookup": {"from": "viewWithLookupInside", "startWith": "$_id", "connectFromField": "_id",
                               "connectToField": "matchedId", "as": "matched"}},
             {"$unwind": "$matched"},
             {"$project": {"_id": 1, "matchedId1": "$matched._id", "matchedId2": "$matched.matchedId"}}]
    assert agg(db, "coll", graph) == expected
    assert agg(db, "coll", [{"$facet": {"nested": graph}}]) == [{"nested": expected}]
    got = agg(db, "coll", [{"$match": {"_id": "Trenton"}}, {"$project": {"state": 1}},
                           {"$lookup": {"from": "identityView", "as": "lookup1", "pipeline": [
                               {"$match": {"_id": "Trenton"}}, {"$project": {"state": 1}},
                               {"$lookup": {"from": "popSortedView", "as": "lookup2", "pipeline": []}}]}}])
    assert got == [{"_id": "Trenton", "state": "NJ", "lookup1": [
        {"_id": "Trenton", "state": "NJ", "lookup2": sorted(CITIES, key=lambda d: d["pop"])}]}]


def test_aggregation_union_with_reads_views(agg_views):
    db = agg_views
    n = len(CITIES)
    assert len(agg(db, "coll", [])) == n
    assert len(agg(db, "coll", [{"$unionWith": "emptyPipelineView"}])) == 2 * n
    assert len(agg(db, "coll", [{"$unionWith": "identityView"}])) == 2 * n
    assert len(agg(db, "coll", [{"$unionWith": {"coll": "noIdView",
                                                "pipeline": [{"$match": {"_id": {"$exists": False}}}]}}])) == 2 * n
    assert len(agg(db, "coll", [{"$unionWith": {"coll": "identityView",
                                                "pipeline": [{"$match": {"_id": "New York"}}]}}])) == n + 1


def test_aggregation_union_with_in_a_view_definition(agg_views):
    db = agg_views
    db.secondCollection.insert_many([dict(d) for d in CITIES])
    n = len(CITIES)
    db.command("create", "unionView", viewOn="coll", pipeline=[{"$unionWith": "secondCollection"}])
    assert len(find_all(db, {"find": "unionView"})) == 2 * n
    assert len(agg(db, "unionView", [{"$group": {"_id": "$_id"}}])) == n
    assert agg(db, "unionView", [{"$group": {"_id": "$_id"}}, {"$sort": {"_id": 1}}]) == \
        [{"_id": d["_id"]} for d in sorted(CITIES, key=lambda d: d["_id"])]
    assert len(db.command("distinct", "unionView", key="_id")["values"]) == n
    db.command("drop", "unionView")
    db.command("create", "unionView", viewOn="coll",
               pipeline=[{"$unionWith": {"coll": "secondCollection", "pipeline": [{"$match": {"state": "NY"}}]}}])
    assert len(find_all(db, {"find": "unionView"})) == n + 1
    assert len(agg(db, "unionView", [{"$group": {"_id": "$_id"}}])) == n
    assert len(db.command("distinct", "unionView", key="_id")["values"]) == n


# --------------------------------------------------------------------------------------------------
# views_find.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def find_views(cities):
    db = cities
    db.command("create", "identityView", viewOn="coll", pipeline=[{"$match": {}}])
    db.command("create", "noIdView", viewOn="coll", pipeline=[{"$match": {}}, {"$project": {"_id": 0, "state": 1,
                                                                                          "pop": 1}}])
    return db


def test_find_filters_and_simple_projections(find_views):
    db = find_views
    assert same_members(find_all(db, {"find": "identityView", "batchSize": 5}), CITIES)
    assert same_members(find_all(db, {"find": "identityView", "filter": {"state": "NJ"}, "projection": {"_id": 1}}),
                        [{"_id": "Trenton"}, {"_id": "Newark"}])
    assert find_all(db, {"find": "noIdView", "filter": {"state": "NY"}, "projection": {"pop": 1}}) == [{"pop": 7}]


def test_find_sort_limit_and_batch_size(find_views):
    db = find_views
    assert find_all(db, {"find": "identityView", "sort": {"_id": 1}, "batchSize": 2}) == \
        sorted(CITIES, key=lambda d: d["_id"])
    assert find_all(db, {"find": "identityView", "limit": 1, "batchSize": 1, "sort": {"_id": 1},
                         "projection": {"_id": 1}}) == [{"_id": "New York"}]


@pytest.mark.parametrize("option", [{"batchSize": -1}, {"limit": -1}], ids=["batchSize", "limit"])
def test_find_negative_batch_size_and_limit_fail(find_views, option):
    command_fails(find_views, {"find": "identityView", **option})


def test_find_comment_and_find_one(find_views):
    db = find_views
    db.command("find", "identityView", filter={}, comment="views_find")
    assert find_all(db, {"find": "identityView", "filter": {"state": "NY"}, "singleBatch": True, "limit": 1}) == \
        [{"_id": "New York", "state": "NY", "pop": 7}]
    assert db.identityView.find_one({"_id": "San Francisco"}) == {"_id": "San Francisco", "state": "CA", "pop": 4}


def test_find_elem_match_projection_is_refused_on_a_view(find_views):
    db = find_views
    db.coll.insert_one({"arr": [{"x": 1}]})
    command_fails(db, {"find": "identityView", "projection": {"arr": {"$elemMatch": {"x": 1}}}}, INVALID_PIPELINE_OPERATOR)


# A find on a view runs as an aggregate: the options an aggregate cannot carry (asAggregationCommand)
@pytest.mark.parametrize("options, message", [
    ({"sort": {"$natural": 1}}, "Sort option $natural not supported in aggregation."),
    ({"readOnce": True}, "Option readOnce not supported in aggregation."),
    ({"min": {"_id": 1}, "hint": {"_id": 1}}, "Option min not supported in aggregation."),
    ({"max": {"_id": 1}}, "Option max not supported in aggregation."),
    ({"returnKey": True}, "Option returnKey not supported in aggregation."),
    ({"showRecordId": True}, "Option showRecordId not supported in aggregation."),
    ({"noCursorTimeout": True}, "Option noCursorTimeout not supported in aggregation."),
    ({"allowPartialResults": True}, "Option allowPartialResults not supported in aggregation."),
    ({"singleBatch": True}, "Option singleBatch not supported in aggregation."),
    ({"singleBatch": True, "limit": 2}, "Option singleBatch not supported in aggregation."),
    ({"tailable": True}, "Tailable cursors are not supported in aggregation."),
], ids=["natural_sort", "readOnce", "min", "max", "returnKey", "showRecordId", "noCursorTimeout",
        "allowPartialResults", "singleBatch", "singleBatch_limit2", "tailable"])
def test_find_options_an_aggregate_cannot_carry_are_refused_on_a_view(find_views, options, message):
    err = command_fails(find_views, {"find": "identityView", **options}, INVALID_PIPELINE_OPERATOR)
    assert err.details["errmsg"] == message


def test_find_min_without_hint_on_a_collection_is_still_51173(find_views):
    command_fails(find_views, {"find": "coll", "min": {"_id": 1}}, 51173)
    assert find_all(find_views, {"find": "missing", "min": {"_id": 1}}) == []


# --------------------------------------------------------------------------------------------------
# views_count.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def count_views(db):
    db.coll.insert_many([{"x": i} for i in range(10)])
    db.command("create", "identityView", viewOn="coll")
    db.command("create", "greaterThanThreeView", viewOn="coll", pipeline=[{"$match": {"x": {"$gt": 3}}}])
    db.command("create", "lessThanSevenView", viewOn="greaterThanThreeView", pipeline=[{"$match": {"x": {"$lt": 7}}}])
    return db


def count(db, name, query=None, **kw) -> int:
    cmd = {"count": name, **kw}
    if query is not None:
        cmd["query"] = query
    return db.command(cmd)["n"]


def test_count_on_views_with_and_without_a_query(count_views):
    db = count_views
    for query in (None, {}, {"x": {"$exists": True}}, {"x": 0}, {"x": -1}):
        assert count(db, "identityView", query) == count(db, "coll", query)
    assert count(db, "greaterThanThreeView") == 6 and count(db, "greaterThanThreeView", {}) == 6
    assert count(db, "lessThanSevenView") == 3 and count(db, "lessThanSevenView", {}) == 3
    assert count(db, "greaterThanThreeView", {"x": 2}) == 0
    assert count(db, "lessThanSevenView", {"x": 9}) == 0


def test_count_on_views_with_skip_limit_and_hint(count_views):
    db = count_views
    assert count(db, "identityView", {"x": {"$exists": True}}, skip=3) == 7
    assert count(db, "greaterThanThreeView", {"x": {"$lt": 100}}, limit=3) == 3
    assert count(db, "lessThanSevenView", {}, skip=1, limit=1) == 1
    db.command("count", "identityView", hint="_id_")


def test_count_on_a_view_refuses_another_collation(count_views):
    command_fails(count_views, {"count": "identityView", "collation": {"locale": "en_US"}}, OPTION_NOT_SUPPORTED_ON_VIEW)


# --------------------------------------------------------------------------------------------------
# views_distinct.js
# --------------------------------------------------------------------------------------------------

def distinct(db, name, key, query=None, **kw) -> list:
    cmd = {"distinct": name, "key": key, **kw}
    if query is not None:
        cmd["query"] = query
    return db.command(cmd)["values"]


@pytest.fixture
def distinct_views(cities):
    db = cities
    db.command("create", "identityView", viewOn="coll")
    db.command("create", "largePopView", viewOn="identityView", pipeline=[{"$match": {"pop": {"$gt": 5}}}])
    return db


@pytest.mark.parametrize("key, query", [
    ("pop", None), ("_id", None), ("state", {}), ("pop", {"pop": {"$exists": True}}), ("state", {"pop": {"$gt": 3}}),
    ("_id", {"state": "CA"}), ("nonexistent", None), ("pop", {"pop": {"$gt": 1000}}),
])
def test_distinct_on_identity_view_matches_the_collection(distinct_views, key, query):
    db = distinct_views
    assert same_members(distinct(db, "identityView", key, query), distinct(db, "coll", key, query))


def test_distinct_on_a_filtering_view(distinct_views):
    db = distinct_views
    assert same_members(distinct(db, "largePopView", "pop"), [7, 10])
    assert same_members(distinct(db, "largePopView", "_id"), ["New York", "Palo Alto"])
    assert distinct(db, "largePopView", "state", {"pop": {"$gte": 8}}) == ["CA"]
    assert distinct(db, "largePopView", "pop", {"state": "NY"}) == [7]
    assert distinct(db, "largePopView", "nonexistent") == []
    assert distinct(db, "largePopView", "_id", {"state": "FL"}) == []


def test_distinct_on_a_view_with_hints(distinct_views):
    db = distinct_views
    db.coll.create_index("state")
    db.coll.create_index("pop")
    assert same_members(distinct(db, "largePopView", "pop", {}, hint={"state": 1}), [10, 7])
    err = command_fails(db, {"distinct": "largePopView", "key": "a", "query": {"a": 1, "b": 2},
                     "hint": {"bad": 1, "hint": 1}}, 2)
    assert "hint provided does not correspond to an existing index" in err.details["errmsg"]


def test_distinct_on_a_view_refuses_another_collation(distinct_views):
    command_fails(distinct_views, {"distinct": "identityView", "key": "state", "collation": {"locale": "en_US"}},
          OPTION_NOT_SUPPORTED_ON_VIEW)


NESTED_DOCS = [
    {"a": 1, "b": [2, 3, [4, 5], {"c": 6}], "d": {"e": [1, 2]}},
    {"a": [1], "b": [2, 3, 4, [5]], "c": 6, "d": {"e": 1}},
    {"a": [[1]], "b": [2, 3, [4], [5]], "c": 6, "d": [[{"e": 1}]]},
    {"a": [[1]], "b": [2, 3, [4], [5]], "c": 6, "d": [{"e": {"f": 1}}]},
    {"a": [[1]], "b": [2, 3, [4], [5]], "c": 6, "d": {"e": [[{"f": 1}]]}},
    {"a": [1, 2], "b": 3, "c": [6], "d": [{"e": 1}, {"e": [1, 2]}, {"e": {"someObject": 1}}]},
    {"a": [1, 2], "b": [4, 5], "c": [None], "d": [1]},
    {"a": None, "b": [4, 5, None, None], "c": [], "d": {"e": None}},
    {"a": None, "b": None, "c": [None], "d": {"e": None}},
]
DEEP_DOC = {"a": [
    {"b": [{"c": [{"d": 1}]}]}, {"b": {"c": "not leaf"}}, {"b": {"c": [{"d": 2, "not leaf": "not leaf"}]}},
    {"b": [{"c": {"d": 3}}]}, {"b": {"c": {"d": 4}}, "not leaf": "not leaf"}, "not leaf",
    [[{"b": {"c": {"d": "not leaf"}}}]], [{"b": {"c": [[{"d": "not leaf"}]]}}],
]}


def test_distinct_through_nested_arrays_matches_the_collection(db):
    db.coll.insert_many([dict(d) for d in NESTED_DOCS])
    db.command("create", "identityView", viewOn="coll")
    for key in ("a", "b", "c", "d", "e", "d.e", "d.e.f"):
        assert same_members(distinct(db, "identityView", key), distinct(db, "coll", key)), key
    db.coll.drop()
    db.coll.insert_many([dict(DEEP_DOC), {"a": "not leaf"}])
    for key in ("a", "a.b", "a.b.c", "a.b.c.d"):
        assert same_members(distinct(db, "identityView", key), distinct(db, "coll", key)), key


_scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", None, True, 1.5]))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "0"]), inner, max_size=2)), max_leaves=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.dictionaries(st.sampled_from(["a", "b", "0"]), _values, max_size=3), min_size=1, max_size=6),
       key=st.sampled_from(["a", "b", "0", "a.b", "a.0", "b.a", "a.b.a", "0.a", "a.0.b"]))
def test_distinct_property_identity_view_equals_collection(client, docs, key):
    """views_distinct's invariant: distinct through an identity view is distinct on the collection."""
    db = client["t_views_distinct_property"]
    db.coll.drop()
    db.coll.insert_many([dict(d) for d in docs])
    if "identityView" not in db.list_collection_names():
        db.command("create", "identityView", viewOn="coll")
    assert same_members(distinct(db, "identityView", key), distinct(db, "coll", key))


# --------------------------------------------------------------------------------------------------
# views_distinct_with_arrays.js
# --------------------------------------------------------------------------------------------------

def _array_doc(_id: int, value: int) -> dict:
    return {"_id": _id, "x": value, "nested": {"x": value, "nested": {"x": value}, "array": [value]},
            "array": [value], "documentArray": [{"x": value}, {"x": value << 2}],
            "doubleArray": [[{"x": value}], [{"x": value << 2}]], "numeric": {"0": value},
            "arrayNumeric": [{"0": value}, {"0": value << 2}], "0": {"x": value},
            "1": [{"0": value}, {"0": value << 2}], "2": [[{"0": value}], [{"0": value << 2}]]}


@pytest.mark.parametrize("key", [
    "x", "nested.x", "nested.nested.x", "array", "nested.array", "documentArray", "documentArray.x",
    "documentArray[1].x", "documentArray.1", "documentArray.1.x", "doubleArray.x", "doubleArray[1].x",
    "doubleArray.1", "doubleArray.1.x", "0", "0.x", "1", "1.0", "2", "2.0", "numeric", "arrayNumeric",
])
def test_distinct_with_arrays_view_matches_collection(db, key):
    db.distinctBaseColl.insert_many([_array_doc(1, 1), _array_doc(2, 2), _array_doc(3, 3), _array_doc(4, 1)])
    db.command("create", "distinctViewColl", viewOn="distinctBaseColl", pipeline=[])
    assert same_members(distinct(db, "distinctViewColl", key), distinct(db, "distinctBaseColl", key))


# --------------------------------------------------------------------------------------------------
# views_collation.js
# --------------------------------------------------------------------------------------------------

LOOKUP_SIMPLE_VIEW = {"$lookup": {"from": "simpleView", "localField": "x", "foreignField": "x", "as": "result"}}
NESTED_LOOKUP_SIMPLE_VIEW = {"$lookup": {"from": "simpleCollection", "pipeline": [
    {"$lookup": {"from": "simpleView", "localField": "x", "foreignField": "x", "as": "inner_result"}}], "as": "result"}}
GRAPH_LOOKUP_SIMPLE_VIEW = {"$graphLookup": {"from": "simpleView", "startWith": "$_id", "connectFromField": "_id",
                                             "connectToField": "matchedId", "as": "matched"}}
LOOKUP_FIL_VIEW = {"$lookup": {"from": "filView", "localField": "x", "foreignField": "x", "as": "result"}}
GRAPH_LOOKUP_FIL_VIEW = {"$graphLookup": {"from": "filView", "startWith": "$_id", "connectFromField": "_id",
                                          "connectToField": "matchedId", "as": "matched"}}


def nested_lookup_fil_view(source: str) -> dict:
    return {"$lookup": {"from": source, "pipeline": [
        {"$lookup": {"from": "filView", "localField": "x", "foreignField": "x", "as": "inner_result"}}],
        "as": "result"}}


@pytest.fixture
def coll_views(db):
    db.command("create", "simpleCollection")
    db.command("create", "ukCollection", collation={"locale": "uk"})
    db.command("create", "filCollection", collation={"locale": "fil"})
    db.command("create", "simpleView", viewOn="ukCollection")
    db.command("create", "filView", viewOn="ukCollection", pipeline=[], collation={"locale": "fil"})
    return db


def _read_cmds(name: str, collation: dict | None) -> list[dict]:
    extra = {} if collation is None else {"collation": collation}
    return [{"aggregate": name, "pipeline": [], "cursor": {}, **extra}, {"find": name, **extra},
            {"count": name, **extra}, {"distinct": name, "key": "x", **extra}]


def test_collation_view_without_one_has_the_simple_collation(coll_views):
    db = coll_views
    entry = db.command("listCollections", filter={"name": "simpleView"})["cursor"]["firstBatch"][0]
    assert "collation" not in entry["options"]
    for cmd in _read_cmds("simpleView", None) + _read_cmds("simpleView", {"locale": "simple"}):
        db.command(cmd)
    for locale in ("en", "fr", "fil", "es"):
        for cmd in _read_cmds("simpleView", {"locale": locale}):
            command_fails(db, cmd, OPTION_NOT_SUPPORTED_ON_VIEW)


def test_collation_view_with_a_collation_keeps_it(coll_views):
    db = coll_views
    entry = db.command("listCollections", filter={"name": "filView"})["cursor"]["firstBatch"][0]
    assert entry["options"]["collation"]["locale"] == "fil"
    for cmd in _read_cmds("filView", None) + _read_cmds("filView", {"locale": "fil"}):
        db.command(cmd)
    for locale in ("en", "zh", "simple"):
        for cmd in _read_cmds("filView", {"locale": locale}):
            command_fails(db, cmd, OPTION_NOT_SUPPORTED_ON_VIEW)


def test_collation_explain_on_a_view_checks_the_collation(coll_views):
    db = coll_views
    db.command("aggregate", "filView", pipeline=[], explain=True)
    db.command("aggregate", "filView", pipeline=[], explain=True, collation={"locale": "fil"})
    for inner in ({"find": "filView"}, {"count": "filView"}, {"distinct": "filView", "key": "x"}):
        db.command("explain", inner, verbosity="allPlansExecution")
        db.command("explain", {**inner, "collation": {"locale": "fil"}}, verbosity="allPlansExecution")
        for locale in ("fr", "simple"):
            command_fails(db, {"explain": {**inner, "collation": {"locale": locale}}, "verbosity": "allPlansExecution"},
                  OPTION_NOT_SUPPORTED_ON_VIEW)
    for locale in ("en", "simple"):
        command_fails(db, {"aggregate": "filView", "pipeline": [], "explain": True, "collation": {"locale": locale}},
              OPTION_NOT_SUPPORTED_ON_VIEW)


@pytest.mark.parametrize("source, stage, collation, ok", [
    ("simpleCollection", LOOKUP_SIMPLE_VIEW, None, True),
    ("simpleCollection", NESTED_LOOKUP_SIMPLE_VIEW, None, True),
    ("simpleCollection", GRAPH_LOOKUP_SIMPLE_VIEW, None, True),
    ("ukCollection", LOOKUP_SIMPLE_VIEW, {"locale": "simple"}, True),
    ("ukCollection", NESTED_LOOKUP_SIMPLE_VIEW, {"locale": "simple"}, True),
    ("ukCollection", GRAPH_LOOKUP_SIMPLE_VIEW, {"locale": "simple"}, True),
    ("simpleCollection", LOOKUP_SIMPLE_VIEW, {"locale": "en"}, False),
    ("simpleCollection", NESTED_LOOKUP_SIMPLE_VIEW, {"locale": "en"}, False),
    ("simpleCollection", GRAPH_LOOKUP_SIMPLE_VIEW, {"locale": "zh"}, False),
    ("filCollection", LOOKUP_FIL_VIEW, None, True),
    ("filCollection", nested_lookup_fil_view("filCollection"), None, True),
    ("filCollection", GRAPH_LOOKUP_FIL_VIEW, None, True),
    ("ukCollection", LOOKUP_FIL_VIEW, {"locale": "fil"}, True),
    ("ukCollection", nested_lookup_fil_view("ukCollection"), {"locale": "fil"}, True),
    ("ukCollection", GRAPH_LOOKUP_FIL_VIEW, {"locale": "fil"}, True),
    ("simpleCollection", LOOKUP_FIL_VIEW, None, False),
    ("simpleCollection", nested_lookup_fil_view("simpleCollation"), None, False),
    ("simpleCollection", GRAPH_LOOKUP_FIL_VIEW, None, False),
    ("filCollection", LOOKUP_FIL_VIEW, {"locale": "zh"}, False),
    ("filCollection", nested_lookup_fil_view("filCollection"), {"locale": "zh"}, False),
    ("filCollection", GRAPH_LOOKUP_FIL_VIEW, {"locale": "zh"}, False),
    ("filView", LOOKUP_SIMPLE_VIEW, None, False),
    ("simpleView", LOOKUP_FIL_VIEW, None, False),
])
def test_collation_lookup_into_a_view_needs_its_collation(coll_views, source, stage, collation, ok):
    """Checked before any document flows: the jstest's collections are empty."""
    db = coll_views
    cmd = {"aggregate": source, "pipeline": [stage], "cursor": {}}
    if collation is not None:
        cmd["collation"] = collation
    if ok:
        db.command(cmd)
    else:
        command_fails(db, cmd, OPTION_NOT_SUPPORTED_ON_VIEW)


def test_collation_several_views_of_one_collation(coll_views):
    db = coll_views
    db.command("create", "simpleView2", viewOn="simpleCollection", collation={"locale": "simple"})
    db.command("aggregate", "simpleView2", pipeline=[LOOKUP_SIMPLE_VIEW], cursor={})
    db.command("aggregate", "simpleView2", pipeline=[GRAPH_LOOKUP_SIMPLE_VIEW], cursor={})
    graph_uk = {"$graphLookup": {"from": "ukCollection", "startWith": "$_id", "connectFromField": "_id",
                                 "connectToField": "matchedId", "as": "matched"}}
    db.command("aggregate", "simpleView2", pipeline=[LOOKUP_SIMPLE_VIEW, graph_uk], cursor={})
    command_fails(db, {"aggregate": "simpleCollection", "pipeline": [LOOKUP_FIL_VIEW, GRAPH_LOOKUP_SIMPLE_VIEW],
               "cursor": {}}, OPTION_NOT_SUPPORTED_ON_VIEW)


@pytest.mark.parametrize("view_on, pipeline", [
    ("filView", []), ("simpleCollection", [LOOKUP_FIL_VIEW]), ("simpleCollection", [nested_lookup_fil_view("zhView")]),
    ("simpleCollection", [GRAPH_LOOKUP_SIMPLE_VIEW]),
], ids=["view_on", "lookup", "nested_lookup", "graph_lookup"])
def test_collation_a_view_cannot_depend_on_a_view_of_another_collation(coll_views, view_on, pipeline):
    make_view(coll_views, "zhView", view_on, pipeline, OPTION_NOT_SUPPORTED_ON_VIEW, collation={"locale": "zh"})


def test_collation_coll_mod_cannot_make_a_view_depend_on_another_collation(coll_views):
    db = coll_views
    db.command("create", "esView", viewOn="simpleCollection", collation={"locale": "es"})
    for view_on, pipeline in (("filView", []), ("simpleCollection", [LOOKUP_SIMPLE_VIEW]),
                              ("simpleCollection", [GRAPH_LOOKUP_FIL_VIEW])):
        command_fails(db, {"collMod": "esView", "viewOn": view_on, "pipeline": pipeline}, OPTION_NOT_SUPPORTED_ON_VIEW)
    entry = db.command("listCollections", filter={"name": "esView"})["cursor"]["firstBatch"][0]
    assert entry["options"]["collation"]["locale"] == "es"


def test_collation_dropped_view_cannot_come_back_with_another_collation(coll_views):
    db = coll_views
    db.command("create", "filView2", viewOn="filView", collation={"locale": "fil"})
    for reference in (None, [LOOKUP_FIL_VIEW], [GRAPH_LOOKUP_FIL_VIEW]):
        if reference is not None:
            db.command("collMod", "filView2", viewOn="simpleCollection", pipeline=reference)
        db.command("drop", "filView")
        make_view(db, "filView", "simpleCollection", None, OPTION_NOT_SUPPORTED_ON_VIEW)
        make_view(db, "filView", "simpleCollection", None, OPTION_NOT_SUPPORTED_ON_VIEW, collation={"locale": "en"})
        make_view(db, "filView", "ukCollection", [], collation={"locale": "fil"})
    # coll_mod kept filView2's collation
    entry = db.command("listCollections", filter={"name": "filView2"})["cursor"]["firstBatch"][0]
    assert entry["options"]["collation"]["locale"] == "fil"


def test_collation_two_views_of_different_collations_on_one_name(coll_views):
    db = coll_views
    make_view(db, "A", "B", collation={"locale": "hsb"})
    make_view(db, "B", "other", collation={"locale": "hsb"})
    make_view(db, "C", "B", None, OPTION_NOT_SUPPORTED_ON_VIEW, collation={"locale": "wae"})
    db.command("drop", "B")
    make_view(db, "C", "B", collation={"locale": "wae"})
    make_view(db, "B", "other", None, OPTION_NOT_SUPPORTED_ON_VIEW, collation={"locale": "hsb"})
    make_view(db, "B", "other", None, OPTION_NOT_SUPPORTED_ON_VIEW, collation={"locale": "wae"})
    make_view(db, "B", "other", None, OPTION_NOT_SUPPORTED_ON_VIEW)


def test_collation_reads_use_the_view_default(db):
    db.command("create", "case_sensitive_coll")
    db.command("create", "case_insensitive_view", viewOn="case_sensitive_coll", collation={"locale": "en", "strength": 1})
    db.case_sensitive_coll.insert_many([{"f": "case"}, {"f": "Case"}, {"f": "CASE"}])
    assert len(agg(db, "case_sensitive_coll", [{"$match": {"f": "case"}}])) == 1
    assert len(agg(db, "case_insensitive_view", [{"$match": {"f": "case"}}])) == 3
    assert count(db, "case_sensitive_coll", {"f": "case"}) == 1
    assert count(db, "case_insensitive_view", {"f": "case"}) == 3
    assert len(distinct(db, "case_sensitive_coll", "f")) == 3
    assert len(distinct(db, "case_insensitive_view", "f")) == 1
    assert len(find_all(db, {"find": "case_sensitive_coll", "filter": {"f": "case"}})) == 1
    assert len(find_all(db, {"find": "case_insensitive_view", "filter": {"f": "case"}})) == 3


# --------------------------------------------------------------------------------------------------
# views_drop.js, views_rename.js, views_change.js
# --------------------------------------------------------------------------------------------------

def test_drop_collection_view_and_system_views(db):
    db.coll.insert_one({"x": 1})
    db.command("create", "view", viewOn="coll", pipeline=[])
    assert list(db.view.find({}, {"_id": 0})) == [{"x": 1}]
    db.command("drop", "coll")
    assert list(db.view.find()) == []
    db.command("drop", "view")
    assert list(db.system.views.find()) == []
    db.command("drop", "system.views")
    assert db.command("listCollections")["cursor"]["firstBatch"] == []


def test_system_views_is_never_renamed(client, db):
    """mongod 6.0+ refuses to rename system.views or to rename over it (20; the older views_rename.js
    renamed it away and back): a rename over it replaced the view catalog with a collection's
    documents, and every listCollections of the database answered 182 from then on."""
    db.command("create", "view", viewOn="views_rename_test", pipeline=[])
    db.views_rename_test.insert_one({"_id": 1})
    db.other.insert_one({"x": 1})
    message = "renaming system.views collection or renaming to system.views is not allowed"
    for source, target in (("system.views", "views"), ("other", "system.views")):
        with pytest.raises(OperationFailure) as refused:
            client.admin.command("renameCollection", f"{db.name}.{source}", to=f"{db.name}.{target}",
                                 dropTarget=True)
        assert (refused.value.code, refused.value.details["errmsg"]) == (20, message)
    assert db.view.count_documents({}) == 1
    assert sorted(db.list_collection_names()) == ["other", "system.views", "view", "views_rename_test"]
    with pytest.raises(OperationFailure) as refused:
        client.admin.command("renameCollection", "admin.system.version", to="admin.version")
    assert refused.value.code == 20


def _change_reset(db):
    for name in ("collection", "view", "viewOnView"):
        db.drop_collection(name)
    db.command("create", "collection")
    db.command("create", "view", viewOn="collection", pipeline=[{"$match": {"a": 1}}])
    db.command("create", "viewOnView", viewOn="view", pipeline=[{"$match": {"b": 1}}])


def _change_find(db, name: str) -> list:
    return find_all(db, {"find": name, "filter": {}, "projection": {"_id": 0, "a": 1, "b": 1}})


def test_change_coll_mod_of_view_on_alone(db):
    _change_reset(db)
    db.collection.insert_one({"a": 1, "b": 1})
    assert _change_find(db, "view") == [{"a": 1, "b": 1}]
    db.command("collMod", "view", viewOn="nonexistent")  # without auth, one of the two is enough
    assert _change_find(db, "view") == []


def test_change_coll_mod_of_pipeline_alone(db):
    _change_reset(db)
    db.collection.insert_many([{"a": 1, "b": 1}, {"a": 7}])
    assert _change_find(db, "view") == [{"a": 1, "b": 1}]
    db.command("collMod", "view", pipeline=[{"$match": {"a": {"$gt": 4}}}])
    assert _change_find(db, "view") == [{"a": 7}]


def test_change_view_follows_its_collection_and_views(db):
    _change_reset(db)
    db.collection.insert_one({"a": 1, "b": 1})
    db.collection.update_one({"a": 1}, {"$set": {"a": 2}})
    assert _change_find(db, "view") == []
    _change_reset(db)
    db.collection.insert_one({"a": 1, "b": 1})
    assert _change_find(db, "viewOnView") == [{"a": 1, "b": 1}]
    db.command("collMod", "view", viewOn="collection", pipeline=[{"$match": {"nonexistent": 1}}])
    assert _change_find(db, "viewOnView") == []
    _change_reset(db)
    db.collection.insert_one({"a": 1, "b": 1})
    db.command("drop", "collection")
    assert _change_find(db, "view") == []
    _change_reset(db)
    db.collection.insert_one({"a": 1, "b": 1})
    db.command("drop", "view")
    assert _change_find(db, "viewOnView") == []


# --------------------------------------------------------------------------------------------------
# views_coll_stats.js, views_stats.js
# --------------------------------------------------------------------------------------------------

def _latency(db, name: str) -> dict:
    return db.command("aggregate", name, pipeline=[{"$collStats": {"latencyStats": {}}}],
                      cursor={})["cursor"]["firstBatch"][0]


def test_coll_stats_latency_of_a_view_is_the_view(db):
    make_view(db, "a", "b")
    assert _latency(db, "a")["ns"] == f"{db.name}.a"
    db.command("drop", "a")
    make_view(db, "a", "b", [{"$match": {}}])
    assert _latency(db, "a")["ns"] == f"{db.name}.a"


def test_coll_stats_in_a_view_pipeline_reports_its_view_on(db):
    stage = {"$collStats": {"latencyStats": {}}}
    make_view(db, "a", "b", [stage])
    assert _latency(db, "a")["ns"] == f"{db.name}.a"
    assert _latency(db, "b")["ns"] == f"{db.name}.b"
    assert agg(db, "a", [])[0]["ns"] == f"{db.name}.b"
    client = db.client
    client.drop_database(db.name)
    make_view(db, "a", "b", [stage, {"$match": {}}])
    make_view(db, "b", "c", [stage])
    for name in ("a", "b", "c"):
        assert _latency(db, name)["ns"] == f"{db.name}.{name}"
    assert agg(db, "a", [])[0]["ns"] == f"{db.name}.b"  # the first $collStats stops the resolution
    assert agg(db, "b", [])[0]["ns"] == f"{db.name}.c"


def test_coll_stats_storage_stats_of_a_view_is_refused(db):
    make_view(db, "a", "b")
    command_fails(db, {"aggregate": "a", "pipeline": [{"$collStats": {"storageStats": {}}}], "cursor": {}},
          COMMAND_NOT_SUPPORTED_ON_VIEW)


def test_stats_latency_histogram_counts_view_reads_and_refused_writes(db):
    db.command("create", "view", viewOn="collection")

    def ops() -> dict:
        stats = _latency(db, "view")["latencyStats"]
        return {k: stats[k]["ops"] for k in ("reads", "writes", "commands")}

    def diff(before: dict) -> tuple:
        after = ops()
        # the $collStats read that measures counts as one read itself
        return after, (after["reads"] - before["reads"] - 1, after["writes"] - before["writes"],
                       after["commands"] - before["commands"])

    last = ops()
    list(db.view.aggregate([{"$match": {}}]))
    last, d = diff(last)
    assert d == (1, 0, 0)
    for write in (lambda: db.view.insert_one({}), lambda: db.view.delete_many({}),
                  lambda: db.view.replace_one({}, {})):
        with pytest.raises(OperationFailure):
            write()
        last, d = diff(last)
        assert d == (0, 1, 0)


def test_stats_top_counts_refused_writes_on_the_view(client, db):
    db.command("create", "view", viewOn="collection")

    def top(field: str) -> int:
        return client.admin.command("top")["totals"].get(f"{db.name}.view", {}).get(field, {}).get("count", 0)

    for field, write in (("insert", lambda: db.view.insert_one({})), ("remove", lambda: db.view.delete_many({})),
                         ("update", lambda: db.view.replace_one({}, {}))):
        before = top(field)
        with pytest.raises(OperationFailure):
            write()
        assert top(field) == before + 1, field
    before = {f: top(f) for f in ("insert", "update", "remove")}
    db.collection.insert_one({})
    db.collection.update_one({}, {"$set": {"x": 1}})
    db.collection.delete_many({})
    assert {f: top(f) for f in ("insert", "update", "remove")} == before


# --------------------------------------------------------------------------------------------------
# duplicate_ns.js, invalid_system_views.js, view_with_invalid_dbname.js
# --------------------------------------------------------------------------------------------------

def _apply(client, db, op: str, doc: dict) -> None:
    """Write ``system.views`` with applyOps (which, as mongod's, inserts only into an existing collection)."""
    if op == "i" and "system.views" not in db.list_collection_names(filter={"name": "system.views"}):
        db.create_collection("system.views")
    client.admin.command("applyOps", [{"op": op, "ns": f"{db.name}.system.views", "o": doc}])


def test_duplicate_ns_view_and_collection_of_one_name_are_both_listed(client, db):
    db.command("create", "myns")
    _apply(client, db, "i", {"_id": f"{db.name}.myns", "viewOn": "coll", "pipeline": []})
    names = [e["name"] for e in db.command("listCollections")["cursor"]["firstBatch"]]
    assert names.count("myns") == 2


def test_duplicate_ns_written_directly_into_system_views(db):
    db.command("create", "myns")
    db.system.views.insert_one({"_id": f"{db.name}.myns", "viewOn": "coll", "pipeline": []})
    names = [e["name"] for e in db.command("listCollections")["cursor"]["firstBatch"]]
    assert names.count("myns") == 2


@pytest.mark.parametrize("index", range(9))
def test_invalid_definition_inserted_directly_into_system_views(db, index):
    """mongod 7.0's op observer catches a bad definition's error and reloads the catalog (op_observer_impl
    onInserts): the insert succeeds, view commands then answer 182, collections still work."""
    bad = _bad_views(db.name)[index]
    db.collection.insert_one({"x": 1})
    db.system.views.insert_one(bad)
    command_fails(db, {"listCollections": 1}, INVALID_VIEW_DEFINITION)
    command_fails(db, {"create": "newView", "viewOn": "collection"}, INVALID_VIEW_DEFINITION)
    assert db.collection.count_documents({}) == 1
    db.system.views.delete_one({"_id": bad["_id"]})
    db.command("listCollections")


def _bad_views(name: str) -> list:
    return [
        {"_id": f"{name}.badViewStringPipeline", "viewOn": "collection", "pipeline": "bad"},
        {"_id": f"{name}.badViewEmptyObjectPipeline", "viewOn": "collection", "pipeline": {}},
        {"_id": f"{name}.badViewNumericalPipeline", "viewOn": "collection", "pipeline": 7},
        {"_id": f"{name}.badViewArrayWithIntegerPipeline", "viewOn": "collection", "pipeline": [1]},
        {"_id": f"{name}.badViewArrayWithEmptyArrayPipeline", "viewOn": "collection", "pipeline": [[]]},
        {"_id": 7, "viewOn": "collection", "pipeline": []},
        {"_id": f"{name}.embedded\0null", "viewOn": "collection", "pipeline": []},
        {"_id": "invalidNotFullyQualifiedNs", "viewOn": "collection", "pipeline": []},
        {"_id": f"{name}.missingViewOnField", "pipeline": []},
    ]


@pytest.mark.parametrize("index", range(9))
def test_invalid_system_views_fail_view_commands_but_not_collection_ones(client, db, index):
    bad = _bad_views(db.name)[index]
    db.collection.insert_one({"x": 1})
    db.command("create", "collection2")
    db.collection.create_index("x")
    _apply(client, db, "i", bad)
    command_fails(db, {"listCollections": 1}, INVALID_VIEW_DEFINITION)
    command_fails(db, {"create": "newView", "viewOn": "collection"}, INVALID_VIEW_DEFINITION)
    db.collection.insert_one({"y": "baz"})
    db.collection.update_one({"y": "baz"}, {"$set": {"y": "qux"}})
    db.collection.delete_one({"y": "qux"})
    db.command("findAndModify", "collection", query={"x": 1}, update={"x": 2})
    db.command("findAndModify", "collection", query={"x": 2}, remove=True)
    db.command("aggregate", "collection", cursor={}, pipeline=[
        {"$lookup": {"from": "collection2", "localField": "_id", "foreignField": "_id", "as": "match"}}])
    db.command("aggregate", "collection", cursor={}, pipeline=[
        {"$graphLookup": {"from": "collection2", "startWith": "$_id", "connectFromField": "_id",
                          "connectToField": "_id", "as": "match"}}])
    db.command("dropIndexes", "collection", index="x_1")
    db.collection.create_index("x")
    db.command("collMod", "collection", validator={"x": {"$type": "string"}})
    client.admin.command("renameCollection", f"{db.name}.collection", to=f"{db.name}.collection2", dropTarget=True)
    db.command("drop", "collection2")
    _apply(client, db, "d", {"_id": bad["_id"]})
    db.command("listCollections")


def test_invalid_system_views_code_name(client, db):
    _apply(client, db, "i", {"_id": 7, "viewOn": "collection", "pipeline": []})
    assert command_fails(db, {"listCollections": 1}, INVALID_VIEW_DEFINITION).details["codeName"] == "InvalidViewDefinition"


def test_view_with_invalid_dbname_does_not_break_the_server(client, db):
    view = {"_id": "dbNameWithEmbedded\0Character.collectionName", "viewOn": "viewOnForViewWithInvalidDBNameTest",
            "pipeline": []}
    db.create_collection("system.views")
    _apply(client, db, "i", view)
    _apply(client, db, "d", {"_id": view["_id"]})
    client.admin.command("ping")
    db.command("listCollections")


# --------------------------------------------------------------------------------------------------
# dbref_projection.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("projection, expected", [
    pytest.param({"link.$ref": 1}, {"$ref": "otherColl"}, id="ref"),
    pytest.param({"link.$db": 1}, "DB", id="db"),
    pytest.param({"link.$id": 1}, {"$id": "someId"}, id="id"),
])
def test_dbref_projection_through_a_view(db, projection, expected):
    db.baseColl.insert_one({"_id": 0, "link": DBRef("otherColl", "someId", db.name)})
    db.command("create", "view", viewOn="baseColl")
    want = [{"_id": 0, "link": {"$db": db.name} if expected == "DB" else expected}]
    base = find_all(db, {"find": "baseColl", "projection": projection})
    view = find_all(db, {"find": "view", "projection": projection})
    assert base == view
    assert base == want


# --------------------------------------------------------------------------------------------------
# geo.js
# --------------------------------------------------------------------------------------------------

ORIGIN_FIRST = [0, 9, 18, 27, 36, 45, 54, 63, 72, 81, 90]
ORIGIN_LAST = ORIGIN_FIRST[::-1]
EARTH = 40074784


def _meters(deg: float) -> float:
    return deg * (EARTH / 360)


def _radians(deg: float) -> float:
    return deg * math.pi / 180


def _point(coordinates) -> dict:
    return {"type": "Point", "coordinates": coordinates}


@pytest.fixture
def geo(db):
    db.views_geo_collection.insert_many([{"_id": i, "loc": [0, 9 * i]} for i in range(11)])
    db.command("create", "views_geo_view", viewOn="views_geo_collection", pipeline=[])
    return db


def _ys(db, name: str, flt: dict, **kw) -> list:
    return [d["loc"][1] for d in find_all(db, {"find": name, "filter": flt, **kw})]


NEAR_QUERIES = {
    "near_legacy": {"loc": {"$near": [180, 0]}},
    "near_geojson": {"loc": {"$near": {"$geometry": _point([180, 0])}}},
    "near_sphere_legacy": {"loc": {"$nearSphere": [180, 0]}},
    "near_sphere_geojson": {"loc": {"$nearSphere": {"$geometry": _point([180, 0])}}},
}


@pytest.mark.parametrize("indexes, query, outcome", [
    ([], "near_legacy", None), ([], "near_geojson", None), ([], "near_sphere_legacy", None),
    ([], "near_sphere_geojson", None),
    (["2d"], "near_geojson", None), (["2d"], "near_sphere_geojson", None),
    (["2d"], "near_legacy", ORIGIN_FIRST), (["2d"], "near_sphere_legacy", ORIGIN_LAST),
    (["2dsphere"], "near_legacy", None), (["2dsphere"], "near_geojson", ORIGIN_LAST),
    (["2dsphere"], "near_sphere_legacy", ORIGIN_LAST), (["2dsphere"], "near_sphere_geojson", ORIGIN_LAST),
    (["2d", "2dsphere"], "near_legacy", ORIGIN_FIRST), (["2d", "2dsphere"], "near_geojson", ORIGIN_LAST),
    (["2d", "2dsphere"], "near_sphere_legacy", ORIGIN_LAST), (["2d", "2dsphere"], "near_sphere_geojson", ORIGIN_LAST),
])
def test_geo_near_on_a_view_answers_as_the_collection(geo, indexes, query, outcome):
    db = geo
    for kind in indexes:
        db.views_geo_collection.create_index([("loc", kind)])
    for name in ("views_geo_collection", "views_geo_view"):
        if outcome is None:
            err = command_fails(db, {"find": name, "filter": NEAR_QUERIES[query]})
            assert err.code in (2, 291), err.details  # NoQueryExecutionPlans / IndexNotFound
            assert "unable to find index for $geoNear query" in err.details["errmsg"] or \
                "$geoNear requires a 2d or 2dsphere index, but none were found" in err.details["errmsg"]
        else:
            assert _ys(db, name, NEAR_QUERIES[query]) == outcome, name


def test_geo_min_and_max_distance_on_a_view(geo):
    db = geo
    db.views_geo_collection.create_index([("loc", "2d")])
    db.views_geo_collection.create_index([("loc", "2dsphere")])
    queries = [
        {"loc": {"$near": [0, 0], "$minDistance": 9, "$maxDistance": 36}},
        {"loc": {"$near": {"$geometry": _point([0, 0]), "$minDistance": _meters(9),
                           "$maxDistance": _meters(36) + 1}}},
        {"loc": {"$nearSphere": {"$geometry": _point([0, 0]), "$minDistance": _meters(9),
                                 "$maxDistance": _meters(36) + 1}}},
        {"loc": {"$nearSphere": [0, 0], "$minDistance": _radians(9), "$maxDistance": _radians(36)}},
    ]
    for q in queries:
        for name in ("views_geo_collection", "views_geo_view"):
            assert _ys(db, name, q) == [9, 18, 27, 36], (name, q)


@pytest.mark.parametrize("flt, limit", [
    ({"loc": {"$near": [0, 2.2]}}, 0), ({"loc": {"$near": [0, 9.1]}}, 0),
    ({"loc": {"$near": [0, 2.2]}, "_id": {"$ne": 2}}, 0),
    ({"loc": {"$near": [0, 30.1], "$minDistance": 10}}, 0), ({"loc": {"$near": [0, 30.1], "$maxDistance": 20}}, 0),
    ({"loc": {"$near": [0, 30.1], "$minDistance": 10, "$maxDistance": 20}}, 0),
    ({"loc": {"$near": [0, 2.2]}}, 10), ({"loc": {"$near": [0, 9.1]}}, 30),
    ({"loc": {"$near": [0, 30.1], "$minDistance": 10, "$maxDistance": 30}, "_id": {"$ne": 2}}, 20),
])
def test_geo_examples_view_equals_collection(geo, flt, limit):
    db = geo
    db.views_geo_collection.create_index([("loc", "2d")])
    db.views_geo_collection.create_index([("loc", "2dsphere")])
    extra = {"limit": limit} if limit else {}
    assert find_all(db, {"find": "views_geo_view", "filter": flt, **extra}) == \
        find_all(db, {"find": "views_geo_collection", "filter": flt, **extra})


def test_geo_sort_replaces_near_order_and_wrapping(geo):
    db = geo
    db.views_geo_collection.create_index([("loc", "2d")])
    db.views_geo_collection.create_index([("loc", "2dsphere")])
    cmd = {"filter": {"loc": {"$near": [0, 100]}}, "sort": {"loc.1": 1}, "limit": 5}
    assert find_all(db, {"find": "views_geo_view", **cmd}) == find_all(db, {"find": "views_geo_collection", **cmd})
    wrap = {"_id": "wrap", "loc": [-179, 0]}
    db.views_geo_collection.insert_one(dict(wrap))
    for q in ({"loc": {"$nearSphere": {"$geometry": _point([179, 0]), "$minDistance": _meters(1.9),
                                       "$maxDistance": _meters(2.1)}}},
              {"loc": {"$near": {"$geometry": _point([179, 0]), "$minDistance": _meters(1.9),
                                 "$maxDistance": _meters(2.1)}}},
              {"loc": {"$nearSphere": [179, 0], "$minDistance": _radians(1.9), "$maxDistance": _radians(2.1)}}):
        for name in ("views_geo_collection", "views_geo_view"):
            assert find_all(db, {"find": name, "filter": q}) == [wrap], (name, q)


# --------------------------------------------------------------------------------------------------
# views_all_commands.js (the commands Tidemark implements)
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def all_db(db):
    db.command("create", "view", viewOn="collection")
    db.collection.insert_one({"x": 1})
    return db


REFUSED_ON_VIEW = [
    ("insert", {"insert": "view", "documents": [{"x": 1}]}),
    ("update", {"update": "view", "updates": [{"q": {"x": 1}, "u": {"x": 2}}]}),
    ("delete", {"delete": "view", "deletes": [{"q": {"x": 1}, "limit": 1}]}),
    ("findAndModify", {"findAndModify": "view", "query": {"a": 1}, "update": {"$set": {"a": 2}}}),
    ("createIndexes", {"createIndexes": "view", "indexes": [{"key": {"x": 1}, "name": "x_1"}]}),
    ("dropIndexes", {"dropIndexes": "view", "index": "*"}),
    ("listIndexes", {"listIndexes": "view"}),
    ("validate", {"validate": "view"}),
    ("reIndex", {"reIndex": "view"}),
    ("compact", {"compact": "view", "force": True}),
    ("convertToCapped", {"convertToCapped": "view", "size": 12345}),
    ("cloneCollectionAsCapped", {"cloneCollectionAsCapped": "view", "toCollection": "testcapped", "size": 10240}),
]


@pytest.mark.parametrize("name, cmd", REFUSED_ON_VIEW, ids=[r[0] for r in REFUSED_ON_VIEW])
def test_all_commands_refused_on_a_view(all_db, name, cmd):
    try:
        reply = all_db.command(cmd)
    except OperationFailure as e:
        assert e.code == COMMAND_NOT_SUPPORTED_ON_VIEW, e.details
        assert e.details["codeName"] == "CommandNotSupportedOnView"
    else:  # a write command reports the refusal per statement
        assert reply["writeErrors"][0]["code"] == COMMAND_NOT_SUPPORTED_ON_VIEW, reply


def test_all_commands_data_size_refused_on_a_view(all_db):
    command_fails(all_db, {"dataSize": f"{all_db.name}.view"}, COMMAND_NOT_SUPPORTED_ON_VIEW)


def test_all_commands_apply_ops_insert_refused_on_a_view(client, all_db):
    command_fails(client.admin, {"applyOps": [{"op": "i", "o": {"_id": 1}, "ns": f"{all_db.name}.view"}]},
          COMMAND_NOT_SUPPORTED_ON_VIEW)


@pytest.mark.parametrize("op", [{"op": "u", "o": {"$v": 2, "diff": {"u": {"x": 1}}}, "o2": {"_id": 1}},
                                {"op": "u", "o": {"_id": 1, "x": 1}, "o2": {"_id": 1}},
                                {"op": "d", "o": {"_id": 1}}], ids=["update_diff", "replace", "delete"])
def test_all_commands_apply_ops_crud_entries_refused_on_a_view(client, all_db, op):
    """mongod acquires an applyOps CRUD entry's collection with views forbidden: a delete (idempotent on
    a missing namespace) is refused on a view too."""
    err = command_fails(client.admin, {"applyOps": [{**op, "ns": f"{all_db.name}.view"}]}, COMMAND_NOT_SUPPORTED_ON_VIEW)
    assert err.details["errmsg"] == f"Namespace {all_db.name}.view is a view, not a collection"


@pytest.mark.parametrize("cmd", [
    {"aggregate": "view", "pipeline": [{"$match": {}}], "cursor": {}}, {"collMod": "view", "viewOn": "other",
                                                                        "pipeline": []},
    {"count": "view"}, {"dbStats": 1}, {"distinct": "view", "key": "_id"}, {"drop": "view"}, {"dropDatabase": 1},
    {"explain": {"count": "view"}}, {"ping": 1},
], ids=["aggregate", "collMod", "count", "dbStats", "distinct", "drop", "dropDatabase", "explain", "ping"])
def test_all_commands_working_on_a_view(all_db, cmd):
    all_db.command(cmd)


def test_all_commands_rename_of_or_onto_a_view_is_refused(client, all_db):
    n = all_db.name
    command_fails(client.admin, {"renameCollection": f"{n}.view", "to": f"{n}.otherview"}, COMMAND_NOT_SUPPORTED_ON_VIEW)
    command_fails(client.admin, {"renameCollection": f"{n}.collection", "to": f"{n}.view"}, NAMESPACE_EXISTS)


@pytest.mark.parametrize("cmd", [
    {"find": "view", "filter": {"_id": {"$gt": 0}}, "batchSize": 2},
    {"aggregate": "view", "pipeline": [{"$match": {"_id": {"$gt": 0}}}], "cursor": {"batchSize": 2}},
], ids=["find", "aggregate"])
def test_all_commands_get_more_on_a_view_keeps_the_view_namespace(all_db, cmd):
    db = all_db
    db.collection.delete_many({})
    db.collection.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
    reply = db.command(cmd)
    assert reply["cursor"]["ns"] == f"{db.name}.view"
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}, {"_id": 2}]
    more = db.command("getMore", reply["cursor"]["id"], collection="view")
    assert more["cursor"]["ns"] == f"{db.name}.view"


def test_all_commands_kill_cursors_on_a_view(all_db):
    db = all_db
    db.collection.delete_many({})
    db.collection.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
    reply = db.command("aggregate", "view", pipeline=[{"$sort": {"_id": 1}}], cursor={"batchSize": 2})
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}, {"_id": 2}]
    cursor_id = reply["cursor"]["id"]
    killed = db.command("killCursors", "view", cursors=[cursor_id])
    assert (killed["cursorsKilled"], killed["cursorsNotFound"], killed["cursorsAlive"], killed["cursorsUnknown"]) == \
        ([cursor_id], [], [], [])


def test_all_commands_db_hash_changes_with_the_views(all_db):
    db = all_db

    def views_hash():
        return db.command("dbHash")["collections"].get("system.views")

    first = views_hash()
    db.command("create", "view2", viewOn="view")
    assert views_hash() != first
    db.command("drop", "view2")
    assert views_hash() == first
