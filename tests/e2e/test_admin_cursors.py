"""The cursor registry (batching rules) in process, and getMore/killCursors end to end."""

from __future__ import annotations

import asyncio

import pytest
from bson.int64 import Int64
from harness.server_state import InProcessServer
from pymongo.errors import OperationFailure

from tidemark import cursors as cursor_module
from tidemark.context import CommandContext, ConnectionInfo
from tidemark.cursors import DEFAULT_FIRST_BATCH, cursor_reply


@pytest.fixture
def ctx(tmp_path):
    state = InProcessServer(tmp_path / "data")
    yield CommandContext(state, ConnectionInfo(id=1, peer="test"), "db", "find")
    state.engine.close()


def _values(batch):
    return [doc["i"] for doc in batch]


async def test_first_batch_defaults_to_101_documents_then_get_more_drains(ctx):
    reply = await cursor_reply(ctx, "db.c", ({"i": i} for i in range(250)))
    cursor = reply["cursor"]
    assert len(cursor["firstBatch"]) == DEFAULT_FIRST_BATCH
    assert isinstance(cursor["id"], Int64) and cursor["id"] > 0
    assert cursor["ns"] == "db.c"
    registry = ctx.server.cursors
    batch, next_id = await registry.next_batch(ctx, cursor["id"], None)
    assert _values(batch) == list(range(101, 250))
    assert next_id == 0 and len(registry) == 0


async def test_exactly_full_batch_keeps_the_cursor_until_a_draw_finds_the_end(ctx):
    """A full batch draws nothing past its last document (mongod's scans learn their end only by
    drawing): the cursor stays open and the next batch is empty and exhausted."""
    drawn = []

    def docs():
        for i in (1, 2):
            drawn.append(i)
            yield {"i": i}
        drawn.append("end")

    reply = await cursor_reply(ctx, "db.c", docs(), batch_size=2)
    assert _values(reply["cursor"]["firstBatch"]) == [1, 2] and drawn == [1, 2]
    assert reply["cursor"]["id"] != 0
    batch, next_id = await ctx.server.cursors.next_batch(ctx, reply["cursor"]["id"], 2)
    assert list(batch) == [] and next_id == 0 and drawn == [1, 2, "end"]


async def test_a_snapshot_knows_its_end(ctx):
    """listIndexes / listCollections (mongod's queued data): a batch that takes the last entry closes."""
    reply = await cursor_reply(ctx, "db.c", iter([{"i": 1}, {"i": 2}]), batch_size=2, snapshot=True)
    assert reply["cursor"]["id"] == 0
    assert _values(reply["cursor"]["firstBatch"]) == [1, 2]


async def test_an_empty_first_batch_draws_nothing(ctx):
    drawn = []

    def docs():
        drawn.append(0)
        yield {"i": 0}

    reply = await cursor_reply(ctx, "db.c", docs(), batch_size=0)
    assert reply["cursor"]["id"] != 0 and drawn == []


async def test_no_document_is_lost_between_batches(ctx):
    reply = await cursor_reply(ctx, "db.c", ({"i": i} for i in range(5)), batch_size=2)
    registry = ctx.server.cursors
    cursor = registry.get(reply["cursor"]["id"])
    seen = _values(reply["cursor"]["firstBatch"])
    while cursor is not None:
        batch, next_id = await registry.next_batch(ctx, cursor, 2)
        seen += _values(batch)
        cursor = registry.get(next_id) if next_id else None
    assert seen == [0, 1, 2, 3, 4]


async def test_register_returns_a_positive_int64_id_usable_with_next_batch(ctx):
    registry = ctx.server.cursors
    cursor_id = registry.register("db.c", ({"i": i} for i in range(3)), batch_size=2)
    assert isinstance(cursor_id, Int64) and cursor_id > 0
    batch, next_id = await registry.next_batch(ctx, cursor_id, 2)
    assert _values(batch) == [0, 1] and next_id == cursor_id
    with pytest.raises(Exception) as info:
        await registry.next_batch(ctx, Int64(1), 2)
    assert getattr(info.value, "code", None) == 43


async def test_single_batch_closes_the_cursor(ctx):
    reply = await cursor_reply(ctx, "db.c", ({"i": i} for i in range(10)), batch_size=3, single_batch=True)
    assert reply["cursor"]["id"] == 0 and len(ctx.server.cursors) == 0


async def test_batches_stay_under_the_size_limit(ctx, monkeypatch):
    monkeypatch.setattr(cursor_module, "MAX_BATCH_BYTES", 1000)
    docs = ({"i": i, "pad": "x" * 300} for i in range(10))
    reply = await cursor_reply(ctx, "db.c", docs)
    first = reply["cursor"]["firstBatch"]
    assert 1 <= len(first) < 10
    assert sum(len(doc.raw) for doc in first) <= 1000


