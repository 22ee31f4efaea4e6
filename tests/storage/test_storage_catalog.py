"""Engine basics: catalog of databases/collections, records, restart, dbpath locking."""

import os
import uuid

import bson
import pytest
from storage_helpers import insert_docs

from tidemark.storage.engine import open_engine
from tidemark.storage.errors import (
    CatalogChanged,
    DbPathInUse,
    DbPathUnusable,
    DuplicateKey,
    NamespaceExists,
    NamespaceNotFound,
)
from tidemark.storage.keys import encode_key


def test_create_and_list_collections_and_databases(engine):
    engine.write_sync(lambda w: w.create_collection("a.x", {"capped": False}))
    engine.write_sync(lambda w: w.create_collection("a.y", {}))
    engine.write_sync(lambda w: w.create_collection("b.system.views", {}))
    with engine.read() as r:
        assert r.list_databases() == ["a", "b"]
        assert [c.name for c in r.list_collections("a")] == ["x", "y"]
        info = r.get_collection("a.x")
        assert info.options == {"capped": False}
        assert isinstance(info.uuid, uuid.UUID)
        assert info.indexes == ({"v": 2, "key": {"_id": 1}, "name": "_id_"},)
        assert r.get_collection("a.z") is None
        assert r.list_collections("ab") == []


def test_database_prefix_does_not_match_longer_database_names(engine):
    engine.write_sync(lambda w: w.create_collection("ab.x", {}))
    engine.write_sync(lambda w: w.create_collection("a.x", {}))
    with engine.read() as r:
        assert [c.ns for c in r.list_collections("a")] == ["a.x"]


def test_create_existing_collection_raises_namespace_exists(engine):
    engine.write_sync(lambda w: w.create_collection("a.x", {}))
    with pytest.raises(NamespaceExists):
        engine.write_sync(lambda w: w.create_collection("a.x", {}))


def test_given_uuid_is_kept_and_clustered_collections_have_no_id_index(engine):
    u = uuid.uuid4()
    info = engine.write_sync(lambda w: w.create_collection("a.system.buckets.t", {}, clustered=True, uuid=u))
    assert info.uuid == u and info.clustered and info.indexes == ()


def test_insert_get_scan_in_insertion_order(engine):
    docs = [{"_id": i, "v": "x" * i} for i in range(50)]
    rids = insert_docs(engine, "a.x", docs)
    assert rids == sorted(rids) and len(set(rids)) == 50
    with engine.read() as r:
        info = r.get_collection("a.x")
        assert bson.decode(r.get(info, rids[7])) == docs[7]
        assert r.get(info, b"\x00" * 7 + b"\xff") is None
        assert [bson.decode(v)["_id"] for _, v in r.scan(info)] == list(range(50))
        assert [bson.decode(v)["_id"] for _, v in r.scan(info, reverse=True)] == list(range(49, -1, -1))
        assert [bson.decode(v)["_id"] for _, v in r.scan(info, start_after=rids[47])] == [48, 49]
        assert [bson.decode(v)["_id"] for _, v in r.scan(info, start_after=rids[2], reverse=True)] == [1, 0]
        assert r.count(info) == 50
        assert r.data_size(info) == sum(len(bson.encode(d)) for d in docs)


def test_duplicate_id_raises_and_writes_nothing(engine):
    insert_docs(engine, "a.x", [{"_id": 1}])

    def fn(w):
        info = w.get_collection("a.x")
        with pytest.raises(DuplicateKey) as caught:
            w.insert(info, bson.encode({"_id": 1.0, "other": 1}), {"_id_": [encode_key([1.0])]})
        assert caught.value.index_name == "_id_"
        assert caught.value.key == encode_key([1])
        return w.count(info)

    assert engine.write_sync(fn) == 1


