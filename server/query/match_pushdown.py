"""mongod's $match pushdown (DocumentSource::pushMatchBefore with splitMatchByModifiedFields): a $match
moves before the stage in front of it when that stage can swap with a $match and the $match reads
nothing the stage modifies; a $match that reads some of it is split, its independent conjuncts moving.

So ``[$addFields {r: {$divide: [a, b]}}, $match {b: {$ne: 0}}]`` runs as ``[$match, $addFields]``:
the same documents, and no division by a zero the $match would have filtered out first (mongod answers
the pipeline; evaluating in written order failed with 2 "can't $divide by zero"). The plan can use the
moved $match too (an index, a time-series bucket filter).

The stages a $match swaps with, and what each modifies (``getModifiedPaths``): ``$addFields`` /
``$set`` (their fields), ``$unset`` and an exclusion ``$project`` (the removed paths), an inclusion
``$project`` (everything but its plain included paths), ``$unwind`` (its path and ``includeArrayIndex``),
``$lookup`` (the top-level field of its ``as``, which it replaces whole), ``$sort`` by directions (nothing). A conjunct moves when every path it reads
(``match.filter_fields``) is unrelated to every modified path — neither equal, nor a prefix either way —
or, after an inclusion ``$project``, lies under a plain included path. A $match with ``$text`` or a geo
operator stays where it is written (where such a stage stands is checked as written), and a conjunct
whose fields are unknown (``$where``, ``$$ROOT`` in ``$expr``) never moves.
"""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import MongoError
from tidemark.query.match import filter_fields
from tidemark.query.match_parse import parse_filter
from tidemark.query.plan_special import mentions_special
from tidemark.query.values import is_number

# What a stage modifies: ("only", paths) — those paths; ("all but", paths) — everything outside them.
Modified = tuple[str, frozenset[str]]


def push_matches_before(pipeline: list[Any]) -> list[Any]:
    """The pipeline with each $match moved as far forward as the stages before it allow (a new list;
    the stages themselves are not changed, a split $match becomes two)."""
    out = list(pipeline)
    i, n = 1, len(out)
    while i < n:
        stage = out[i]
        # (most stages are no $match: a plain dict without the key is passed over without a call)
        match = _plain_match(stage) if type(stage) is not dict or "$match" in stage else None
        modified = _modified(out[i - 1]) if match is not None else None
        if match is None or modified is None:
            i += 1
            continue
        moving, staying = _split(match, modified)
        if moving is None:
            i += 1
            continue
        out[i - 1:i + 1] = [{"$match": moving}, out[i - 1], *([{"$match": staying}] if staying is not None else [])]
        n = len(out)
        i = max(i - 1, 1)  # the moved $match may move further
    return out


def _plain_match(stage: Any) -> dict | None:
    # (look-ups, not isinstance/len/get calls: a $match of every pipeline passes here)
    if type(stage) is dict or isinstance(stage, dict):
        match = stage["$match"] if "$match" in stage else None
        if type(match) is dict and len(stage) == 1:
            return None if mentions_special(match) else match
    return None


def _paths(value: Any) -> frozenset[str]:
    return frozenset(p for p in (value if isinstance(value, list) else [value]) if type(p) is str)


def _modified(stage: Any) -> Modified | None:
    """What ``stage`` modifies, or None when a $match cannot move before it."""
    if not (isinstance(stage, dict) and len(stage) == 1):
        return None
    name, spec = next(iter(stage.items()))
    if name in ("$addFields", "$set") and type(spec) is dict:
        return "only", frozenset(spec)
    if name == "$unset":
        return "only", _paths(spec)
    if name == "$sort" and type(spec) is dict and spec and all(is_number(v) for v in spec.values()):
        return "only", frozenset()
    if name == "$lookup" and type(spec) is dict and type(spec.get("as")) is str:
        # a dotted 'as' replaces its whole top-level field ({a: {b: [...]}}: SERVER-126485)
        return "only", frozenset([spec["as"].split(".")[0]])
    if name == "$unwind":
        if type(spec) is str and spec.startswith("$"):
            return "only", frozenset([spec[1:]])
        if type(spec) is dict and type(spec.get("path")) is str and spec["path"].startswith("$"):
            index = spec.get("includeArrayIndex")
            return "only", frozenset([spec["path"][1:], *([index] if type(index) is str else [])])
        return None
    if name == "$project" and type(spec) is dict and spec:
        return _project_modified(spec)
    return None


def _project_modified(spec: dict) -> Modified | None:
    excluded = {k for k, v in spec.items() if v is False or (is_number(v) and v == 0)}
    if len(excluded) == len(spec):
        return "only", frozenset(excluded)
    if excluded - {"_id"}:
        return None  # (a projection mixing both is refused when it runs)
    included = {k for k, v in spec.items() if v is True or (is_number(v) and v != 0)}
    if "_id" not in spec:
        included.add("_id")  # kept unless excluded; computed fields and the rest are modified
    return "all but", frozenset(included)


def _conjuncts(match: dict) -> list[dict]:
    out: list[dict] = []
    for key, value in match.items():
        if key == "$and" and isinstance(value, list) and all(type(c) is dict for c in value):
            out.extend(value)
        else:
            out.append({key: value})
    return out


def _independent(conjunct: dict, modified: Modified) -> bool:
    if "$where" in conjunct:
        return False
    try:
        fields = filter_fields(parse_filter(conjunct))
    except MongoError:
        return False  # (refused where it is written)
    if fields is None:
        return False
    kind, paths = modified
    if kind == "only":
        return not any(_related(f, p) for f in fields for p in paths)
    return all(any(f == p or f.startswith(p + ".") for p in paths) for f in fields)


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _joined(conjuncts: list[dict]) -> dict:
    keys = [k for c in conjuncts for k in c]
    if len(keys) == len(set(keys)):
        return {k: v for c in conjuncts for k, v in c.items()}
    return {"$and": conjuncts}


def _split(match: dict, modified: Modified) -> tuple[dict | None, dict | None]:
    """(the part that moves, the part that stays): the whole $match when all of it moves."""
    conjuncts = _conjuncts(match)
    flags = [_independent(c, modified) for c in conjuncts]
    if not any(flags):
        return None, None
    if all(flags):
        return match, None
    return (_joined([c for c, f in zip(conjuncts, flags, strict=True) if f]),
            _joined([c for c, f in zip(conjuncts, flags, strict=True) if not f]))
