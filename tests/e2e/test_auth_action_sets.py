"""The exact actions of profile, $merge and cloneCollectionAsCapped, as mongod 7.0 asks them.

mongod:
- profile (ProfileCmdBase::checkAuthForOperation, profile_common.cpp): a negative level with neither
  ``slowms`` nor ``sampleRate`` only reads the settings and needs find on ``<db>.system.profile`` (or
  ``enableProfiler``); anything else ``enableProfiler`` on the database;
- $merge (document_source_merge.cpp, getDescriptors): on the target, ``insert`` + ``update`` for the
  modes that may insert and change documents, ``update`` for whenNotMatched fail/discard, ``insert``
  only for whenMatched fail (+ bypassDocumentValidation when asked);
- cloneCollectionAsCapped (checkAuthForOperation): find on the source, insert + createIndex +
  convertToCapped on the target; a target that is no string is 14 "'toCollection' must be of type String".

Tidemark asked enableProfiler for every profile command, insert + update for every $merge, and insert +
createCollection on cloneCollectionAsCapped's target.
"""

from __future__ import annotations

import itertools

import pytest
from bson.int64 import Int64
from harness.role_user import one_role_user
from pymongo.errors import OperationFailure

DB = "action_sets"

# mongod's merge strategy descriptors: (whenMatched, whenNotMatched) -> actions on the target
MERGE_ACTIONS = {
    ("replace", "insert"): {"insert", "update"}, ("replace", "fail"): {"update"}, ("replace", "discard"): {"update"},
    ("merge", "insert"): {"insert", "update"}, ("merge", "fail"): {"update"}, ("merge", "discard"): {"update"},
    ("keepExisting", "insert"): {"insert", "update"}, ("fail", "insert"): {"insert"},
    ("pipeline", "insert"): {"insert", "update"}, ("pipeline", "fail"): {"update"},
    ("pipeline", "discard"): {"update"},
}


@pytest.fixture(scope="module")
def actor(auth_server, root_client):
    with one_role_user(auth_server, root_client, "acts") as (role, conn):

        def set_privileges(privileges: list[dict]) -> None:
            root_client.admin.command("updateRole", role, privileges=privileges)

        yield set_privileges, conn[DB]
    root_client.drop_database(DB)


def _p(coll: str, *actions: str) -> dict:
    return {"resource": {"db": DB, "collection": coll}, "actions": list(actions)}


def _outcome(db, command) -> bool:
    try:
        db.command(command)
        return True
    except OperationFailure as failure:
        assert failure.code == 13, failure.details
        return False


@pytest.mark.commands("profile")
@pytest.mark.parametrize("level", [-1, -1.0, Int64(-1), 0, 1])
@pytest.mark.parametrize("extra", [{}, {"slowms": 100}, {"sampleRate": 1.0}, {"filter": "unset"}],
                         ids=["none", "slowms", "sampleRate", "filter"])
def test_profile_settings_are_read_with_find_on_system_profile(root_client, actor, level, extra):
    set_privileges, db = actor
    read_only = level < 0 and "slowms" not in extra and "sampleRate" not in extra
    # (privileges, enableProfiler on the database, find on <db>.system.profile)
    for privileges, enable, find in (([], False, False), ([_p("system.profile", "find")], False, True),
                                     ([_p("", "enableProfiler")], True, False),
                                     ([_p("", "find")], False, False),  # the database: not system.*
                                     ([_p("system.profile", "insert")], False, False)):
        set_privileges(privileges)
        expected = enable or (read_only and find)
        assert _outcome(db, {"profile": level, **extra}) == expected, (privileges, level, extra)
    root_client[DB].command("profile", 0, slowms=100, sampleRate=1.0, filter="unset")


@pytest.mark.commands("aggregate")
@pytest.mark.parametrize(("matched", "not_matched"), sorted(MERGE_ACTIONS))
def test_merge_needs_the_actions_of_its_mode(root_client, actor, matched, not_matched):
    set_privileges, db = actor
    root_client[DB].src.replace_one({"_id": 1}, {"_id": 1}, upsert=True)
    when_matched = [{"$set": {"seen": True}}] if matched == "pipeline" else matched
    for held, bypass in itertools.product(
            [set(c) for n in range(4) for c in itertools.combinations(["insert", "update", "remove"], n)],
            (False, True)):
        root_client[DB].out.drop()
        set_privileges([_p("src", "find"), _p("out", *sorted(held | ({"bypassDocumentValidation"} if bypass else set())))]
                       if held or bypass else [_p("src", "find")])
        command = {"aggregate": "src", "cursor": {}, "bypassDocumentValidation": bypass,
                   "pipeline": [{"$match": {"_id": 0}},  # nothing to write: only the authorization counts
                                {"$merge": {"into": "out", "whenMatched": when_matched,
                                            "whenNotMatched": not_matched}}]}
        assert _outcome(db, command) == (MERGE_ACTIONS[matched, not_matched] <= held), (held, bypass)


@pytest.mark.commands("cloneCollectionAsCapped")
def test_clone_collection_as_capped_needs_find_then_insert_create_index_convert_to_capped(root_client, actor):
    set_privileges, db = actor
    target_actions = ["insert", "createIndex", "convertToCapped", "createCollection"]
    root_client[DB].src.insert_one({})
    for n in range(len(target_actions) + 1):
        for held in itertools.combinations(target_actions, n):
            for source in ([], ["find"]):
                root_client[DB].capped.drop()
                privileges = [_p("capped", *held)] if held else []
                privileges += [_p("src", *source)] if source else []
                set_privileges(privileges)
                expected = bool(source) and {"insert", "createIndex", "convertToCapped"} <= set(held)
                command = {"cloneCollectionAsCapped": "src", "toCollection": "capped", "size": 4096}
                assert _outcome(db, command) == expected, privileges
    set_privileges([_p("src", "find")])
    with pytest.raises(OperationFailure) as failure:
        db.command({"cloneCollectionAsCapped": "src", "toCollection": 5, "size": 4096})
    assert (failure.value.code, failure.value.details["errmsg"]) == (14, "'toCollection' must be of type String")