def test_clustered_collection_rejects_duplicate_record_key(engine):
    def fn(w):
        info = w.create_collection("a.b", {}, clustered=True)
        w.insert(info, bson.encode({"_id": 5}), {}, rid=encode_key([5]))
        with pytest.raises(DuplicateKey):
            w.insert(info, bson.encode({"_id": 5}), {}, rid=encode_key([5]))
        w.insert(info, bson.encode({"_id": 3}), {}, rid=encode_key([3]))
        return [bson.decode(v)["_id"] for _, v in w.scan(info)]

    assert engine.write_sync(fn) == [3, 5]


def test_update_and_delete_adjust_count_and_size(engine):
    rids = insert_docs(engine, "a.x", [{"_id": 1, "v": 1}, {"_id": 2}])

    def fn(w):
        info = w.get_collection("a.x")
        w.update(info, rids[0], bson.encode({"_id": 1, "v": "longer" * 10}))
        assert w.delete(info, rids[1], {"_id_": [encode_key([2])]})
        assert not w.delete(info, rids[1])
        return info

    info = engine.write_sync(fn)
    with engine.read() as r:
        assert r.count(info) == 1
        assert r.data_size(info) == len(bson.encode({"_id": 1, "v": "longer" * 10}))
        assert list(r.index_scan(info, "_id_")) == [(encode_key([1]), rids[0])]


def test_drop_collection_and_database(engine):
    insert_docs(engine, "a.x", [{"_id": 1}])
    insert_docs(engine, "a.y", [{"_id": 1}])
    insert_docs(engine, "b.x", [{"_id": 1}])
    engine.write_sync(lambda w: w.drop_collection("a.x"))
    with pytest.raises(NamespaceNotFound):
        engine.write_sync(lambda w: w.drop_collection("a.x"))
    assert engine.write_sync(lambda w: w.drop_database("a")) == ["a.y"]
    with engine.read() as r:
        assert r.list_databases() == ["b"]
    # a recreated collection starts empty
    insert_docs(engine, "a.x", [{"_id": 9}])
    with engine.read() as r:
        info = r.get_collection("a.x")
        assert [bson.decode(v) for _, v in r.scan(info)] == [{"_id": 9}]
        assert r.data_size(info) == len(bson.encode({"_id": 9}))


def test_reader_snapshot_survives_concurrent_drop(engine):
    insert_docs(engine, "a.x", [{"_id": i} for i in range(10)])
    with engine.read() as r:
        info = r.get_collection("a.x")
        engine.write_sync(lambda w: w.drop_collection("a.x"))
        assert r.count(info) == 10
        assert len(list(r.scan(info))) == 10
    with engine.read() as r:
        assert r.get_collection("a.x") is None


def test_rename_collection_across_databases_keeps_data_and_uuid(engine):
    insert_docs(engine, "a.x", [{"_id": 1}])
    with engine.read() as r:
        before = r.get_collection("a.x")
    engine.write_sync(lambda w: w.rename_collection("a.x", "b.y"))
    with engine.read() as r:
        assert r.get_collection("a.x") is None
        after = r.get_collection("b.y")
        assert after.uuid == before.uuid
        assert [bson.decode(v) for _, v in r.scan(after)] == [{"_id": 1}]
    insert_docs(engine, "a.z", [{"_id": 2}])
    with pytest.raises(NamespaceExists):
        engine.write_sync(lambda w: w.rename_collection("a.z", "b.y"))
    with pytest.raises(NamespaceNotFound):
        engine.write_sync(lambda w: w.rename_collection("a.nope", "b.q"))


def test_set_options_replaces_collection_options(engine):
    engine.write_sync(lambda w: w.create_collection("a.x", {"validator": {"a": 1}}))
    engine.write_sync(lambda w: w.set_options("a.x", {"validator": {"b": 2}, "validationLevel": "moderate"}))
    with engine.read() as r:
        assert r.get_collection("a.x").options == {"validator": {"b": 2}, "validationLevel": "moderate"}


