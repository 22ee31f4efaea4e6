"""MongoDB's administrative and versioned-API jstests (``jstests/core/administrative/``,
``jstests/core/query/api/`` and top-level command jstests of ``jstests/core/``) ported to pymongo
against a real Tidemark server: the API parameters' validation and what ``apiStrict: true`` refuses
(commands, unstable options, stages, views, capped collections, system.js writes), the profiler's
settings, server parameters, the fsync lock, getLog, hello and its aliases, sessions, compact, the
comment a command carries into the profiler, and the BSON size limit of written documents.

Ported (MongoDB 7.0 behaviour as the reference), 50 jstest files:
query/api/: api_version_parameters.js, api_version_unstable_fields.js, api_version_pipeline_stages.js,
api_params_getmore.js, api_version_find_and_modify.js, api_version_create.js,
api_version_unstable_indexes.js (results and error codes, no plan shapes), apitest_db_profile_level.js,
api_version_new_50_language_features.js, api_version_new_51_language_features.js,
api_version_new_52_language_features.js, apitest_db.js, apitest_dbcollection.js.
administrative/: connection_status.js, dbadmin.js, set_param1.js (the parameters Tidemark has),
fsync/fsync.js, getlog1.js, hello_response_validation.js, client_metadata_ismaster.js,
automation_setparameter.js (without the shell prompt), compact_keeps_indexes.js,
list_all_local_sessions.js, list_sessions.js, filemd5.js, validate_db_metadata_command.js, auth1.js,
auth2.js, roles_info.js, current_op/currentop.js, current_op/currentop_predicate.js,
current_op/currentop_cursors.js, profile/profile1.js, profile/profile_no_such_db.js,
profile/profile_find.js, profile/profile_getmore.js, profile/profile_update.js,
profile/profile_delete.js, profile/profile_insert.js, profile/profile_count.js,
profile/system_profile.js, profile/profile_agg.js, profile/profile_list_indexes.js,
profile/profile_findandmodify.js, profile/profile2.js, profile/profile3.js,
profile/profile_sampling.js, profile/profile_list_collections.js.
Top level: comment_field.js (the profiler half; the currentOp half needs the
waitAfterCommandFinishesExecution fail point), max_doc_size.js.

Left out: api_version_accumulators.js and api_rename_collection.js (8.1), api_version_test_expression.js
($_testApiVersion), replication-only parameters of set_param1.js (oplogFetcher*), the parallel-shell
halves of compact_keeps_indexes.js, explain shapes and execStats, plan-cache metrics (fromMultiPlanner,
fromPlanCache, replanned, queryHash), lock statistics, appName "MongoDB Shell", cpuNanos. The fsync
lock's blocked writes run on threads (the jstests' parallel shells).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
from typing import Any

import bson
import pytest
from bson import Binary, Int64, ObjectId, Timestamp
from bson.binary import UUID_SUBTYPE
from harness.jstests import command_fails
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands(
    "ping", "listCommands", "isMaster", "hello", "buildInfo", "insert", "update", "delete", "findAndModify",
    "find", "getMore", "aggregate", "create", "createIndexes", "collMod", "explain", "profile", "getLog",
    "listDatabases", "serverStatus", "getParameter", "setParameter", "fsync", "fsyncUnlock", "currentOp",
    "dropDatabase", "compact", "startSession", "connectionStatus", "createUser", "dropAllUsersFromDatabase",
    "updateUser", "dropUser", "authenticate", "logout", "createRole", "rolesInfo", "dropAllRolesFromDatabase",
    "collStats", "validate", "count", "drop", "dropIndexes", "listIndexes", "convertToCapped", "renameCollection",
)

BAD_VALUE = 2
TYPE_MISMATCH = 14
INVALID_OPTIONS = 72
OVERFLOW = 15
CANNOT_CREATE_INDEX = 67
NO_QUERY_EXECUTION_PLANS = 291
API_VERSION_ERROR = 322
API_STRICT_ERROR = 323
API_MISMATCH_ERROR = 347  # (error_codes.yml; 498 has no name)
API_STRICT_WITHOUT_VERSION = 4886600
CLIENT_METADATA_CANNOT_BE_MUTATED = 186
IDL_UNKNOWN_FIELD = 40415
STRICT = {"apiVersion": "1", "apiStrict": True}

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).


def run(db, cmd: dict) -> dict:
    return db.command(cmd)


# --------------------------------------------------------------------------------------------------
# api_version_parameters.js
# --------------------------------------------------------------------------------------------------

API_PARSE_ROWS = [
    ({"apiStrict": True}, API_STRICT_WITHOUT_VERSION),
    ({"apiDeprecationErrors": False}, API_STRICT_WITHOUT_VERSION),
    ({"apiVersion": 1.0}, TYPE_MISMATCH),
    ({"apiVersion": "2"}, API_VERSION_ERROR),
    ({"apiVersion": "1", "apiStrict": "true"}, TYPE_MISMATCH),
    ({"apiVersion": "1", "apiDeprecationErrors": "false"}, TYPE_MISMATCH),
    ({"apiVersion": "1", "apiStrict": True, "apiDeprecationErrors": True}, None),
    ({"apiVersion": "1", "apiStrict": False, "apiDeprecationErrors": False}, None),
    ({"apiVersion": "1"}, None),
]


@pytest.mark.parametrize("params, code", API_PARSE_ROWS, ids=[json.dumps(r[0]) for r in API_PARSE_ROWS])
def test_api_parameters_are_parsed_on_a_command_in_version_1(db, params, code):
    if code is None:
        assert run(db, {"ping": 1, **params})["ok"] == 1
    else:
        command_fails(db, {"ping": 1, **params}, code)


_API_VALUE = st.sampled_from(["1", "2", "", 1, 1.0, True, False, "true", {"v": 1}])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(version=st.one_of(st.none(), _API_VALUE), strict=st.one_of(st.none(), _API_VALUE),
       deprecation=st.one_of(st.none(), _API_VALUE))
def test_api_parameters_follow_mongods_order_of_checks(db, version, strict, deprecation):
    """Any API parameter of the wrong type -> 14; apiStrict/apiDeprecationErrors without apiVersion ->
    4886600; an apiVersion other than "1" -> 322 (validate_api_parameters.cpp); else the command runs."""
    params = {k: v for k, v in (("apiVersion", version), ("apiStrict", strict),
                                ("apiDeprecationErrors", deprecation)) if v is not None}
    wrong_type = (version is not None and not isinstance(version, str)) or any(
        v is not None and not isinstance(v, bool) for v in (strict, deprecation))
    if wrong_type:
        expected: int | None = TYPE_MISMATCH
    elif version is None and (strict is not None or deprecation is not None):
        expected = API_STRICT_WITHOUT_VERSION
    elif version is not None and version != "1":
        expected = API_VERSION_ERROR
    else:
        expected = None
    try:
        run(db, {"ping": 1, **params})
        got = None
    except OperationFailure as exc:
        got = exc.code
    assert got == expected, params


def test_api_strict_refuses_commands_outside_version_1(db):
    assert run(db, {"listCommands": 1, "apiVersion": "1"})["ok"] == 1
    command_fails(db, {"listCommands": 1, **STRICT}, API_STRICT_ERROR)
    command_fails(db, {"isMaster": 1, **STRICT}, API_STRICT_ERROR)
    assert run(db, {"listCommands": 1, "apiVersion": "1", "apiDeprecationErrors": True})["ok"] == 1
    error = command_fails(db, {"buildInfo": 1, "apiStrict": True, "apiVersion": "1"}, API_STRICT_ERROR)
    assert "buildInfo" in error.details["errmsg"] and "dochub.mongodb.org" in error.details["errmsg"]


@pytest.mark.commands("testDeprecation")
def test_api_deprecation_errors_refuse_a_deprecated_command(start_server):
    with start_server(params={"enableTestCommands": 1}).client() as mongo:
        db = mongo.api_deprecation
        assert run(db, {"testDeprecation": 1, "apiVersion": "1"})["ok"] == 1
        assert run(db, {"testDeprecation": 1, "apiVersion": "1", "apiStrict": True})["ok"] == 1
        error = command_fails(db, {"testDeprecation": 1, "apiVersion": "1", "apiDeprecationErrors": True}, 324)
        assert "deprecatedApiVersions()" in error.details["errmsg"]


SYSTEM_JS_WRITES = {
    "insert": {"insert": "system.js", "documents": [{"_id": "shouldntExist", "value": 1}]},
    "update": {"update": "system.js", "updates": [{"q": {"_id": "shouldExist"}, "u": {"_id": "shouldExist", "value": 2}}]},
    "delete": {"delete": "system.js", "deletes": [{"q": {"_id": "shouldExist"}, "limit": 1}]},
    "findAndModify": {"findAndModify": "system.js", "query": {"_id": "shouldExist"}, "remove": True},
}


@pytest.mark.parametrize("name", list(SYSTEM_JS_WRITES))
def test_api_strict_refuses_writes_to_system_js(db, name):
    error = command_fails(db, {**SYSTEM_JS_WRITES[name], **STRICT}, API_STRICT_ERROR)
    assert error.details["errmsg"] == f"Provided apiStrict:true, but the command {name} attempts to write to system.js."
    assert db["system.js"].count_documents({}) == 0


def test_api_strict_reads_system_js(db):
    assert run(db, {"find": "system.js", "filter": {"_id": "shouldExist"}, **STRICT})["ok"] == 1
    # without apiStrict the writes go through
    assert run(db, SYSTEM_JS_WRITES["insert"])["n"] == 1


# --------------------------------------------------------------------------------------------------
# api_version_unstable_fields.js
# --------------------------------------------------------------------------------------------------

UNSTABLE_AGGREGATE_FIELDS = {
    "isMapReduceCommand": False,
    "$_requestReshardingResumeToken": False,
    "explain": True,
    "runtimeConstants": {"localNow": dt.datetime(2024, 1, 1), "userRoles": [], "clusterTime": Timestamp(1, 1)},
    "collectionUUID": Binary(b"\x00" * 16, UUID_SUBTYPE),
}
UNSTABLE_FIND_FIELDS = {
    "min": {"a": 1}, "max": {"a": 1}, "returnKey": False, "noCursorTimeout": False, "showRecordId": False,
    "tailable": False, "oplogReplay": False, "awaitData": False, "readOnce": False,
    "$_requestResumeToken": False, "$_resumeAfter": {},
}


@pytest.fixture
def api_coll(db):
    db.api_version_unstable_fields.insert_one({"a": 1})
    return db.api_version_unstable_fields


@pytest.mark.parametrize("field", list(UNSTABLE_AGGREGATE_FIELDS))
def test_api_strict_refuses_unstable_aggregate_fields(db, api_coll, field):
    cmd = {"aggregate": api_coll.name, "pipeline": [], "cursor": {}, **STRICT, field: UNSTABLE_AGGREGATE_FIELDS[field]}
    command_fails(db, cmd, API_STRICT_ERROR)


@pytest.mark.parametrize("field", list(UNSTABLE_FIND_FIELDS))
def test_api_strict_refuses_unstable_find_fields(db, api_coll, field):
    command_fails(db, {"find": api_coll.name, **STRICT, field: UNSTABLE_FIND_FIELDS[field]}, API_STRICT_ERROR)


def test_api_strict_refuses_text_indexes(db, api_coll):
    command_fails(db, {"createIndexes": api_coll.name, "indexes": [{"key": {"a": "text"}, "name": "a_1"}], **STRICT},
                  API_STRICT_ERROR)


def test_geo_haystack_indexes_cannot_be_created(db, api_coll):
    command_fails(db, {"createIndexes": api_coll.name, "indexes": [{"key": {"a": "geoHaystack"}, "name": "a_1"}],
                       **STRICT}, CANNOT_CREATE_INDEX)


def test_api_strict_refuses_unstable_collmod_index_fields(db, api_coll):
    api_coll.create_index("a", name="a_1")
    # (the jstest's collection "col" does not exist: the fields are refused before the namespace matters)
    for coll in ("col", api_coll.name):
        command_fails(db, {"collMod": coll, **STRICT, "index": {"name": "a_1", "prepareUnique": True}},
                      API_STRICT_ERROR)


# --------------------------------------------------------------------------------------------------
# api_version_pipeline_stages.js
# --------------------------------------------------------------------------------------------------

UNSTABLE_PIPELINES = [
    [{"$collStats": {"count": {}, "latencyStats": {}}}],
    [{"$currentOp": {}}],
    [{"$indexStats": {}}],
    [{"$listLocalSessions": {}}],
    [{"$listSessions": {}}],
    [{"$planCacheStats": {}}],
    [{"$unionWith": {"coll": "coll2", "pipeline": [{"$collStats": {"latencyStats": {}}}]}}],
    [{"$lookup": {"from": "coll2", "pipeline": [{"$indexStats": {}}], "as": "x"}}],
    [{"$facet": {"field1": [], "field2": [{"$indexStats": {}}]}}],
]
UNSTABLE_COLL_STATS = [
    {"latencyStats": {}}, {"latencyStats": {"histograms": True}}, {"storageStats": {}}, {"queryExecStats": {}},
    {"latencyStats": {}, "queryExecStats": {}}, {"latencyStats": {}, "storageStats": {"scale": 1024}, "queryExecStats": {}},
]


@pytest.fixture
def stages_coll(db):
    db.api_version_pipeline_stages.insert_one({"a": 1})
    return db.api_version_pipeline_stages


@pytest.mark.parametrize("pipeline", UNSTABLE_PIPELINES, ids=[next(iter(p[0])) + str(i) for i, p in enumerate(UNSTABLE_PIPELINES)])
def test_api_strict_refuses_stages_outside_version_1(db, stages_coll, pipeline):
    command_fails(db, {"aggregate": stages_coll.name, "pipeline": pipeline, "cursor": {}, **STRICT}, API_STRICT_ERROR)
    command_fails(db, {"create": "api_version_pipeline_stages_should_fail", "viewOn": stages_coll.name,
                       "pipeline": pipeline, **STRICT}, API_STRICT_ERROR)
    assert "api_version_pipeline_stages_should_fail" not in db.list_collection_names()


@pytest.mark.parametrize("spec", UNSTABLE_COLL_STATS, ids=[json.dumps(s) for s in UNSTABLE_COLL_STATS])
def test_api_strict_allows_coll_stats_with_count_only(db, stages_coll, spec):
    command_fails(db, {"aggregate": stages_coll.name, "pipeline": [{"$collStats": spec}], "cursor": {}, **STRICT},
                  API_STRICT_ERROR)


def test_coll_stats_count_runs_under_api_strict(db, stages_coll):
    for spec in ({}, {"count": {}}):
        assert run(db, {"aggregate": stages_coll.name, "pipeline": [{"$collStats": spec}], "cursor": {}, **STRICT})["ok"] == 1
    # the drivers' count: one batch, no getMore
    reply = run(db, {"aggregate": stages_coll.name, "cursor": {}, **STRICT,
                     "pipeline": [{"$collStats": {"count": {}}}, {"$group": {"_id": 1, "count": {"$sum": "$count"}}}]})
    assert reply["cursor"]["id"] == 0
    assert [d["count"] for d in reply["cursor"]["firstBatch"]] == [1]


def test_api_strict_allows_a_view_of_stable_stages(db, stages_coll):
    assert run(db, {"create": "stable_view", "viewOn": stages_coll.name, "pipeline": [{"$match": {"a": 1}}], **STRICT})["ok"] == 1
    assert [d["a"] for d in db.stable_view.find()] == [1]


# --------------------------------------------------------------------------------------------------
# api_params_getmore.js
# --------------------------------------------------------------------------------------------------

API_PARAM_COMBOS = [
    {},
    {"apiVersion": "1"},
    {"apiVersion": "1", "apiDeprecationErrors": True},
    {"apiVersion": "1", "apiDeprecationErrors": False},
    {"apiVersion": "1", "apiStrict": True},
    {"apiVersion": "1", "apiStrict": True, "apiDeprecationErrors": True},
    {"apiVersion": "1", "apiStrict": True, "apiDeprecationErrors": False},
    {"apiVersion": "1", "apiStrict": False},
    {"apiVersion": "1", "apiStrict": False, "apiDeprecationErrors": True},
    {"apiVersion": "1", "apiStrict": False, "apiDeprecationErrors": False},
]


@pytest.fixture
def getmore_coll(db):
    db.api_params_getmore.insert_many([{"_id": i, "x": i} for i in range(2)])
    return db.api_params_getmore


def _open_cursor(db, coll, params: dict) -> Any:
    return run(db, {"find": coll.name, "batchSize": 1, **params})["cursor"]["id"]


@pytest.mark.parametrize("params", API_PARAM_COMBOS, ids=[json.dumps(p) for p in API_PARAM_COMBOS])
def test_getmore_with_the_opening_commands_api_parameters(db, getmore_coll, params):
    cursor = _open_cursor(db, getmore_coll, params)
    assert run(db, {"getMore": cursor, "collection": getmore_coll.name, **params})["ok"] == 1


@pytest.mark.parametrize("initial, continuing", [
    pytest.param({}, {"apiVersion": "1"}, id="none-then-v1"),
    pytest.param({"apiVersion": "1"}, {}, id="v1-then-none"),
    pytest.param({"apiVersion": "1", "apiStrict": True}, {"apiVersion": "1"}, id="strict-then-v1"),
    pytest.param({"apiVersion": "1"}, {"apiVersion": "1", "apiStrict": False}, id="v1-then-strict-false"),
    pytest.param({"apiVersion": "1", "apiDeprecationErrors": True}, {"apiVersion": "1", "apiDeprecationErrors": False},
                 id="deprecation-true-then-false"),
])
def test_getmore_api_parameters_must_match(db, getmore_coll, initial, continuing):
    cursor = _open_cursor(db, getmore_coll, initial)
    command_fails(db, {"getMore": cursor, "collection": getmore_coll.name, **continuing}, API_MISMATCH_ERROR)


# --------------------------------------------------------------------------------------------------
# api_version_find_and_modify.js, api_version_create.js
# --------------------------------------------------------------------------------------------------


def test_find_and_modify_alias_is_outside_api_version_1(db):
    db.testColl.insert_one({"itemNumber": 1, "stockUnit": 10})
    update = {"query": {"itemNumber": 1}, "update": {"$inc": {"stockUnit": 10}}}
    run(db, {"findAndModify": "testColl", **update, **STRICT})
    assert db.testColl.find_one()["stockUnit"] == 20
    command_fails(db, {"findandmodify": "testColl", **update, **STRICT}, API_STRICT_ERROR)
    assert db.testColl.find_one()["stockUnit"] == 20
    run(db, {"findAndModify": "testColl", **update, "apiVersion": "1"})
    run(db, {"findandmodify": "testColl", **update, "apiVersion": "1"})
    assert db.testColl.find_one()["stockUnit"] == 40


def test_api_strict_refuses_capped_collections(db):
    assert run(db, {"create": "basicCreate", **STRICT})["ok"] == 1
    assert run(db, {"create": "basicCreateCappedFalse", "capped": False, **STRICT})["ok"] == 1
    command_fails(db, {"create": "withCappedTrue", "capped": True, "size": 1000, **STRICT}, API_STRICT_ERROR)
    command_fails(db, {"create": "withCappedTrueNoSize", "capped": True, **STRICT}, INVALID_OPTIONS)
    assert sorted(db.list_collection_names()) == ["basicCreate", "basicCreateCappedFalse"]


# --------------------------------------------------------------------------------------------------
# api_version_unstable_indexes.js
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def articles(db):
    db.articles.insert_many([
        {"_id": 1, "subject": "coffee", "author": "xyz", "views": 50},
        {"_id": 2, "subject": "Coffee Shopping", "author": "efg", "views": 5},
        {"_id": 3, "subject": "Baking a cake", "author": "abc", "views": 90},
        {"_id": 4, "subject": "baking", "author": "xyz", "views": 100},
    ])
    db.articles.create_index([("subject", "text")])
    db.articles.create_index("views", sparse=True)
    return db.articles


def test_indexes_outside_api_version_1_work_without_api_strict(db, articles):
    assert sorted(d["_id"] for d in articles.find({"$text": {"$search": "coffee"}})) == [1, 2]
    reply = run(db, {"find": "articles", "filter": {"views": 50}, "hint": {"views": 1}})
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1]


def test_api_strict_plans_without_text_index(db, articles):
    command_fails(db, {"explain": {"find": "articles", "filter": {"$text": {"$search": "coffee"}}}, **STRICT},
                  NO_QUERY_EXECUTION_PLANS)


def test_api_strict_refuses_hint_of_sparse_index(db, articles):
    command_fails(db, {"find": "articles", "filter": {"views": 50}, "hint": {"views": 1}, **STRICT}, BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# apitest_db_profile_level.js, profile_no_such_db.js
# --------------------------------------------------------------------------------------------------


def _profiler_changes(client, db_name: str) -> list[tuple[int, int]]:
    lines = client.admin.command("getLog", "global")["log"]
    found = []
    for line in lines:
        entry = json.loads(line)
        if entry.get("msg") == "Profiler settings changed" and entry["attr"].get("db") == db_name:
            found.append((entry["attr"]["from"]["level"], entry["attr"]["to"]["level"]))
    return found


def test_profile_level_changes_are_logged_with_their_database(client, db):
    assert db.command("profile", -1)["was"] == 0
    assert _profiler_changes(client, db.name) == []  # reading the level logs nothing
    for level, was in ((0, 0), (1, 0), (2, 1), (0, 2)):
        assert db.command("profile", level)["was"] == was
        assert db.command("profile", -1)["was"] == level
    assert _profiler_changes(client, db.name) == [(0, 0), (0, 1), (1, 2), (2, 0)]


@pytest.mark.parametrize("level", [0, 1, 2])
def test_dropping_a_database_resets_its_profiling_level(client, level):
    name = "profile_no_such_db"
    client.drop_database(name)
    target = client[name]
    assert target.command("profile", -1)["was"] == 0
    assert name not in client.list_database_names()  # reading the level creates nothing
    assert target.command("profile", level)["was"] == 0
    assert name in client.list_database_names() or level == 0
    assert target.command("profile", -1)["was"] == level
    client.drop_database(name)
    assert target.command("profile", -1)["was"] == 0
    assert name not in client.list_database_names()


# --------------------------------------------------------------------------------------------------
# connection_status.js
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("user", ["someone", "someone else"])
def test_connection_status_reports_the_authenticated_user(auth_server, root_client, user):
    name = "connection_status"
    root_client[name].command("dropAllUsersFromDatabase")
    root_client[name].command("createUser", user, pwd="weak password", roles=[{"role": "root", "db": "admin"}])
    try:
        with auth_server.client(username=user, password="weak password", authSource=name) as mongo:
            for show in (True, False):
                status = mongo[name].command("connectionStatus", showPrivileges=show)
                info = status["authInfo"]
                assert [u for u in info["authenticatedUsers"] if (u["user"], u["db"]) == (user, name)] == [
                    {"user": user, "db": name}]
                assert {"role": "root", "db": "admin"} in info["authenticatedUserRoles"]
                if show:
                    assert info["authenticatedUserPrivileges"]
                    for privilege in info["authenticatedUserPrivileges"]:
                        assert isinstance(privilege["resource"], dict)
                        assert all(isinstance(a, str) for a in privilege["actions"])
                else:
                    assert "authenticatedUserPrivileges" not in info
    finally:
        root_client[name].command("dropAllUsersFromDatabase")


# --------------------------------------------------------------------------------------------------
# dbadmin.js, hello_response_validation.js, client_metadata_ismaster.js
# --------------------------------------------------------------------------------------------------


def test_list_databases_hello_and_uptime(client, db):
    db.dbadmin.insert_many([{"x": 1}, {"x": 1}])
    full = client.admin.command("listDatabases")
    assert full["databases"] and "totalSize" in full
    names_only = client.admin.command({"listDatabases": 1, "nameOnly": True})
    assert names_only["databases"] and "totalSize" not in names_only
    assert all(list(d) == ["name"] for d in names_only["databases"])
    hello = client.admin.command("hello")
    assert hello["isWritablePrimary"] is True and hello["localTime"]
    before = db.command("serverStatus")["uptimeMillis"]
    time.sleep(0.1)
    assert db.command("serverStatus")["uptimeMillis"] >= before


@pytest.mark.parametrize("name", ["hello", "ismaster", "isMaster"])
@pytest.mark.parametrize("extra", [{}, {"unknownField": 1}], ids=["plain", "unknown_field"])
def test_hello_and_its_aliases_answer_a_standalone(db, name, extra):
    reply = run(db, {name: 1, **extra})
    for field in ("maxBsonObjectSize", "maxMessageSizeBytes", "maxWriteBatchSize"):
        assert isinstance(reply[field], int) and reply[field] > 0
    assert reply["isWritablePrimary" if name == "hello" else "ismaster"] is True
    assert reply["localTime"] and reply["connectionId"]
    unwanted = {"setName", "setVersion", "secondary", "hosts", "passives", "arbiters", "primary", "arbiterOnly",
                "passive", "slaveDelay", "secondaryDelaySecs", "hidden", "tags", "buildIndexes", "me"}
    assert not unwanted & set(reply)


@pytest.mark.parametrize("name", ["isMaster", "hello"])
def test_client_metadata_only_in_the_first_hello(db, name):
    command_fails(db, {name: 1, "client": {"application": "foobar"}}, CLIENT_METADATA_CANNOT_BE_MUTATED)


# --------------------------------------------------------------------------------------------------
# automation_setparameter.js
# --------------------------------------------------------------------------------------------------


def test_automation_service_descriptor_is_echoed_by_hello(client):
    admin = client.admin
    original = admin.command("hello").get("automationServiceDescriptor", "")
    command_fails(admin, {"setParameter": 1, "automationServiceDescriptor": 0}, TYPE_MISMATCH)
    command_fails(admin, {"setParameter": 1, "automationServiceDescriptor": "12345678" * 8 + "X"}, OVERFLOW)
    try:
        reply = admin.command({"setParameter": 1, "automationServiceDescriptor": "some_service"})
        # (an empty descriptor appends nothing: no ``was``, as the jstest allows for an unset original)
        assert reply.get("was", "") == original and ("was" in reply) == bool(original)
        assert admin.command("hello")["automationServiceDescriptor"] == "some_service"
        assert admin.command("isMaster")["automationServiceDescriptor"] == "some_service"
        assert admin.command("getParameter", 1, automationServiceDescriptor=1)["automationServiceDescriptor"] == "some_service"
        admin.command({"setParameter": 1, "automationServiceDescriptor": ""})
        assert "automationServiceDescriptor" not in admin.command("hello")
        assert admin.command("getParameter", 1, automationServiceDescriptor=1) == {"ok": 1.0}
    finally:
        admin.command({"setParameter": 1, "automationServiceDescriptor": original})


# --------------------------------------------------------------------------------------------------
# set_param1.js
# --------------------------------------------------------------------------------------------------


def _all_parameters(admin) -> dict:
    return {k: v for k, v in admin.command("getParameter", "*").items()
            if not k.startswith("failpoint.") and k not in ("operationTime", "$clusterTime")}


def test_log_level_round_trips_through_set_parameter(client):
    admin = client.admin
    old = _all_parameters(admin)
    first = admin.command({"setParameter": 1, "logLevel": 5})
    second = admin.command({"setParameter": 1, "logLevel": old["logLevel"]})
    assert (first["was"], second["was"]) == (old["logLevel"], 5)
    assert _all_parameters(admin) == old


@pytest.mark.parametrize("value", [float("nan"), 2**53 + 1, -(2**53) - 1, float(2**53 + 2), 2**31, -1],
                         ids=["nan", "max_safe_plus_1", "min_safe_minus_1", "double_2_53", "int32_overflow", "negative"])
def test_log_level_refuses_values_outside_int_range(client, value):
    admin = client.admin
    command_fails(admin, {"setParameter": 1, "logLevel": value}, BAD_VALUE)
    assert admin.command("getParameter", 1, logLevel=1)["logLevel"] == 0


@pytest.fixture
def verbosity(client):
    admin = client.admin
    old = admin.command("getParameter", 1, logComponentVerbosity=1)["logComponentVerbosity"]
    assert old["verbosity"] == admin.command("getParameter", 1, logLevel=1)["logLevel"]
    assert "verbosity" in old["storage"]["journal"]
    yield admin
    admin.command({"setParameter": 1, "logComponentVerbosity": old})
    admin.command({"setParameter": 1, "logLevel": 0})


BAD_VERBOSITY = [
    "not an object",
    {"storage": {"journal": {"verbosity": "not a number"}}},
    {"storage": {"journal": {"verbosity": float("nan")}}},
    {"storage": {"journal": {"verbosity": 2**53 + 1}}},
    {"storage": {"journal": {"verbosity": -(2**53) - 1}}},
    {"storage": {"journal": {"verbosity": float(2**40)}}},
    {"NoSuchComponent": {"verbosity": 2}},
]


@pytest.mark.parametrize("value", BAD_VERBOSITY, ids=range(len(BAD_VERBOSITY)))
def test_component_verbosity_refuses_bad_values(verbosity, value):
    error = command_fails(verbosity, {"setParameter": 1, "logComponentVerbosity": value}, BAD_VALUE)
    assert "convert" not in error.details["errmsg"]  # mongod's message, not Python's


def _components(admin) -> dict:
    return admin.command("getParameter", 1, logComponentVerbosity=1)["logComponentVerbosity"]


def test_component_verbosity_sets_several_levels_at_once(verbosity):
    verbosity.command({"setParameter": 1, "logComponentVerbosity": {
        "verbosity": 2, "accessControl": {"verbosity": 0}, "storage": {"verbosity": 3, "journal": {"verbosity": 5}}}})
    result = _components(verbosity)
    assert (result["verbosity"], result["accessControl"]["verbosity"], result["storage"]["verbosity"],
            result["storage"]["journal"]["verbosity"]) == (2, 0, 3, 5)
    # an unknown component among them: nothing changes
    command_fails(verbosity, {"setParameter": 1, "logComponentVerbosity": {
        "verbosity": 6, "accessControl": {"verbosity": 5}, "storage": {"verbosity": 4, "journal": {"verbosity": 6}},
        "NoSuchComponent": {"verbosity": 2}, "extraField": 123}})
    assert _components(verbosity) == result
    # -1 clears: the default goes back to 0, a component inherits again
    verbosity.command({"setParameter": 1, "logComponentVerbosity": {"verbosity": -1, "storage": {"journal": {"verbosity": -1}}}})
    result = _components(verbosity)
    assert (result["verbosity"], result["accessControl"]["verbosity"], result["storage"]["verbosity"],
            result["storage"]["journal"]["verbosity"]) == (0, 0, 3, -1)
    # a bare number for a component
    verbosity.command({"setParameter": 1, "logComponentVerbosity": {"accessControl": 5}})
    assert _components(verbosity)["accessControl"]["verbosity"] == 5


def test_redact_encrypted_fields_parameter(client):
    admin = client.admin
    old = _all_parameters(admin)
    assert "redactEncryptedFields" in old
    try:
        admin.command({"setParameter": 1, "redactEncryptedFields": False})
        assert admin.command("getParameter", 1, redactEncryptedFields=1)["redactEncryptedFields"] is False
    finally:
        admin.command({"setParameter": 1, "redactEncryptedFields": old["redactEncryptedFields"]})


# --------------------------------------------------------------------------------------------------
# getlog1.js
# --------------------------------------------------------------------------------------------------


def test_get_log(client):
    names = client.admin.command("getLog", "*")["names"]
    assert "global" in names and "butty" not in names
    assert client.admin.command("getLog", "global")["log"]
    command_fails(client.admin, {"getLog": 21}, TYPE_MISMATCH)


# --------------------------------------------------------------------------------------------------
# fsync/fsync.js
# --------------------------------------------------------------------------------------------------


def _ops(admin, flt: dict) -> list:
    return list(admin.aggregate([{"$currentOp": {"allUsers": True, "idleConnections": True}}, {"$match": flt}]))


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_fsync_lock_holds_writes_until_unlocked(client):
    admin = client.admin
    target = client.fsyncLockTestDB
    client.drop_database(target.name)
    try:
        target.coll.insert_one({"x": 1})
        command_fails(target, {"fsync": 1, "lock": 1})  # only against admin
        assert admin.command({"fsync": 1, "lock": True})["lockCount"] == 1
        assert admin.command("currentOp")["fsyncLock"] is True
        writer = threading.Thread(target=lambda: target.coll.insert_one({"x": 1}))
        writer.start()
        _wait_for(lambda: len(_ops(admin, {"op": "insert", "ns": "fsyncLockTestDB.coll", "waitingForLock": True})) == 1)
        assert target.coll.count_documents({}) == 1  # reads go on, the write waits
        assert admin.command("fsyncUnlock")["lockCount"] == 0
        assert "fsyncLock" not in admin.command("currentOp")
        writer.join(10)
        target.coll.insert_one({"x": 2})
        assert target.coll.count_documents({}) == 3
        # nested locks: writes wait for the last unlock
        assert admin.command({"fsync": 1, "lock": True})["lockCount"] == 1
        assert admin.command({"fsync": 1, "lock": True})["lockCount"] == 2
        writers = [threading.Thread(target=lambda: target.multipleLock.insert_one({"x": 1})) for _ in range(2)]
        for thread in writers:
            thread.start()
        _wait_for(lambda: len(_ops(admin, {"op": "insert", "ns": "fsyncLockTestDB.multipleLock",
                                           "waitingForLock": True})) == 2)
        assert admin.command("fsyncUnlock")["lockCount"] == 1
        time.sleep(0.3)
        assert target.multipleLock.count_documents({}) == 0
        assert admin.command("fsyncUnlock")["lockCount"] == 0
        for thread in writers:
            thread.join(10)
        assert target.multipleLock.count_documents({}) == 2
    finally:
        while admin.command("currentOp").get("fsyncLock"):
            admin.command("fsyncUnlock")
        client.drop_database(target.name)


@pytest.mark.parametrize("args, code", [
    pytest.param({"unlock": True}, IDL_UNKNOWN_FIELD, id="unlock_true"),
    pytest.param({"unlock": False}, IDL_UNKNOWN_FIELD, id="unlock_false"),
    pytest.param({"lock": "not_valid_boolean"}, TYPE_MISMATCH, id="lock_string"),
    pytest.param({"lock": True, "forBackup": "yes"}, TYPE_MISMATCH, id="for_backup_string"),
    pytest.param({"allowFsyncFailure": [True]}, TYPE_MISMATCH, id="allow_failure_array"),
    pytest.param({"async": True}, IDL_UNKNOWN_FIELD, id="async"),
])
def test_fsync_arguments_are_strict(client, args, code):
    try:
        command_fails(client.admin, {"fsync": 1, **args}, code)
    finally:
        while client.admin.command("currentOp").get("fsyncLock"):
            client.admin.command("fsyncUnlock")


# --------------------------------------------------------------------------------------------------
# compact_keeps_indexes.js, list_all_local_sessions.js
# --------------------------------------------------------------------------------------------------


def test_compact_keeps_indexes(db):
    db.compact_keeps_indexes.insert_one({"_id": 1, "x": 1})
    db.compact_keeps_indexes.create_index("x")
    assert db.command({"compact": "compact_keeps_indexes", "force": True})["ok"] == 1
    for _ in range(3):
        db.command("compact", "compact_keeps_indexes")
    assert len(list(db.compact_keeps_indexes.list_indexes())) == 2
    assert db.compact_keeps_indexes.count_documents({"_id": 1}) == 1
    assert db.compact_keeps_indexes.count_documents({"x": 1}) == 1
    assert len(list(db.compact_keeps_indexes.find({"x": 1}).hint("x_1"))) == 1


def test_list_local_sessions_of_all_users(client, db):
    session_id = db.command("startSession")["id"]["id"]
    sessions = list(client.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}]))
    assert len(sessions) >= 1
    assert [s["_id"]["id"] for s in sessions].count(session_id) == 1


# --------------------------------------------------------------------------------------------------
# filemd5.js, validate_db_metadata_command.js
# --------------------------------------------------------------------------------------------------


@pytest.mark.commands("filemd5")
def test_filemd5(db):
    db.fs.chunks.insert_one({"files_id": 1, "n": 0, "data": Binary(b"test")})
    command_fails(db, {"filemd5": 1, "root": "fs"}, NO_QUERY_EXECUTION_PLANS)  # needs the {files_id, n} index
    db.fs.chunks.create_index([("files_id", 1), ("n", 1)])
    assert db.command({"filemd5": 1, "root": "fs"})["md5"] == "098f6bcd4621d373cade4e832627b4f6"
    command_fails(db, {"filemd5": 1, "root": "fs", "partialOk": 1, "md5state": 5}, 50847)
    db.fs.chunks.insert_one({"files_id": 2, "n": 0})
    command_fails(db, {"filemd5": 2, "root": "fs"}, 50848)
    db.fs.chunks.update_one({"files_id": 2, "n": 0}, {"$set": {"data": 5}})
    command_fails(db, {"filemd5": 2, "root": "fs"}, 50849)


@pytest.mark.commands("filemd5")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(st.binary(max_size=300), max_size=5), min_size=1, max_size=3),
       split=st.integers(min_value=0, max_value=5), order=st.randoms(use_true_random=False))
def test_filemd5_digests_each_file_in_n_order(db, files, split, order):
    """Any files' chunks, inserted in any order: each file's md5 over its data in ``n`` order; with
    ``partialOk`` (mongos) the state carried from one chunks collection into another (from ``startAt``)
    gives the same md5. ``root`` names the collection; a chunk missing in the middle is 10040."""
    import hashlib

    for root in ("fs", "a", "b"):
        db[f"{root}.chunks"].drop()
        db[f"{root}.chunks"].create_index([("files_id", 1), ("n", 1)])
    chunks = [{"files_id": f, "n": n, "data": Binary(data)} for f, parts in enumerate(files)
              for n, data in enumerate(parts)]
    order.shuffle(chunks)
    if chunks:
        db["fs.chunks"].insert_many(chunks)
    for f, parts in enumerate(files):
        reply = db.command({"filemd5": f, "root": "fs"})
        assert (reply["numChunks"], reply["md5"]) == (len(parts), hashlib.md5(b"".join(parts)).hexdigest())
        cut = min(split, len(parts))
        for root, part in (("a", parts[:cut]), ("b", parts[cut:])):
            if part:
                base = 0 if root == "a" else cut
                db[f"{root}.chunks"].insert_many([{"files_id": f, "n": base + i, "data": Binary(d)}
                                                  for i, d in enumerate(part)])
        first = db.command({"filemd5": f, "root": "a", "partialOk": True})
        assert first["numChunks"] == cut and list(first) == ["md5state", "numChunks", "md5", "ok"]
        second = db.command({"filemd5": f, "root": "b", "partialOk": True, "md5state": first["md5state"],
                             "startAt": cut})
        assert (second["numChunks"], second["md5"]) == (reply["numChunks"], reply["md5"])
    if len(files[0]) >= 2:
        db["fs.chunks"].delete_one({"files_id": 0, "n": 0})
        command_fails(db, {"filemd5": 0}, 10040)  # n 1 where 0 was expected
        assert db.command({"filemd5": 0, "partialOk": 1})["numChunks"] == 0  # a gap ends a partial read


@pytest.mark.commands("filemd5")
def test_filemd5_arguments(db):
    db.fs.chunks.create_index([("files_id", 1), ("n", 1)])
    assert db.command({"filemd5": 1})["numChunks"] == 0  # no chunks: md5 of nothing
    assert db.command({"filemd5": 1, "root": "none"})["md5"] == "d41d8cd98f00b204e9800998ecf8427e"  # no collection
    command_fails(db, {"filemd5": 1, "root": 5}, 73)
    command_fails(db, {"filemd5": 1, "partialOk": True, "md5state": Binary(b"x" * 87)}, 16247)
    db.fs.chunks.insert_one({"files_id": 3, "n": 0, "data": Binary(b"\x04\x00\x00\x00test", 2)})
    assert db.command({"filemd5": 3})["md5"] == "098f6bcd4621d373cade4e832627b4f6"  # subtype 2: its length goes


@pytest.mark.commands("validateDBMetadata")
def test_validate_db_metadata(db):
    command_fails(db, {"validateDBMetadata": 1}, 40414)  # apiParameters is required
    db.coll1.create_index([("p", "text")])
    reply = db.command({"validateDBMetadata": 1, "db": db.name, "collection": "coll1",
                        "apiParameters": {"version": "1", "strict": True}})
    assert [e["code"] for e in reply["apiVersionErrors"]] == [API_STRICT_ERROR]
    reply = db.command({"validateDBMetadata": 1, "db": db.name, "collection": "coll2",
                        "apiParameters": {"version": "1", "strict": True}})
    assert reply["apiVersionErrors"] == []


V1_STRICT = {"version": "1", "strict": True}


@pytest.mark.commands("validateDBMetadata")
@pytest.mark.parametrize("args, code", [
    ({"apiParameters": {"strict": True}}, 40414),  # version is required
    ({"apiParameters": None}, 40414),  # a null is an absent field
    ({"apiParameters": 1}, TYPE_MISMATCH),
    ({"apiParameters": {"version": 1}}, TYPE_MISMATCH),
    ({"apiParameters": {"version": "1", "strict": 1}}, TYPE_MISMATCH),
    ({"apiParameters": {"version": "1", "deprecationErrors": "yes"}}, TYPE_MISMATCH),
    ({"apiParameters": {"version": "1", "other": True}}, IDL_UNKNOWN_FIELD),
    ({"apiParameters": V1_STRICT, "db": 5}, TYPE_MISMATCH),
    ({"apiParameters": V1_STRICT, "collection": ["x"]}, TYPE_MISMATCH),
    ({"apiParameters": V1_STRICT, "other": 1}, IDL_UNKNOWN_FIELD),
])
def test_validate_db_metadata_parses_like_its_idl(db, args, code):
    command_fails(db, {"validateDBMetadata": 1, **args}, code)


@pytest.mark.commands("validateDBMetadata")
def test_validate_db_metadata_reports_indexes_and_views_outside_api_v1(db):
    db.plain.create_index("a")
    db.sparse.create_index("b", sparse=True)
    db.texts.create_index([("t", "text")])
    db.command({"create": "stable_view", "viewOn": "plain", "pipeline": [{"$match": {"a": 1}}]})
    db.command({"create": "unstable_view", "viewOn": "plain",
                "pipeline": [{"$lookup": {"from": "x", "as": "y", "pipeline": [{"$indexStats": {}}]}}]})
    db.command({"create": "series", "timeseries": {"timeField": "t"}})

    def errors(**args):
        reply = db.command({"validateDBMetadata": 1, **args})
        assert reply["ok"] == 1 and "hasMoreErrors" not in reply
        return reply["apiVersionErrors"]

    found = errors(db=db.name, apiParameters=V1_STRICT)
    assert all(e["code"] == API_STRICT_ERROR and e["codeName"] == "APIStrictError" for e in found)
    assert {(e["ns"], e["errmsg"]) for e in found} == {
        (f"{db.name}.sparse", "The index with name b_1 is not allowed in API version 1."),
        (f"{db.name}.texts", "The index with name t_text is not allowed in API version 1."),
        (f"{db.name}.unstable_view", "$indexStats is not allowed with 'apiStrict: true' in API Version 1"),
    }
    assert found[0]["ns"] == f"{db.name}.unstable_view"  # views first
    assert [e["ns"] for e in errors(db=db.name, collection="unstable_view", apiParameters=V1_STRICT)] == [
        f"{db.name}.unstable_view"]
    # all databases: this one's errors among them
    assert {(e["ns"], e["errmsg"]) for e in found} <= {(e["ns"], e["errmsg"]) for e in errors(apiParameters=V1_STRICT)}
    # nothing outside strict API Version 1, nor in a missing database or collection
    assert errors(db=db.name, apiParameters={"version": "1"}) == []
    assert errors(db=db.name, apiParameters={"version": "2", "strict": True}) == []
    assert errors(db=db.name, collection=None, apiParameters={"version": "1", "strict": False}) == []
    assert errors(db="validate_db_metadata_none", apiParameters=V1_STRICT) == []
    assert errors(db=db.name, collection="missing", apiParameters=V1_STRICT) == []


@pytest.mark.commands("filemd5", "features", "validateDBMetadata", "testDeprecation")
def test_new_admin_commands_under_auth(auth_server, root_client):
    """filemd5 needs find on <root>.chunks, features' oidReset the cluster's oidReset, validateDBMetadata
    validate on its db (or on every normal resource); each refused with mongod's own message."""
    mydb = root_client.new_cmds_auth
    mydb.command("dropAllUsersFromDatabase")
    mydb.command("createUser", "reader", pwd="pw", roles=["read"])
    try:
        with auth_server.client(username="reader", password="pw", authSource=mydb.name) as mongo:
            db = mongo[mydb.name]
            assert db.command({"filemd5": 1})["numChunks"] == 0  # (no fs.chunks collection)
            error = command_fails(mongo.other_db, {"filemd5": 1}, 13)
            assert error.details["errmsg"] == "unauthorized"
            assert "oidMachine" in db.command("features")
            error = command_fails(db, {"features": 1, "oidReset": True}, 13)
            assert error.details["errmsg"] == "Not authorized to reset machine identifier"
            error = command_fails(db, {"validateDBMetadata": 1, "db": "x", "apiParameters": V1_STRICT}, 13)
            assert error.details["errmsg"] == ("Not authorized to run validateDBMetadata command on resource: "
                                               "'<database x>'")
            error = command_fails(db, {"validateDBMetadata": 1, "apiParameters": V1_STRICT}, 13)
            assert error.details["errmsg"].endswith("'<all normal resources>'")
            assert db.command({"testDeprecation": 1})["ok"] == 1
        assert root_client.admin.command({"validateDBMetadata": 1, "apiParameters": V1_STRICT})["ok"] == 1
    finally:
        mydb.command("dropAllUsersFromDatabase")


