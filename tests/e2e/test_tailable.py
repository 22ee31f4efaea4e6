"""Tailable and awaitData cursors on capped collections through pymongo (CursorType.TAILABLE and
TAILABLE_AWAIT, max_await_time_ms) and raw commands: new documents reach an open cursor, an awaitData
getMore waits for an insert without holding the server, and mongod's errors."""

from __future__ import annotations

import threading
import time

import pytest
from pymongo import CursorType
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "getMore", "killCursors", "insert")


def _capped(db, name="feed", size=1 << 20, max=None, docs=0):
    kwargs = {"max": max} if max else {}
    db.create_collection(name, capped=True, size=size, **kwargs)
    if docs:
        db[name].insert_many([{"_id": i} for i in range(docs)])
    return db[name]


def test_a_tailable_cursor_returns_documents_inserted_after_it_ran_dry(db):
    coll = _capped(db, docs=3)
    cursor = coll.find(cursor_type=CursorType.TAILABLE)
    assert [d["_id"] for d in cursor] == [0, 1, 2]
    assert cursor.alive
    coll.insert_many([{"_id": 3}, {"_id": 4}])
    assert [d["_id"] for d in cursor] == [3, 4]
    assert cursor.alive
    cursor.close()


def test_raw_tailable_find_keeps_the_cursor_open_and_getmore_returns_empty_then_new(db):
    _capped(db, docs=2)
    first = db.command("find", "feed", tailable=True)
    cursor_id = first["cursor"]["id"]
    assert cursor_id != 0 and len(first["cursor"]["firstBatch"]) == 2
    empty = db.command("getMore", cursor_id, collection="feed")
    assert empty["cursor"]["nextBatch"] == [] and empty["cursor"]["id"] == cursor_id
    db.feed.insert_one({"_id": 2})
    more = db.command("getMore", cursor_id, collection="feed")
    assert more["cursor"]["nextBatch"] == [{"_id": 2}] and more["cursor"]["id"] == cursor_id
    db.command("killCursors", "feed", cursors=[cursor_id])


def test_filter_projection_skip_and_limit_apply_to_the_tail(db):
    coll = _capped(db)
    coll.insert_many([{"_id": i, "even": i % 2 == 0, "x": i} for i in range(6)])
    cursor = coll.find({"even": True}, {"x": 1, "_id": 0}, cursor_type=CursorType.TAILABLE)
    assert list(cursor) == [{"x": 0}, {"x": 2}, {"x": 4}]
    coll.insert_many([{"_id": 6, "even": True, "x": 6}, {"_id": 7, "even": False, "x": 7}])
    assert list(cursor) == [{"x": 6}]
    limited = db.command("find", "feed", tailable=True, skip=1, limit=2, batchSize=1)
    assert [d["_id"] for d in limited["cursor"]["firstBatch"]] == [1]
    rest = db.command("getMore", limited["cursor"]["id"], collection="feed")
    assert [d["_id"] for d in rest["cursor"]["nextBatch"]] == [2] and rest["cursor"]["id"] == 0


def test_await_data_getmore_wakes_up_when_a_document_arrives(db, client):
    coll = _capped(db, docs=1)
    cursor = coll.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(20_000)
    assert next(cursor)["_id"] == 0

    def later():
        time.sleep(0.5)
        client[db.name].feed.insert_one({"_id": 1})

    writer = threading.Thread(target=later)
    started = time.monotonic()
    writer.start()
    doc = next(cursor)  # blocks in an awaitData getMore until the insert
    waited = time.monotonic() - started
    writer.join()
    assert doc["_id"] == 1
    assert 0.4 < waited < 15, waited  # woken by the insert, long before the 20 s await time
    cursor.close()


def test_await_data_getmore_returns_an_empty_batch_after_max_time_ms(db):
    _capped(db, docs=1)
    first = db.command("find", "feed", tailable=True, awaitData=True)
    cursor_id = first["cursor"]["id"]
    started = time.monotonic()
    reply = db.command("getMore", cursor_id, collection="feed", maxTimeMS=300)
    waited = time.monotonic() - started
    assert reply["cursor"]["nextBatch"] == [] and reply["cursor"]["id"] == cursor_id
    assert waited >= 0.25
    db.command("killCursors", "feed", cursors=[cursor_id])


