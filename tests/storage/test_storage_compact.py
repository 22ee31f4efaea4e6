"""Compaction at close: a packed copy replaces data.mdb; every reader sees the same bytes; a crash or a
failure at any step leaves a database that opens with all its data."""

import os
import pickle
import subprocess
import sys

import bson
import pytest
from compact_helpers import CLUSTERED, REGULAR, clustered_keys, populate, regular_keys, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage import chunks, compact
from tidemark.storage.engine import open_engine
from tidemark.storage.keys import encode_key

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def data_file(dbpath):
    return os.path.join(dbpath, "data.mdb")


def populated(dbpath, **kwargs):
    engine = open_engine(dbpath, compact_on_close=False)
    populate(engine, **kwargs)
    expected = snapshot(engine)
    engine.close()
    return expected


def reopen_snapshot(dbpath):
    engine = open_engine(dbpath, compact_on_close=False)
    try:
        return snapshot(engine)
    finally:
        engine.close()


def pages(dbpath, names):
    engine = open_engine(dbpath, compact_on_close=False)
    try:
        with engine._env.begin() as txn:
            out = {}
            for name in names:
                db = engine._env.open_db(name, txn=txn, create=False)
                out[name] = txn.stat(db)
            return out
    finally:
        engine.close()


def test_compaction_keeps_every_record_index_and_journal_entry(dbpath):
    expected = populated(dbpath)
    size_before = os.path.getsize(data_file(dbpath))
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()
    assert engine.last_compaction is not None and engine.last_compaction.chunked > 0
    assert os.path.getsize(data_file(dbpath)) < size_before
    assert not os.path.exists(os.path.join(dbpath, compact.TMP_DIR))
    assert reopen_snapshot(dbpath) == expected
    # a second compaction reads chunked values and writes the same layout again
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()
    assert reopen_snapshot(dbpath) == expected


def test_large_values_are_chunked_into_full_pages(dbpath):
    populated(dbpath)
    engine = open_engine(dbpath, compact_on_close=True)
    with engine.read() as r:
        info = r.get_collection(REGULAR)
        value_bytes = sum(len(v) for _, v in r.scan(info))  # an upper bound: values are compressed
    engine.close()
    engine = open_engine(dbpath, compact_on_close=False)
    with engine.read() as r:  # collStats' storageSize counts the pieces too
        sizes = {ns: r.storage_size(r.get_collection(ns)) for ns in (REGULAR, CLUSTERED)}
    engine.close()
    stats = pages(dbpath, [b"r:c1", b"r:c4", b"_chunks"])
    pieces = sum(sizes.values()) - 4096 * sum(
        stats[name][k] for name in (b"r:c1", b"r:c4") for k in ("branch_pages", "leaf_pages", "overflow_pages"))
    chunk_pages = 4096 * sum(stats[b"_chunks"][k] for k in ("branch_pages", "leaf_pages", "overflow_pages"))
    assert chunk_pages * 0.95 <= pieces <= chunk_pages
    assert stats[b"r:c1"]["overflow_pages"] == 0
    assert stats[b"_chunks"]["overflow_pages"] == 0
    leaf = stats[b"r:c1"]["leaf_pages"] + stats[b"_chunks"]["leaf_pages"]
    assert leaf * 4096 * 0.9 < value_bytes * 1.1  # pages ~full (LMDB alone leaves them half empty)


def test_update_and_delete_of_chunked_records_free_their_pieces(dbpath):
    populated(dbpath)
    open_engine(dbpath, compact_on_close=True).close()
    engine = open_engine(dbpath, compact_on_close=False)
    try:
        with engine.read() as r:
            info = r.get_collection(CLUSTERED)
            chunked = [rid for rid, _ in r.scan(info)
                       if chunks.is_chunked(r._txn.get(rid, db=r._records(info)))]
        assert len(chunked) >= 3
        with engine._env.begin() as txn:
            pieces_before = txn.stat(engine._chunks_db)["entries"]
        replaced = {"_id": 10**6, "k": 1, "t": 2, "pad": b"small"}
        big = {"_id": 10**6 + 1, "k": 3, "t": 4, "pad": os.urandom(7000)}

        def fn(w):
            info = w.get_collection(CLUSTERED)
            olds = [bson.decode(w.get(info, rid)) for rid in chunked[:3]]
            w.update(info, chunked[0], bson.encode(replaced), clustered_keys(olds[0]), clustered_keys(replaced))
            w.update(info, chunked[1], bson.encode(big), clustered_keys(olds[1]), clustered_keys(big))
            assert w.delete(info, chunked[2], clustered_keys(olds[2]))

        engine.write_sync(fn)
        with engine.read() as r:
            info = r.get_collection(CLUSTERED)
            assert bson.decode(r.get(info, chunked[0])) == replaced
            assert bson.decode(r.get(info, chunked[1])) == big
            assert r.get(info, chunked[2]) is None
            assert r.data_size(info) == sum(len(v) for _, v in r.scan(info))
        with engine._env.begin() as txn:
            assert txn.stat(engine._chunks_db)["entries"] < pieces_before
    finally:
        engine.close()
    expected = reopen_snapshot(dbpath)
    open_engine(dbpath, compact_on_close=True).close()
    assert reopen_snapshot(dbpath) == expected