@pytest.mark.commands("features")
def test_features_oid_reset_changes_the_machine_bytes_of_new_object_ids(db):
    """objid5.js's features: oidMachine is the nonce (its first 4 bytes, little-endian) of the ObjectIds the server
    makes; oidReset (a safeBool) gives new ones. Its arguments are strict (40415, 14)."""
    def machine_bytes() -> bytes:
        db.command({"insert": "features_oids", "documents": [{"x": 1}]})  # (insert_one would add an _id)
        doc = db.features_oids.find_one_and_delete({"x": 1})  # _id made by the server (the driver sent none)
        return doc["_id"].binary[4:8]

    reply = db.command("features")
    assert isinstance(reply["oidMachine"], int) and "oidMachineOld" not in reply
    assert machine_bytes() == reply["oidMachine"].to_bytes(4, "little")
    reset = db.command({"features": 1, "oidReset": 1.0})
    assert reset["oidMachineOld"] == reply["oidMachine"]
    assert machine_bytes() == reset["oidMachine"].to_bytes(4, "little")
    assert "oidMachineOld" not in db.command({"features": 1, "oidReset": False})
    command_fails(db, {"features": 1, "oidReset": "yes"}, TYPE_MISMATCH)
    command_fails(db, {"features": 1, "other": 1}, IDL_UNKNOWN_FIELD)


