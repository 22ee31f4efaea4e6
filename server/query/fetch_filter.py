"""What a document fetched through an index plan is checked against (pure): mongod's FETCH filter,
the one decision every command reading through an index follows — find, count and distinct (through
the find), an aggregate's leading ``$match``, update, delete and findAndModify.

A plan's index bounds decide some top-level conditions of the filter exactly (``Plan.exact``, from
``index_bounds.tight_condition``); a fetched document is tested only against the rest
(``Plan.residual``): the whole filter when the bounds decide nothing, nothing when they decide all.

- ``fetched_matching(docs, plan, filter, whole, variables=, collation=)``: the streaming form (reads).
- ``fetched_predicate(plan, filter, match, variables=, collation=)``: the predicate form (writes, which
  test documents one by one as they collect them).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from tidemark.query.access_path import Plan
from tidemark.query.match import compile_filter

__all__ = ["RESIDUAL_AFTER", "fetched_matching", "fetched_predicate"]

RESIDUAL_AFTER = 64  # documents matched with the whole filter before its residual is compiled


def fetched_matching(docs: Iterator[dict], plan: Plan, flt: dict | None,
                     whole: Callable[[Iterator[dict]], Iterator[dict]], *, variables: dict | None = None,
                     collation: Any = None) -> Iterator[dict]:
    """``docs`` (what ``plan`` fetches) that match ``flt``, ``whole`` filtering by all of it (the
    predicate the command compiled, a find's or a leading ``$match`` stage's): mongod's FETCH filter,
    the conditions the plan's index bounds leave undecided (``Plan.residual``), none when they decide
    all. The residual is compiled once ``RESIDUAL_AFTER`` documents went through ``whole`` (a read of a
    few documents would spend more compiling than it saves); it is parsed again, as the filter's parse
    does not keep which node came from which field. The streaming form of ``fetched_predicate``."""
    if not plan.exact:  # (no index bounds decide anything: most reads)
        return whole(docs)
    residual = plan.residual(flt)
    if residual is flt:
        return whole(docs)
    if not residual:
        return docs
    return _narrowing(docs, whole, lambda: compile_filter(residual, variables=variables, collation=collation))


def fetched_predicate(plan: Plan, flt: dict | None, match: Callable[[dict], bool] | None, *,
                      variables: dict | None = None, collation: Any = None) -> Callable[[dict], bool] | None:
    """What a document ``plan`` fetches must pass of ``flt`` (``match``: all of it compiled; None: no
    filter), for the writes, which test documents one by one as they collect them: ``match`` when the
    plan's bounds decide none of it, None when they decide all, else the residual (``Plan.residual``)
    compiled now (a write statement's read is compiled once for all its slices)."""
    if match is None or not plan.exact:
        return match
    residual = plan.residual(flt)
    if residual is flt:
        return match
    if not residual:
        return None
    return compile_filter(residual, variables=variables, collation=collation)


def _narrowing(docs: Iterator[dict], whole: Callable[[Iterator[dict]], Iterator[dict]],
               compile_residual: Callable[[], Callable[[dict], bool]]) -> Iterator[dict]:
    """``docs`` matching the filter: the first ``RESIDUAL_AFTER`` through ``whole`` and the rest tested
    with the residual predicate (the same answer: the index bounds decide the rest exactly)."""
    docs = iter(docs)
    yield from whole(itertools.islice(docs, RESIDUAL_AFTER))
    first = next(docs, None)
    if first is None:  # (a read that ended within them compiles nothing)
        return
    match = compile_residual()
    if match(first):
        yield first
    yield from filter(match, docs)
