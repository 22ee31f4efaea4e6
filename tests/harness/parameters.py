"""Run a block with one server parameter set, and put back the value it had: tests share a server, so a
parameter left changed would change every later test's behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def server_parameter(client: Any, name: str, value: Any) -> Iterator[Any]:
    """Set ``name`` to ``value`` for the block; yield the value it had before."""
    before = client.admin.command("getParameter", 1, **{name: 1})[name]
    client.admin.command("setParameter", 1, **{name: value})
    try:
        yield before
    finally:
        client.admin.command("setParameter", 1, **{name: before})