# --------------------------------------------------------------------------------------------------
# comment_field.js (the profiler half)
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def profiled(db):
    db.coll.insert_many([{"x": 1, "_id": 1}, {"x": 1, "_id": 2}])
    yield db
    db.command("profile", 0)


def _restart_profiler(db) -> None:
    db.command("profile", 0)
    db.system.profile.drop()
    db.command("profile", 2)


def _entries_with_comment(db, comment: Any) -> list:
    return list(db.system.profile.find({"command.comment": comment}))


@pytest.mark.parametrize("command", [
    {"find": "coll", "filter": {}},
    {"insert": "coll", "documents": [{"x": 0.5}, {"x": -0.5}], "ordered": False},
    {"aggregate": "coll", "pipeline": [], "cursor": {"batchSize": 1}},
    {"aggregate": "coll", "pipeline": [], "explain": True},
], ids=["find", "insert", "aggregate", "aggregate_explain"])
def test_comment_reaches_the_profiler(profiled, command):
    comment = {"testName": "comment_field", "commentField": "comment_" + next(iter(command))}
    _restart_profiler(profiled)
    profiled.command({**command, "comment": comment})
    assert len(_entries_with_comment(profiled, comment)) == 1


def test_getmore_inherits_or_overrides_the_comment(profiled):
    comment = [{"name": "agg_comment"}]
    cursor = profiled.command({"aggregate": "coll", "pipeline": [], "comment": comment, "cursor": {"batchSize": 0}})["cursor"]["id"]
    _restart_profiler(profiled)
    profiled.command({"getMore": cursor, "collection": "coll", "batchSize": 1})
    entries = _entries_with_comment(profiled, comment)
    assert [e["op"] for e in entries] == ["getmore"]
    own = {"testName": "comment_field", "commentField": "comment_getMore"}
    _restart_profiler(profiled)
    profiled.command({"getMore": cursor, "collection": "coll", "batchSize": 1, "comment": own})
    assert [e["op"] for e in _entries_with_comment(profiled, own)] == ["getmore"]


