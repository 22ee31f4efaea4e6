"""Cursors killed by a catalog change (``CursorRegistry.kill_namespace`` / ``kill_index_scans``): each
non-snapshot cursor of the namespace dies, and the registry remembers mongod's QueryPlanKilled message for
its one next getMore (``killed_cursor`` / ``forget_killed``), until the idle reaper forgets it; snapshot
cursors (listIndexes / listCollections) and cursors of other namespaces (or other indexes) live on."""

from __future__ import annotations

import time
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from tidemark.cursors import CursorRegistry

NAMESPACES = ("db.a", "db.b", "db.a.sub")
INDEXES = ("x_1", "y_1", "x_1_y_1")

# one cursor: (namespace, snapshot, the indexes its plan scans: none = COLLSCAN, several = an index union)
_cursor = st.tuples(st.sampled_from(NAMESPACES), st.booleans(),
                    st.lists(st.sampled_from(INDEXES), max_size=3, unique=True))


def _facts(indexes: list[str]) -> SimpleNamespace | None:
    """A read's facts whose plan scans ``indexes`` (an OR plan's branches when more than one)."""
    if not indexes:
        return SimpleNamespace(plan=SimpleNamespace(index=None, branches=[]))
    if len(indexes) == 1:
        return SimpleNamespace(plan=SimpleNamespace(index={"name": indexes[0]}, branches=[]))
    return SimpleNamespace(plan=SimpleNamespace(
        index=None, branches=[SimpleNamespace(index={"name": n}, branches=[]) for n in indexes]))


def _open(registry: CursorRegistry, specs) -> list:
    opened = []
    for ns, snapshot, indexes in specs:
        cursor = registry.open(ns, iter([{"_id": 1}]), snapshot=snapshot)
        cursor.facts = _facts(indexes)
        opened.append(cursor)
    return opened


@given(st.lists(_cursor, max_size=12), st.sampled_from(NAMESPACES))
def test_a_drop_kills_the_namespaces_query_cursors_with_its_reason(specs, ns):
    registry = CursorRegistry()
    opened = _open(registry, specs)
    reason = "collection dropped. UUID 0123"
    doomed = {c.id for c in opened if c.ns == ns and not c.snapshot}
    assert registry.kill_namespace(ns, reason) == len(doomed)
    for c in opened:
        if c.id in doomed:
            assert registry.get(c.id) is None and c.killed
            dead = registry.killed_cursor(c.id)
            assert dead is not None and dead[0].ns == ns and dead[1] == reason
        else:
            assert registry.get(c.id) is c and registry.killed_cursor(c.id) is None
    for cursor_id in doomed:  # one getMore uses the reason; the next finds no cursor
        assert registry.forget_killed(cursor_id)
        assert registry.killed_cursor(cursor_id) is None and not registry.forget_killed(cursor_id)


@given(st.lists(_cursor, max_size=12), st.sampled_from(NAMESPACES),
       st.sets(st.sampled_from(INDEXES), min_size=1))
def test_dropping_indexes_kills_only_the_cursors_scanning_them(specs, ns, dropped):
    registry = CursorRegistry()
    opened = _open(registry, specs)
    doomed = {c.id: sorted(set(i) & dropped) for c, (_, _, i) in zip(opened, specs, strict=True)
              if c.ns == ns and not c.snapshot and set(i) & dropped}
    assert registry.kill_index_scans(ns, dropped) == len(doomed)
    for c in opened:
        dead = registry.killed_cursor(c.id)
        if c.id in doomed:
            assert dead is not None and dead[1] == f"index '{doomed[c.id][0]}' dropped"
        else:
            assert dead is None and registry.get(c.id) is c


def test_a_kill_without_a_reason_leaves_nothing_to_answer():
    registry = CursorRegistry()
    cursor = registry.open("db.a", iter([{"_id": 1}]))
    assert registry.kill_namespace("db.a") == 1
    assert registry.get(cursor.id) is None and registry.killed_cursor(cursor.id) is None


def test_a_killed_cursor_keeps_nothing_of_its_read_and_its_reason_expires_with_idle_cursors():
    registry = CursorRegistry()
    closed = []

    def docs():
        try:
            yield {"_id": 1}
        finally:
            closed.append(True)

    cursor = registry.open("db.a", docs())
    next(cursor.iterator)  # started: its close runs the generator's cleanup
    registry.kill_namespace("db.a", "collection dropped. UUID 0123")
    assert closed == [True] and list(cursor.iterator) == [] and cursor.facts is None
    dead = registry.killed_cursor(cursor.id)
    assert dead is not None
    registry.reap_idle(60_000)  # not stale yet
    assert registry.killed_cursor(cursor.id) is not None
    registry.reap_idle(60_000, now=time.monotonic() + 61)  # as long as an idle cursor would live
    assert registry.killed_cursor(cursor.id) is None


def test_a_cursor_busy_in_a_batch_is_killed_without_a_reason():
    # its batch answers id 0: its client asks no more, and nothing is kept for it
    registry = CursorRegistry()
    cursor = registry.open("db.a", iter([{"_id": 1}]))
    cursor.in_use = True
    registry.kill_namespace("db.a", "collection dropped. UUID 0123")
    assert cursor.killed and registry.killed_cursor(cursor.id) is None
