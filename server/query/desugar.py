"""mongod's alias stages: the stages one user stage becomes when mongod parses it (its
``DocumentSource::parse`` returns a list), which is what explain shows and what the pipeline length
limit counts (Pipeline::validateCommon, after parsing: 5054701).

``expand(name, spec)`` gives the stages an alias shown by explain stands for (``$sortByCount``,
``$count``, ``$setWindowFields``), as mongod 7.0 serializes them; ``width(name, spec)`` how many stages
any user stage becomes (1 for a stage that is no alias). Pure; the spec is valid (parsed already).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

PARTITION_KEY = "__internal_setWindowFields_partition_key"
MAX_WIDTH = 5  # the most stages one stage becomes: a $fill with a computed partition and value outputs


def _sort_by_count(spec: Any) -> list[dict[str, Any]]:
    return [{"$group": {"_id": copy.deepcopy(spec), "count": {"$sum": {"$const": 1}}}},
            {"$sort": {"sortKey": {"count": -1}}}]


def count(spec: Any) -> list[dict[str, Any]]:
    """``{$count: spec}``: a ``$group`` with a null ``_id`` summing 1, then a ``$project`` keeping the count
    (document_source_count.cpp); a source that counts without documents answers that ``$group``."""
    return [{"$group": {"_id": {"$const": None}, spec: {"$sum": {"$const": 1}}}},
            {"$project": {spec: True, "_id": False}}]


def set_window_fields(spec: dict) -> list[dict[str, Any]]:
    """7.0 runs ``$setWindowFields`` as a ``$sort`` on (partition, sortBy) then
    ``$_internalSetWindowFields``; a partition that is not a plain path is computed into a temporary
    field first and removed after (document_source_set_window_fields::createFromBson)."""
    spec = copy.deepcopy(spec)
    partition = spec.get("partitionBy")
    out: list[dict[str, Any]] = []
    sort_key: dict[str, Any] = {}
    computed = partition is not None and not (type(partition) is str and partition.startswith("$")
                                              and not partition.startswith("$$"))
    if computed:
        out.append({"$addFields": {PARTITION_KEY: partition}})
        sort_key[PARTITION_KEY] = 1
        spec["partitionBy"] = "$" + PARTITION_KEY
    elif partition is not None:
        sort_key[partition[1:]] = 1
    sort_key.update(spec.get("sortBy") or {})
    if sort_key:
        out.append({"$sort": {"sortKey": sort_key}})
    out.append({"$_internalSetWindowFields": spec})
    if computed:
        out.append({"$project": {PARTITION_KEY: False, "_id": True}})
    return out


_EXPANSIONS: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
    "$sortByCount": _sort_by_count,
    "$count": count,
    "$setWindowFields": set_window_fields,
}


def expand(name: str, spec: Any) -> list[dict[str, Any]] | None:
    """The stages the alias ``name`` stands for, as explain shows them; None when explain shows the
    stage itself."""
    expansion = _EXPANSIONS.get(name)
    return expansion(spec) if expansion is not None else None


def _fill_width(spec: dict) -> int:
    """``$fill``: a ``$setWindowFields`` (desugared in turn) for its ``method`` outputs, with its
    ``sortBy`` and its partition (``partitionByFields`` as the object ``{f: "$f"}``), then an
    ``$addFields`` for its ``value`` outputs (document_source_fill::createFromBson)."""
    outputs = [o for o in (spec.get("output") or {}).values() if isinstance(o, dict)]
    n = 1 if any("value" in o for o in outputs) else 0
    if any("method" in o for o in outputs):
        window: dict[str, Any] = {"sortBy": spec["sortBy"]} if "sortBy" in spec else {}
        if "partitionBy" in spec:
            window["partitionBy"] = spec["partitionBy"]
        elif "partitionByFields" in spec:
            window["partitionBy"] = {f: f"${f}" for f in spec["partitionByFields"]}
        n += len(set_window_fields(window))
    return n


# aliases explain shows as themselves: $bucket is a $group and a $sort, $densify a $sort and a
# $_internalDensify, $documents a $queue, $project, $unwind and $replaceRoot (their createFromBson)
_WIDTHS: dict[str, Callable[[Any], int]] = {
    "$bucket": lambda spec: 2,
    "$densify": lambda spec: 2,
    "$documents": lambda spec: 4,
    "$fill": _fill_width,
}


def width(name: str, spec: Any) -> int:
    """How many stages the stage ``{name: spec}`` is once mongod has parsed it."""
    expansion = _EXPANSIONS.get(name)
    if expansion is not None:
        return len(expansion(spec))
    counted = _WIDTHS.get(name)
    return counted(spec) if counted is not None else 1