async def test_a_single_oversized_document_is_still_returned(ctx, monkeypatch):
    monkeypatch.setattr(cursor_module, "MAX_BATCH_BYTES", 100)
    reply = await cursor_reply(ctx, "db.c", iter([{"i": 0, "pad": "x" * 500}]))
    assert _values(reply["cursor"]["firstBatch"]) == [0]


async def test_kill_closes_the_generator(ctx):
    closed = []

    def generate():
        try:
            for i in range(1000):
                yield {"i": i}
        finally:
            closed.append(True)

    reply = await cursor_reply(ctx, "db.c", generate(), batch_size=1)
    assert ctx.server.cursors.kill(reply["cursor"]["id"])
    assert closed == [True]
    assert not ctx.server.cursors.kill(reply["cursor"]["id"])


async def test_idle_cursors_are_reaped_but_no_timeout_ones_stay(ctx):
    registry = ctx.server.cursors
    idle = registry.get(registry.register("db.c", iter(range(3))))
    kept = registry.open("db.c", iter(range(3)), no_timeout=True)
    assert registry.reap_idle(1000, now=idle.last_used + 2) == 1
    assert registry.get(idle.id) is None and registry.get(kept.id) is kept


async def test_session_cursors_time_out_only_when_enabled(ctx):
    """mongod: a cursor opened in a session is spared by the idle timeout unless
    enableTimeoutOfInactiveSessionCursors (CursorManager::cursorShouldTimeout_inlock); it dies with its
    session (tests/e2e/test_logical_session_cache.py)."""
    registry = ctx.server.cursors
    kept = registry.open("db.c", iter(range(3)), lsid={"id": "kept"})
    plain = registry.open("db.c", iter(range(3)))
    assert registry.reap_idle(1000, now=plain.last_used + 2) == 1
    assert registry.get(plain.id) is None and registry.get(kept.id) is kept
    assert registry.reap_idle(1000, now=kept.last_used + 2, session_cursors=True) == 1
    assert registry.get(kept.id) is None


async def test_kill_sessions_kills_only_the_matching_sessions_cursors(ctx):
    registry = ctx.server.cursors
    mine = registry.open("db.c", iter(()), lsid={"id": "a"})
    other = registry.open("db.c", iter(()), lsid={"id": "b"})
    plain = registry.open("db.c", iter(()))
    assert registry.session_keys() == {("a", None), ("b", None)}
    assert registry.kill_sessions(lambda session_id, _owner: session_id == "a") == 1
    assert registry.get(mine.id) is None and registry.get(other.id) is other and registry.get(plain.id) is plain


async def test_errors_while_batching_kill_the_cursor_and_propagate(ctx):
    def broken():
        yield {"i": 0}
        raise ValueError("boom")

    with pytest.raises(ValueError):
        await cursor_reply(ctx, "db.c", broken(), batch_size=5)
    assert len(ctx.server.cursors) == 0


async def test_concurrent_get_more_on_one_cursor_is_refused(ctx):
    registry = ctx.server.cursors
    cursor = registry.open("db.c", ({"i": i} for i in range(3)))
    cursor.in_use = True
    with pytest.raises(Exception) as info:
        await registry.next_batch(ctx, cursor, 1)
    assert "already in use" in str(info.value) and info.value.code == 143  # CursorInUse (cursor_manager.cpp)
    await asyncio.sleep(0)


@pytest.mark.commands("getMore", "killCursors")
def test_get_more_and_kill_cursors_on_a_real_find_cursor(db):
    db.items.insert_many([{"_id": i} for i in range(10)])
    first = db.command({"find": "items", "batchSize": 3, "sort": {"_id": 1}})
    cursor_id = first["cursor"]["id"]
    assert [d["_id"] for d in first["cursor"]["firstBatch"]] == [0, 1, 2]
    more = db.command({"getMore": cursor_id, "collection": "items", "batchSize": 4})
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [3, 4, 5, 6]
    assert more["cursor"]["ns"] == f"{db.name}.items"
    with pytest.raises(OperationFailure) as info:
        db.command({"getMore": cursor_id, "collection": "other"})
    assert info.value.code == 13
    killed = db.command({"killCursors": "items", "cursors": [cursor_id]})
    assert killed["cursorsKilled"] == [cursor_id]
    with pytest.raises(OperationFailure) as info:
        db.command({"getMore": cursor_id, "collection": "items"})
    assert info.value.code == 43


def test_pymongo_iterates_a_multi_batch_cursor(db):
    db.items.insert_many([{"_id": i} for i in range(300)])
    assert [d["_id"] for d in db.items.find().sort("_id", 1).batch_size(50)] == list(range(300))
