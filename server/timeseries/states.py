"""The lifecycle of a bucket in memory: its states and every allowed transition, in one place.

::

                 reopen (in memory)
            +-----------------------------+
            v                             |
   new -> OPEN --- archive ----------> ARCHIVED
            |  (time forward/backward,    |
            |   another bucket reopened,  |
            |   memory: then retired)     |
            +--------- close -------------+--> CLOSED --- full document durable ---> STORED
            |  (count, size, schema,      |                                      (left memory)
            |   direct write, shutdown)   +------- full document durable, idle ----^
            +--------- freeze ------------+--> FROZEN   (dropped collection; a bucket whose only
                                                          rows were removed by a failed commit)

- OPEN: the current bucket of its series; measurements are routed to it.
- ARCHIVED: no longer current but still in memory and reopenable (7.0 keeps archived buckets): a
  writer whose times interleave with another's appends to it again at no cost; its rows may still be
  only in journal records. Once it has not been reopened for a while (or memory is short: an idle
  open bucket is archived for it) it is retired: unrouted, its full document written, and it leaves
  memory (STORED), still reopenable by query; until that write is durable its series may reopen it
  (``catalog.resume``) rather than open a second bucket for its range.
- CLOSED: takes no more measurements; it stays in memory (readers see it) until its full document is
  durable, then it leaves memory (STORED). A stored bucket with room is reopened *by query*: loaded
  from storage as a new OPEN bucket object.
- FROZEN: must never be written again (its collection was dropped, or it never held a committed row).

``move(bucket, event)`` (or ``move_all`` for many buckets at once) is the only code that changes
``bucket.state``; an event not allowed in the current state raises (a bug, never client input).
"""

from __future__ import annotations

import enum
from typing import Any


class State(enum.Enum):
    __hash__ = object.__hash__  # members are singletons: identity hashing (Enum's hashes the name in Python)

    OPEN = "open"
    ARCHIVED = "archived"
    CLOSED = "closed"
    STORED = "stored"
    FROZEN = "frozen"


class Event(enum.Enum):
    __hash__ = object.__hash__
    ARCHIVE = "archive"
    REOPEN = "reopen"
    CLOSE = "close"
    STORED = "stored"  # the full document is durable and the bucket leaves memory
    FREEZE = "freeze"


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.OPEN, Event.ARCHIVE): State.ARCHIVED,
    (State.ARCHIVED, Event.REOPEN): State.OPEN,
    (State.OPEN, Event.CLOSE): State.CLOSED,
    (State.ARCHIVED, Event.CLOSE): State.CLOSED,
    (State.CLOSED, Event.STORED): State.STORED,
    (State.ARCHIVED, Event.STORED): State.STORED,
    (State.OPEN, Event.FREEZE): State.FROZEN,
    (State.ARCHIVED, Event.FREEZE): State.FROZEN,
    (State.CLOSED, Event.FREEZE): State.FROZEN,
}

# states in which a bucket is held by the catalog (readers merge it over storage)
IN_MEMORY = frozenset({State.OPEN, State.ARCHIVED, State.CLOSED})
# states in which a bucket may take more measurements (directly or after a reopen)
ROUTABLE = frozenset({State.OPEN, State.ARCHIVED})


class TransitionError(RuntimeError):
    """An event the bucket's state does not allow (a bug in the engine)."""


def move(bucket: Any, event: Event) -> State:
    """Apply ``event`` to ``bucket.state``; returns the new state."""
    try:
        new = TRANSITIONS[(bucket.state, event)]
    except KeyError:
        raise TransitionError(f"bucket {bucket.id}: {event.value} is not allowed when {bucket.state.value}") from None
    bucket.state = new
    return new


def move_all(buckets: list[Any], event: Event) -> None:
    """``move`` for every bucket of ``buckets`` (the router's bulk archive/reopen of many series)."""
    allowed = {old: new for (old, ev), new in TRANSITIONS.items() if ev is event}
    for bucket in buckets:
        new = allowed.get(bucket.state)
        if new is None:
            raise TransitionError(f"bucket {bucket.id}: {event.value} is not allowed when {bucket.state.value}")
        bucket.state = new
