"""``Scoped``: a with-block in which a ``ContextVar`` holds a value.

A class, not a generator under ``contextlib.contextmanager``: such a block costs its helper, the
manager's construction and two resumptions of the generator (with StopIteration caught), about three
times the calls of this one (itself two Python calls a block: making it sets the value, leaving
resets it); several of them run on every request (the parse of a ``$match`` and
of a pipeline, an inline read's held index accesses).
"""

from __future__ import annotations

import contextvars
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Scoped(Generic[T]):
    """``with Scoped(var, value):`` — ``var`` holds ``value`` inside the block, its previous value
    after it (whatever the block raised; nothing is suppressed). Use once, directly in the
    ``with``: the value is set when the object is made, so that entering the block has nothing left
    to do (no Python call: two calls a block, not three)."""

    __slots__ = ("_token", "_var")

    def __init__(self, var: contextvars.ContextVar[T], value: T):
        self._var = var
        self._token = var.set(value)

    # Entering has nothing to do (the value is set above): object's C no-op stands in, which returns
    # None as a Python ``__enter__`` would, without a Python frame.
    __enter__ = object.__init__

    def __exit__(self, *exc: Any) -> None:
        self._var.reset(self._token)
