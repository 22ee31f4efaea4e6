"""query.scoped.Scoped: a ContextVar holds the block's value inside it and its previous value after it,
however the block ends and however blocks nest (where_not_allowed, defined_variables, not_counted and
index_usage.held are such blocks)."""

from __future__ import annotations

import contextvars

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.query.scoped import Scoped

_VAR: contextvars.ContextVar[int] = contextvars.ContextVar("scoped_test", default=-1)


class _Stop(Exception):
    pass


def _nest(values: list[int], raise_at: int | None, seen: list[int]) -> None:
    if not values:
        return
    with Scoped(_VAR, values[0]):
        seen.append(_VAR.get())
        if raise_at == 0:
            raise _Stop
        _nest(values[1:], None if raise_at is None else raise_at - 1, seen)
        seen.append(_VAR.get())  # the inner block gave this one's value back


@given(st.lists(st.integers(0, 99), max_size=8), st.none() | st.integers(0, 8))
def test_nested_blocks_restore_each_previous_value(values, raise_at):
    seen: list[int] = []
    raised = raise_at is not None and raise_at < len(values)
    if raised:
        with pytest.raises(_Stop):
            _nest(values, raise_at, seen)
    else:
        _nest(values, raise_at, seen)
    assert _VAR.get() == -1  # the default again, whatever happened inside
    depth = raise_at + 1 if raised else len(values)
    assert seen[:depth] == values[:depth]  # each block sees its own value
    if not raised:
        assert seen[depth:] == values[:depth][::-1]


def test_held_counts_accesses_at_the_end_unless_cleared():
    from tidemark import index_usage

    counted: list[tuple] = []

    class Usage:
        def _tally(self, uses):
            counted.extend(uses)

    with index_usage.held(Usage()) as pending:  # type: ignore[arg-type]
        pending.append(("info", ("a_1",), 0, 0))
        assert counted == []
    assert counted == [("info", ("a_1",), 0, 0)]
    counted.clear()
    with pytest.raises(_Stop), index_usage.held(Usage()) as pending:  # type: ignore[arg-type]
        pending.append(("info", ("b_1",), 1, 0))
        raise _Stop
    assert counted == [("info", ("b_1",), 1, 0)]  # counted however the block ended, as before
    counted.clear()
    with index_usage.held(Usage()) as pending:  # type: ignore[arg-type]
        pending.append(("info", ("c_1",), 0, 0))
        pending.clear()  # a run to be made again: nothing counted
    assert counted == []


def test_held_inside_not_counted_counts_nothing_and_a_nested_held_joins_the_outer_one():
    from tidemark import index_usage

    counted: list[tuple] = []

    class Usage:
        def _tally(self, uses):
            counted.extend(uses)

    real = index_usage.IndexUsage()
    real._tally = Usage()._tally  # type: ignore[method-assign]
    with index_usage.not_counted(), index_usage.held(real) as pending:
        real.record(object(), ["a_1"])
        assert pending == []  # explain: never held, never counted
    assert counted == []
    with index_usage.held(real) as outer:
        with index_usage.held(real) as inner:
            real.record("info", ["b_1"])
            assert inner == [("info", ("b_1",), 0, 0)]
        assert outer == [("info", ("b_1",), 0, 0)] and counted == []
        with index_usage.not_counted():
            real.record("info", ["c_1"])
    assert counted == [("info", ("b_1",), 0, 0)]
    real.record("info", ["d_1"])  # outside every block: counted at once
    assert counted[-1] == ("info", ("d_1",), 0, 0)
