"""Interruption checks for long loops: the running operation, reachable from pure query code.

The server binds the operation a thread is working for (``bind``/``running``); query code — scans,
``$group``, ``$sort``, ``$lookup``, regex matching, expression loops — calls :func:`tick` once per unit
of work (a document, an array element) or :func:`check` between larger steps. Both do nothing when
no operation is bound (pure use, tests, background jobs).

The operation is any object with ``check()`` (raise if killed or past its deadline) and ``ticks`` (a
countdown: :func:`tick` reads no clock until it reaches zero, so a check per document costs a
counter decrement), and optionally ``released(fn)`` (:func:`gil_released`), ``note_disk_use()``
(:func:`note_disk_use`: a spill happened), ``ns`` (the namespace it works
on), ``user`` (who runs it, a hashable name or None): server-side JavaScript keeps a scope per
database and authenticated user, and ``user_roles()`` (:func:`user_roles`, ``$$USER_ROLES``). The server's ``check()`` is
also where a long operation on the thread pool gives its run token to waiting ones
(``tidemark.scheduler``). The server's implementation is ``tidemark.operations.Operation``; this module
knows nothing of it (query imports nothing above itself).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

# Work units between two real checks. A unit is a document or an array element (well under a
# microsecond to a few microseconds each), so a real check runs every few hundred microseconds.
TICKS_PER_CHECK = 256


class Interruptible(Protocol):
    ticks: int

    def check(self) -> None: ...


_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("tidemark_operation", default=None)


# current(): the operation bound to this thread/task, or None (the ContextVar's own get: no Python call).
current: Callable[[], Any] = _CURRENT.get
# bind(op) binds ``op`` in the current context (an asyncio task's, or a thread's) and returns the token
# that unbind(token) takes to undo it: the ContextVar's own methods, no Python call (every command
# binds its operation on the event loop).
bind: Callable[[Interruptible | None], contextvars.Token[Any]] = _CURRENT.set
unbind: Callable[[contextvars.Token[Any]], None] = _CURRENT.reset


def running(op: Interruptible | None, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with ``op`` bound: how work handed to the thread pool stays interruptible (the
    arguments passed through: no partial to build per run)."""
    token = _CURRENT.set(op)
    try:
        return fn(*args)
    finally:
        _CURRENT.reset(token)


def check() -> None:
    """Raise now if the bound operation was killed or ran past its deadline."""
    op = _CURRENT.get()
    if op is not None:
        op.check()


def check_through(item: T) -> T:
    """:func:`check`, then ``item`` as it is: ``map(check_through, chunks)`` is ``chunks`` with a check
    before each chunk is handed on (no generator: one call per chunk; the operation is looked up per
    chunk, as a cursor's iterator resumes under each getMore's operation)."""
    op = _CURRENT.get()
    if op is not None:
        op.check()
    return item


def tick(units: int = 1) -> None:
    """Count ``units`` of work; every ``TICKS_PER_CHECK`` of them, :func:`check`."""
    op = _CURRENT.get()
    if op is not None:
        op.ticks -= units
        if op.ticks <= 0:
            op.ticks = TICKS_PER_CHECK
            op.check()


def user_roles() -> list[dict[str, str]]:
    """``$$USER_ROLES``: the bound operation's ``user_roles()`` (the roles of the user its connection is
    authenticated as, ``[{_id, role, db}]``), or ``[]`` when no operation is bound or it has none
    (pure use, tests: nobody is authenticated)."""
    roles = getattr(_CURRENT.get(), "user_roles", None)
    return roles() if roles is not None else []


def note_disk_use() -> None:
    """Tell the bound operation that its read wrote to disk (a spill: mongod's ``usedDisk``), if it
    listens (an optional ``note_disk_use()``)."""
    note = getattr(_CURRENT.get(), "note_disk_use", None)
    if note is not None:
        note()


def gil_released(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` — C code that runs with the GIL released for long, e.g. a regex match —
    letting the bound operation's run token go meanwhile (its ``released(call)``: ``tidemark.scheduler``),
    so that waiting operations run while this one needs no Python. A plain call without such an
    operation."""
    released = getattr(_CURRENT.get(), "released", None)
    if released is None:
        return fn(*args, **kwargs)
    return released(functools.partial(fn, *args, **kwargs))


def checked(docs: Iterator[T]) -> Iterator[T]:
    """``docs`` with a :func:`tick` per item (wraps document sources; the operation is looked up per
    item because a cursor's generator resumes under each getMore's operation)."""
    for doc in docs:
        op = _CURRENT.get()
        if op is not None:
            op.ticks -= 1
            if op.ticks <= 0:
                op.ticks = TICKS_PER_CHECK
                op.check()
        yield doc
