"""What mongod 7.0's classic engine pushes from an aggregate's pipeline into its query layer
(pipeline_d.cpp ``createCanonicalQuery``), after the rewrites of ``Pipeline::optimizePipeline`` that
decide it: the shape a find would have (``FindShape``), and whether any stage is left. When none is,
mongod runs the aggregate as that find (run_aggregate.cpp ``canOptimizeAwayPipeline``) and explains
it like one (``tidemark.commands.explain``). Pure functions of the pipeline's stages.

Where mongod's rule is not modelled the answer is "a stage is left" (a $match reading more than
named paths after a projection, renames, a partly dependent $match, two $sorts with a limit between
them): explain then keeps its ``stages`` form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bson.decimal128 import Decimal128

from tidemark.query.values import is_number

__all__ = ["FindShape", "query_layer_shape"]


@dataclass
class FindShape:
    """What a find-shaped plan applies above its scan: the filter, sort, skip, limit and projection
    (``None``: absent; a pushed-down limit may be 0, a find's never is)."""

    filter: dict
    sort: dict | None = None
    skip: int | None = None
    limit: int | None = None
    projection: dict | None = None


# single-document transformations: a $skip/$limit swaps past them (canSwapWithSkippingOrLimitingStage)
_TRANSFORMS = frozenset({"$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith"})


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _filter_paths(flt: Any) -> set[str] | None:
    """The field paths a $match reads, or None when it reads more than named paths ($expr, $text...)."""
    if not isinstance(flt, dict):
        return None
    paths: set[str] = set()
    for key, value in flt.items():
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list):
                return None
            for clause in value:
                inner = _filter_paths(clause)
                if inner is None:
                    return None
                paths |= inner
        elif key.startswith("$"):
            return None
        else:
            paths.add(key)
    return paths


def _projection_leaves(spec: dict, prefix: str = "") -> list[tuple[str, str]]:
    """(path, kind) per leaf of an aggregate $project: kind include, exclude or computed."""
    out: list[tuple[str, str]] = []
    for key, value in spec.items():
        path = prefix + key
        if isinstance(value, bool) or is_number(value):
            out.append((path, "include" if value else "exclude"))
        elif isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
            out.extend(_projection_leaves(value, path + "."))
        else:  # an expression, a "$path" or a literal
            out.append((path, "computed"))
    return out


def _transform_kind(name: str, spec: Any) -> tuple[str, bool, set[str]]:
    """mongod's TransformerType of a single-document transformation, whether it computes fields, and
    the paths it names: ("inclusion" | "exclusion" | "computed" | "other", has_expressions, paths)."""
    if name == "$unset":
        return "exclusion", False, {spec} if type(spec) is str else set(spec)
    if name in ("$addFields", "$set") and isinstance(spec, dict):
        return "computed", True, set(spec)
    if name != "$project" or not isinstance(spec, dict):
        return "other", True, set()
    leaves = _projection_leaves(spec)
    kinds = {kind for path, kind in leaves if path != "_id"}
    if kinds & {"include", "computed"}:
        kind = "inclusion"
    elif "exclude" in kinds:
        kind = "exclusion"
    else:  # only _id: {_id: 0} excludes, {_id: 1} includes
        kind = "exclusion" if ("_id", "exclude") in leaves else "inclusion"
    return kind, any(k == "computed" for _, k in leaves), {path for path, _ in leaves}


def _match_passes(stage: dict, flt: Any) -> bool:
    """Whether a $match right after ``stage`` moves before it (pushMatchBefore): past a $sort always,
    past a projection when it reads no path the projection changes (splitSourceBy; a partly dependent
    $match splits and its dependent part stays, so the pipeline stays too: not modelled)."""
    name, spec = next(iter(stage.items()))
    if name == "$sort":
        return True
    if name not in _TRANSFORMS:
        return False
    paths = _filter_paths(flt)
    kind, _, named = _transform_kind(name, spec)
    if paths is None or kind == "other":
        return False
    if kind == "inclusion":
        leaves = dict(_projection_leaves(spec))
        kept = {p for p, k in leaves.items() if k == "include"} | ({"_id"} if "_id" not in leaves else set())
        computed = {p for p, k in leaves.items() if k == "computed"}
        return all(any(m == p or m.startswith(p + ".") for p in kept) and
                   not any(_related(m, c) for c in computed) for m in paths)
    return not any(_related(m, p) for m in paths for p in named)


