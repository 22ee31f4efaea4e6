"""A cursor's iterator is closed exactly once when its batch exhausts it (``CursorRegistry._drawn``:
``kill`` closes a cursor not in use; a cursor killed while its batch was drawn is closed when the
batch returns), and ``kill`` counts its lifespan in mongod's bucket (serverStatus
``metrics.cursor.lifespan``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from tidemark import cursors


class _Closable:
    """An iterator over ``items`` that counts its ``close`` calls (a generator's close is idempotent,
    a pipeline's cleanup need not be)."""

    def __init__(self, items, on_next=None):
        self._items = iter(items)
        self.closes = 0
        self._on_next = on_next

    def __iter__(self):
        return self

    def __next__(self):
        if self._on_next is not None:
            self._on_next()
        return next(self._items)

    def close(self):
        self.closes += 1


class _Op:
    def check(self):
        pass


class _Ctx:
    """What first_batch asks of a command context: its operation's interruption check and the blocking
    run (inline)."""

    op = _Op()

    async def run_blocking(self, fn, *args):
        return fn(*args)


def _first_batch(registry, iterator, limit=None):
    cursor = registry.open("db.c", iter(()))
    cursor.in_use = True
    return cursor, asyncio.run(registry.first_batch(_Ctx(), cursor, lambda: (iterator, None), limit))


def test_an_exhausted_first_batch_closes_its_iterator_once():
    registry = cursors.CursorRegistry()
    docs = _Closable([{"i": i} for i in range(3)])
    _, (batch, cursor_id) = _first_batch(registry, docs)
    assert (len(batch), cursor_id) == (3, 0)
    assert docs.closes == 1
    assert len(registry) == 0
    assert registry.lifespans["lessThan1Second"] == 1


def test_a_cursor_killed_while_its_batch_is_drawn_is_closed_once_when_it_returns():
    registry = cursors.CursorRegistry()
    holder = {}

    def kill_now():
        if "cursor" in holder:
            assert registry.kill(holder["cursor"].id)  # in use: forgotten, not closed yet
            assert docs.closes == 0
            holder.clear()

    docs = _Closable([{"i": i} for i in range(10)], on_next=kill_now)
    cursor = registry.open("db.c", iter(()))
    cursor.in_use = True
    holder["cursor"] = cursor
    batch, cursor_id = asyncio.run(registry.first_batch(_Ctx(), cursor, lambda: (docs, None), 2))
    assert (len(batch), cursor_id) == (2, 0)
    assert docs.closes == 1
    assert len(registry) == 0


def test_an_open_cursor_is_not_closed():
    registry = cursors.CursorRegistry()
    docs = _Closable([{"i": i} for i in range(10)])
    _, (batch, cursor_id) = _first_batch(registry, docs, 2)
    assert len(batch) == 2 and cursor_id
    assert docs.closes == 0
    assert registry.kill(cursor_id)
    assert docs.closes == 1


@pytest.mark.parametrize("age, bucket", [(0.0, "lessThan1Second"), (3.0, "lessThan5Seconds"),
                                         (7.0, "lessThan15Seconds"), (20.0, "lessThan30Seconds"),
                                         (45.0, "lessThan1Minute"), (300.0, "lessThan10Minutes"),
                                         (3600.0, "greaterThanOrEqual10Minutes")])
def test_kill_counts_the_lifespan_in_its_bucket(age, bucket):
    registry = cursors.CursorRegistry()
    cursor = registry.open("db.c", iter(()))
    cursor.created = time.time() - age
    assert registry.kill(cursor.id)
    assert {name: n for name, n in registry.lifespans.items() if n} == {bucket: 1}
