"""Injected commit failures (storage/faults.py): the next N group commits fail like a full disk or an
I/O error — every write of the group gets the error and nothing of it is written — then commits work."""

import bson
import pytest

from storage.errors import CommitFailed, OutOfDiskSpace
from storage.keys import encode_key


def insert(engine, _id):
    def fn(w):
        info = w.get_collection("db.c")
        return w.insert(info, bson.encode({"_id": _id}), {"_id_": [encode_key([_id])]})

    return engine.write(fn)


def count(engine):
    with engine.read() as r:
        return r.count(r.get_collection("db.c"))


@pytest.mark.parametrize("kind, error, code", [("ENOSPC", OutOfDiskSpace, 100), ("EIO", CommitFailed, 8)])
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
