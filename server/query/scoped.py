"""``Scoped``: a with-block in which a ``ContextVar`` holds a value.

A class, not a generator under ``contextlib.contextmanager``: such a block costs its helper, the
manager's construction and two resumptions of the generator (with StopIteration caught), about three
times the calls of this one; several of them run on every request (the parse of a ``$match`` and
of a pipeline, an inline read's held index accesses).
"""

from __future__ import annotations

import contextvars
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Scoped(Generic[T]):
    """``with Scoped(var, value):`` — ``var`` holds ``value`` inside the block, its previous value
    after it (whatever the block raised; nothing is suppressed). Use once."""

    __slots__ = ("_token", "_value", "_var")

    def __init__(self, var: contextvars.ContextVar[T], value: T):
        self._var = var
        self._value = value
        self._token: contextvars.Token[T] | None = None

    def __enter__(self) -> None:
        self._token = self._var.set(self._value)

    def __exit__(self, *exc: Any) -> None:
        if self._token is not None:
            self._var.reset(self._token)
