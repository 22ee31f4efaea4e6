"""applyOps as mongod 7.0 answers it: entry kinds, replies (applied/results), codes, UUIDs, time-series
buckets, nesting, and the privileges it needs under --auth."""

import datetime as dt
import uuid

import pytest
from bson.binary import Binary
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("applyOps")

T0 = dt.datetime(2024, 5, 1)


def apply(db, ops, **kw):
    return db.client.admin.command("applyOps", ops, **kw)


def failure(db, ops, **kw) -> dict:
    with pytest.raises(OperationFailure) as info:
        apply(db, ops, **kw)
    return info.value.details


def test_insert_update_delete_and_noop_entries(db):
    ns = f"{db.name}.c"
    db.create_collection("c")
    reply = apply(db, [
        {"op": "i", "ns": ns, "o": {"_id": 1, "a": 1, "arr": [1, 2, 3], "sub": {"x": 1, "y": 2}}},
        {"op": "i", "ns": ns, "o": {"_id": 2, "a": 2}},
        {"op": "n", "ns": "", "o": {"msg": "noop"}},
        {"op": "u", "ns": ns, "o2": {"_id": 1},
         "o": {"$v": 2, "diff": {"d": {"a": False}, "i": {"n": 5}, "sarr": {"a": True, "l": 2, "u1": 9},
                                 "ssub": {"u": {"x": 7}}}}},
        {"op": "u", "ns": ns, "o2": {"_id": 2}, "o": {"_id": 2, "b": "replaced"}},
        {"op": "d", "ns": ns, "o": {"_id": 2}},
    ])
    assert reply["applied"] == 5 and reply["results"] == [True] * 5  # the no-op is skipped, not counted
    assert list(db.c.find()) == [{"_id": 1, "arr": [1, 9], "sub": {"x": 7, "y": 2}, "n": 5}]


def test_an_insert_of_an_existing_id_replaces_the_document(db):
    db.c.insert_one({"_id": 1, "old": True})
    assert apply(db, [{"op": "i", "ns": f"{db.name}.c", "o": {"_id": 1, "new": True}}])["results"] == [True]
    assert list(db.c.find()) == [{"_id": 1, "new": True}]


def test_updates_of_a_missing_document_upsert_unless_always_upsert_is_false(db):
    ns = f"{db.name}.c"
    db.create_collection("c")
    diff = {"op": "u", "ns": ns, "o2": {"_id": 7}, "o": {"$v": 2, "diff": {"u": {"a": 1}}}}
    assert apply(db, [diff])["results"] == [True]
    assert list(db.c.find()) == [{"_id": 7, "a": 1}]
    missing = {**diff, "o2": {"_id": 8}}
    details = failure(db, [missing, {"op": "i", "ns": ns, "o": {"_id": 9}}], alwaysUpsert=False)
    assert details["code"] == 8 and details["codeName"] == "UnknownError"
    assert details["errmsg"] == "applyOps had one or more errors applying ops"
    assert details["applied"] == 2 and details["results"] == [False, True]  # the rest still ran
    assert db.c.count_documents({"_id": 9}) == 1
    # the entry's own b: true upserts even then
    assert apply(db, [{**missing, "b": True}], alwaysUpsert=False)["results"] == [True]
    replacement = {"op": "u", "ns": ns, "o2": {"_id": 10}, "o": {"_id": 10, "r": 1}}
    assert failure(db, [replacement], alwaysUpsert=False)["results"] == [False]


def test_malformed_entries_stop_the_batch_with_their_code(db):
    ns = f"{db.name}.c"
    db.create_collection("c")
    good = {"op": "i", "ns": ns, "o": {"_id": 1}}
    details = failure(db, [good, {"op": "i", "ns": ns, "o": {"a": 1}}, {"op": "i", "ns": ns, "o": {"_id": 3}}])
    assert details["code"] == 4 and details["errmsg"].startswith("Failed to apply insert due to missing _id: ")
    assert details["applied"] == 2 and details["results"] == [True, False]
    assert db.c.count_documents({}) == 1
    details = failure(db, [{"op": "i", "ns": f"{db.name}.nope", "o": {"_id": 1}}])
    assert details["code"] == 26 and "non-existent namespace" in details["errmsg"]
    assert failure(db, [{"op": "u", "ns": ns, "o2": {"_id": 1}, "o": {"$set": {"a": 1}}}])["code"] == 4772600
    assert failure(db, [{"op": "u", "ns": ns, "o2": {"_id": 1}, "o": {"$v": 2}}])["code"] == 4772601
    assert failure(db, [{"op": "c", "ns": f"{db.name}.$cmd", "o": {"frobnicate": 1}}])["code"] == 2
    assert failure(db, [{"op": "x", "ns": ns, "o": {}}])["code"] == 2
    assert failure(db, [{"ns": ns, "o": {}}])["code"] == 14
    assert failure(db, [{"op": "i", "o": {"_id": 1}}])["code"] == 20
    assert failure(db, [{"op": "i", "ns": "nodot", "o": {"_id": 1}}])["code"] == 73
    assert failure(db, "not an array")["code"] == 14
    assert apply(db, []) == {"applied": 0, "results": [], "ok": 1.0}