def _optimize(stages: list[dict], limits: dict[int, int]) -> None:
    """mongod's Pipeline::optimizePipeline, the rewrites that decide what the query layer absorbs:
    an empty $match goes, adjacent $matches coalesce, a $match moves before a $sort or an independent
    projection, a $sort takes in the $limits that can swap up to it (adding the $skips between) and
    a $sort followed by another one without a limit goes. ``limits``: the limit of each $sort, by id."""
    changed = True
    while changed:
        changed = False
        for i, stage in enumerate(stages):
            name, spec = next(iter(stage.items()))
            after = stages[i + 1] if i + 1 < len(stages) else None
            if name == "$match" and spec == {}:
                del stages[i]
            elif name == "$match" and after is not None and "$match" in after:
                stages[i:i + 2] = [{"$match": {"$and": [spec, after["$match"]]}}]
            elif after is not None and "$match" in after and _match_passes(stage, after["$match"]):
                stages[i:i + 2] = [after, stage]
            elif name == "$sort" and _absorb_limits(stages, i, limits):
                pass
            elif name == "$sort" and after is not None and "$sort" in after and id(stage) not in limits:
                del stages[i]
            else:
                continue
            changed = True
            break


def _absorb_limits(stages: list[dict], at: int, limits: dict[int, int]) -> bool:
    """The $sort at ``at`` takes in the $limits that swap up to it (extractLimitForPushdown)."""
    found = _extract(stages, at + 1, "$limit")
    if found is None:
        return False
    sort = stages[at]
    limits[id(sort)] = min(found, limits.get(id(sort), found))
    return True


def _extract(stages: list[dict], start: int, which: str) -> int | None:
    """Remove the $limit (or $skip) stages that can move up to ``start`` and return their combined
    value (extractLimitForPushdown / extractSkipForPushdown): a $limit past $skips grows by them, the
    smallest limit wins, skips add up; transformations are stepped over; anything else stops."""
    total: int | None = None
    skipped = 0
    i = start
    while i < len(stages):
        name, spec = next(iter(stages[i].items()))
        if name == which:
            value = _whole(spec) + (skipped if which == "$limit" else 0)
            total = value if total is None else (min(total, value) if which == "$limit" else total + value)
            del stages[i]
            continue
        if name == "$skip" and which == "$limit":
            skipped += _whole(spec)
        elif name not in _TRANSFORMS:
            break
        i += 1
    return total


def _whole(value: Any) -> int:
    """A $skip / $limit amount (parsed already: a whole number of any numeric type)."""
    return int(value.to_decimal()) if isinstance(value, Decimal128) else int(value)


def _skip_then_limit(limit: int | None, skip: int | None) -> tuple[int | None, int | None]:
    """A limit applied before a skip as the skip and limit a find applies (LimitThenSkip::flip)."""
    if skip is not None and limit is not None:
        skip = min(skip, limit)
    if limit is None:
        return skip, None
    return skip, limit - (skip or 0)


def query_layer_shape(pipeline: list[dict]) -> tuple[FindShape | None, list[dict]]:
    """What mongod 7.0's classic engine pushes into the query layer of a collection's aggregate
    (pipeline_d.cpp createCanonicalQuery), after the rewrites of ``_optimize``: the leading $match
    (the filter), a $sort then at the front with its limit and the $skips after it, else the $limit
    and $skip stages that can move to the front, then an inclusion $project at the front (computed
    fields only without sort, skip or limit: SERVER-54128) or an exclusion $project / $unset when
    nothing else is left. Returns the pushed shape when nothing is left (run_aggregate.cpp
    ``canOptimizeAwayPipeline``: explain answers like a find's) and None otherwise, with the stages
    left. A $group is not pushed: Tidemark plans like the classic engine, not SBE's $group pushdown."""
    stages = [dict(s) for s in pipeline if isinstance(s, dict) and len(s) == 1]
    if len(stages) != len(pipeline) or any(
            name in ("$limit", "$skip") and not is_number(spec) for s in stages for name, spec in s.items()):
        return None, list(pipeline)
    limits: dict[int, int] = {}
    _optimize(stages, limits)
    shape = FindShape({})
    if stages and "$match" in stages[0]:
        shape.filter = stages.pop(0)["$match"]
    if stages and "$sort" in stages[0]:
        sort = stages.pop(0)
        shape.sort = sort["$sort"]
        shape.skip, shape.limit = _skip_then_limit(limits.get(id(sort)), _extract(stages, 0, "$skip"))
    else:
        limit = _extract(stages, 0, "$limit")
        shape.skip, shape.limit = _skip_then_limit(limit, _extract(stages, 0, "$skip"))
    if stages:
        name, spec = next(iter(stages[0].items()))
        kind, computes, _ = _transform_kind(name, spec)
        bare = shape.sort is None and shape.skip is None and shape.limit is None
        if (kind == "inclusion" and (bare or not computes)) or (kind == "exclusion" and len(stages) == 1):
            stages.pop(0)
            unset = [spec] if type(spec) is str else spec
            shape.projection = spec if name == "$project" else {path: 0 for path in unset}
    return (shape if not stages else None), stages