def test_comment_inside_explain_reaches_the_profiler(profiled):
    inner = {"name": "innerComment_aggregation"}
    _restart_profiler(profiled)
    profiled.command({"explain": {"aggregate": "coll", "pipeline": [], "cursor": {}, "comment": inner}})
    assert len(_entries_with_comment(profiled, inner)) == 1
    outer = {"testName": "comment_field", "commentField": "comment_explain"}
    _restart_profiler(profiled)
    profiled.command({"explain": {"aggregate": "coll", "pipeline": [], "cursor": {}, "comment": inner}, "comment": outer})
    assert len(_entries_with_comment(profiled, outer)) == 1


# --------------------------------------------------------------------------------------------------
# max_doc_size.js
# --------------------------------------------------------------------------------------------------


def test_documents_at_the_size_limit_are_written_and_read(client, db):
    max_size = client.admin.command("hello")["maxBsonObjectSize"]
    overhead = len(bson.encode({"_id": ObjectId(), "x": ""}))
    max_str = "a" * (max_size - overhead)
    coll = db.max_doc_size
    assert db.command({"insert": coll.name, "documents": [{"_id": ObjectId(), "x": max_str}]})["n"] == 1
    assert coll.count_documents({}) == 1
    coll.drop()
    oid = ObjectId()
    db.command({"update": coll.name, "ordered": True, "updates": [{"q": {"_id": oid}, "u": {"_id": oid, "x": max_str},
                                                                   "upsert": True}]})
    assert coll.count_documents({}) == 1
    coll.drop()
    coll.insert_one({"_id": oid})
    db.command({"update": coll.name, "ordered": True, "updates": [{"q": {"_id": oid}, "u": {"$set": {"x": max_str}}}]})
    assert coll.count_documents({}) == 1


def _write_error_code(db, cmd: dict) -> int | None:
    try:
        errors = db.command(cmd).get("writeErrors") or []
    except OperationFailure as exc:
        return exc.code
    return errors[0]["code"] if errors else None


@pytest.mark.parametrize("write, codes", [
    pytest.param("insert", (BAD_VALUE,), id="insert"),
    pytest.param("replacement_upsert", (17420,), id="replacement_upsert"),
    pytest.param("set", (17419, 8375908), id="set"),
])
def test_documents_over_the_size_limit_are_refused(client, db, write, codes):
    max_size = client.admin.command("hello")["maxBsonObjectSize"]
    overhead = len(bson.encode({"_id": ObjectId(), "x": ""}))
    too_big = "a" * (max_size - overhead + 1)
    coll = db.max_doc_size
    oid = ObjectId()
    if write == "insert":
        cmd: dict = {"insert": coll.name, "documents": [{"_id": ObjectId(), "x": too_big}]}
    elif write == "replacement_upsert":
        cmd = {"update": coll.name, "ordered": True,
               "updates": [{"q": {"_id": oid}, "u": {"_id": oid, "x": too_big}, "upsert": True}]}
    else:
        coll.insert_one({"_id": oid})
        cmd = {"update": coll.name, "ordered": True, "updates": [{"q": {"_id": oid}, "u": {"$set": {"x": too_big}}}]}
    assert _write_error_code(db, cmd) in codes
    assert list(coll.find()) == ([{"_id": oid}] if write == "set" else [])