def test_write_with_stale_collection_info_raises_catalog_changed(engine):
    info = engine.write_sync(lambda w: w.create_collection("a.x", {}))
    engine.write_sync(lambda w: w.create_index(w.get_collection("a.x"), {"v": 2, "key": {"a": 1}, "name": "a_1"}))
    with pytest.raises(CatalogChanged):
        engine.write_sync(lambda w: w.insert(info, bson.encode({"_id": 1}), {}))


def test_everything_survives_a_clean_restart(dbpath):
    eng = open_engine(dbpath)
    rids = insert_docs(eng, "a.x", [{"_id": i} for i in range(20)])
    eng.write_sync(lambda w: w.create_collection("a.system.views", {}))
    eng.close()
    eng = open_engine(dbpath)
    try:
        with eng.read() as r:
            info = r.get_collection("a.x")
            assert [c.name for c in r.list_collections("a")] == ["system.views", "x"]
            assert [rid for rid, _ in r.scan(info)] == rids
            assert r.count(info) == 20
        # record ids keep increasing after restart
        more = insert_docs(eng, "a.x", [{"_id": 100}])
        assert more[0] > rids[-1]
    finally:
        eng.close()


def test_second_engine_on_same_dbpath_is_refused(dbpath):
    eng = open_engine(dbpath)
    try:
        with pytest.raises(DbPathInUse, match="already running"):
            open_engine(dbpath)
    finally:
        eng.close()
    open_engine(dbpath).close()  # the lock is released on close


def test_unusable_dbpath_is_refused(tmp_path):
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(DbPathUnusable, match="not a directory"):
        open_engine(str(afile))
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(DbPathUnusable):
            open_engine(str(ro))


def test_write_after_close_raises_engine_closed(dbpath):
    from tidemark.storage.errors import EngineClosed

    eng = open_engine(dbpath)
    eng.close()
    with pytest.raises(EngineClosed):
        eng.write(lambda w: None)


def test_scan_stream_resumes_across_chunks_and_holds_no_transaction(engine):
    rids = insert_docs(engine, "a.x", [{"_id": i} for i in range(25)])
    stream = engine.scan_stream("a.x", chunk=4)
    first = [next(stream) for _ in range(5)]
    # a write between chunks must not block (no read transaction or gate held while suspended)
    insert_docs(engine, "a.x", [{"_id": 25}])
    rest = list(stream)
    assert [rid for rid, _ in first + rest] == rids + [rest[-1][0]]
    assert [rid for rid, _ in engine.scan_stream("a.x", reverse=True, chunk=7)][:2] == [rest[-1][0], rids[-1]]
    assert list(engine.scan_stream("a.nope")) == []


def test_scan_stream_stops_when_collection_is_dropped(engine):
    insert_docs(engine, "a.x", [{"_id": i} for i in range(10)])
    stream = engine.scan_stream("a.x", chunk=3)
    assert len([next(stream) for _ in range(3)]) == 3
    engine.write_sync(lambda w: w.drop_collection("a.x"))
    insert_docs(engine, "a.x", [{"_id": i} for i in range(10)])
    assert list(stream) == []


def test_stale_info_is_accepted_when_indexes_are_unchanged(engine):
    info = engine.write_sync(lambda w: w.create_collection("a.x", {}))
    engine.write_sync(lambda w: w.set_options("a.x", {"validator": {}}))
    rid = engine.write_sync(lambda w: w.insert(info, bson.encode({"_id": 1}), {"_id_": [encode_key([1])]}))
    with engine.read() as r:
        assert r.get(r.get_collection("a.x"), rid) == bson.encode({"_id": 1})


def test_index_ddl_with_an_older_info_applies_to_the_current_entry(engine):
    def fn(w):
        info = w.create_collection("a.x", {})
        w.create_index(info, {"v": 2, "key": {"a": 1}, "name": "a_1"}, [])
        w.create_index(info, {"v": 2, "key": {"b": 1}, "name": "b_1"}, [])
        w.set_index_options(info, "a_1", {"hidden": True})
        return [s["name"] for s in w.drop_index(info, "b_1").indexes]

    assert engine.write_sync(fn) == ["_id_", "a_1"]


