"""The versioned API's checks (server/commands/api_version.py), in process: what ``apiStrict: true``
refuses in each command family, and what it lets through (mongod 7.0, the api jstests)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.commands.api_version import API_V1_STAGES, check_api_parameters
from tidemark.protocol.errors import MongoError

STRICT = {"apiVersion": "1", "apiStrict": True}


def code(name: str, cmd: dict) -> int | None:
    try:
        check_api_parameters(name, cmd)
    except MongoError as exc:
        return exc.code
    return None


@pytest.mark.parametrize("cmd", [
    {"findandmodify": "c", **STRICT},
    {"deleteIndexes": "c", "index": "*", **STRICT},
    {"collstats": "c", **STRICT},
], ids=["findandmodify", "deleteIndexes", "collstats"])
def test_an_alias_is_outside_api_version_1(cmd):
    canonical = {"findandmodify": "findAndModify", "deleteIndexes": "dropIndexes", "collstats": "collStats"}
    assert code(canonical[next(iter(cmd))], cmd) == 323


@pytest.mark.parametrize("name", ["insert", "update", "delete", "findAndModify"])
def test_writes_to_system_js_are_refused(name):
    error = pytest.raises(MongoError, check_api_parameters, name, {name: "system.js", **STRICT}).value
    assert error.code == 323 and "attempts to write to system.js" in str(error)
    assert code(name, {name: "system.jsx", **STRICT}) is None
    assert code(name, {name: "system.js", "apiVersion": "1"}) is None
    assert code("find", {"find": "system.js", **STRICT}) is None


@pytest.mark.parametrize("spec, refused", [
    ({}, False), ({"count": {}}, False), ({"latencyStats": {}}, True), ({"storageStats": {}}, True),
    ({"queryExecStats": {}}, True), ({"count": {}, "latencyStats": {"histograms": True}}, True),
])
def test_coll_stats_is_stable_with_count_only(spec, refused):
    for pipeline in ([{"$collStats": spec}],
                     [{"$unionWith": {"coll": "x", "pipeline": [{"$collStats": spec}]}}],
                     [{"$facet": {"a": [], "b": [{"$collStats": spec}]}}]):
        assert code("aggregate", {"aggregate": "c", "pipeline": pipeline, **STRICT}) == (323 if refused else None)


@given(st.sampled_from(sorted(API_V1_STAGES | {"$indexStats", "$currentOp", "$planCacheStats", "$listSessions",
                                              "$listLocalSessions", "$searchMeta", "$_internalInhibitOptimization"})),
       st.sampled_from(["aggregate", "create", "collMod"]))
def test_a_stage_is_refused_alike_in_aggregate_and_view_definitions(stage, command):
    """The same stage set decides for an aggregate, a view being created and a view being modified."""
    pipeline = [{stage: {}}]
    if command == "aggregate":
        cmd = {"aggregate": "c", "pipeline": pipeline, "cursor": {}, **STRICT}
    elif command == "create":
        cmd = {"create": "v", "viewOn": "c", "pipeline": pipeline, **STRICT}
    else:
        cmd = {"collMod": "v", "viewOn": "c", "pipeline": pipeline, **STRICT}
    assert code(command, cmd) == (None if stage in API_V1_STAGES else 323)


def test_capped_collections_are_refused_once_sized():
    assert code("create", {"create": "c", "capped": True, "size": 1000, **STRICT}) == 323
    assert code("create", {"create": "c", "capped": True, **STRICT}) is None  # the command's own 72
    assert code("create", {"create": "c", "capped": False, **STRICT}) is None
    assert code("create", {"create": "c", "capped": True, "size": 1000, "apiVersion": "1"}) is None


@pytest.mark.parametrize("field", ["prepareUnique", "forceNonUnique"])
def test_unstable_collmod_index_fields(field):
    assert code("collMod", {"collMod": "c", "index": {"name": "a_1", field: True}, **STRICT}) == 323
    assert code("collMod", {"collMod": "c", "index": {"name": "a_1", "hidden": True}, **STRICT}) is None


@pytest.mark.parametrize("name, field", [
    ("find", "noCursorTimeout"), ("find", "tailable"), ("find", "awaitData"), ("find", "$_requestResumeToken"),
    ("find", "$_resumeAfter"), ("aggregate", "runtimeConstants"), ("aggregate", "collectionUUID"),
    ("aggregate", "$_requestReshardingResumeToken"),
])
def test_unstable_fields_are_refused_whatever_their_value(name, field):
    for value in (False, True, {}):
        assert code(name, {name: "c", field: value, **STRICT}) == 323
    assert code(name, {name: "c", field: False, "apiVersion": "1"}) is None


def test_deprecation_errors_refuse_only_deprecated_commands():
    params = {"apiVersion": "1", "apiDeprecationErrors": True}
    assert code("testDeprecation", {"testDeprecation": 1, **params}) == 324
    assert code("testDeprecation", {"testDeprecation": 1, "apiVersion": "1", "apiStrict": True}) is None
    assert code("ping", {"ping": 1, **params}) is None