MAX_USER_BSON = 16 * 1024 * 1024
# every write kind, as (collection setup, command, code mongod answers over the limit): an insert is
# fixDocumentForInsert's 2 BadValue, an update's result UpdateStage's 17419 and an upserted document
# UpsertStage's 17420, whatever the update's kind, through update and findAndModify alike
_SIZE_WRITES = {
    "insert": (False, lambda c, oid, s: {"insert": c, "documents": [{"_id": oid, "x": s}]}, BAD_VALUE),
    "update_operators": (True, lambda c, oid, s: {"update": c, "updates": [{"q": {"_id": oid},
                                                                             "u": {"$set": {"x": s}}}]}, 17419),
    "update_replacement": (True, lambda c, oid, s: {"update": c, "updates": [{"q": {"_id": oid}, "u": {"x": s}}]},
                           17419),
    "update_pipeline": (True, lambda c, oid, s: {"update": c, "updates": [{"q": {"_id": oid},
                                                                            "u": [{"$set": {"x": s}}]}]}, 17419),
    "upsert_operators": (False, lambda c, oid, s: {"update": c, "updates": [{"q": {"_id": oid}, "u": {"$set": {"x": s}},
                                                                             "upsert": True}]}, 17420),
    "upsert_replacement": (False, lambda c, oid, s: {"update": c, "updates": [{"q": {"_id": oid},
                                                                               "u": {"_id": oid, "x": s},
                                                                               "upsert": True}]}, 17420),
    "upsert_pipeline": (False, lambda c, oid, s: {"update": c, "updates": [{"q": {"_id": oid},
                                                                            "u": [{"$set": {"x": s}}],
                                                                            "upsert": True}]}, 17420),
    # the upserted document's _id is generated: counted in its size, as mongod adds it before checking
    "upsert_generated_id": (False, lambda c, oid, s: {"update": c, "updates": [{"q": {}, "u": {"$set": {"x": s}},
                                                                                "upsert": True}]}, 17420),
    "findAndModify_operators": (True, lambda c, oid, s: {"findAndModify": c, "query": {"_id": oid},
                                                         "update": {"$set": {"x": s}}}, 17419),
    "findAndModify_replacement": (True, lambda c, oid, s: {"findAndModify": c, "query": {"_id": oid},
                                                           "update": {"x": s}}, 17419),
    "findAndModify_pipeline": (True, lambda c, oid, s: {"findAndModify": c, "query": {"_id": oid},
                                                        "update": [{"$set": {"x": s}}]}, 17419),
    "findAndModify_upsert": (False, lambda c, oid, s: {"findAndModify": c, "query": {"_id": oid},
                                                       "update": {"$set": {"x": s}}, "upsert": True}, 17420),
    "findAndModify_upsert_replacement": (False, lambda c, oid, s: {"findAndModify": c, "query": {"_id": oid},
                                                                   "update": {"x": s}, "upsert": True}, 17420),
}


@pytest.mark.parametrize("excess", [-1, 0, 1], ids=["below", "at", "above"])
@pytest.mark.parametrize("write", sorted(_SIZE_WRITES))
def test_each_write_kind_stores_up_to_16mib_and_refuses_one_byte_more(db, write, excess):
    """The family of max_doc_size.js: a written document of exactly 16 MiB (``_id`` included) is stored,
    one byte more is the write kind's own error (code, codeName and message) and nothing changes."""
    existing, make, code = _SIZE_WRITES[write]
    coll = db.max_doc_size_family
    coll.drop()
    oid = ObjectId()
    if existing:
        coll.insert_one({"_id": oid, "x": ""})
    overhead = len(bson.encode({"_id": oid, "x": ""}))
    before = list(coll.find())
    try:
        reply = db.command(make(coll.name, oid, "a" * (MAX_USER_BSON + excess - overhead)))
        error = (reply.get("writeErrors") or [None])[0]
    except OperationFailure as exc:
        error = exc.details
    if excess <= 0:
        assert error is None and coll.count_documents({}) == 1
        assert len(bson.encode(coll.find_one())) == MAX_USER_BSON + excess
        return
    assert error is not None and error["code"] == code
    messages = {BAD_VALUE: f"object to insert too large. size in bytes: {MAX_USER_BSON + 1}, max size: "
                           f"{MAX_USER_BSON}",
                17419: f"Resulting document after update is larger than {MAX_USER_BSON}",
                17420: f"Document to upsert is larger than {MAX_USER_BSON}"}
    assert error["errmsg"] == messages[code]
    if "codeName" in error:  # a command error; a write error carries no codeName
        assert error["codeName"] == ("BadValue" if code == BAD_VALUE else f"Location{code}")
    assert list(coll.find()) == before


@pytest.mark.parametrize("excess", [-1, 0, 1], ids=["below", "at", "above"])
def test_a_measurement_near_16mib_is_10334_and_buckets_roll_over_below_it(db, excess):
    """Time-series: a measurement whose bucket document (its values in data and again in control
    min/max) would pass 16 MiB is 10334 BSONObjectTooLarge, as mongod when it builds that bucket
    (timeseries_insert_respect_max_bson_size_too_big.js); measurements that each fit but together
    would not open a new bucket instead of failing (timeseries_large_measurements_max_size.js)."""
    db.drop_collection("ts_size")
    db.create_collection("ts_size", timeseries={"timeField": "t", "metaField": "m"})
    t0 = dt.datetime(2024, 1, 1)
    overhead = len(bson.encode({"_id": ObjectId(), "t": t0, "m": 1, "x": ""}))
    big = {"_id": ObjectId(), "t": t0, "m": 1, "x": "a" * (MAX_USER_BSON + excess - overhead)}
    reply = db.command({"insert": "ts_size", "documents": [big]}, check=False)
    assert reply["n"] == 0 and [e["code"] for e in reply["writeErrors"]] == [10334]
    five_mib = [{"_id": i, "t": t0 + dt.timedelta(seconds=i), "m": 1, "x": "b" * (5 * 1024 * 1024)} for i in range(3)]
    assert db.command({"insert": "ts_size", "documents": five_mib})["n"] == 3
    assert db.ts_size.count_documents({}) == 3
    assert db.system.buckets.ts_size.count_documents({}) == 3  # 15 MiB buckets: one measurement each


# --------------------------------------------------------------------------------------------------
# profile1.js, profile_find.js, profile_getmore.js, profile_update.js, profile_delete.js,
# profile_insert.js, profile_count.js, system_profile.js
# --------------------------------------------------------------------------------------------------


def _latest(db, flt: dict | None = None) -> dict:
    entries = list(db.system.profile.find(flt or {}).sort("$natural", -1).limit(1))
    assert entries, flt
    return entries[0]


@pytest.fixture
def profiling(db):
    db.command("profile", 2)
    yield db
    db.command("profile", 0)


def test_profile_refuses_unknown_fields(db):
    command_fails(db, {"profile": 0, "unknown": {}}, IDL_UNKNOWN_FIELD)


def test_profiling_into_a_pre_created_capped_system_profile(db):
    db.create_collection("system.profile", capped=True, size=32 * 1024 * 1024)
    try:
        db.command("profile", 2)
        assert db.command("profile", -1)["was"] == 2
        db.foo.find_one()
        db.foo.find_one()
        assert [e["op"] for e in db.system.profile.find({"ns": f"{db.name}.foo"})] == ["query", "query"]
    finally:
        db.command("profile", 0)


def test_profiling_needs_a_capped_system_profile(db):
    db.create_collection("system.profile")  # not capped: profiling cannot use it
    command_fails(db, {"profile": 2}, 48)
    assert db.command("profile", -1)["was"] == 0
    assert not db.command("collStats", "system.profile").get("capped")
    db.system.profile.drop()
    db.command("profile", 2)  # none: profiling creates it capped
    try:
        assert db.command("collStats", "system.profile")["capped"] is True
    finally:
        db.command("profile", 0)


def test_profiled_update_is_the_statement(profiling):
    profiling.profile1.update_one({"_id": 5}, {"$inc": {"x": 1}})
    entry = _latest(profiling, {"ns": f"{profiling.name}.profile1"})
    assert (entry["op"], entry["command"]) == ("update", {"q": {"_id": 5}, "u": {"$inc": {"x": 1}}, "multi": False,
                                                          "upsert": False})
    profiling.profile1.update_one({"_id": "new value", "a": 4}, {"$inc": {"b": 1}}, upsert=True)
    entry = _latest(profiling, {"op": "update"})
    assert entry["command"] == {"q": {"_id": "new value", "a": 4}, "u": {"$inc": {"b": 1}}, "multi": False,
                                "upsert": True}
    assert (entry["nMatched"], entry["nModified"], entry["nUpserted"]) == (0, 0, 1)
    profiling.profile1.insert_one({"_id": 0, "a": [0]})
    profiling.profile1.update_one({"_id": 0}, {"$set": {"a.$[i]": 1}}, collation={"locale": "fr"},
                                  array_filters=[{"i": 0}])
    entry = _latest(profiling, {"op": "update"})
    assert entry["command"]["collation"] == {"locale": "fr"} and entry["command"]["arrayFilters"] == [{"i": 0}]


def test_profiled_delete_is_the_statement(profiling):
    profiling.test.insert_many([{"a": i, "b": i} for i in range(10)])
    profiling.test.delete_one({"a": {"$gte": 2}, "b": {"$gte": 2}}, collation={"locale": "fr"})
    entry = _latest(profiling, {"op": "remove"})
    assert entry["ns"] == f"{profiling.name}.test" and entry["ndeleted"] == 1
    assert entry["command"]["collation"] == {"locale": "fr"} and entry["command"]["limit"] == 1
    profiling.test.delete_many({"a": {"$gte": 2}})
    assert _latest(profiling, {"op": "remove"})["ndeleted"] == 7


def test_each_write_statement_is_profiled(profiling):
    profiling.command({"update": "test", "ordered": True, "updates": [
        {"q": {"_id": f"new value {i}", "a": i}, "u": {"$inc": {"b": 1}}, "upsert": True} for i in (4, 5, 6)]})
    entries = list(profiling.system.profile.find({"op": "update"}).sort("$natural", -1).limit(3))
    assert [e["command"]["q"]["a"] for e in entries] == [6, 5, 4]
    assert all(e["nUpserted"] == 1 for e in entries)


def test_profiled_writes_report_what_they_examined(profiling):
    profiling.test.insert_many([{"a": i} for i in range(10)])
    profiling.test.create_index("a")
    profiling.test.update_one({"a": {"$gte": 2}}, {"$set": {"c": 1}, "$inc": {"a": -10}})
    entry = _latest(profiling, {"op": "update"})
    assert (entry.get("keysExamined"), entry.get("docsExamined"), entry.get("keysInserted"), entry.get("keysDeleted"),
            entry.get("planSummary")) == (1, 1, 1, 1, "IXSCAN { a: 1 }")


def test_profiled_insert_reports_keys_inserted(profiling):
    profiling.test.insert_one({"_id": 1})
    assert _latest(profiling, {"op": "insert"}).get("keysInserted") == 1


def test_profiled_count_reports_its_plan(profiling):
    profiling.test.insert_many([{"a": i} for i in range(10)])
    profiling.command("count", "test", query={"a": {"$gte": 5}})
    entry = _latest(profiling, {"command.count": "test"})
    assert entry["command"]["query"] == {"a": {"$gte": 5}} and entry.get("docsExamined") == 10


def test_profiled_insert_keeps_the_command(profiling):
    profiling.test.insert_one({"_id": 1})
    entry = _latest(profiling, {"op": "insert"})
    assert (entry["ns"], entry["ninserted"], entry["command"]["ordered"], entry["protocol"]) == (
        f"{profiling.name}.test", 1, True, "op_msg")
    assert {"responseLength", "numYield", "locks", "millis", "ts", "client"} <= set(entry)
    profiling.test.drop()
    profiling.command({"insert": "test", "documents": [{"_id": 1}, {"_id": 2}], "ordered": False,
                       "writeConcern": {"w": 1, "wtimeout": 60000}})
    entry = _latest(profiling, {"op": "insert"})
    assert entry["ninserted"] == 2 and entry["command"]["ordered"] is False
    assert entry["command"]["writeConcern"] == {"w": 1, "wtimeout": 60000}


def test_profiled_find(profiling):
    coll = profiling.profile_find
    coll.insert_many([{"a": i, "b": i} for i in range(3)])
    coll.create_index("a", collation={"locale": "fr"})
    assert len(list(coll.find({"a": 1}).collation({"locale": "fr"}).limit(1).batch_size(2))) == 1
    entry = _latest(profiling, {"op": "query"})
    assert (entry["ns"], entry["nreturned"], entry["planSummary"], entry["protocol"]) == (
        coll.full_name, 1, "IXSCAN { a: 1 }", "op_msg")
    assert (entry["command"]["filter"], entry["command"]["limit"], entry["command"]["collation"]) == (
        {"a": 1}, 1, {"locale": "fr"})
    assert entry["cursorExhausted"] is True and "cursorid" not in entry
    assert {"responseLength", "millis", "numYield", "locks"} <= set(entry)
    # an open cursor, a sort no index gives
    coll.drop()
    coll.insert_many([{"a": i, "b": i} for i in range(3)])
    coll.create_index("a")
    cursor = coll.find({"a": {"$gte": 0}}).sort("b", 1).batch_size(1)
    next(cursor)
    entry = _latest(profiling, {"op": "query"})
    assert entry["hasSortStage"] is True and entry["cursorid"] == cursor.cursor_id and "cursorExhausted" not in entry
    cursor.close()
    # query modifiers are in the profiled command
    coll.drop()
    coll.insert_one({"_id": 2})
    for find, field, value in [
        (coll.find().hint([("_id", 1)]), "hint", {"_id": 1}),
        (coll.find().comment("a comment"), "comment", "a comment"),
        (coll.find().max_time_ms(100000), "maxTimeMS", 100000),
        (coll.find().max([("_id", 3)]).hint([("_id", 1)]), "max", {"_id": 3}),
        (coll.find().min([("_id", 0)]).hint([("_id", 1)]), "min", {"_id": 0}),
    ]:
        assert len(list(find)) == 1
        assert _latest(profiling, {"op": "query"})["command"][field] == value, field
    # a big query is truncated, its comment kept
    assert list(coll.find({str(i): "a" * 150 for i in range(501)}).comment("profile_find")) == []
    entry = _latest(profiling, {"op": "query"})
    assert isinstance(entry["command"]["$truncated"], str) and entry["command"]["comment"] == "profile_find"
    assert list(coll.find({"query": "foo"})) == []
    assert _latest(profiling, {"op": "query"})["command"]["filter"] == {"query": "foo"}