def test_info_of_a_dropped_and_recreated_collection_is_rejected(engine):
    old = engine.write_sync(lambda w: w.create_collection("a.x", {}))
    engine.write_sync(lambda w: w.drop_collection("a.x"))
    engine.write_sync(lambda w: w.create_collection("a.x", {}))
    with pytest.raises(CatalogChanged):
        engine.write_sync(lambda w: w.insert(old, bson.encode({"_id": 1}), {}))
    with pytest.raises(CatalogChanged):
        engine.write_sync(lambda w: w.create_index(old, {"v": 2, "key": {"a": 1}, "name": "a_1"}, []))


def test_list_databases_is_sorted_by_name(engine):
    for ns in ("a.x", "a-b.x", "a.y", "b.x"):
        engine.write_sync(lambda w, ns=ns: w.create_collection(ns, {}))
    with engine.read() as r:
        assert r.list_databases() == ["a", "a-b", "b"]


def test_update_of_a_missing_record_raises(engine):
    from tidemark.storage.errors import StorageError

    insert_docs(engine, "a.x", [{"_id": 1}])
    with pytest.raises(StorageError, match="not found"):
        engine.write_sync(lambda w: w.update(w.get_collection("a.x"), b"\x00" * 8, bson.encode({"_id": 1})))


def test_invalid_namespace_is_rejected(engine):
    from tidemark.storage.errors import InvalidNamespace

    with pytest.raises(InvalidNamespace, match="Invalid namespace"):
        engine.write_sync(lambda w: w.create_collection("nodot", {}))


def test_running_out_of_sub_databases_is_a_clear_error_and_drop_frees_slots(dbpath):
    from tidemark.storage.errors import TooManyCollections

    eng = open_engine(dbpath, max_dbs=13)  # 5 internal + 2 per collection
    try:
        for n in range(4):
            eng.write_sync(lambda w, n=n: w.create_collection(f"a.c{n}", {}))
        with pytest.raises(TooManyCollections, match="at most 13"):
            eng.write_sync(lambda w: w.create_collection("a.c4", {}))
        with eng.read() as r:
            assert r.get_collection("a.c4") is None
        eng.write_sync(lambda w: w.drop_collection("a.c0"))
        eng.write_sync(lambda w: None)  # reclaim closes the dropped sub-databases
        eng.write_sync(lambda w: w.create_collection("a.c4", {}))
    finally:
        eng.close()


def test_lock_file_holds_the_pid_while_open_and_is_empty_after_clean_close(dbpath):
    eng = open_engine(dbpath)
    lock = os.path.join(dbpath, "mongod.lock")
    with open(lock) as f:
        assert f.read().strip() == str(os.getpid())
    eng.close()
    assert os.path.getsize(lock) == 0


def test_clustered_scan_with_id_bounds_in_both_directions(engine):
    def fn(w):
        info = w.create_collection("a.system.buckets.t", {}, clustered=True)
        for i in [5, 1, 9, 3, 7]:
            w.insert(info, bson.encode({"_id": i}), {}, rid=encode_key([i]))
        return info

    engine.write_sync(fn)
    with engine.read() as r:
        info = r.get_collection("a.system.buckets.t")

        def ids(**kw):
            return [bson.decode(v)["_id"] for _, v in r.scan(info, **kw)]

        assert ids() == [1, 3, 5, 7, 9]
        assert ids(lo=encode_key([3]), hi=encode_key([7])) == [3, 5, 7]
        assert ids(lo=encode_key([3]), hi=encode_key([7]), lo_inclusive=False, hi_inclusive=False) == [5]
        assert ids(lo=encode_key([3]), reverse=True) == [9, 7, 5, 3]
        assert ids(hi=encode_key([7]), reverse=True, start_after=encode_key([5])) == [3, 1]
    got = [bson.decode(v)["_id"] for _, v in engine.scan_stream("a.system.buckets.t", chunk=2, lo=encode_key([2]))]
    assert got == [3, 5, 7, 9]
