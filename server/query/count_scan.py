"""COUNT_SCAN (pure): the plan a count becomes when its index's bounds answer the whole filter, as
mongod's ``turnIxscanIntoCount`` — the entries of one key interval are counted and no document is
fetched (``tidemark.collections.run_count_scan`` runs it).

- ``count_scan_of(plan, filter, info) -> CountScan | None``: the index scan of a plan with nothing left
  to check on a fetched document (``Plan.residual`` of the filter is empty: every condition is one the
  bounds decide exactly, ``index_bounds.tight_condition``, the one rule a find's FETCH filter follows
  too) whose bounds are one interval (``BoundsDescription.single_interval``). Anything else is None:
  the count runs the find's scan and filter (same result, IXSCAN counters).
- ``CountScan.explain()``: mongod's COUNT_SCAN explain node (startKey / endKey bounds).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bson.int64 import Int64

from tidemark.query.access_path import Plan
from tidemark.query.index_bounds import BoundsDescription
from tidemark.query.index_keys import MULTIKEY_FLAG
from tidemark.query.wildcard import is_wildcard_field

__all__ = ["CountScan", "count_scan_of"]


@dataclasses.dataclass(frozen=True)
class CountScan:
    """mongod's COUNT_SCAN of a count whose filter the index bounds answer exactly (its
    ``turnIxscanIntoCount``): the entries of one key interval are counted, no document is fetched.
    ``plan``: what the profiler shows (``COUNT_SCAN { a: 1 }``); ``start`` / ``end``: the interval's
    ends as explain shows them (one value per key field, MinKey / MaxKey past the bounded ones)."""

    plan: Plan
    start: dict
    start_inclusive: bool
    end: dict
    end_inclusive: bool
    dedup: bool  # a multikey index: a document's several entries count once

    def explain(self) -> dict:
        index = self.plan.index
        assert index is not None
        node = self.plan.ixscan_explain()
        node = {"stage": "COUNT_SCAN", **{k: node[k] for k in ("keyPattern", "indexName", "isMultiKey")}}
        if not self.dedup:
            node["multiKeyPaths"] = {path: [] for path in index["key"]}
        node.update(isUnique=bool(index.get("unique")) or index["name"] == "_id_",
                    isSparse=bool(index.get("sparse")), isPartial="partialFilterExpression" in index,
                    indexVersion=2,
                    indexBounds={"startKey": self.start, "startKeyInclusive": self.start_inclusive,
                                 "endKey": self.end, "endKeyInclusive": self.end_inclusive})
        return node


def count_scan_of(plan: Any, flt: Any, info: Any) -> CountScan | None:
    """The COUNT_SCAN a count through ``plan`` becomes, or None: an index scan (of a b-tree index: no
    hashed, geo, text or wildcard one, whose keys are not the values) that leaves nothing of ``flt``
    to check on a document (``Plan.residual`` empty, mongod's FETCH without a filter) and whose bounds
    are a single interval. A multikey index (or a clustered collection's, whose multikeyness is not
    known) counts each record once. An IDHACK plan stays one: mongod plans a count's simple
    ``{_id: v}`` as COUNT over IDHACK."""
    if (plan is None or plan.kind != "IXSCAN" or plan.id_lookup or plan.index is None or len(plan.intervals) != 1
            or plan.meta is not None or not isinstance(plan.bounds_desc, BoundsDescription)):
        return None
    index = plan.index
    if any(type(v) not in (int, float, Int64) or is_wildcard_field(k) for k, v in index["key"].items()):
        return None
    if flt and plan.residual(flt):
        return None
    interval = plan.bounds_desc.single_interval()
    if interval is None:
        return None
    start, start_incl, end, end_incl = interval
    dedup = bool(index.get(MULTIKEY_FLAG, info.clustered))
    count_plan = Plan("COUNT_SCAN", index=index, intervals=list(plan.intervals), bounds_desc=plan.bounds_desc)
    return CountScan(count_plan, start, start_incl, end, end_incl, dedup)