def test_dropping_a_collection_deletes_its_pieces(dbpath):
    populated(dbpath)
    open_engine(dbpath, compact_on_close=True).close()
    engine = open_engine(dbpath, compact_on_close=False)
    try:
        with engine._env.begin() as txn:
            raw = txn.get(chunks.range_key("c4"), db=engine._meta_db)
            lo, hi = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
            total = txn.stat(engine._chunks_db)["entries"]
        assert hi > lo
        engine.write_sync(lambda w: w.drop_collection(CLUSTERED))
        with engine._env.begin() as txn:
            assert txn.stat(engine._chunks_db)["entries"] == total - (hi - lo)
            assert txn.get(chunks.range_key("c4"), db=engine._meta_db) is None
        with engine.read() as r:  # the other collection still reads
            info = r.get_collection(REGULAR)
            assert r.count(info) == len(list(r.scan(info)))
    finally:
        engine.close()


def test_small_database_is_not_compacted_unless_asked(dbpath):
    engine = open_engine(dbpath)
    engine.write_sync(lambda w: w.create_collection("db.small", {}))
    inode = os.stat(data_file(dbpath)).st_ino
    engine.close()
    assert engine.last_compaction is None
    assert os.stat(data_file(dbpath)).st_ino == inode


def test_compaction_runs_by_default_when_much_space_is_reclaimable(dbpath):
    populated(dbpath, n=600)
    engine = open_engine(dbpath)
    engine.close()
    assert engine.last_compaction is not None


def test_a_database_too_large_to_copy_at_shutdown_is_compacted_only_when_asked(dbpath, monkeypatch):
    populated(dbpath, n=600)
    monkeypatch.setattr(compact, "MAX_AUTO_PAGES", 64)
    engine = open_engine(dbpath)
    engine.close()
    assert engine.last_compaction is None
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()
    assert engine.last_compaction is not None


def test_compaction_never_runs_when_disabled(dbpath):
    populated(dbpath)
    inode = os.stat(data_file(dbpath)).st_ino
    engine = open_engine(dbpath, compact_on_close=False)
    engine.close()
    assert os.stat(data_file(dbpath)).st_ino == inode


def test_a_failing_copy_leaves_the_data_file_untouched(dbpath, monkeypatch):
    expected = populated(dbpath)
    inode = os.stat(data_file(dbpath)).st_ino
    calls = []

    def failing_put(self, key, value, db):
        calls.append(key)
        if len(calls) > 100:
            raise OSError(28, "No space left on device")
        return real_put(self, key, value, db)

    real_put = compact._Copier.put
    monkeypatch.setattr(compact._Copier, "put", failing_put)
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()  # does not raise
    assert engine.last_compaction is None
    assert os.stat(data_file(dbpath)).st_ino == inode
    assert not os.path.exists(os.path.join(dbpath, compact.TMP_DIR))
    assert reopen_snapshot(dbpath) == expected


def test_a_copy_that_does_not_verify_is_not_swapped_in(dbpath, monkeypatch):
    expected = populated(dbpath)
    real_put = compact._Copier.put
    lost = []

    def lossy_put(self, key, value, db):
        if not lost and key.startswith(b"\x14"):  # one index entry (a number key) goes missing
            lost.append(key)
            return None
        return real_put(self, key, value, db)

    monkeypatch.setattr(compact._Copier, "put", lossy_put)
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()
    assert lost and engine.last_compaction is None
    assert reopen_snapshot(dbpath) == expected


def test_a_failing_rename_keeps_the_old_complete_file(dbpath, monkeypatch):
    expected = populated(dbpath)

    def failing_replace(src, dst):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(compact.os, "replace", failing_replace)
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()
    monkeypatch.undo()
    assert not os.path.exists(os.path.join(dbpath, compact.TMP_DIR))
    assert reopen_snapshot(dbpath) == expected


def test_a_leftover_copy_is_removed_at_open(dbpath):
    expected = populated(dbpath)
    tmp = os.path.join(dbpath, compact.TMP_DIR)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "data.mdb"), "wb") as f:
        f.write(b"\x00" * 8192)  # a copy cut short
    assert reopen_snapshot(dbpath) == expected
    assert not os.path.exists(tmp)