def test_a_delete_on_a_missing_namespace_is_fine(db):
    assert apply(db, [{"op": "d", "ns": f"{db.name}.nothing", "o": {"_id": 1}}])["results"] == [True]


def test_command_entries(db):
    cmd_ns = f"{db.name}.$cmd"
    ui = Binary(uuid.uuid4().bytes, 4)
    assert apply(db, [{"op": "c", "ns": cmd_ns, "ui": ui,
                       "o": {"create": "c", "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}}])["applied"] == 1
    (entry,) = db.list_collections(filter={"name": "c"})
    assert bytes(entry["info"]["uuid"]) == bytes(ui) and entry["options"] == {}
    db.c.create_index("a")
    for o in ({"create": "c"}, {"collMod": "c", "validationLevel": "moderate"}, {"dropIndexes": "c", "index": "a_1"},
              {"dropIndexes": "c", "index": "a_1"}, {"drop": "absent"}, {"collMod": "absent"}):
        assert apply(db, [{"op": "c", "ns": cmd_ns, "o": o}])["results"] == [True], o  # idempotent as mongod
    assert "a_1" not in db.c.index_information()
    (entry,) = db.list_collections(filter={"name": "c"})
    assert entry["options"] == {"validationLevel": "moderate"}
    details = failure(db, [{"op": "c", "ns": cmd_ns, "o": {"createIndexes": "c", "v": 2, "key": {"b": 1},
                                                          "name": "b_1"}}])
    assert details["code"] == 115
    assert details["errmsg"] == "The createIndexes operation is not supported in applyOps mode"
    assert apply(db, [{"op": "c", "ns": cmd_ns, "ui": ui, "o": {"drop": "c"}}])["results"] == [True]
    assert "c" not in db.list_collection_names()


def test_ui_must_name_the_collection_of_ns(db):
    db.create_collection("c")
    (entry,) = db.list_collections(filter={"name": "c"})
    right = Binary(bytes(entry["info"]["uuid"]), 4)
    ns = f"{db.name}.c"
    assert apply(db, [{"op": "i", "ns": ns, "ui": right, "o": {"_id": 1}}])["results"] == [True]
    other = Binary(uuid.uuid4().bytes, 4)
    details = failure(db, [{"op": "i", "ns": ns, "ui": other, "o": {"_id": 2}}])
    assert details["code"] == 8 and details["results"] == [False]
    assert db.c.count_documents({}) == 1


def test_nested_apply_ops_and_its_depth(db):
    ns = f"{db.name}.c"
    db.create_collection("c")
    inner = {"op": "c", "ns": "admin.$cmd", "o": {"applyOps": [{"op": "i", "ns": ns, "o": {"_id": 1}}]}}
    assert apply(db, [inner])["results"] == [True]
    assert db.c.count_documents({}) == 1
    deep = {"op": "i", "ns": ns, "o": {"_id": 2}}
    for _ in range(10):
        deep = {"op": "c", "ns": "admin.$cmd", "o": {"applyOps": [deep]}}
    details = failure(db, [deep])
    assert details["code"] == 9 and details["errmsg"] == "Too many nested applyOps"
    drop = {"op": "c", "ns": f"{db.name}.$cmd", "o": {"dropDatabase": 1}}
    assert failure(db, [drop, {"op": "i", "ns": ns, "o": {"_id": 3}}])["code"] == 6275900


def test_a_diff_of_a_bucket_document_is_seen_through_the_view(db):
    db.create_collection("m", timeseries={"timeField": "t", "metaField": "k"})
    db.m.insert_many([{"t": T0, "k": 1, "v": 1}])
    (bucket,) = db.system.buckets.m.find()
    later = T0 + dt.timedelta(seconds=5)
    reply = apply(db, [{"op": "u", "ns": f"{db.name}.system.buckets.m", "o2": {"_id": bucket["_id"]},
                        "o": {"$v": 2, "diff": {"scontrol": {"smax": {"u": {"t": later, "v": 2}}},
                                                "sdata": {"st": {"i": {"1": later}}, "sv": {"i": {"1": 2}},
                                                          "s_id": {"i": {"1": 99}}}}}}])
    assert reply["results"] == [True]
    assert sorted((d["v"], d["t"]) for d in db.m.find()) == [(1, T0), (2, later)]
    assert db.m.count_documents({"v": {"$gt": 1}}) == 1


def test_bucket_entries_replace_and_upsert_whole_buckets(db):
    db.create_collection("m", timeseries={"timeField": "t", "metaField": "k"})
    db.m.insert_many([{"t": T0, "k": 1, "v": 1}])
    (bucket,) = db.system.buckets.m.find()
    ns = f"{db.name}.system.buckets.m"
    copy = {**bucket, "_id": type(bucket["_id"])(), "meta": 2}
    entries = [{"op": "u", "ns": ns, "o2": {"_id": copy["_id"]}, "o": copy},  # absent: inserted (alwaysUpsert)
               {"op": "i", "ns": ns, "o": {**bucket, "data": {**bucket["data"], "v": {"0": 5}}}}]  # exists: replaced
    assert apply(db, entries)["results"] == [True, True]
    assert sorted((d["k"], d["v"]) for d in db.m.find()) == [(1, 5), (2, 1)]


def test_time_series_creation_as_mongod_logs_it(db):
    """The buckets collection's create, then the view: a create with viewOn, or an insert into system.views."""
    cmd_ns = f"{db.name}.$cmd"
    options = {"timeField": "t", "metaField": "k", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}
    unpack = [{"$_internalUnpackBucket": {"timeField": "t", "metaField": "k", "bucketMaxSpanSeconds": 3600}}]
    for name, view_entry in (
            ("m1", {"op": "c", "ns": cmd_ns, "o": {"create": "m1", "viewOn": "system.buckets.m1", "pipeline": unpack}}),
            ("m2", {"op": "i", "ns": f"{db.name}.system.views",
                    "o": {"_id": f"{db.name}.m2", "viewOn": "system.buckets.m2", "pipeline": unpack}})):
        entries = [{"op": "c", "ns": cmd_ns, "o": {"create": f"system.buckets.{name}", "clusteredIndex": True,
                                                   "timeseries": options}},
                   {"op": "c", "ns": cmd_ns, "o": {"create": "system.views"}}, view_entry]
        assert apply(db, entries)["results"] == [True] * 3
        db[name].insert_one({"t": T0, "k": 1, "v": 1})
        assert [d["v"] for d in db[name].find()] == [1]
        (entry,) = db.list_collections(filter={"name": name})
        assert entry["type"] == "timeseries" and entry["options"]["timeseries"]["timeField"] == "t"
    assert apply(db, [{"op": "d", "ns": f"{db.name}.system.views", "o": {"_id": f"{db.name}.m2"}}])["applied"] == 1
    assert "m2" not in db.list_collection_names()


def test_apply_ops_under_auth(auth_server, root_client):
    name = "apply_ops_auth"
    root_client.drop_database(name)
    root_client[name].create_collection("c")
    ns = f"{name}.c"
    assert root_client.admin.command("applyOps", [{"op": "i", "ns": ns, "o": {"_id": 1}}])["results"] == [True]
    root_client[name].command("createUser", "writer", pwd="pw", roles=["readWrite"])
    try:
        with auth_server.client(username="writer", password="pw", authSource=name) as writer:
            with pytest.raises(OperationFailure) as info:
                writer.admin.command("applyOps", [{"op": "i", "ns": ns, "o": {"_id": 2}}])
            assert info.value.code == 13 and info.value.details["errmsg"] == "Unauthorized"
        with pytest.raises(OperationFailure) as info:  # an empty batch needs every action everywhere
            root_client.admin.command("applyOps", [])
        assert info.value.code == 13
    finally:
        root_client[name].command("dropAllUsersFromDatabase")
        root_client.drop_database(name)


def test_a_duplicate_key_stops_the_batch_with_its_code(db):
    """apply_ops_dups.js: a write the storage refuses is an exception in mongod's applyOperation, so the
    batch stops there with the write's own code (11000), the entry counted in ``applied``; it was an
    UnknownError after the rest of the batch had run."""
    ns = f"{db.name}.c"
    db.c.insert_one({"_id": 0, "x": 1})
    db.c.create_index("x", unique=True)
    details = failure(db, [{"op": "i", "ns": ns, "o": {"_id": 1, "x": 0}}, {"op": "i", "ns": ns, "o": {"_id": 2, "x": 1}},
                           {"op": "i", "ns": ns, "o": {"_id": 3, "x": 5}}])
    assert details["code"] == 11000 and details["codeName"] == "DuplicateKey"
    assert details["errmsg"].startswith("E11000 duplicate key error")
    assert details["applied"] == 2 and details["results"] == [True, False]
    assert sorted(d["_id"] for d in db.c.find()) == [0, 1]


def test_pre_condition_is_refused(db):
    """Removed in 6.2 (apply_ops1.js): 6711600 and nothing applied, even an empty one."""
    ns = f"{db.name}.c"
    for pre in ([{"ns": ns, "q": {"_id": 5}, "res": {"x": 19}}], []):
        details = failure(db, [{"op": "i", "ns": ns, "o": {"_id": 1}}], preCondition=pre)
        assert details["code"] == 6711600
        assert details["errmsg"] == "applyOps command no longer supports the 'preCondition' option"
    assert db.c.count_documents({}) == 0


@pytest.mark.parametrize("dry_run", [True, 1])
def test_a_collmod_dry_run_is_refused(db, dry_run):
    """coll_mod.cpp (_processCollModDryRunMode): a dry run is not applicable to oplog application or
    applyOps (72), and the index is left as it was (collmod_convert_to_unique_apply_ops.js)."""
    db.d.insert_many([{"a": 1}, {"a": 2}])
    db.d.create_index("a")
    db.command("collMod", "d", index={"keyPattern": {"a": 1}, "prepareUnique": True})
    details = failure(db, [{"op": "c", "ns": f"{db.name}.$cmd",
                            "o": {"collMod": "d", "index": {"keyPattern": {"a": 1}, "unique": True},
                                  "dryRun": dry_run}}])
    assert (details["code"], details["errmsg"]) == (72, "dry run mode is not applicable to oplog application or applyOps")
    assert "unique" not in db.d.index_information()["a_1"]


@pytest.mark.parametrize("mode", ["ApplyOps", "InitialSync", "Recovering", "Secondary"])
def test_each_oplog_application_mode_mongod_parses_is_accepted(db, mode):
    """mongod's OplogApplication::parseMode (repl/oplog.cpp) takes "InitialSync", "Recovering",
    "Secondary" and "ApplyOps" (jstests/noPassthrough/apply_ops_mode.js applies with "InitialSync");
    Tidemark took "Initial Sync", "Unstable Recovery"... and refused those. alwaysUpsert keeps its
    meaning in every mode ("InitialSync does not override alwaysUpsert: false")."""
    ns = f"{db.name}.c"
    db.c.insert_one({"_id": 1})
    update = {"op": "u", "ns": ns, "o": {"_id": 2, "x": 1}, "o2": {"_id": 2}}
    assert failure(db, [update], alwaysUpsert=False, oplogApplicationMode=mode)["code"] == 8
    assert db.c.count_documents({"x": 1}) == 0
    assert apply(db, [update], oplogApplicationMode=mode) == {"applied": 1, "results": [True], "ok": 1.0}
    assert db.c.count_documents({"x": 1}) == 1


@pytest.mark.parametrize("mode", ["BadMode", "Initial Sync", "initialsync", "", "StableRecovering", "applyOps"])
def test_an_oplog_application_mode_mongod_does_not_parse_is_failed_to_parse(db, mode):
    details = failure(db, [{"op": "n", "ns": "", "o": {}}], oplogApplicationMode=mode)
    assert details["code"] == 9
    assert details["errmsg"] == ("Could not parse oplogApplicationMode :: caused by :: "
                                 f"Invalid oplog application mode provided: {mode}")


@pytest.mark.parametrize("value, bson_type", [(5, "int"), (5.5, "double"), (None, "null"), (True, "bool"),
                                              ({"m": "ApplyOps"}, "object"), (["ApplyOps"], "array")])
def test_an_oplog_application_mode_that_is_no_string_is_a_type_mismatch(db, value, bson_type):
    """mongod reads the field with bsonExtractStringField: 14 TypeMismatch (apply_ops_mode.js: a number);
    Tidemark answered 9 FailedToParse, and took null as no mode."""
    details = failure(db, [{"op": "n", "ns": "", "o": {}}], oplogApplicationMode=value)
    assert details["code"] == 14
    assert details["errmsg"] == ("Could not parse out oplogApplicationMode :: caused by :: \"oplogApplicationMode\" "
                                 f"had the wrong type. Expected string, found {bson_type}")
