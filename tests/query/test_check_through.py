"""``interrupt.check_through``: ``map(check_through, chunks)`` checks the operation bound *when each chunk
is taken* (one check per chunk, empty ones included), so a cursor's iterator resumed under another
getMore's operation checks that one; nothing is checked without a bound operation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.query import interrupt


class _Op:
    ticks = interrupt.TICKS_PER_CHECK

    def __init__(self, fail_at: int | None = None) -> None:
        self.checks = 0
        self.fail_at = fail_at

    def check(self) -> None:
        self.checks += 1
        if self.fail_at is not None and self.checks > self.fail_at:
            raise RuntimeError("killed")


@given(st.lists(st.lists(st.integers(), max_size=3), max_size=8), st.none() | st.integers(0, 8))
def test_one_check_per_chunk_as_taken(chunks: list[list[int]], fail_at: int | None) -> None:
    op = _Op(fail_at)
    taken: list[Any] = []
    token = interrupt.bind(op)
    try:
        it = map(interrupt.check_through, iter(chunks))
        if fail_at is not None and fail_at < len(chunks):
            with pytest.raises(RuntimeError):
                taken.extend(it)
            assert taken == chunks[:fail_at] and op.checks == fail_at + 1
        else:
            taken.extend(it)
            assert taken == chunks and op.checks == len(chunks)
    finally:
        interrupt.unbind(token)


def test_the_operation_is_looked_up_per_chunk_and_none_is_no_check() -> None:
    first, second = _Op(), _Op()
    it = map(interrupt.check_through, iter([[1], [], [2]]))
    assert next(it) == [1]  # nothing bound: no check
    token = interrupt.bind(first)
    assert next(it) == []
    interrupt.unbind(token)
    token = interrupt.bind(second)
    assert next(it) == [2]
    interrupt.unbind(token)
    assert (first.checks, second.checks) == (1, 1)
