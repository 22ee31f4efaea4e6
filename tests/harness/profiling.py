"""The database profiler from a test: profile every operation of a block, then read the entry an
aggregate left (what a spilling stage's test checks ``usedDisk`` on)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def profiling(db: Any) -> Iterator[None]:
    """Profile every operation on ``db`` during the block (level 2), then turn the profiler off."""
    db.command("profile", 2)
    try:
        yield
    finally:
        db.command("profile", 0)


def last_aggregate_entry(db: Any, coll: str) -> dict | None:
    """The newest profile entry of an aggregate on ``db.coll``."""
    return db.system.profile.find_one({"command.aggregate": coll}, sort=[("$natural", -1)])