def test_an_awaiting_getmore_holds_neither_the_event_loop_nor_other_clients(db, server):
    _capped(db, docs=1)
    cursor_id = db.command("find", "feed", tailable=True, awaitData=True)["cursor"]["id"]
    other = server.client()
    outcome = []

    def wait():
        try:
            outcome.append(db.command("getMore", cursor_id, collection="feed", maxTimeMS=60_000))
        except OperationFailure as e:
            outcome.append(e)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)
    for _ in range(5):
        other.admin.command("ping")
        other[db.name].plain.insert_one({})
    assert not outcome  # answered while the getMore still waits (60 s)
    started = time.monotonic()
    other[db.name].command("killCursors", "feed", cursors=[cursor_id])  # interrupts the waiting getMore
    waiter.join(30)
    assert time.monotonic() - started < 20
    assert isinstance(outcome[0], OperationFailure) and outcome[0].code == 237
    other.close()


def test_tailable_errors_are_mongods(db):
    db.plain.insert_one({})
    _capped(db, docs=1)

    def code(**kw):
        with pytest.raises(OperationFailure) as e:
            db.command("find", kw.pop("coll", "feed"), **kw)
        return e.value.code

    assert code(coll="plain", tailable=True) == 2
    assert code(awaitData=True) == 9
    assert code(tailable=True, sort={"_id": 1}) == 2
    assert code(tailable=True, singleBatch=True) == 2
    db.command("find", "feed", tailable=True, sort={"$natural": 1})
    normal = db.command("find", "feed", batchSize=0)["cursor"]["id"]
    with pytest.raises(OperationFailure) as e:
        db.command("getMore", normal, collection="feed", maxTimeMS=100)
    assert e.value.code == 2 and "non-awaitData" in str(e.value)


def test_no_cursor_is_kept_on_a_missing_or_empty_capped_collection(db):
    assert db.command("find", "nothing", tailable=True, awaitData=True)["cursor"]["id"] == 0
    _capped(db, name="empty")
    assert db.command("find", "empty", tailable=True)["cursor"]["id"] == 0


def test_a_tail_overtaken_by_the_capped_trim_fails_with_capped_position_lost(db):
    coll = _capped(db, max=3, docs=3)
    cursor_id = db.command("find", "feed", tailable=True, batchSize=1)["cursor"]["id"]
    coll.insert_many([{"_id": i} for i in range(3, 10)])  # the cursor's position (_id 0) is gone
    with pytest.raises(OperationFailure) as e:
        db.command("getMore", cursor_id, collection="feed")
    assert e.value.code == 136 and e.value.details["codeName"] == "CappedPositionLost"
    with pytest.raises(OperationFailure) as e:
        db.command("getMore", cursor_id, collection="feed")
    assert e.value.code == 43  # the failed cursor is gone


def test_dropping_the_collection_kills_its_tailable_cursors(db):
    _capped(db, docs=2)
    cursor_id = db.command("find", "feed", tailable=True, awaitData=True)["cursor"]["id"]
    db.feed.drop()
    _capped(db, docs=2)
    with pytest.raises(OperationFailure) as e:
        db.command("getMore", cursor_id, collection="feed")
    # mongod 7.0 keeps the cursor and its plan fails to restore (RequiresCollectionStage): 175
    assert e.value.code == 175 and e.value.details["errmsg"].startswith("collection dropped. UUID ")
    with pytest.raises(OperationFailure) as e:
        db.command("getMore", cursor_id, collection="feed")
    assert e.value.code == 43  # that getMore took the cursor along


class _WaitingGetMore:
    """An awaitData getMore with a long await time (60 s), in a thread; ``.outcome`` is its reply or error."""

    def __init__(self, db, cursor_id, comment: str, session=None):
        self.outcome = None

        def run():
            try:
                self.outcome = db.command("getMore", cursor_id, collection="feed", maxTimeMS=60_000,
                                          comment=comment, session=session)
            except Exception as exc:  # noqa: BLE001 - asserted by the test
                self.outcome = exc

        self.started = time.monotonic()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 30) -> float:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the getMore is still waiting"
        return time.monotonic() - self.started


