"""Injected commit failures (storage/faults.py): the next N group commits fail like a full disk or an
I/O error — every write of the group gets the error and nothing of it is written — then commits work."""

import os

import bson
import pytest

from tidemark.storage.errors import CommitFailed, OutOfDiskSpace
from tidemark.storage.keys import encode_key


def insert(engine, _id):
    def fn(w):
        info = w.get_collection("db.c")
        return w.insert(info, bson.encode({"_id": _id}), {"_id_": [encode_key([_id])]})

    return engine.write(fn)


def count(engine):
    with engine.read() as r:
        return r.count(r.get_collection("db.c"))


@pytest.mark.parametrize("kind, error, code", [("ENOSPC", OutOfDiskSpace, 14031), ("EIO", CommitFailed, 8)])
def test_the_next_n_commits_fail_and_write_nothing(engine, kind, error, code):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    engine.faults.fail_next(2, kind)
    for i in range(2):
        with pytest.raises(error) as info:
            insert(engine, i).result()
        assert info.value.code == code and "injected" in info.value.message
        assert count(engine) == 0
    insert(engine, 7).result()
    assert count(engine) == 1 and engine.faults.injected == 2 and engine.faults.remaining == 0


def test_a_failed_commit_fails_every_write_of_its_group(engine):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    engine.faults.fail_next(1)
    futures = [insert(engine, i) for i in range(50)]
    outcomes = [f.exception() for f in futures]
    failed = [e for e in outcomes if e is not None]
    assert failed and all(isinstance(e, OutOfDiskSpace) for e in failed)
    assert count(engine) == len(outcomes) - len(failed)  # the failed group wrote nothing


def test_unknown_kinds_and_negative_counts_are_refused(engine):
    with pytest.raises(ValueError):
        engine.faults.fail_next(1, "EPERM")
    with pytest.raises(ValueError):
        engine.faults.fail_next(-1)
    engine.faults.fail_next(0)
    assert engine.faults.remaining == 0


# --- every place the engine can find the disk full answers OutOfDiskSpace 14031, never 1 InternalError ---


def test_a_full_disk_while_the_map_grows_fails_the_writes_with_out_of_disk_space(dbpath):
    from tidemark.storage.engine import open_engine

    with open_engine(dbpath, map_size=1 << 20) as small:  # 1 MiB: the next big group must grow the map
        small.write_sync(lambda w: w.create_collection("db.c", {}))
        small.faults.fail_next(1, "ENOSPC", at="grow")
        big = [bson.encode({"_id": i, "pad": os.urandom(4000)}) for i in range(400)]  # incompressible

        def fill(w):
            info = w.get_collection("db.c")
            for i, doc in enumerate(big):
                w.insert(info, doc, {"_id_": [encode_key([i])]})

        with pytest.raises(OutOfDiskSpace) as info:
            small.write_sync(fill)
        assert info.value.code == 14031 and info.value.code_name == "OutOfDiskSpace"
        with small.read() as r:
            assert r.count(r.get_collection("db.c")) == 0
        small.write_sync(fill)  # space again: the same write succeeds (the map grows)
        with small.read() as r:
            assert r.count(r.get_collection("db.c")) == 400


def test_a_full_disk_during_a_journal_append_fails_only_that_write(engine):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    engine.faults.fail_next(1, "ENOSPC", at="journal")
    journal = engine.write(lambda w: w.journal_append(b"s", b"payload"))
    other = insert(engine, 1)  # same group: unaffected
    with pytest.raises(OutOfDiskSpace) as info:
        journal.result()
    assert info.value.code == 14031
    assert other.result()
    with engine.read() as r:
        assert list(r.journal_scan(b"s")) == []
    assert engine.write_sync(lambda w: w.journal_append(b"s", b"payload")) >= 1


