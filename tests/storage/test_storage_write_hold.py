"""Engine.hold_writes / release_writes (the fsync lock): writes queued before the hold commit, later
ones wait uncommitted until release; close releases a held writer."""

import bson

from tidemark.storage.engine import open_engine
from tidemark.storage.keys import encode_key


def _insert(n):
    def fn(w):
        doc = {"_id": n}
        return w.insert(w.get_collection("db.c"), bson.encode(doc), {"_id_": [encode_key([n])]})

    return fn


def _count(engine):
    with engine.read() as r:
        return r.count(r.get_collection("db.c"))


def test_hold_commits_what_is_queued_then_holds_later_writes(engine):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    before = engine.write(_insert(1))
    held = engine.hold_writes()
    held.result(5)
    assert before.done() and _count(engine) == 1
    later = engine.write(_insert(2))
    assert not later.done()
    assert _count(engine) == 1
    engine.release_writes()
    later.result(5)
    assert _count(engine) == 2


def test_close_releases_a_held_writer(dbpath):
    engine = open_engine(dbpath)
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    engine.hold_writes().result(5)
    queued = engine.write(_insert(1))
    engine.close()  # must not hang: the queued write commits, then the environment closes
    assert queued.done() and queued.exception() is None
    engine = open_engine(dbpath)
    try:
        assert _count(engine) == 1
    finally:
        engine.close()
