"""create, drop, dropDatabase, listCollections, listDatabases, renameCollection and collMod."""

from __future__ import annotations

import uuid

import pytest
from pymongo.errors import CollectionInvalid, OperationFailure, WriteError


@pytest.mark.commands("listDatabases")
def test_list_databases_lists_only_existing_databases(client, db):
    assert db.name not in client.list_database_names()
    db.c.insert_one({"a": 1})
    reply = client.admin.command("listDatabases")
    entry = next(d for d in reply["databases"] if d["name"] == db.name)
    assert entry["sizeOnDisk"] > 0 and entry["empty"] is False
    assert "totalSize" in reply and "totalSizeMb" in reply


@pytest.mark.commands("listDatabases")
def test_list_databases_name_only_and_filter(client, db):
    db.c.insert_one({"a": 1})
    reply = client.admin.command("listDatabases", nameOnly=True, filter={"name": db.name})
    assert reply["databases"] == [{"name": db.name}]


@pytest.mark.commands("listDatabases")
@pytest.mark.parametrize("options", [{}, {"nameOnly": True}, {"authorizedDatabases": True}, {"filter": {}}])
def test_list_databases_runs_only_against_admin(client, db, options):
    """mongod's CmdListDatabases is adminOnly: on any other database it is 13 before anything else (Tidemark
    listed the databases)."""
    db.c.insert_one({})
    for name in (db.name, "local", "config", "test"):
        with pytest.raises(OperationFailure) as failure:
            client[name].command("listDatabases", **options)
        assert failure.value.code == 13
        assert failure.value.details["errmsg"] == "listDatabases may only be run against the admin database."
    assert db.name in [d["name"] for d in client.admin.command("listDatabases", **options)["databases"]]


@pytest.mark.commands("create")
def test_create_collection_then_same_options_is_ok_and_different_is_48(db):
    db.create_collection("c")
    db.command("create", "c")  # identical options: no error (7.0)
    with pytest.raises(OperationFailure) as e:
        db.command("create", "c", validator={"a": {"$exists": True}})
    assert e.value.code == 48
    # mongod shows the existing collection's stored options, its UUID first (create.cpp; seen in
    # mongosh transcripts: "... different options: { uuid: UUID("..."), validationLevel: ... }")
    stored = db.command("listCollections", filter={"name": "c"})["cursor"]["firstBatch"][0]["info"]["uuid"]
    collection_uuid = uuid.UUID(bytes=bytes(stored))
    assert e.value.details["errmsg"] == (f"namespace {db.name}.c already exists, but with different options: "
                                         f'{{ uuid: UUID("{collection_uuid}") }}')
    db.create_collection("v", validator={"a": {"$exists": True}}, validationLevel="moderate")
    with pytest.raises(OperationFailure) as e:
        db.command("create", "v", capped=True, size=4096)
    assert e.value.details["errmsg"].endswith(', validator: { a: { $exists: true } }, validationLevel: "moderate" }')


@pytest.mark.commands("create")
def test_create_rejects_unknown_option_and_bad_names(db):
    with pytest.raises(OperationFailure) as e:
        db.command("create", "c", bogus=1)
    assert e.value.code == 40415
    with pytest.raises(OperationFailure) as e:
        db.command("create", "a$b")
    assert e.value.code == 73
    with pytest.raises(OperationFailure) as e:
        db.command("create", "")
    assert e.value.code == 73


@pytest.mark.commands("create", "insert")
def test_validator_with_json_schema_refuses_invalid_documents_with_121(db):
    db.create_collection(
        "v",
        validator={
            "$jsonSchema": {
                "bsonType": "object",
                "required": ["name"],
                "properties": {"name": {"bsonType": "string"}},
            }
        },
    )
    db.v.insert_one({"name": "ok"})
    with pytest.raises(WriteError) as e:
        db.v.insert_one({"name": 5})
    assert e.value.code == 121 and "errInfo" in e.value.details
    db.v.insert_one({"name": 5}, bypass_document_validation=True)
    assert len(list(db.v.find())) == 2


@pytest.mark.commands("create", "update")
def test_validator_applies_to_updates(db):
    db.create_collection("v", validator={"n": {"$gte": 0}})
    db.v.insert_one({"_id": 1, "n": 1})
    with pytest.raises(WriteError) as e:
        db.v.update_one({"_id": 1}, {"$set": {"n": -1}})
    assert e.value.code == 121


@pytest.mark.commands("drop")
def test_drop_reports_indexes_and_dropping_what_does_not_exist_succeeds(db):
    """Since MongoDB 7.0 (SERVER-43894) a drop of a namespace that does not exist answers ok: 1, not
    26 NamespaceNotFound: a collection dropped twice, one never created, a buckets name with no
    time-series collection."""
    db.c.insert_one({"a": 1})
    db.c.create_index("a")
    reply = db.command("drop", "c")
    assert reply["nIndexesWas"] == 2 and reply["ns"] == f"{db.name}.c"
    assert db.command("drop", "c") == {"ok": 1.0}
    assert db.command("drop", "never_made") == {"ok": 1.0}
    assert db.command("drop", "system.buckets.c") == {"ok": 1.0}
    assert "c" not in db.list_collection_names()


@pytest.mark.commands("dropDatabase")
def test_drop_database_removes_everything(client, db):
    db.a.insert_one({})
    db.b.insert_one({})
    reply = client[db.name].command("dropDatabase")
    assert reply["dropped"] == db.name
    assert db.name not in client.list_database_names()