@pytest.mark.parametrize("kind, error, code", [("ENOSPC", OutOfDiskSpace, 14031), ("EIO", CommitFailed, 8)])
def test_a_failed_index_build_leaves_no_index(engine, kind, error, code):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    insert(engine, 1).result()
    engine.faults.fail_next(1, kind, at="index")

    def build(w):
        return w.create_index(w.get_collection("db.c"), {"v": 2, "key": {"a": 1}, "name": "a_1"},
                              [(encode_key([None]), b"\0" * 7 + b"\1")])

    with pytest.raises(error) as info:
        engine.write_sync(build)
    assert info.value.code == code
    with engine.read() as r:
        assert [s["name"] for s in r.get_collection("db.c").indexes] == ["_id_"]
    engine.write_sync(build)
    with engine.read() as r:
        assert [s["name"] for s in r.get_collection("db.c").indexes] == ["_id_", "a_1"]


def test_one_mapping_of_failed_calls_to_storage_errors():
    import errno

    import lmdb

    from tidemark.storage.errors import StorageError, is_out_of_space, storage_failure

    for exc in (OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EDQUOT, "Disk quota exceeded"),
                lmdb.DiskError("mdb_txn_commit: No space left on device"),
                lmdb.Error("mdb_env_set_mapsize: No space left on device")):
        assert is_out_of_space(exc)
        assert isinstance(storage_failure(exc), OutOfDiskSpace)
    assert isinstance(storage_failure(OSError(errno.EIO, "Input/output error")), CommitFailed)
    assert isinstance(storage_failure(lmdb.CorruptedError("bad page")), CommitFailed)
    assert not is_out_of_space(ValueError("No space left on device"))  # only OS and LMDB failures
    boom = ValueError("x")
    assert storage_failure(boom) is boom
    assert isinstance(storage_failure(KeyboardInterrupt()), StorageError)


def test_a_full_disk_when_the_lock_file_is_written_is_a_clear_error_and_releases_the_lock(dbpath, monkeypatch):
    import errno

    from tidemark.storage import dbpath as dbpath_mod
    from tidemark.storage.engine import open_engine

    real_write = dbpath_mod.os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(dbpath_mod.os, "write", full)
    with pytest.raises(OutOfDiskSpace) as info:
        open_engine(dbpath)
    assert "lock file" in info.value.message and info.value.code == 14031
    monkeypatch.setattr(dbpath_mod.os, "write", real_write)
    open_engine(dbpath).close()  # the lock was released


def test_a_write_too_large_for_one_transaction_answers_a_mongodb_code(engine):
    """LMDB's MDB_TXN_FULL (more dirty pages than one transaction holds) for a write alone in its group:
    388 TransactionTooLargeForCache (was a bare StorageError: 1 InternalError); the others still commit."""
    import lmdb

    from tidemark.storage.errors import TransactionTooLarge

    engine.write_sync(lambda w: w.create_collection("db.c", {}))

    def huge(w):
        raise lmdb.TxnFullError("mdb_put: MDB_TXN_FULL: Transaction has too many dirty pages")

    future = engine.write(huge)
    others = [insert(engine, i) for i in range(3)]
    with pytest.raises(TransactionTooLarge) as info:
        future.result()
    assert (info.value.code, info.value.code_name) == (388, "TransactionTooLargeForCache")
    assert all(f.result() for f in others) and count(engine) == 3


def test_a_compaction_on_a_full_disk_is_one_warning_and_leaves_the_data(dbpath, monkeypatch, caplog):
    import errno
    import logging

    from tidemark.storage import compact
    from tidemark.storage.engine import open_engine

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(compact, "rebuild", full)
    engine = open_engine(dbpath, compact_on_close=True)
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    insert(engine, 1).result()
    with caplog.at_level(logging.WARNING, logger="tidemark.storage"):
        engine.close()
    assert engine.last_compaction is None
    assert any("disk is full" in r.getMessage() for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records)  # no traceback
    with open_engine(dbpath) as again:
        assert count(again) == 1