def _waiting_op(client, comment: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ops = client.admin.command({"currentOp": 1, "command.comment": comment})["inprog"]
        if ops:
            return ops[0]
        time.sleep(0.05)
    raise AssertionError(f"no running getMore with comment {comment!r}")


@pytest.mark.commands("currentOp", "killOp")
def test_kill_op_wakes_a_waiting_await_data_getmore_which_answers_11601_at_once(db, client, server):
    _capped(db, docs=1)
    other = server.client()
    # the getMore runs in the session that opened the cursor (mongod refuses another session: 50738)
    session = other.start_session()
    cursor_id = other[db.name].command("find", "feed", tailable=True, awaitData=True, session=session)["cursor"]["id"]
    waiting = _WaitingGetMore(other[db.name], cursor_id, "await-kill", session=session)
    op = _waiting_op(client, "await-kill")
    # currentOp shows the waiting getMore and the cursor it waits on; the cursor is not listed idle
    assert op["op"] == "getmore" and op["ns"] == f"{db.name}.feed" and op["active"] is True
    assert op["command"]["getMore"] == cursor_id and op["command"]["collection"] == "feed"
    assert op["cursor"]["cursorId"] == cursor_id
    assert op["cursor"]["tailable"] is True and op["cursor"]["awaitData"] is True
    idle = list(client.admin.aggregate([{"$currentOp": {"idleCursors": True}},
                                        {"$match": {"type": "idleCursor", "cursor.cursorId": cursor_id}}]))
    assert idle == []
    time.sleep(0.3)
    assert waiting.outcome is None  # still waiting (60 s)
    started = time.monotonic()
    client.admin.command("killOp", op=op["opid"])
    waiting.join()
    assert time.monotonic() - started < 10  # at once, not after the 60 s await time
    assert isinstance(waiting.outcome, OperationFailure) and waiting.outcome.code == 11601
    assert waiting.outcome.details["errmsg"] == "operation was interrupted"
    assert client.admin.command({"currentOp": 1, "command.comment": "await-kill"})["inprog"] == []
    # as in mongod, a failed getMore takes its cursor along
    with pytest.raises(OperationFailure) as err:
        db.command("getMore", cursor_id, collection="feed", maxTimeMS=10)
    assert err.value.code == 43
    other.close()


def test_a_getmore_awaiting_data_ends_at_its_max_time_ms_and_other_waiters_keep_waiting(db, server):
    _capped(db, docs=1)
    first = db.command("find", "feed", tailable=True, awaitData=True)["cursor"]["id"]
    other = server.client()
    session = other.start_session()  # the session of the cursor's getMore (mongod: else 50738)
    second = other[db.name].command("find", "feed", tailable=True, awaitData=True, session=session)["cursor"]["id"]
    long_wait = _WaitingGetMore(other[db.name], second, "await-long", session=session)
    started = time.monotonic()
    reply = db.command("getMore", first, collection="feed", maxTimeMS=400)
    assert reply["cursor"]["nextBatch"] == [] and reply["cursor"]["id"] == first
    assert 0.3 < time.monotonic() - started < 10
    time.sleep(0.2)
    assert long_wait.outcome is None  # the other getMore on the namespace still waits
    db.feed.insert_one({"_id": 1})  # ... until an insert wakes it
    long_wait.join()
    assert [d["_id"] for d in long_wait.outcome["cursor"]["nextBatch"]] == [1]
    other.close()


@pytest.mark.commands("find", "getMore")
def test_shutdown_wakes_a_waiting_await_data_getmore(start_server):
    srv = start_server()
    client = srv.client(retryReads=False)
    db = client.t
    _capped(db, docs=1)
    cursor_id = db.command("find", "feed", tailable=True, awaitData=True)["cursor"]["id"]
    waiting = _WaitingGetMore(db, cursor_id, "await-shutdown")
    _waiting_op(srv.client(), "await-shutdown")
    started = time.monotonic()
    assert srv.terminate() == 0
    assert time.monotonic() - started < 6  # not the 60 s await time, nor the 10 s shutdown grace
    waiting.join()
    outcome = waiting.outcome
    assert isinstance(outcome, Exception)  # 11600 InterruptedAtShutdown (or the closed connection)
    if isinstance(outcome, OperationFailure):
        assert outcome.code == 11600
