"""The access path a read takes (pure data): ``Plan`` and the key ``Interval``s it scans, and the
winningPlan that mongod's explain shows for it.

Plan kinds: COLLSCAN (of a clustered collection: maybe bounded by an ``_id`` ``record_range``); IXSCAN
(``intervals`` over one index, in index key order, scanned backwards when ``reverse``; with
``id_lookup`` the ``_id`` index's point lookup of an ``{_id: v}`` filter, which mongod runs as its IDHACK
fast path and explains and summarizes as the stage ``IDHACK``); OR (an index
union, one IXSCAN per ``$or`` branch in ``branches``: callers de-duplicate record ids); TEXT and GEO_NEAR (made by ``plan_special``: ``special`` holds what their
read needs and renders their explain). Chosen by ``plan.choose_plan``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tidemark.query.index_keys import MULTIKEY_FLAG
from tidemark.query.wildcard import PATH_FIELD, is_wildcard_field

_NOT_EXACT = object()
SORT_MEMORY_LIMIT = 104857600  # internalQueryMaxBlockingSortMemoryUsageBytes, 7.0's default


def sort_stage(pattern: Mapping[str, Any], input_stage: dict, *, limit: int | None = None,
               memory_limit: int = SORT_MEMORY_LIMIT) -> dict:
    """mongod's blocking ``SORT`` explain stage: its pattern, memory limit, the top-k ``limitAmount``
    a limit above it became (the LIMIT stage is then gone), and its type: ``simple`` over fetched
    documents (what every Tidemark read sorts), ``default`` when a key is ``$meta`` metadata."""
    node: dict[str, Any] = {"stage": "SORT", "sortPattern": dict(pattern), "memLimit": memory_limit}
    if limit:
        node["limitAmount"] = limit
    node["type"] = "default" if any(isinstance(v, Mapping) for v in pattern.values()) else "simple"
    node["inputStage"] = input_stage
    return node


def _wildcard_direction(index: dict) -> Any:
    """The key-pattern value of a wildcard index's ``$**`` field (its values' direction)."""
    return next((v for k, v in index["key"].items() if is_wildcard_field(k)), 1)


class Interval(NamedTuple):
    """One key interval of an index scan (encoded bounds; None = open). A tuple, not a dataclass: a
    ``$in`` of 400,000 values is 400,000 of them, and a frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field) cost twice the tuple's; storage reads them as plain
    ``(lo, hi, lo_incl, hi_incl)`` tuples (``ReadView.index_scans``)."""

    lo: bytes | None
    hi: bytes | None
    lo_incl: bool = True
    hi_incl: bool = True


@dataclass
class Plan:
    """The chosen access path. ``intervals`` are in index key order (reverse=True scans them backwards)."""

    kind: str  # "COLLSCAN" | "IXSCAN" | "OR" (an index union, see `branches`) | "TEXT" | "GEO_NEAR" | "EOF" (a missing collection)
    index: dict | None = None
    intervals: list[Interval] = field(default_factory=list)
    reverse: bool = False
    provides_sort: bool = False
    bounds_desc: Mapping[str, list[str]] = field(default_factory=dict)  # explain's indexBounds
    natural_reverse: bool = False
    resume_after: bytes | None = None  # COLLSCAN: start past this record id (a find's $_resumeAfter)
    # COLLSCAN of a clustered collection: the ``_id`` range it scans (``clustered_range.RecordRange``;
    # None: every record). mongod explains such a bounded scan as CLUSTERED_IXSCAN.
    record_range: Any = None
    branches: list[Plan] = field(default_factory=list)
    special: Any = None  # TEXT / GEO_NEAR: what the read needs beyond intervals (plan_special)
    meta: Any = None  # the read's DocMeta when its projection/sort/pipeline asks for $meta
    # IXSCAN: mongod's IDHACK (``plan.choose_plan``'s ``id_lookup``): one point of the ``_id`` index,
    # at most one document, so it gives any sort
    id_lookup: bool = False
    # IXSCAN: path -> the filter's top-level condition its bounds decide exactly (mongod's EXACT
    # tightness; ``index_bounds.build_intervals``): the FETCH filter leaves it out (``residual``)
    exact: Mapping[str, Any] = field(default_factory=dict)

    def residual(self, filter: dict | None) -> dict | None:
        """What a document fetched through this plan must still match of ``filter`` (mongod's FETCH
        filter): ``filter`` less the top-level conditions the bounds decide exactly — the very objects
        the plan was made of (``is``), so a filter this plan was not chosen for is left whole. The
        same dict when nothing is decided; ``{}`` when everything is."""
        exact = self.exact
        if not exact or not filter or self.kind != "IXSCAN":
            return filter
        kept = {k: v for k, v in filter.items() if exact.get(k, _NOT_EXACT) is not v}
        return filter if len(kept) == len(filter) else kept

    @property
    def stage(self) -> str:
        """The stage name explain and planSummary show for this access path."""
        if self.id_lookup:
            return "IDHACK"
        return "CLUSTERED_IXSCAN" if self.kind == "COLLSCAN" and self.record_range is not None else self.kind

    def ixscan_explain(self) -> dict:
        assert self.index is not None
        multikey = bool(self.index.get(MULTIKEY_FLAG))
        key_pattern = self.index["key"]
        if PATH_FIELD in self.bounds_desc:
            # a wildcard index scans one (path, value) pair: mongod shows the expanded key pattern
            key_pattern = {f: 1 if f == PATH_FIELD else self.index["key"].get(f, _wildcard_direction(self.index))
                           for f in self.bounds_desc}
        node = {
            "stage": "IXSCAN",
            "keyPattern": key_pattern,
            "indexName": self.index["name"],
            "isMultiKey": multikey,
            "isUnique": bool(self.index.get("unique")) or self.index["name"] == "_id_",
            "isSparse": bool(self.index.get("sparse")),
            "isPartial": "partialFilterExpression" in self.index,
            "indexVersion": 2,
            "direction": "backward" if self.reverse else "forward",
            "indexBounds": dict(self.bounds_desc),
        }
        if not multikey:
            # mongod omits multiKeyPaths when it cannot say which paths are multikey; the catalog keeps
            # one flag per index, so only a never-multikey index can name them (none)
            node["multiKeyPaths"] = {path: [] for path in key_pattern}
        return node

    def explain(self, *, sort: Mapping[str, Any] | None = None, filter: dict | None = None,
                sort_limit: int | None = None, memory_limit: int = SORT_MEMORY_LIMIT) -> dict:
        """The winningPlan tree mongod's explain shows (without skip/limit/projection decorations): a
        ``sort`` this plan does not give is a blocking SORT on top (``sort_stage``; ``sort_limit``:
        the top-k it keeps)."""
        node: dict
        if self.kind == "EOF":  # (nothing to sort, skip, limit or project: mongod shows the EOF stage alone)
            return {"stage": "EOF", "type": "nonExistentNamespace"}
        if self.id_lookup:  # (mongod's IDHackStage fetches and needs no filter or sort above it)
            return {"stage": "IDHACK"}
        if self.kind == "OR":
            node = {"stage": "FETCH", "inputStage": {"stage": "OR",
                                                     "inputStages": [b.ixscan_explain() for b in self.branches]}}
            if filter:
                node = {"stage": "FETCH", "filter": filter, "inputStage": node["inputStage"]}
        elif self.kind in ("TEXT", "GEO_NEAR"):
            node = self.special.explain(self, filter)
        elif self.kind == "COLLSCAN":
            node = {"stage": self.stage, "filter": filter or {},
                          "direction": "backward" if self.natural_reverse else "forward"}
            if self.record_range is not None:
                node.update(self.record_range.explain_fields())
        else:
            ixscan = self.ixscan_explain()
            node = {"stage": "FETCH", "inputStage": ixscan}
            filter = self.residual(filter)
            if filter:
                node = {"stage": "FETCH", "filter": filter, "inputStage": ixscan}
        if sort and not self.provides_sort:
            node = sort_stage(sort, node, limit=sort_limit, memory_limit=memory_limit)
        return node