@pytest.mark.commands("listCollections")
def test_list_collections_shapes_filter_and_name_only(db):
    db.create_collection("c1", validator={"a": 1})
    db.c2.insert_one({})
    entries = {e["name"]: e for e in db.list_collections()}
    assert set(entries) == {"c1", "c2"}
    c1 = entries["c1"]
    assert c1["type"] == "collection" and c1["options"] == {"validator": {"a": 1}}
    assert c1["info"]["readOnly"] is False
    assert getattr(c1["info"]["uuid"], "subtype", 4) == 4  # a BSON UUID (binary subtype 4)
    assert c1["idIndex"] == {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    assert db.list_collection_names(filter={"name": "c2"}) == ["c2"]
    reply = db.command("listCollections", nameOnly=True)
    assert sorted(reply["cursor"]["firstBatch"], key=lambda e: e["name"]) == [
        {"name": "c1", "type": "collection"},
        {"name": "c2", "type": "collection"},
    ]


@pytest.mark.commands("listCollections")
def test_list_collections_type_filter(db):
    db.c.insert_one({})
    assert db.list_collection_names(filter={"type": "view"}) == []
    assert db.list_collection_names(filter={"type": "collection"}) == ["c"]


@pytest.mark.commands("renameCollection")
def test_rename_collection_keeps_documents_and_indexes(client, db):
    db.a.insert_many([{"x": i} for i in range(5)])
    db.a.create_index("x")
    db.a.rename("b")
    assert db.list_collection_names() == ["b"]
    assert len(list(db.b.find({"x": {"$gte": 0}}))) == 5
    assert [i["name"] for i in db.b.list_indexes()] == ["_id_", "x_1"]


@pytest.mark.commands("renameCollection")
def test_rename_collection_errors_and_drop_target(client, db):
    db.a.insert_one({"n": 1})
    db.b.insert_one({"n": 2})
    with pytest.raises(OperationFailure) as e:
        db.a.rename("b")
    assert e.value.code == 48
    db.a.rename("b", dropTarget=True)
    assert [d["n"] for d in db.b.find()] == [1]
    with pytest.raises(OperationFailure) as e:
        client.admin.command("renameCollection", f"{db.name}.nope", to=f"{db.name}.x")
    assert e.value.code == 26
    with pytest.raises(OperationFailure) as e:
        db.command("renameCollection", f"{db.name}.b", to=f"{db.name}.c")
    assert e.value.code == 13


@pytest.mark.commands("renameCollection")
def test_rename_across_databases(client, db):
    other = client[db.name + "_x"]
    try:
        db.a.insert_one({"n": 1})
        client.admin.command("renameCollection", f"{db.name}.a", to=f"{other.name}.a")
        assert [d["n"] for d in other.a.find()] == [1]
        assert "a" not in db.list_collection_names()
    finally:
        client.drop_database(other.name)


@pytest.mark.commands("collMod")
def test_coll_mod_hides_index_and_changes_ttl(db):
    db.c.create_index("a")
    db.c.create_index("t", expireAfterSeconds=100)
    reply = db.command("collMod", "c", index={"name": "a_1", "hidden": True})
    assert reply["hidden_old"] is False and reply["hidden_new"] is True
    assert next(i for i in db.c.list_indexes() if i["name"] == "a_1")["hidden"] is True
    reply = db.command("collMod", "c", index={"keyPattern": {"t": 1}, "expireAfterSeconds": 50})
    assert reply["expireAfterSeconds_old"] == 100 and reply["expireAfterSeconds_new"] == 50


@pytest.mark.commands("collMod")
def test_coll_mod_validator_and_errors(db):
    db.c.insert_one({"a": 1})
    db.command("collMod", "c", validator={"a": {"$type": "int"}}, validationLevel="strict")
    with pytest.raises(WriteError):
        db.c.insert_one({"a": "x"})
    opts = db.c.options()
    assert opts["validator"] == {"a": {"$type": "int"}}
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "missing", validator={})
    assert e.value.code == 26
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "c", index={"name": "nope", "hidden": True})
    assert e.value.code == 27
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "c", bogus=1)
    assert e.value.code == 40415


@pytest.mark.commands("create")
def test_create_collection_via_pymongo_helper_raises_on_existing(db):
    db.create_collection("x")
    with pytest.raises(CollectionInvalid):
        db.create_collection("x")


@pytest.mark.commands("create")
def test_create_rejects_ttl_option_and_accepts_a_collation(db):
    with pytest.raises(OperationFailure) as e:
        db.command("create", "c", expireAfterSeconds=10)
    assert e.value.code == 72
    db.command("create", "c", collation={"locale": "fr"})
    assert next(db.list_collections(filter={"name": "c"}))["options"]["collation"]["locale"] == "fr"
    db.command("create", "s", collation={"locale": "simple"})


@pytest.mark.commands("renameCollection")
def test_rename_of_views_and_bucket_namespaces_is_refused(client, db):
    db.a.insert_one({})
    db.command("create", "v", viewOn="a", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        client.admin.command("renameCollection", f"{db.name}.v", to=f"{db.name}.w")
    assert e.value.code == 166
    with pytest.raises(OperationFailure) as e:
        client.admin.command("renameCollection", f"{db.name}.a", to=f"{db.name}.system.buckets.x")
    assert e.value.code == 20