def test_profiled_find_batches_count_what_they_examined(profiling):
    coll = profiling.test
    coll.insert_many([{"a": i} for i in range(10)])
    coll.create_index("a")
    cursor = coll.find({"a": {"$gt": 0}}).sort("a", 1).batch_size(2)
    next(cursor)
    first = _latest(profiling, {"op": "query"})
    next(cursor)
    next(cursor)
    more = _latest(profiling, {"op": "getmore"})
    cursor.close()
    assert [(e["keysExamined"], e["docsExamined"]) for e in (first, more)] == [(2, 2), (2, 2)]


def test_profiled_getmore(profiling):
    coll = profiling.test
    coll.insert_many([{"a": i} for i in range(10)])
    coll.create_index("a")
    cursor = coll.find({"a": {"$gt": 0}}).sort("a", 1).batch_size(2)
    next(cursor)
    cursor_id = _latest(profiling, {"op": "query"})["cursorid"]
    next(cursor)
    next(cursor)
    entry = _latest(profiling, {"op": "getmore"})
    cursor.close()
    assert (entry["ns"], entry["cursorid"], entry["nreturned"], entry["planSummary"]) == (
        coll.full_name, cursor_id, 2, "IXSCAN { a: 1 }")
    assert (entry["command"]["getMore"], entry["command"]["collection"], entry["command"]["batchSize"]) == (
        cursor_id, "test", 2)
    assert entry["originatingCommand"]["filter"] == {"a": {"$gt": 0}} and entry["originatingCommand"]["sort"] == {"a": 1}
    assert "cursorExhausted" not in entry and {"responseLength", "numYield", "locks", "millis"} <= set(entry)
    # an in-memory sort is reported on the getMore too
    coll.drop()
    coll.insert_many([{"a": i} for i in range(10)])
    cursor = coll.find({"a": {"$gt": 0}}).sort("a", 1).batch_size(2)
    for _ in range(3):
        next(cursor)
    assert _latest(profiling, {"op": "getmore"})["hasSortStage"] is True
    cursor.close()
    # the exhausting getMore
    coll.drop()
    coll.insert_many([{"a": i} for i in range(3)])
    assert len(list(coll.find().batch_size(2))) == 3
    entry = _latest(profiling, {"op": "getmore"})
    assert entry["cursorid"] != 0 and entry["cursorExhausted"] is True
    # an aggregation's getMore
    coll.drop()
    coll.insert_many([{"a": i} for i in range(20)])
    coll.create_index("a")
    cursor = coll.aggregate([{"$match": {"a": {"$gte": 0}}}], batchSize=0, hint={"a": 1})
    cursor_id = _latest(profiling, {"command.aggregate": "test"})["cursorid"]
    assert cursor_id != 0
    assert len(list(cursor)) == 20
    entry = _latest(profiling, {"op": "getmore"})
    assert (entry["command"]["getMore"], entry["cursorid"], entry["nreturned"], entry["cursorExhausted"]) == (
        cursor_id, cursor_id, 20, True)
    assert entry["originatingCommand"]["pipeline"][0] == {"$match": {"a": {"$gte": 0}}}
    assert entry["originatingCommand"]["hint"] == {"a": 1} and entry["planSummary"] == "IXSCAN { a: 1 }"
    # a big originating command is truncated, its comment kept
    coll.drop()
    big = {str(i): "a" * 150 for i in range(501)}
    coll.insert_many([dict(big) for _ in range(4)])
    assert len(list(coll.find(big).comment("profile_getmore").batch_size(2))) == 4
    entry = _latest(profiling, {"op": "getmore"})
    assert isinstance(entry["originatingCommand"]["$truncated"], str)
    assert entry["originatingCommand"]["comment"] == "profile_getmore"


@pytest.mark.parametrize("write, code", [
    pytest.param({"insert": "system.profile", "documents": [{}]}, 73, id="insert"),
    pytest.param({"update": "system.profile", "updates": [{"q": {}, "u": {"a": 1}}]}, 73, id="update"),
    pytest.param({"update": "system.profile", "updates": [{"q": {}, "u": {"a": 1}, "upsert": True}]}, 73,
                 id="upsert"),
    pytest.param({"delete": "system.profile", "deletes": [{"q": {}, "limit": 0}]}, 73, id="delete"),
    pytest.param({"findAndModify": "system.profile", "query": {}, "update": {"a": 1}}, 73, id="findAndModify"),
    pytest.param({"findAndModify": "system.profile", "query": {}, "remove": True}, 73, id="findAndModify_remove"),
    pytest.param({"aggregate": "foo", "pipeline": [{"$out": "system.profile"}], "cursor": {}}, 17385, id="out"),
])
def test_users_cannot_write_system_profile(db, write, code):
    """userAllowedWriteNS: the profiler alone writes system.profile (73 "cannot write to <ns>"; $out
    into a system collection is 17385), and the collection is left as it was."""
    db.create_collection("system.profile")
    db.foo.insert_one({"val": 1})
    with pytest.raises(OperationFailure) as err:
        db.command(write)
    assert err.value.code == code
    if code == 73:
        assert err.value.details["errmsg"] == f"cannot write to {db.name}.system.profile"
    assert db.system.profile.count_documents({}) == 0


def test_system_profile_cannot_be_converted_renamed_or_dropped_while_on(client, db):
    db.create_collection("system.profile")
    command_fails(db, {"convertToCapped": "system.profile", "size": 1024 * 1024}, BAD_VALUE)
    fails_to_rename = [(f"{db.name}.system.profile", f"{db.name}.foo")]
    for source, target in fails_to_rename:
        command_fails(client.admin, {"renameCollection": source, "to": target})
    db.system.profile.drop()
    db.command("profile", 2)
    try:
        command_fails(db, {"drop": "system.profile"})
    finally:
        db.command("profile", 0)


@pytest.mark.parametrize("name", ["system.profile", "system.js"])
def test_convert_to_capped_refuses_system_collections_with_the_temporary_name(db, name):
    """mongod copies into ``tmp<5 random>.convertToCapped.<name>``, a name userAllowedCreateNS refuses
    when it holds ".system." (2 BadValue "Invalid namespace: <ns>"); the collection stays as it was."""
    db.create_collection(name)
    err = command_fails(db, {"convertToCapped": name, "size": 1024 * 1024}, BAD_VALUE)
    assert re.fullmatch(rf"Invalid namespace: {db.name}\.tmp[0-9A-Za-z]{{5}}\.convertToCapped\.{re.escape(name)}",
                        err.details["errmsg"]), err.details
    assert db[name].options().get("capped") is None
    assert [c for c in db.list_collection_names() if "convertToCapped" in c] == []


def test_clone_collection_as_capped_reads_and_creates_system_profile(db):
    """cloneCollectionAsCapped creates its target under userAllowedCreateNS, which allows system.profile,
    and reads its source like any collection: system.profile may be its source or its (new) target."""
    db.create_collection("system.profile")
    db.command({"cloneCollectionAsCapped": "system.profile", "toCollection": "profile_copy", "size": 4096})
    assert db.profile_copy.options()["capped"] is True
    db.system.profile.drop()
    db.src.insert_many([{"_id": i} for i in range(3)])
    db.command({"cloneCollectionAsCapped": "src", "toCollection": "system.profile", "size": 4096})
    assert db.system.profile.options()["capped"] is True
    assert [d["_id"] for d in db.system.profile.find()] == [0, 1, 2]
    command_fails(db, {"cloneCollectionAsCapped": "src", "toCollection": "system.profile", "size": 4096}, 48)


# --------------------------------------------------------------------------------------------------
# currentop.js, currentop_predicate.js, currentop_cursors.js
# --------------------------------------------------------------------------------------------------


def test_current_op_predicates(client):
    assert client.admin.command({"currentOp": 1, "command": {"$exists": True}})["inprog"]
    assert client.admin.command({"currentOp": 1, "dummyCurOpField": {"exists": True}})["inprog"] == []


def test_a_write_held_by_the_fsync_lock_shows_its_global_lock(client, db):
    admin = client.admin
    flt = {"$and": [{"locks.Global": "w", "waitingForLock": True},
                    {"$or": [{"ns": f"{db.name}.jstests_currentop"},
                             {"ns": f"{db.name}.$cmd", "command.insert": "jstests_currentop"}]},
                    {"type": "op"}]}
    admin.command({"fsync": 1, "lock": True})
    writer = threading.Thread(target=lambda: db.jstests_currentop.insert_one({}))
    try:
        writer.start()
        _wait_for(lambda: len(admin.command({"currentOp": 1, **flt})["inprog"]) == 1)
    finally:
        assert admin.command("fsyncUnlock")["lockCount"] == 0
        writer.join(10)
    assert db.jstests_currentop.count_documents({}) == 1


@pytest.fixture
def capped_cursors(db):
    db.create_collection("jstests_currentop_cursors", capped=True, size=1000)
    db.jstests_currentop_cursors.insert_many([{"val": i} for i in range(30)])
    return db


def _idle(client, cursor_id, **options) -> list:
    return list(client.admin.aggregate([
        {"$currentOp": {"localOps": True, "allUsers": False, "idleCursors": True, **options}},
        {"$match": {"$and": [{"type": "idleCursor"}, {"cursor.cursorId": cursor_id}]}}]))


def _open(db, **find) -> Any:
    return db.command({"find": "jstests_currentop_cursors", "batchSize": 2, **find})["cursor"]["id"]


def test_idle_cursors_are_listed_on_request(client, capped_cursors):
    cursor_id = _open(capped_cursors)
    found = _idle(client, cursor_id)
    assert len(found) == 1 and found[0]["ns"] == f"{capped_cursors.name}.jstests_currentop_cursors"
    assert "id" in found[0]["lsid"]
    cursor = found[0]["cursor"]
    assert (cursor["nDocsReturned"], cursor["nBatchesReturned"], cursor["tailable"], cursor["awaitData"],
            cursor["noCursorTimeout"]) == (2, 1, False, False, False)
    assert cursor["createdDate"] <= cursor["lastAccessDate"]
    assert not {"planSummary", "host", "lsid"} & set(cursor)
    for options in ({"idleCursors": False}, {}):
        listed = client.admin.aggregate([{"$currentOp": {"allUsers": False, **options}},
                                         {"$match": {"type": "idleCursor", "cursor.cursorId": cursor_id}}])
        assert list(listed) == []
    flagged = _idle(client, _open(capped_cursors, tailable=True, awaitData=True, noCursorTimeout=True))[0]["cursor"]
    assert (flagged["tailable"], flagged["awaitData"], flagged["noCursorTimeout"]) == (True, True, True)
    bigger = _idle(client, _open(capped_cursors, batchSize=4, noCursorTimeout=True))[0]["cursor"]
    assert (bigger["nDocsReturned"], bigger["nBatchesReturned"], bigger["noCursorTimeout"]) == (4, 1, True)


def test_idle_cursor_counts_grow_with_getmores(client, capped_cursors):
    cursor_id = _open(capped_cursors)
    first = _idle(client, cursor_id)[0]["cursor"]
    second_id = _open(capped_cursors)
    assert first["createdDate"] <= _idle(client, second_id)[0]["cursor"]["createdDate"]
    time.sleep(0.01)
    capped_cursors.command({"getMore": cursor_id, "collection": "jstests_currentop_cursors", "batchSize": 2})
    cursor = _idle(client, cursor_id)[0]["cursor"]
    assert (cursor["nDocsReturned"], cursor["nBatchesReturned"]) == (4, 2)
    assert cursor["createdDate"] < cursor["lastAccessDate"] and first["lastAccessDate"] < cursor["lastAccessDate"]


def test_idle_cursor_reports_plan_and_originating_command(client, capped_cursors):
    found = _idle(client, _open(capped_cursors))[0]
    assert found["planSummary"] == "COLLSCAN" and "uid" in found["lsid"]
    assert found["cursor"]["originatingCommand"]["find"] == "jstests_currentop_cursors"
    assert found["cursor"]["originatingCommand"]["batchSize"] == 2
    capped_cursors.jstests_currentop_cursors.create_index("val")
    found = _idle(client, _open(capped_cursors, filter={"val": {"$gt": 2}}))[0]
    assert found["planSummary"] == "IXSCAN { val: 1 }"