def test_another_process_with_the_environment_open_prevents_compaction(dbpath):
    expected = populated(dbpath)
    inode = os.stat(data_file(dbpath)).st_ino
    reader = subprocess.Popen(
        [sys.executable, "-c",
         "import lmdb, sys; env = lmdb.open(sys.argv[1], readonly=True, max_dbs=64); "
         "txn = env.begin(); print('ready', flush=True); sys.stdin.read()", dbpath],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "ready"
        engine = open_engine(dbpath, compact_on_close=True)
        engine.close()
        assert engine.last_compaction is None
        assert os.stat(data_file(dbpath)).st_ino == inode
    finally:
        reader.communicate("", timeout=30)
    assert reopen_snapshot(dbpath) == expected


@pytest.mark.parametrize("step", ["copy", "copied", "renamed", "swapped", "none"])
def test_sigkill_at_any_step_of_compaction_loses_nothing(tmp_path, step):
    dbpath = str(tmp_path / "db")
    snap = str(tmp_path / "snapshot.pickle")
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "compact_crasher.py"), dbpath, snap, step],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == (0 if step == "none" else -9), proc.stderr
    with open(snap, "rb") as f:
        expected = pickle.load(f)
    assert reopen_snapshot(dbpath) == expected
    assert not os.path.exists(os.path.join(dbpath, compact.TMP_DIR))
    engine = open_engine(dbpath, compact_on_close=False)  # and it still takes writes
    try:
        doc = {"_id": -1, "k": 0, "t": 0, "pad": b"after"}
        engine.write_sync(lambda w: w.insert(w.get_collection(REGULAR), bson.encode(doc), regular_keys(doc)))
        with engine.read() as r:
            info = r.get_collection(REGULAR)
            [(_, rid)] = r.index_scan(info, "_id_", encode_key([-1]), encode_key([-1]))
            assert bson.decode(r.get(info, rid)) == doc
    finally:
        engine.close()


def test_compaction_converts_plain_non_unique_indexes_to_the_split_layout(dbpath, monkeypatch):
    from tidemark.storage.txn import WriteTxn

    real_create = WriteTxn._create_db
    monkeypatch.setattr(WriteTxn, "_create_db", lambda self, name, dupsort=False: real_create(self, name))
    expected = populated(dbpath)  # as written before the split layout existed: no dupsort index
    monkeypatch.undo()
    names = [b"i:x3", b"i:x5", b"i:x6"]  # k_1, k_1_t_-1, m_1_t_1
    assert not any(stat["dupsort"] for stat in _flags(dbpath, names + [b"i:x2"]).values())
    open_engine(dbpath, compact_on_close=True).close()
    flags = _flags(dbpath, names + [b"i:x2"])
    assert all(flags[name]["dupsort"] for name in names) and not flags[b"i:x2"]["dupsort"]  # _id_ is unique
    assert reopen_snapshot(dbpath) == expected
    engine = open_engine(dbpath, compact_on_close=False)  # writes keep the converted indexes right
    try:
        doc = {"_id": 10**6, "k": 3, "t": 5, "pad": b"new"}
        engine.write_sync(lambda w: w.insert(w.get_collection(CLUSTERED), bson.encode(doc), clustered_keys(doc),
                                             rid=encode_key([doc["_id"]])))
        with engine.read() as r:
            info = r.get_collection(CLUSTERED)
            hits = list(r.index_scan(info, "k_1_t_-1", encode_key([3]), encode_key([3])))
            assert (encode_key([3, 5], [1, -1]), encode_key([10**6])) in hits
            assert len(list(r.index_scan(info, "m_1_t_1"))) == r.count(info)
    finally:
        engine.close()


def _flags(dbpath, names):
    engine = open_engine(dbpath, compact_on_close=False)
    try:
        with engine._env.begin() as txn:
            return {name: engine._env.open_db(name, txn=txn, create=False).flags(txn) for name in names}
    finally:
        engine.close()


def test_values_of_a_third_of_a_page_are_chunked_to_fill_pages(dbpath):
    """Values that fit a leaf node but not the room left in the page (1.5 KB: two per 4 KiB page inline)
    are split across the page boundary instead of leaving the rest of the page empty."""
    from storage_helpers import insert_docs

    docs = [{"_id": i, "blob": os.urandom(1480)} for i in range(300)]  # incompressible
    engine = open_engine(dbpath, compact_on_close=False)
    insert_docs(engine, "db.third", docs)
    engine.close()
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()
    engine = open_engine(dbpath, compact_on_close=False)
    with engine.read() as r:
        info = r.get_collection("db.third")
        assert [bson.decode(v) for _, v in r.scan(info)] == docs
        ident = info.ident
    engine.close()
    stats = pages(dbpath, [f"r:{ident}".encode(), b"_chunks"])
    leaf = sum(s["leaf_pages"] for s in stats.values())
    value_bytes = sum(len(bson.encode(d)) for d in docs)
    assert stats[b"_chunks"]["entries"] > 0
    assert leaf * 4096 * 0.92 < value_bytes  # inline, two per page: 73 % full


