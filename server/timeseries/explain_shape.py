"""How MongoDB 7.0's classic engine shows a read on a time-series view in explain (pure).

A read runs as: bucket scan (+ the bucket filter) -> unpack (+ the per-measurement filter) -> the rest
of the pipeline. mongod's ``DocumentSourceInternalUnpackBucket::doOptimizeAt`` rearranges that
pipeline, and tools and jstests (``getAggPlanStage``, ``aggPlanHasStage``, ``getPlanStage``) read the
result. ``shape`` turns the read's facts (``view.read_source``'s explain info) and the rest of the
pipeline (already in explain form: ``tidemark.query.explain``) into the stages after ``$cursor``:

- the unpack stage's own fields in 7.0's order: ``include``/``exclude`` (the fields the rest of the
  pipeline needs, the meta field last; an inclusion ``$project`` right after the unpack is absorbed),
  ``timeField``, ``metaField``, ``bucketMaxSpanSeconds``, ``assumeNoMixedSchemaData`` (what a view read
  tells the stage when the buckets cannot hold mixed-schema data: the bucket catalog rolls a bucket over
  on a schema change, so never here), ``usesExtendedRange`` (only when the collection holds dates
  outside 1970..2038), ``eventFilter`` (absent when the leading
  ``$match`` is on the meta field only: 7.0 moves it before the unpack as a ``$match`` on ``meta``,
  which the ``$cursor`` shows), ``fixedBuckets``;
- a ``$sort`` on meta paths only right after the unpack is moved before it on ``meta`` paths and runs
  in the ``$cursor`` (a ``SORT`` stage over the bucket scan); this is also the ``$sort`` a
  ``$setWindowFields`` partitioned by the meta field stands for;
- a ``$group`` whose ``_id`` is one meta path and whose accumulators are ``$min``/``$max`` of
  measurement paths other than the time field, with no per-measurement filter, is rewritten to a
  ``$group`` over the buckets' ``control.min``/``control.max`` and the unpack disappears
  (``rewriteGroupByMinMax``).

Only the shown plan changes here: what runs is the read the view module planned (its columnar
``$group`` and whole-bucket meta filter are the same computations as these rewrites).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from bson.int64 import Int64


@dataclass
class Shape:
    """``bucket_sort``: a sort pattern on bucket fields the ``$cursor`` runs (None: none);
    ``stages``: the stage documents after ``$cursor`` (the unpack, if any, among them);
    ``unpack_index``: where the unpack stage is in ``stages`` (None: optimized away)."""

    bucket_sort: dict[str, Any] | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    unpack_index: int | None = None


def shape(info: dict[str, Any], rest: list[dict[str, Any]], *, fixed_buckets: bool = False,
          uses_extended_range: bool = False) -> Shape:
    """The 7.0 stages after ``$cursor`` for a read with explain ``info`` and the remaining stages
    ``rest`` (explain form, one ``{name: spec}`` each); ``uses_extended_range``: the collection holds
    dates outside 1970..2038 (``scan.uses_extended_range``)."""
    rest = [copy.deepcopy(stage) for stage in rest]
    meta = info.get("metaField")
    time_field = info["timeField"]
    residual = bool(info.get("eventFilter")) and not info.get("wholeBucketFilter")

    if meta is not None and not residual and rest and "$group" in rest[0]:
        group = _bucket_group(rest[0]["$group"], meta, time_field)
        if group is not None:
            return Shape(None, [{"$group": group}, *rest[1:]], None)

    bucket_sort = None
    if meta is not None and rest and "$sort" in rest[0] and "limit" not in rest[0]["$sort"]:
        pattern = rest[0]["$sort"].get("sortKey") or {}
        on_meta = {_meta_path(path, meta): direction for path, direction in pattern.items()}
        if pattern and None not in on_meta:  # every sort path is on the meta field
            bucket_sort = {path: direction for path, direction in on_meta.items() if path is not None}
            rest = rest[1:]

    unpack: dict[str, Any] = {}
    absorbed = not residual and rest and _inclusion_project(rest[0])
    if absorbed:
        fields: Any = _project_fields(rest[0]["$project"])
        rest = rest[1:]
    else:
        fields = info.get("fields", "all")
    if fields == "all" or fields is None:
        unpack["exclude"] = []
    else:
        names = sorted(f for f in fields if f != meta)
        unpack["include"] = names + ([meta] if meta is not None and meta in fields else [])
    unpack["timeField"] = time_field
    if meta is not None:
        unpack["metaField"] = meta
    if info.get("bucketMaxSpanSeconds") is not None:
        unpack["bucketMaxSpanSeconds"] = info["bucketMaxSpanSeconds"]
    # 7.0's resolved view (resolved_view.cpp) passes both flags; the stage shows each only when true
    unpack["assumeNoMixedSchemaData"] = True
    if uses_extended_range:
        unpack["usesExtendedRange"] = True
    if residual:
        clauses = list(info["eventFilter"])
        unpack["eventFilter"] = clauses[0] if len(clauses) == 1 else {"$and": clauses}
    if fixed_buckets:
        unpack["fixedBuckets"] = True
    stages: list[dict[str, Any]] = [{"$_internalUnpackBucket": unpack}]
    timed = info.get("timeSort")
    if timed:  # the read's bounded sort (time_sort): 7.0's stage for a time sort over buckets in time order
        descending = -1 in timed["sortKey"].values()
        # 7.0 always shows the sorter's limit: the absorbed $limit (its $skip included), else 0 (its
        # SortOptions' "no limit"; document_source_sort.cpp serializes _timeSorter->limit())
        limit = 0 if timed["limit"] is None else timed["skip"] + timed["limit"]
        stages.append({"$_internalBoundedSort": {
            "sortKey": timed["sortKey"], "bound": {"base": "max" if descending else "min", "offsetSeconds": Int64(0)},
            "limit": Int64(limit)}})
        if timed["skip"]:
            stages.append({"$skip": Int64(timed["skip"])})
    # the $skip/$limit stages a counting read absorbed (rowcount: arithmetic on the count) still show
    stages.extend({name: Int64(n)} for name, n in info.get("countSteps", ()))
    return Shape(bucket_sort, [*stages, *rest], 0)


def bucket_filter(shown: dict[str, Any], *, uses_extended_range: bool = False) -> dict[str, Any]:
    """The bucket filter the ``$cursor`` shows (``filters.BucketFilter.shown``): 7.0 bounds bucket
    ``_id``s by a time comparison only while no date of the collection is outside 1970..2038 (an
    ObjectId holds 32-bit seconds), so those bounds go when ``uses_extended_range``."""
    if not uses_extended_range:
        return shown
    return _without_id_bounds(shown) or {}


def _without_id_bounds(node: Any) -> Any:
    if not isinstance(node, dict) or len(node) != 1:
        return node
    (key, value), = node.items()
    if key == "_id":
        return None
    if key in ("$and", "$or") and isinstance(value, list):
        kept = [c for c in (_without_id_bounds(child) for child in value) if c is not None]
        if key == "$and":
            return None if not kept else kept[0] if len(kept) == 1 else {"$and": kept}
        return {"$or": kept}
    return node


def _meta_path(path: str, meta: str) -> str | None:
    """``<meta>[.x]`` -> ``meta[.x]``; None for any other path."""
    if path == meta:
        return "meta"
    if path.startswith(meta + "."):
        return "meta" + path[len(meta):]
    return None


def _bucket_group(spec: dict[str, Any], meta: str, time_field: str) -> dict[str, Any] | None:
    """7.0's ``rewriteGroupByMinMax`` (with SERVER-73822: only plain paths under ``$min``/``$max``),
    or None when it does not apply."""
    group_id = spec.get("_id")
    if type(group_id) is not str or not group_id.startswith("$") or group_id.startswith("$$"):
        return None
    bucket_id = _meta_path(group_id[1:], meta)
    if bucket_id is None:
        return None
    out: dict[str, Any] = {"_id": "$" + bucket_id}
    for name, acc in spec.items():
        if name == "_id":
            continue
        if not isinstance(acc, dict) or len(acc) != 1:
            return None
        (op, arg), = acc.items()
        if op not in ("$min", "$max") or type(arg) is not str or not arg.startswith("$") \
                or arg.startswith("$$"):
            return None
        top = arg[1:].split(".", 1)[0]
        if top in (time_field, meta):
            return None  # control.min of the time field is rounded down; meta has no control entry
        out[name] = {op: f"$control.{op[1:]}.{arg[1:]}"}
    return out


def _inclusion_project(stage: dict[str, Any]) -> bool:
    """An inclusion ``$project`` of top-level paths only, which the unpack absorbs (7.0's
    ``canInternalizeProjectObj``)."""
    spec = stage.get("$project")
    if not isinstance(spec, dict) or not spec:
        return False
    inclusions = 0
    for path, value in spec.items():
        if "." in path or isinstance(value, (dict, list, str)) or value is None:
            return False
        if isinstance(value, Int64):
            value = int(value)
        if not value and path != "_id":
            return False
        inclusions += bool(value) and path != "_id"
    return inclusions > 0


def _project_fields(spec: dict[str, Any]) -> set[str]:
    fields = {path for path, value in spec.items() if value}
    if "_id" not in spec:
        fields.add("_id")
    return fields
