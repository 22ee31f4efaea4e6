"""The read gate (map resize / handle close only with no read open) and dropped-storage reclaim."""

import threading
import time

import bson
import pytest
from storage_helpers import insert_docs

from tidemark.storage.catalog import index_db_name, records_db_name
from tidemark.storage.errors import StorageDropped
from tidemark.storage.gate import ReadGate


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


def test_exclusive_waits_for_open_reads_and_holds_new_ones_back():
    gate = ReadGate()
    events = []
    gate.enter()

    def writer():
        with gate.exclusive():
            events.append("exclusive")
            time.sleep(0.05)
            events.append("exclusive done")

    def late_reader():
        gate.enter()
        events.append("late reader")
        gate.leave()

    t = threading.Thread(target=writer)
    t.start()
    wait_until(lambda: gate._exclusive)
    assert events == []  # still waiting for the open read
    late = threading.Thread(target=late_reader)
    late.start()
    time.sleep(0.02)
    assert events == []  # a new reader waits behind the pending exclusive section
    gate.leave()
    t.join(5)
    late.join(5)
    assert events == ["exclusive", "exclusive done", "late reader"]


def test_a_thread_inside_a_read_may_nest_reads_while_exclusive_is_pending():
    gate = ReadGate()
    gate.enter()
    t = threading.Thread(target=lambda: gate.exclusive().__enter__())
    t.start()
    wait_until(lambda: gate._exclusive)
    gate.enter()  # must not deadlock: this thread already holds a read
    gate.leave()
    gate.leave()
    t.join(5)
    assert not t.is_alive()


def test_engine_reading_tells_whether_this_thread_is_inside_a_read(engine):
    seen = []
    assert not engine.reading()
    with engine.read():
        assert engine.reading()
        other = threading.Thread(target=lambda: seen.append(engine.reading()))  # per thread
        other.start()
        other.join(5)
        with engine.read():
            assert engine.reading()
        assert engine.reading()
    assert not engine.reading() and seen == [False]


def test_if_idle_runs_only_without_open_reads():
    gate = ReadGate()
    ran = []
    gate.enter()
    assert not gate.if_idle(lambda: ran.append(1))
    gate.leave()
    assert gate.if_idle(lambda: ran.append(2))
    assert ran == [2]


def test_dropped_collection_storage_is_deleted_once_no_read_is_open(engine):
    insert_docs(engine, "a.x", [{"_id": i} for i in range(10)])
    with engine.read() as r:
        info = r.get_collection("a.x")
    names = [records_db_name(info.ident)] + [index_db_name(i) for i in info.index_idents.values()]
    engine.write_sync(lambda w: w.drop_collection("a.x"))
    engine.write_sync(lambda w: None)  # reclaim runs after a group when idle
    with engine._env.begin() as txn:
        assert all(txn.get(name) is None for name in names)
    assert all(name not in engine._handles for name in names)
    # the namespace is reusable and independent
    insert_docs(engine, "a.x", [{"_id": "new"}])
    with engine.read() as r:
        assert [bson.decode(v) for _, v in r.scan(r.get_collection("a.x"))] == [{"_id": "new"}]


def test_dropped_storage_survives_while_a_reader_might_use_it(engine):
    insert_docs(engine, "a.x", [{"_id": 1}])
    with engine.read() as r:
        info = r.get_collection("a.x")
        engine.write_sync(lambda w: w.drop_collection("a.x"))
        engine.write_sync(lambda w: None)
        assert r.count(info) == 1  # the old snapshot still reads through its handle
    engine.write_sync(lambda w: None)  # its group's reclaim runs after its reply is given...
    engine.write_sync(lambda w: None)  # ...and before the next group: done once this one is answered
    assert records_db_name(info.ident) not in engine._handles
    with engine.read() as r, pytest.raises(StorageDropped):
        r.count(info)  # a stale info after the reclaim: a clear error, not a wrong handle


def test_a_read_view_kept_past_its_block_holds_nothing_and_fails_loudly(engine):
    insert_docs(engine, "a.x", [{"_id": 1}])
    with engine.read() as r:
        info = r.get_collection("a.x")
        assert r.count(info) == 1
    assert engine._gate._active == 0  # the block left the gate: the map may grow
    with pytest.raises(AttributeError):
        r.count(info)  # detached from its transaction: no silent read of a dead snapshot
    with engine.read() as again:
        assert again.count(info) == 1