def test_half_empty_leaf_pages_of_values_inserted_out_of_order_call_for_compaction(dbpath):
    """Values of ~1.5 KB (a compressed time-series bucket) inserted out of key order leave about one
    value per leaf page after splits: no free page and no overflow page shows that waste, so the
    estimate samples the mean node size (it once left a 1-day TSBS load at 13 B/row instead of 4.9)."""
    import random

    rng = random.Random(3)
    engine = open_engine(dbpath, compressor="none")
    engine.write_sync(lambda w: w.create_collection("db.half", {"clusteredIndex": True}, clustered=True))
    ids = list(range(2000))
    rng.shuffle(ids)
    for start in range(0, len(ids), 100):
        docs = [(i, bson.encode({"_id": i, "pad": rng.randbytes(1500)})) for i in ids[start:start + 100]]

        def batch(w, docs=docs):
            coll = w.get_collection("db.half")
            for i, doc in docs:
                w.insert(coll, doc, {}, rid=encode_key([i]))

        engine.write_sync(batch)
    before = os.path.getsize(data_file(dbpath))
    engine.close()
    assert engine.last_compaction is not None
    assert os.path.getsize(data_file(dbpath)) < 0.8 * before


def test_dupsort_index_keys_with_many_duplicates_fill_leaf_pages(dbpath):
    """A split index whose keys each carry a sub-page of duplicates (a time-series buckets index: a
    ~190-byte meta and 24 buckets, ~1.2 KB nodes) packs three nodes per page, not two: LMDB moves the
    previous key with a node that outgrows its page, so the compaction appends a placeholder first."""
    metas = [f"{i:04d}-" + "m" * 180 for i in range(100)]
    docs = [{"_id": j * 100 + i, "m": metas[i], "t": f"{j:020d}"} for i in range(100) for j in range(24)]

    def keys(d):
        return {"_id_": [encode_key([d["_id"]])], "m_1_t_1": [encode_key([d["m"], d["t"]])]}

    def fn(w):
        info = w.create_collection("db.idx", {})
        info = w.create_index(info, {"v": 2, "key": {"m": 1, "t": 1}, "name": "m_1_t_1"}, [])
        for d in docs:
            w.insert(info, bson.encode(d), keys(d))

    engine = open_engine(dbpath, compact_on_close=False)
    engine.write_sync(fn)
    with engine.read() as r:
        info = r.get_collection("db.idx")
        before = list(r.index_scan(info, "m_1_t_1"))
        name = f"i:{info.index_idents['m_1_t_1']}".encode()
    engine.close()
    engine = open_engine(dbpath, compact_on_close=True)
    engine.close()
    engine = open_engine(dbpath, compact_on_close=False)
    with engine.read() as r:
        info = r.get_collection("db.idx")
        assert list(r.index_scan(info, "m_1_t_1")) == before
        assert list(r.index_scan(info, "m_1_t_1", reverse=True)) == before[::-1]
    with engine._env.begin() as txn:
        db = engine._env.open_db(name, txn=txn, create=False)
        stat = txn.stat(db)
    engine.close()
    assert stat["entries"] == len(docs)
    assert stat["leaf_pages"] <= 35, stat  # 100 nodes of ~1.2 KB, three per page (two: 50 pages)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.binary(min_size=1, max_size=40), st.lists(st.binary(min_size=1, max_size=60),
                                                                       min_size=1, max_size=40)),
                min_size=1, max_size=60),
       st.integers(0, 3000))
def test_dupsort_copy_appends_exactly_the_source_entries(tmp_path_factory, groups, pad):
    """Placeholders change only the page layout: the copy holds the source's entries, no more."""
    import lmdb

    entries = sorted({(k, v) for k, vs in groups for v in vs})
    env = lmdb.open(str(tmp_path_factory.mktemp("dup")), max_dbs=4, map_size=1 << 26)
    try:
        copier = compact._Copier(env)
        db = env.open_db(b"x", txn=copier.txn, dupsort=True)
        filler = env.open_db(b"f", txn=copier.txn)
        compact._append_dupsort(iter(entries), copier, db, compact.PageModel(4096))
        assert not copier.placeholders
        copier.put(b"f", b"\0" * pad, filler)
        copier.commit()
        with env.begin() as txn:
            assert [(bytes(k), bytes(v)) for k, v in txn.cursor(db)] == entries
    finally:
        env.close()


@given(st.binary(max_size=12), st.binary(max_size=12))
def test_separator_lies_strictly_between(a, b):
    lo, hi = sorted((a, b))
    s = compact.separator(lo, hi)
    if s is not None:
        assert lo < s < hi
    else:
        assert lo == hi or hi == lo + b"\0"