# --------------------------------------------------------------------------------------------------
# api_version_new_50_language_features.js, api_version_new_51_language_features.js,
# api_version_new_52_language_features.js
# --------------------------------------------------------------------------------------------------

STABLE_PIPELINES = [
    [{"$set": {"x": {"$dateTrunc": {"date": "$date", "unit": "second", "binSize": 5}}}}],
    [{"$set": {"x": {"$dateAdd": {"startDate": "$date", "unit": "day", "amount": 1}}}}],
    [{"$set": {"x": {"$dateSubtract": {"startDate": "$date", "unit": "day", "amount": 1}}}}],
    [{"$set": {"x": {"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "day"}}}}],
    [{"$set": {"x": {"$getField": {"input": "$$ROOT", "field": "x"}}}}],
    [{"$set": {"x": {"$setField": {"input": "$$ROOT", "field": "x", "value": "foo"}}}}],
    [{"$set": {"x": {"$unsetField": {"input": "$$ROOT", "field": "x"}}}}],
    [{"$setWindowFields": {"sortBy": {"_id": 1},
                           "output": {"runningCount": {"$sum": 1, "window": {"documents": ["unbounded", "current"]}}}}}],
    [{"$set": {"x": {"$tsSecond": Timestamp(0, 0)}}}],
    [{"$set": {"x": {"$tsIncrement": Timestamp(0, 0)}}}],
    [{"$group": {"_id": "$a", "out": {"$topN": {"output": "$a", "n": 2, "sortBy": {"a": 1}}}}}],
    [{"$group": {"_id": "$a", "out": {"$top": {"output": "$a", "sortBy": {"a": 1}}}}}],
    [{"$group": {"_id": "$a", "out": {"$bottomN": {"output": "$a", "n": 2, "sortBy": {"a": 1}}}}}],
    [{"$group": {"_id": "$a", "out": {"$bottom": {"output": "$a", "sortBy": {"a": 1}}}}}],
    [{"$group": {"_id": "$a", "out": {"$minN": {"input": "$a", "n": 2}}}}],
    [{"$group": {"_id": "$a", "out": {"$maxN": {"input": "$a", "n": 2}}}}],
    [{"$group": {"_id": "$a", "out": {"$firstN": {"input": "$a", "n": 2}}}}],
    [{"$group": {"_id": "$a", "out": {"$lastN": {"input": "$a", "n": 2}}}}],
    [{"$set": {"x": {"$firstN": {"input": "$arr", "n": 2}}}}],
    [{"$set": {"x": {"$lastN": {"input": "$arr", "n": 2}}}}],
    [{"$set": {"x": {"$minN": {"input": "$arr", "n": 2}}}}],
    [{"$set": {"x": {"$maxN": {"input": "$arr", "n": 2}}}}],
    [{"$set": {"x": {"$sortArray": {"input": "$arr", "sortBy": 1}}}}],
    *[[{"$setWindowFields": {"partitionBy": "$a", "sortBy": {"a": 1}, "output": {"out": accumulator}}}] for accumulator in (
        {"$topN": {"output": "$a", "n": 2, "sortBy": {"a": 1}}}, {"$top": {"output": "$a", "sortBy": {"a": 1}}},
        {"$bottomN": {"output": "$a", "n": 2, "sortBy": {"a": 1}}}, {"$bottom": {"output": "$a", "sortBy": {"a": 1}}},
        {"$minN": {"input": "$a", "n": 2}}, {"$maxN": {"input": "$a", "n": 2}}, {"$firstN": {"input": "$a", "n": 2}},
        {"$lastN": {"input": "$a", "n": 2}}, {"$locf": "$a"})],
    [{"$densify": {"field": "val", "partitionByFields": ["a"], "range": {"step": 1, "bounds": "partition"}}}],
]


@pytest.fixture
def features_coll(db):
    db.new_language_features.insert_one({"a": 1, "date": dt.datetime(2021, 6, 1, 12, 30), "arr": [2, 1, 4]})
    return db.new_language_features


@pytest.mark.parametrize("pipeline", STABLE_PIPELINES, ids=range(len(STABLE_PIPELINES)))
def test_newer_language_features_are_in_api_version_1(db, features_coll, pipeline):
    for params in (STRICT, {"apiVersion": "1"}):
        assert run(db, {"aggregate": features_coll.name, "pipeline": pipeline, "cursor": {}, **params})["ok"] == 1
    assert run(db, {"create": "features_view", "viewOn": features_coll.name, "pipeline": pipeline, **STRICT})["ok"] == 1
    assert len(list(db.features_view.find())) == 1
    db.features_view.drop()


def test_a_validator_with_get_field_of_a_dotted_name_under_api_strict(db):
    validator = {"$expr": {"$eq": [{"$getField": {"input": "$$ROOT", "field": "dotted.path"}}, 2]}}
    assert run(db, {"create": "new_50_features_validator", "validator": validator, **STRICT})["ok"] == 1
    db.new_50_features_validator.insert_one({"dotted.path": 2})
    with pytest.raises(OperationFailure):
        db.new_50_features_validator.insert_one({"dotted": {"path": 2}})


# --------------------------------------------------------------------------------------------------
# apitest_dbcollection.js, apitest_db.js
# --------------------------------------------------------------------------------------------------


def test_collection_drop_count_validate_and_indexes(db):
    coll = db.apitest_dbcollection
    assert coll.count_documents({}) == 0
    coll.insert_many([{"a": 1} for _ in range(100)])
    result = db.command("validate", coll.name)
    assert (result["ns"], result["valid"], result["nrecords"]) == (coll.full_name, True, 100)
    coll.drop()
    assert list(coll.list_indexes()) == []
    coll.insert_one({"a": 10, "b": 11})
    coll.create_index("a")
    coll.create_index("b")
    assert len(list(coll.list_indexes())) == 3
    coll.drop_index([("b", 1)])
    coll.drop_index("a_1")
    assert [i["name"] for i in coll.list_indexes()] == ["_id_"]
    coll.create_index("a")
    coll.drop_indexes()
    assert [i["name"] for i in coll.list_indexes()] == ["_id_"]


def test_stats_of_a_missing_collection_are_zero(db):
    stats = db.command("collStats", "apttest_dbcollection")
    assert [stats[k] for k in ("size", "count", "storageSize", "nindexes", "totalIndexSize", "totalSize")] == [0] * 6


def test_stats_scale_a_capped_collections_max_size(db):
    db.create_collection("capped_stats", capped=True, size=10 * 1024 * 1024)
    assert db.command("collStats", "capped_stats", scale=1024 * 1024)["maxSize"] == 10


def test_stats_take_the_largest_scale(db):
    db.create_collection("capped_stats", capped=True, size=10 * 1024 * 1024)
    assert db.command("collStats", "capped_stats", scale=1.7976931348623157e308)["maxSize"] == 0


def test_stats_index_details_on_request(db):
    db.t.insert_one({"a": 1})
    db.t.create_index("a")
    assert "indexDetails" not in db.command("collStats", "t")
    assert "indexDetails" not in db.command("collStats", "t", indexDetails=False)
    assert set(db.command("collStats", "t", indexDetails=True)["indexDetails"]) == {"_id_", "a_1"}
    for narrowing in ({"indexDetailsKey": {"a": 1}}, {"indexDetailsName": "a_1"}):
        details = db.command("collStats", "t", indexDetails=True, **narrowing)["indexDetails"]
        assert list(details) == ["a_1"] and details["a_1"]


STORAGE_ENGINE_NAME = "lmdb"
BAD_CREATE_OPTIONS = [
    {"storageEngine": "not a document"},
    {"storageEngine": {"unknownStorageEngine": {}}},
    {"storageEngine": {STORAGE_ENGINE_NAME: 12345}},
    {"indexOptionDefaults": "not a document"},
    {"indexOptionDefaults": {"unknownOption": True}},
    {"indexOptionDefaults": {"storageEngine": {"unknownStorageEngine": {}}}},
    {"indexOptionDefaults": {"storageEngine": {STORAGE_ENGINE_NAME: 12345}}},
]


def test_create_keeps_storage_engine_options(client, db):
    assert client.admin.command("serverStatus")["storageEngine"]["name"] == STORAGE_ENGINE_NAME
    for options in ({"storageEngine": {}}, {"indexOptionDefaults": {}}, {"indexOptionDefaults": {"storageEngine": {}}}):
        db.command({"create": "apitest_db", **options})
        db.apitest_db.drop()
    engine = {STORAGE_ENGINE_NAME: {}}
    db.command({"create": "apitest_db", "storageEngine": engine})
    db.command({"create": "idxOptions", "indexOptionDefaults": {"storageEngine": engine}})
    infos = {c["name"]: c["options"] for c in db.list_collections()}
    assert infos["apitest_db"]["storageEngine"] == engine
    assert infos["idxOptions"]["indexOptionDefaults"] == {"storageEngine": engine}


@pytest.mark.parametrize("options", [pytest.param(o, id=str(i)) for i, o in enumerate(BAD_CREATE_OPTIONS)])
def test_create_refuses_bad_storage_engine_options(db, options):
    command_fails(db, {"create": "apitest_db", **options})


# --------------------------------------------------------------------------------------------------
# list_sessions.js
# --------------------------------------------------------------------------------------------------


@pytest.mark.commands("refreshLogicalSessionCacheNow")
def test_list_sessions_finds_a_flushed_session(start_server):
    # refreshLogicalSessionCacheNow is a test command (mongod: MONGO_REGISTER_TEST_COMMAND)
    with start_server(params={"enableTestCommands": 1}).client() as client:
        session_id = client.admin.command("startSession")["id"]["id"]
        client.admin.command("refreshLogicalSessionCacheNow")
        ids = [s["_id"]["id"] for s in client.config.system.sessions.aggregate([{"$listSessions": {}}])]
        assert ids.count(session_id) == 1
        with pytest.raises(OperationFailure) as info:
            list(client.admin.system.collections.aggregate([{"$listSessions": {}}]))
        assert info.value.code == 73


@pytest.mark.commands("refreshLogicalSessionCacheNow")
def test_refresh_flushes_live_sessions_and_removes_ended_ones(start_server):
    """Each refresh upserts every live session once (lastUse kept current) into config.system.sessions
    (created with mongod's TTL index) and removes the sessions ended since; without test commands the
    command does not exist."""
    with start_server(params={"enableTestCommands": 1}).client() as client:
        sessions = client.config.system.sessions
        first, second = (client.admin.command("startSession")["id"] for _ in range(2))
        assert client.admin.command("refreshLogicalSessionCacheNow") == {"ok": 1.0}
        assert client.admin.command("refreshLogicalSessionCacheNow") == {"ok": 1.0}
        ids = [s["_id"]["id"] for s in sessions.aggregate([{"$listSessions": {"allUsers": True}}])]
        assert ids.count(first["id"]) == 1 and ids.count(second["id"]) == 1
        record = sessions.find_one({"_id.id": first["id"]})
        assert set(record) == {"_id", "lastUse"} and set(record["_id"]) == {"id", "uid"}
        ttl = {i["name"]: i for i in sessions.list_indexes()}["lsidTTLIndex"]
        assert ttl["key"] == {"lastUse": 1} and ttl["expireAfterSeconds"] == 1800
        client.admin.command("endSessions", [first])
        client.admin.command("refreshLogicalSessionCacheNow")
        ids = [s["_id"]["id"] for s in sessions.aggregate([{"$listSessions": {}}])]
        assert first["id"] not in ids and second["id"] in ids
        # a named user's sessions: none were used by one
        assert list(sessions.aggregate([{"$listSessions": {"users": [{"user": "u", "db": "admin"}]}}])) == []
        command_fails(client.config, {"aggregate": "system.sessions", "pipeline": [{"$match": {}}, {"$listSessions": {}}],
                                      "cursor": {}}, 40602)
    with start_server().client() as client:
        command_fails(client.admin, {"refreshLogicalSessionCacheNow": 1}, 59)


@pytest.mark.commands("refreshLogicalSessionCacheNow")
def test_list_sessions_under_auth(auth_server, root_client):
    """A user lists its own flushed sessions; others' (allUsers, users) need listSessions on the cluster."""
    mydb = root_client.list_sessions_auth
    mydb.command("dropAllUsersFromDatabase")
    mydb.command("createUser", "lister", pwd="pw", roles=["read"])
    try:
        with auth_server.client(username="lister", password="pw", authSource=mydb.name) as mongo:
            own = mongo.admin.command("startSession")["id"]["id"]
            mongo.admin.command("refreshLogicalSessionCacheNow")
            root_client.admin.command("refreshLogicalSessionCacheNow")
            listed = list(mongo.config.system.sessions.aggregate([{"$listSessions": {}}]))
            # its own: the one it started and the driver's implicit one, none of root's
            assert own in [s["_id"]["id"] for s in listed]
            assert all(s["user"] == {"name": f"lister@{mydb.name}"} for s in listed)
            command_fails(mongo.config, {"aggregate": "system.sessions", "pipeline": [{"$listSessions": {"allUsers": True}}],
                                         "cursor": {}}, 13)
        everyone = root_client.config.system.sessions.aggregate([{"$listSessions": {"allUsers": True}}])
        assert own in [s["_id"]["id"] for s in everyone]
    finally:
        mydb.command("dropAllUsersFromDatabase")


# --------------------------------------------------------------------------------------------------
# auth1.js, auth2.js, roles_info.js (against the --auth server)
# --------------------------------------------------------------------------------------------------


def _can_authenticate(auth_server, user: str, pwd: str, source: str) -> bool:
    with auth_server.client(username=user, password=pwd, authSource=source) as mongo:
        try:
            mongo[source].command("ping")
        except OperationFailure:
            return False
    return True


def test_passwords_users_and_their_removal(auth_server, root_client):
    mydb = root_client.auth1_db
    mydb.command("dropAllUsersFromDatabase")
    try:
        mydb.command("createUser", "eliot", pwd="a0.5", roles=["readWrite"])
        assert _can_authenticate(auth_server, "eliot", "a0.5", "auth1_db")
        assert not _can_authenticate(auth_server, "eliot", "a0.5a", "auth1_db")
        mydb.command("updateUser", "eliot", pwd="b0.5")
        assert not _can_authenticate(auth_server, "eliot", "a0.5", "auth1_db")
        assert _can_authenticate(auth_server, "eliot", "b0.5", "auth1_db")
        mydb.command("dropUser", "eliot")
        assert not _can_authenticate(auth_server, "eliot", "b0.5", "auth1_db")
        mydb.command("createUser", "eliot", pwd="a0.7", roles=["readWrite"])
        # MONGODB-CR's nonce/key is long gone
        command_fails(mydb, {"authenticate": 1, "user": "eliot", "nonce": "foo", "key": "bar"})
        before = root_client.admin.system.users.count_documents({"db": "auth1_db"})
        command_fails(mydb, {"createUser": "", "pwd": "abc", "roles": ["readWrite"]})
        command_fails(mydb, {"createUser": "abc", "pwd": "", "roles": ["readWrite"]})
        assert before > 0 and root_client.admin.system.users.count_documents({"db": "auth1_db"}) == before
    finally:
        mydb.command("dropAllUsersFromDatabase")


def test_logout_twice(client, db):
    db.command("logout")
    assert db.command("logout")["ok"] == 1


@pytest.fixture
def roles_db(root_client):
    db = root_client.roles_info_db
    db.command("dropAllRolesFromDatabase")
    db.command({"createRole": "testRoleJSCoreRolesInfo",
                "privileges": [{"resource": {"db": db.name, "collection": ""}, "actions": ["insert"]}],
                "roles": [{"role": "read", "db": db.name}]})
    yield db
    db.command("dropAllRolesFromDatabase")


def _one(roles: list, role: str, db: str) -> dict:
    found = [r for r in roles if (r["role"], r["db"]) == (role, db)]
    assert len(found) == 1, (role, roles)
    return found[0]


def _check_user_defined(roles: list, db: str, privileges: bool) -> None:
    role = _one(roles, "testRoleJSCoreRolesInfo", db)
    if privileges:
        assert role["privileges"] == [{"resource": {"db": db, "collection": ""}, "actions": ["insert"]}]
    else:
        assert "privileges" not in role
    assert role["roles"] == [{"role": "read", "db": db}] and role.get("isBuiltin") is not True


def _check_builtin(roles: list, role: str, db: str) -> None:
    found = _one(roles, role, db)
    assert found["roles"] == [] and found.get("isBuiltin") is not False


def test_roles_info_forms(roles_db):
    name = roles_db.name

    def roles_info(query, **extra) -> list:
        return roles_db.command({"rolesInfo": query, **extra})["roles"]

    every = roles_info(1, showBuiltinRoles=True, showPrivileges=True)
    assert all("isBuiltin" in r for r in every)
    _check_user_defined(every, name, True)
    _check_builtin(every, "read", name)
    assert not [r for r in every if r["role"] == "doesNotExist"]
    for query in ("testRoleJSCoreRolesInfo", {"db": name, "role": "testRoleJSCoreRolesInfo"}):
        found = roles_info(query)
        assert len(found) == 1
        _check_user_defined(found, name, False)
    for query in ("read", {"db": name, "role": "read"}):
        found = roles_info(query)
        assert len(found) == 1
        _check_builtin(found, "read", name)
    several = roles_info(["testRoleJSCoreRolesInfo", {"db": name, "role": "read"}, "readWrite"])
    assert len(several) == 3
    _check_user_defined(several, name, False)
    _check_builtin(several, "read", name)
    _check_builtin(several, "readWrite", name)


# --------------------------------------------------------------------------------------------------
# profile_agg.js, profile_list_indexes.js, profile_findandmodify.js
# --------------------------------------------------------------------------------------------------


def test_profiled_aggregate(profiling):
    coll = profiling.profile_agg
    coll.insert_many([{"a": i} for i in range(10)])
    coll.create_index("a")
    pipeline = [{"$match": {"a": {"$gte": 2}}}, {"$sort": {"b": 1}}, {"$addFields": {"c": 1}}]
    assert len(list(coll.aggregate(pipeline, collation={"locale": "fr"}, comment="agg_comment"))) == 8
    entry = _latest(profiling, {"command.aggregate": coll.name})
    assert (entry["ns"], entry["op"], entry["nreturned"], entry["planSummary"], entry["protocol"]) == (
        coll.full_name, "command", 8, "IXSCAN { a: 1 }", "op_msg")
    assert entry["command"]["collation"] == {"locale": "fr"} and entry["command"]["comment"] == "agg_comment"
    assert entry["hasSortStage"] is True and "usedDisk" not in entry
    assert {"responseLength", "millis", "numYield", "locks"} <= set(entry)
    # a sort the index gives is no sort stage
    list(coll.aggregate([{"$match": {"a": {"$gte": 2}}}, {"$sort": {"a": 1}}, {"$addFields": {"c": 1}}]))
    assert "hasSortStage" not in _latest(profiling, {"command.aggregate": coll.name})
    # $out: the entry is the source's
    coll.drop()
    coll.insert_many([{"a": i} for i in range(5)])
    assert list(coll.aggregate([{"$match": {"a": {"$gt": 0}}}, {"$out": "profile_agg_out"}])) == []
    assert _latest(profiling, {"command.aggregate": coll.name})["ns"] == coll.full_name
    assert len(list(coll.aggregate([{"$match": {"a": 3}}, {"$addFields": {"c": 1}}], hint={"_id": 1}))) == 1
    assert _latest(profiling, {"command.aggregate": coll.name})["command"]["hint"] == {"_id": 1}
    big = {str(i): "a" * 150 for i in range(501)}
    assert list(coll.aggregate([{"$match": big}, {"$addFields": {"c": 1}}], comment="profile_agg")) == []
    entry = _latest(profiling, {"command.comment": "profile_agg"})
    assert isinstance(entry["command"]["$truncated"], str)


def test_profiled_list_indexes_and_its_getmore(db):
    for i in range(5):
        db.testColl.create_index(f"fakeField_{i}")
    db.command("profile", 2)
    try:
        reply = db.command({"listIndexes": "testColl", "cursor": {"batchSize": Int64(1)}})
        assert db.system.profile.count_documents({"op": "command", "command.listIndexes": "testColl",
                                                  "command.cursor": {"batchSize": Int64(1)}}) == 1
        collection = reply["cursor"]["ns"].split(".", 1)[1]
        db.command({"getMore": reply["cursor"]["id"], "collection": collection})
        entry = _latest(db, {"op": "getmore"})
        assert entry["originatingCommand"]["listIndexes"] == "testColl"
        assert entry["originatingCommand"]["cursor"] == {"batchSize": 1}
    finally:
        db.command("profile", 0)


def test_profiled_find_and_modify_keeps_its_arguments(profiling):
    coll = profiling.test
    coll.insert_many([{"_id": i, "a": i, "b": [0]} for i in range(3)])
    assert coll.find_one_and_update({"a": 2}, {"$inc": {"b.$[i]": 1}}, collation={"locale": "fr"},
                                    array_filters=[{"i": 0}]) == {"_id": 2, "a": 2, "b": [0]}
    entry = _latest(profiling, {"command.findAndModify": "test"})
    assert (entry["op"], entry["ns"]) == ("command", coll.full_name)
    assert (entry["command"]["query"], entry["command"]["update"], entry["command"]["collation"],
            entry["command"]["arrayFilters"]) == ({"a": 2}, {"$inc": {"b.$[i]": 1}}, {"locale": "fr"}, [{"i": 0}])
    assert coll.find_one_and_delete({"a": 1}, projection={"_id": 0, "a": 1}) == {"a": 1}
    entry = _latest(profiling, {"command.findAndModify": "test"})
    assert entry["command"]["remove"] is True and entry["command"]["fields"] == {"_id": 0, "a": 1}


def test_profiled_find_and_modify_reports_its_counters(profiling):
    coll = profiling.test
    coll.insert_many([{"_id": i, "a": i} for i in range(3)])
    coll.find_one_and_update({"a": 2}, {"$inc": {"b": 1}})
    entry = _latest(profiling, {"command.findAndModify": "test"})
    assert (entry.get("docsExamined"), entry.get("nMatched"), entry.get("nModified"), entry.get("planSummary")) == (
        3, 1, 1, "COLLSCAN")


# --------------------------------------------------------------------------------------------------
# profile2.js, profile3.js, profile_sampling.js, profile_list_collections.js
# --------------------------------------------------------------------------------------------------


def test_big_profiled_commands_are_truncated_in_mongods_text_form(profiling):
    huge = "a" * (2 * 1024 * 1024)
    assert list(profiling.profile2.find({"a": huge})) == []
    entry = _latest(profiling, {"op": "query"})
    assert {"ns", "millis"} <= set(entry)
    assert re.search(r'filter: \{ a: "a{150}\.\.\." \}', entry["command"]["$truncated"])
    profiling.profile2.update_one({"a": huge}, {"$set": {"b": 1}})
    assert re.fullmatch(r'\{ q: \{ a: "a{150}\.\.\." \}, u: \{ \$set: \{ b: 1 \} \}, multi: false, upsert: false \}',
                        _latest(profiling, {"op": "update"})["command"]["$truncated"])
    profiling.profile2.update_one({}, {"$set": {"a": huge}})
    assert re.fullmatch(r'\{ q: \{\}, u: \{ \$set: \{ a: "a{150}\.\.\." \} \}, multi: false, upsert: false \}',
                        _latest(profiling, {"op": "update"})["command"]["$truncated"])
    many = {f"a{i}": 1.0 for i in range(100_000)}
    assert list(profiling.profile2.find(many)) == []
    text = _latest(profiling, {"op": "query"})["command"]["$truncated"]
    assert re.search(r"filter: \{ a0: 1\.0, a1: .*\.\.\.$", text) and len(text) == 50 * 1024


def test_profiled_updates_report_matches(profiling):
    coll = profiling.profile3
    profiling.create_collection("profile3")
    coll.insert_one({"x": 1})
    coll.find_one({"x": 1})
    coll.count_documents({"x": 1})
    coll.update_one({"x": 1}, {"$inc": {"a": 1}, "$set": {"big": "," * 127}})
    coll.update_one({"x": 1}, {"$inc": {"a": 1}})
    coll.update_one({"x": 0}, {"$inc": {"a": 1}})
    profiling.command("profile", 0)
    assert profiling.system.profile.count_documents({"nMatched": {"$exists": True}}) == 3
    assert profiling.system.profile.count_documents({"nMatched": 1}) == 2
    assert profiling.system.profile.count_documents({"nMatched": 0}) == 1


def test_profile_sampling(db):
    coll = db.profile_sampling
    db.create_collection(coll.name)
    coll.insert_one({"x": 1})
    ops = {"ns": coll.full_name}
    try:
        db.command({"profile": 1, "sampleRate": 0, "slowms": -1})
        assert coll.find_one({"x": 1})
        assert coll.count_documents({"x": 1}) == 1
        coll.update_one({"x": 1}, {"$inc": {"a": 1}})
        db.command("profile", 0)
        assert db.system.profile.count_documents({}) == 0
        db.system.profile.drop()
        db.command({"profile": 1, "sampleRate": 0.5, "slowms": -1})
        for _ in range(200):
            assert coll.find_one({"x": 1})
            coll.update_one({"x": 1}, {"$inc": {"a": 1}})
        db.command("profile", 0)
        assert 10 <= db.system.profile.count_documents(ops) <= 390
        db.system.profile.drop()
        db.command({"profile": 2, "sampleRate": 0})  # level 2 profiles everything
        for _ in range(5):
            assert coll.find_one({"x": 1})
            coll.update_one({"x": 1}, {"$inc": {"a": 1}})
        db.command("profile", 0)
        assert db.system.profile.count_documents(ops) == 10
    finally:
        db.command({"profile": 0, "sampleRate": 1.0, "slowms": 100})


def test_list_collections_getmores_are_not_profiled(db):
    for i in range(5):
        db.create_collection(f"test_{i}")
    db.command("profile", 2)
    try:
        reply = db.command({"listCollections": 1, "cursor": {"batchSize": 1}})
        db.command({"getMore": reply["cursor"]["id"], "collection": reply["cursor"]["ns"].split(".", 1)[1]})
        assert db.system.profile.count_documents({"op": "getmore"}) == 0
    finally:
        db.command("profile", 0)
