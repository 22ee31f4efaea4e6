"""What a cursor keeps of the command that opened it: its API parameters, which every getMore must repeat
(mongod's 347 APIMismatchError otherwise), and the command itself with its plan, which ``$currentOp``'s
idle cursors and the getMore's profile entry show (originatingCommand, planSummary, lsid.uid)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tidemark.cursors import api_parameters, api_parameters_text

# mongod's APIParameters: apiVersion "1" (the only one), apiStrict and apiDeprecationErrors each absent,
# true or false (absent differs from false); either of the last two only with apiVersion
_FLAG = st.sampled_from([None, True, False])
API_PARAMS = st.one_of(
    st.just({}),
    st.tuples(_FLAG, _FLAG).map(lambda flags: {"apiVersion": "1", **{
        name: value for name, value in zip(("apiStrict", "apiDeprecationErrors"), flags, strict=True)
        if value is not None}}),
)


# -- the pure parts ---------------------------------------------------------------------------------

def test_api_parameters_keep_absent_apart_from_false():
    assert api_parameters({"find": "c"}) == (None, None, None)
    assert api_parameters({"apiVersion": "1", "apiStrict": False}) == ("1", False, None)
    assert api_parameters({"apiVersion": "1"}) != api_parameters({"apiVersion": "1", "apiStrict": False})


@pytest.mark.parametrize("params, text", [
    ({}, "{}"),
    ({"apiVersion": "1"}, '{ apiVersion: "1" }'),
    ({"apiVersion": "1", "apiStrict": True}, '{ apiVersion: "1", apiStrict: true }'),
    ({"apiDeprecationErrors": False, "apiVersion": "1", "apiStrict": False},
     '{ apiVersion: "1", apiStrict: false, apiDeprecationErrors: false }'),
])
def test_api_parameters_text_is_mongods(params, text):
    assert api_parameters_text(api_parameters(params)) == text


# -- getMore against the server -------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opening=API_PARAMS, continuing=API_PARAMS)
def test_getmore_runs_only_with_the_opening_commands_api_parameters(db, opening, continuing):
    if db.api_getmore.estimated_document_count() == 0:
        db.api_getmore.insert_many([{"_id": i} for i in range(3)])
    cursor = db.command({"find": "api_getmore", "batchSize": 1, **opening})["cursor"]["id"]
    getmore = {"getMore": cursor, "collection": "api_getmore", "batchSize": 1}
    if opening == continuing:
        assert db.command({**getmore, **continuing})["cursor"]["nextBatch"] == [{"_id": 1}]
        return
    with pytest.raises(OperationFailure) as failed:
        db.command({**getmore, **continuing})
    assert (failed.value.code, failed.value.details["codeName"]) == (347, "APIMismatchError")
    assert failed.value.details["errmsg"] == (
        f"API parameter mismatch: getMore used params {api_parameters_text(api_parameters(continuing))}, "
        f"the cursor-creating command used {api_parameters_text(api_parameters(opening))}")
    # the refused getMore leaves the cursor as it was: the right parameters continue it
    assert db.command({**getmore, **opening})["cursor"]["nextBatch"] == [{"_id": 1}]


# -- what $currentOp and the profiler show of the opening command ---------------------------------

def _idle(client, cursor_id):
    return list(client.admin.aggregate([
        {"$currentOp": {"localOps": True, "allUsers": False, "idleCursors": True}},
        {"$match": {"type": "idleCursor", "cursor.cursorId": cursor_id}}]))


def test_idle_cursor_shows_its_session_uid_plan_and_originating_command(client, db):
    db.idle_origin.insert_many([{"_id": i, "v": i} for i in range(5)])
    db.idle_origin.create_index("v")
    session = client.start_session()
    try:
        opened = db.command({"find": "idle_origin", "filter": {"v": {"$gte": 1}}, "batchSize": 1,
                             "comment": "idle-origin"}, session=session)
        (entry,) = _idle(client, opened["cursor"]["id"])
        # (a uid is binary subtype 0, which pymongo reads back as bytes)
        assert entry["lsid"] == {"id": session.session_id["id"], "uid": hashlib.sha256(b"").digest()}
        assert entry["planSummary"] == "IXSCAN { v: 1 }"
        origin = entry["cursor"]["originatingCommand"]
        assert (origin["find"], origin["filter"], origin["batchSize"], origin["comment"]) == (
            "idle_origin", {"v": {"$gte": 1}}, 1, "idle-origin")
        assert list(entry)[:6] == ["type", "host", "ns", "lsid", "planSummary", "cursor"]
        assert list(entry["cursor"])[-1] == "originatingCommand"
    finally:
        session.end_session()


def test_idle_list_cursor_shows_its_command_and_no_plan(client, db):
    for i in range(3):
        db.create_collection(f"listed_{i}")
    opened = db.command({"listCollections": 1, "cursor": {"batchSize": 1}})
    (entry,) = _idle(client, opened["cursor"]["id"])
    assert "planSummary" not in entry
    assert entry["cursor"]["originatingCommand"]["listCollections"] == 1


def test_profiled_getmore_of_list_indexes_carries_its_originating_command(db):
    for i in range(3):
        db.listed.create_index(f"f{i}")
    db.command("profile", 2)
    try:
        opened = db.command({"listIndexes": "listed", "cursor": {"batchSize": 1}, "comment": "listed"})
        db.command({"getMore": opened["cursor"]["id"], "collection": "listed"})
        entry = db.system.profile.find_one({"op": "getmore"}, sort=[("ts", -1)])
        assert entry["originatingCommand"]["listIndexes"] == "listed"
        assert entry["originatingCommand"]["cursor"] == {"batchSize": 1}
        # mongod's queued data examines nothing; the getMore takes its originating command's comment
        assert (entry["keysExamined"], entry["docsExamined"], entry["command"]["comment"]) == (0, 0, "listed")
        assert "planSummary" not in entry
    finally:
        db.command("profile", 0)
