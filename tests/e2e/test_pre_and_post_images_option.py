"""The changeStreamPreAndPostImages collection option on a standalone, as mongod 7.0 keeps it.

A standalone has no change streams, but mongod still parses and keeps the option: create.idl and
coll_mod.idl read it as the strict IDL struct ChangeStreamPreAndPostImagesOptions ({enabled: bool},
40414 / 14 / 40415), validateChangeStreamPreAndPostImagesOptionIsPermitted refuses enabling it in the
admin, local and config databases (72), collMod turns it on and off, and the collection's options
(listCollections) show it only while it is enabled (jstests' assertChangeStreamPreAndPostImages-
CollectionOptionIsAbsent after a collMod {enabled: false}). Tidemark's collMod accepted any value and
kept nothing; its create kept {enabled: false} and whatever else the document held, in any database.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("create", "collMod")

VALUES = st.sampled_from([{"enabled": True}, {"enabled": False}, {}, {"enabled": 1}, {"enabled": None},
                          {"enabled": True, "x": 1}, {"x": 1, "enabled": True}, 1, "on", None])


def _expected(command: str, db: str, value) -> tuple[int | None, bool]:
    """(the code, or None; whether the collection then shows the option)."""
    if value is None:
        return None, False  # an optional field given null is absent (the IDL's optional fields)
    if not isinstance(value, dict):
        return 14, False
    for key in value:
        if key != "enabled":
            return 40415, False
    if "enabled" not in value:
        return 40414, False
    if type(value["enabled"]) is not bool:
        return 14, False
    if value["enabled"] and db in ("admin", "local", "config"):
        return 72, False
    return None, value["enabled"]


def _options(database, name: str) -> dict:
    return database.command("listCollections", filter={"name": name})["cursor"]["firstBatch"][0]["options"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["create", "collMod"]), where=st.sampled_from(["user", "admin", "local", "config"]),
       value=VALUES)
def test_the_option_family(client, db, command, where, value):
    database = db if where == "user" else client[where]
    name = "pp_images"
    database.drop_collection(name)
    try:
        if command == "collMod":
            database.create_collection(name)
        code, shown = _expected(command, where, value)
        try:
            database.command({command: name, "changeStreamPreAndPostImages": value})
        except OperationFailure as refused:
            assert refused.code == code, (command, where, value, refused.details)
        else:
            assert code is None, (command, where, value)
        if command == "collMod" or code is None:
            options = _options(database, name)
            assert options.get("changeStreamPreAndPostImages") == ({"enabled": True} if shown else None), options
    finally:
        database.drop_collection(name)


def test_coll_mod_turns_the_option_on_and_off(db):
    db.create_collection("c")
    db.command({"collMod": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    assert _options(db, "c") == {"changeStreamPreAndPostImages": {"enabled": True}}
    db.command({"collMod": "c", "changeStreamPreAndPostImages": {"enabled": False}})
    assert _options(db, "c") == {}
    with pytest.raises(OperationFailure) as refused:
        db.command({"collMod": "c", "changeStreamPreAndPostImages": {}})
    assert (refused.value.code, refused.value.details["errmsg"]) == (
        40414, "BSON field 'collMod.changeStreamPreAndPostImages.enabled' is missing but a required field")


def test_enabling_it_in_admin_is_refused(client):
    with pytest.raises(OperationFailure) as refused:
        client.admin.command({"create": "pp_admin", "changeStreamPreAndPostImages": {"enabled": True}})
    assert (refused.value.code, refused.value.details["errmsg"]) == (
        72, "changeStreamPreAndPostImages collection option is not supported on the admin database")
    assert "pp_admin" not in client.admin.list_collection_names()
