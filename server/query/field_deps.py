"""Where mongod's field dependency analysis refuses a pipeline (pure).

Before it runs a pipeline on a collection, mongod works out which fields of the documents the
stages after the leading query read (Pipeline::getDependencies). When that set is finite — a stage
that outputs only what it names (an inclusion or computed ``$project``, ``$group`` and its kin,
``$replaceRoot``...) comes before any stage whose needs it cannot know — it turns the set into a
projection for the read (DepsTracker::toProjectionWithoutMetadata), making an aggregation FieldPath of
each field. A query path is wider than a FieldPath: a later ``$match`` on ``"a.$c"`` (legal in a
query) then fails 16410, as the FieldPath of a '$'-prefixed component does.

This module answers only that refusal and stays on the safe side: the walk stops (no error) at any
stage it does not know to pass every field on, at ``$where`` / ``$text``, and wherever ``$$ROOT`` /
``$$CURRENT`` asks for whole documents; a bad path is refused only when no other stage mentions its
first component (mongod drops a path whose parent is a dependency too).
"""

from __future__ import annotations

from typing import Any

from tidemark.query.expr_base import check_field_name

# Stages that pass every field on (DepsTracker SEE_NEXT) and whose own needs are named in their spec.
_PASS_ON = frozenset({"$limit", "$skip", "$sort", "$match", "$addFields", "$set", "$unwind", "$unset"})
# Stages after which no input field is needed but those they name (EXHAUSTIVE_FIELDS or _ALL).
_NAME_THEIR_FIELDS = frozenset({"$group", "$bucket", "$bucketAuto", "$count", "$sortByCount", "$replaceRoot",
                                "$replaceWith", "$facet"})
_WHOLE_DOCUMENT = ("$$ROOT", "$$CURRENT")


def check_match_paths(stages: list) -> None:
    """16410 for a ``$match`` path with a '$'-prefixed component among ``stages`` (a pipeline after its
    leading ``$match``, which the read takes as its query) when mongod's dependency set is finite."""
    paths: list[tuple[str, int]] = []  # (path, index of its stage)
    for i, stage in enumerate(stages):
        if not isinstance(stage, dict) or len(stage) != 1:
            return
        (name, spec), = stage.items()
        if name in _NAME_THEIR_FIELDS or name == "$project" and _includes(spec):
            _refuse_bad(paths, stages[:i + 1])
            return
        if name == "$project":
            continue  # an exclusion passes the rest on
        if name not in _PASS_ON:
            return
        if name == "$match":
            if not isinstance(spec, dict) or not _collect(spec, paths, i):
                return


def _collect(flt: dict, paths: list[tuple[str, int]], at: int) -> bool:
    """The query paths of a filter into ``paths``; False where its needs are unknown."""
    for key, value in flt.items():
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list) or not all(isinstance(v, dict) and _collect(v, paths, at) for v in value):
                return False
        elif key in ("$where", "$text"):
            return False
        elif not key.startswith("$"):
            paths.append((key, at))
    return True


def _includes(spec: Any) -> bool:
    """Whether a ``$project`` spec is an inclusion or computes a field (else an exclusion)."""
    if not isinstance(spec, dict):
        return False
    for value in spec.values():
        if isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
            if _includes(value):
                return True
        elif not (value is False or (type(value) in (int, float) and value == 0)) and not isinstance(value, dict):
            return True
        elif isinstance(value, dict):
            return True  # an expression
    return False


def _mentions(value: Any, name: str) -> bool:
    if isinstance(value, str):
        return value == name or value.startswith(("$" + name, name + ".")) or value in _WHOLE_DOCUMENT
    if isinstance(value, dict):
        return any(k == name or k.startswith(name + ".") or _mentions(v, name) for k, v in value.items())
    if isinstance(value, list):
        return any(_mentions(v, name) for v in value)
    return False


def _whole(value: Any) -> bool:
    if isinstance(value, str):
        return value.startswith(_WHOLE_DOCUMENT)
    if isinstance(value, dict):
        return any(_whole(v) for v in value.values())
    if isinstance(value, list):
        return any(_whole(v) for v in value)
    return False


def _refuse_bad(paths: list[tuple[str, int]], walked: list) -> None:
    if _whole(walked):
        return
    for path, at in sorted(paths):
        parts = path.split(".")
        if not any(p.startswith("$") for p in parts):
            continue
        others = walked[:at] + walked[at + 1:]
        if _mentions(others, parts[0]) or any(p != path and p.split(".")[0] == parts[0] for p, _ in paths):
            continue  # (a dependency on its parent may cover it in mongod's set)
        for part in parts:
            check_field_name(part)
