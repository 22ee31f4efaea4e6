"""Index choice for regular collections (pure): ``choose_plan`` picks the access path of a read.

Equality / ``$in`` / range predicates of the top-level conjunction (``index_bounds``) and the
requested sort pick an index and its key intervals for ``storage.index_scan``; ``$text``, ``$near``
and geo / hashed indexes go through ``plan_special``, wildcard (``$**``) indexes through ``wildcard_plan``
(when no other index serves the bounds); a top-level ``$or`` whose branches are all
indexed becomes an index union ("OR", opt-in); otherwise a collection scan. An equality-pinned
prefix lets an index give the sort. Bounds may be loose: callers re-apply the filter — the full one,
or what the bounds leave undecided (``Plan.residual``, mongod's FETCH filter: the conditions an IXSCAN's
bounds decide exactly, ``Plan.exact``, left out) — and de-duplicate record ids (a multikey document can
appear more than once in an index scan).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import bson
from bson.decimal128 import Decimal128

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import clustered_range, interrupt, plan_special
from tidemark.query.access_path import Plan
from tidemark.query.collation import same as same_collation
from tidemark.query.implication import filter_implies
from tidemark.query.index_bounds import (
    FieldBounds,
    bounds_for_hashed,
    bounds_for_index,
    build_intervals,
    extract_bounds,
    multikey_index,
    special_index_bounds,
    without_expr_ranges,
)
from tidemark.query.index_keys import (
    MULTIKEY_FLAG,
    index_collation,
    key_fields,
)
from tidemark.query.index_kinds import is_special, key_direction
from tidemark.query.value_repr import bson_repr
from tidemark.query.wildcard import is_wildcard
from tidemark.query.wildcard_plan import best_wildcard_plan, hinted_wildcard_plan

__all__ = ["best_index", "choose_plan", "find_hinted_index", "names_cluster", "plan_for"]


def _sort_match(spec: dict, sort: dict | None, bounds: dict[str, FieldBounds] | None = None) -> bool | None:
    """True/False when the index order (forward/reverse) gives ``sort``; None when it cannot.

    Leading index fields pinned to a single value by the filter do not disturb the order, so
    ``{device: X}`` sorted by ``{ts: -1}`` is served by an index on ``{device: 1, ts: 1}``."""
    if not sort:
        return None
    fields, directions = key_fields(spec["key"])
    sort_items = [(k, key_direction(v)) for k, v in sort.items()]
    start = 0
    sort_names = {k for k, _ in sort_items}
    while start < len(fields) and bounds and fields[start] not in sort_names:
        b = bounds.get(fields[start])
        if b is None or not b.is_point or len(b.points or ()) != 1:
            break
        start += 1
    fields, directions = fields[start:], directions[start:]
    if len(sort_items) > len(fields):
        return None
    forward = all(sf == f and sd == d for (sf, sd), f, d in zip(sort_items, fields, directions, strict=False))
    if forward:
        return False
    backward = all(sf == f and sd == -d for (sf, sd), f, d in zip(sort_items, fields, directions, strict=False))
    return True if backward else None


def _bounds_cut_a_multikey_sort(spec: dict, sort: dict | None, bounds: dict[str, FieldBounds],
                                multikey_default: bool, scalar_paths: frozenset[str]) -> bool:
    """Whether the scan cannot give ``sort`` although the key order matches: a multikey index orders a
    document by its smallest (forward) or largest (backward) key *within the bounds*, while its sort
    key is its smallest or largest value of the whole array, so a sort field the filter bounds (and
    that may hold arrays: not one of ``scalar_paths``) is sorted after the scan instead, as mongod
    does (``find({a: 1}).sort({a: -1})`` over ``a: [4, 0, 1]`` and ``a: [1, 0]`` put ``[1, 0]`` first)."""
    if not sort or spec["name"] == "_id_" or not spec.get(MULTIKEY_FLAG, multikey_default):
        return False
    if any(path in bounds and path not in scalar_paths for path in sort):
        return True
    # A sort path under the same array as a bounded one (``a.c`` after ``{"a.b": 1}``): the scan orders
    # a document by the ``a.c`` of the elements whose b is 1 (index_keys pairs the values of one
    # element), its sort key is the least ``a.c`` of all elements (SERVER-31858)
    heads = {path.partition(".")[0] for path in spec["key"] if path in bounds and path not in sort}
    return any(path.partition(".")[0] in heads for path in sort if path not in scalar_paths)


def check_hint_type(hint: Any) -> None:
    """mongod's parseHint (query/hint_parser.cpp), which every command taking a hint applies while it
    parses the request, before any collection or view is looked at: a hint is an index name or an
    object (a key pattern or ``$natural``), else 9 FailedToParse."""
    if type(hint) is not str and not isinstance(hint, dict):
        raise MongoError(ErrorCode.FailedToParse, "Hint must be a string or an object")


def find_hinted_index(indexes: list[dict], hint: Any) -> dict:
    """The index a hint names (by name or key pattern); raises 9 FailedToParse for a hint of another type,
    2 BadValue when no visible index matches and, as mongod's planner (QueryPlanner::plan), 27 IndexNotFound when a key pattern matches several
    visible indexes (the same key under other collations or names: only a name tells them apart)."""
    check_hint_type(hint)
    strict = _api_strict()
    # hidden indexes are not the planner's, nor, under apiStrict, those outside API Version 1
    visible = [spec for spec in indexes if not spec.get("hidden") and not (strict and _outside_api_v1(spec))]
    if type(hint) is str:
        found = [spec for spec in visible if spec["name"] == hint]
    elif isinstance(hint, dict):
        pattern = list(hint.items())
        found = [spec for spec in visible if list(spec["key"].items()) == pattern]
        if not found:  # (the same fields in another order: accepted, as before)
            found = [spec for spec in visible if spec["key"] == hint][:1]
    else:
        found = []
    if not found:
        raise MongoError(ErrorCode.BadValue, "hint provided does not correspond to an existing index")
    if len(found) > 1:
        first, second = (_entry_repr(spec) for spec in found[:2])
        raise MongoError(ErrorCode.IndexNotFound,
                         f"Hint matched multiple indexes, must hint by index name. Matched: {first} and {second}")
    return found[0]


def _api_strict() -> bool:
    """Whether the running command (the operation bound to this thread, ``interrupt.current``) was sent
    with ``apiStrict: true``: mongod's fillOutPlannerParams then leaves the indexes outside API Version 1
    out of planning, for every read of the operation (an explain's API parameters are its own, not its
    inner command's). One context-variable read per planned query."""
    command = getattr(interrupt.current(), "command", None)
    return isinstance(command, dict) and command.get("apiStrict") is True


_UNSTABLE_KINDS = frozenset({"text", "geoHaystack", "columnstore"})


def _outside_api_v1(spec: dict) -> bool:
    """A sparse, text, geoHaystack or columnstore index: not in API Version 1 (api_version_unstable_indexes.js)."""
    return bool(spec.get("sparse")) or any(type(v) is str and v in _UNSTABLE_KINDS for v in spec["key"].values())


def _strict_view(indexes: list[dict]) -> list[dict]:
    """``indexes`` as the planner sees them under apiStrict: those outside API Version 1 hidden (a copy
    marked hidden, so that a $text still finds its index at parse time and fails to plan, 291, as mongod's
    does, and a hint naming one is 2 BadValue)."""
    return [dict(spec, hidden=True) if _outside_api_v1(spec) else spec for spec in indexes]


def _entry_repr(spec: dict) -> str:
    """An index as mongod's planner prints it (IndexEntry::toString): key pattern, flags, name, spec."""
    flags = "".join(f" {flag}" for flag in ("multikey", "sparse", "unique") if spec.get(flag))
    shown = {k: v for k, v in spec.items() if k != MULTIKEY_FLAG}
    return f"kp: {bson_repr(spec['key'])}{flags} name: '{spec['name']}' io: {bson_repr(shown)}"


# BSON types of an _id value mongod's IDHACK looks up (Indexability::isExactBoundsGenerating): not
# null, undefined, arrays, regexes, symbols or DBPointers
_ID_LOOKUP_TYPES = (int, float, Decimal128, str, datetime.datetime, bson.DatetimeMS, bson.Timestamp,
                    bson.ObjectId, bytes, dict, bson.MinKey, bson.MaxKey)  # (str: Code too; bytes: Binary)


def is_simple_id_query(filter: Any) -> bool:
    """mongod's CanonicalQuery::isSimpleIdQuery: the filter is ``{_id: v}`` alone, ``v`` a literal
    (an object only when its first field is no operator) of a type an exact index bound is made of."""
    if type(filter) is not dict or len(filter) != 1 or "_id" not in filter:
        return False
    value = filter["_id"]
    if isinstance(value, dict):
        return not value or not next(iter(value)).startswith("$")
    return isinstance(value, _ID_LOOKUP_TYPES)


def _id_lookup_plan(indexes: list[dict], filter: dict, collation: Any, multikey_default: bool) -> Plan | None:
    """mongod's IDHACK (isIdHackEligibleQuery, once the statement allows it): the ``_id`` index's point
    lookup of a simple ``{_id: v}`` filter run under the collection's default collation (which the
    ``_id`` index has), or None."""
    id_index = next((spec for spec in indexes if spec.get("name") == "_id_"), None)
    if id_index is None or not same_collation(index_collation(id_index), collation):
        return None
    plan = plan_for(id_index, extract_bounds(filter), None, multikey_default, collation)
    plan.id_lookup = plan.provides_sort = True  # (one document at most)
    return plan


def choose_plan(indexes: list[dict], filter: dict | None, sort: dict | None = None, hint: Any = None, *,
                multikey_default: bool = True, allow_or: bool = False, collation: Any = None,
                cluster: dict | None = None, scalar_paths: frozenset[str] = frozenset(),
                id_lookup: bool = False, table_scan: bool = True, variables: Mapping[str, Any] | None = None) -> Plan:
    """Pick an access path. Hidden indexes are never chosen; sparse ones when hinted or when the
    filter's bounds on their leading field cannot match a document lacking it (``best_index``), partial
    ones when hinted or when the filter implies their partialFilterExpression (``implication``).

    ``collation`` is the query's (``collation.Collation``, None = simple): an index bounds strings
    only when its collation is the same (then with collation keys), and gives a sort only then.

    ``multikey_default`` is what a spec without the ``multikey`` flag means: the regular-collection
    write paths maintain the flag (pass False); for anything else assume multikey (one-sided ranges).
    ``scalar_paths``: key paths that never hold an array (a buckets index's ``control.min/max.<time>``:
    one date per bucket): a range on them stays two-sided even on a multikey index (mongod's per-path
    ``multiKeyPaths``).
    ``allow_or``: when no index serves the conjunction but every branch of a top-level ``$or`` has
    one, answer an "OR" plan (index union; callers de-duplicate record ids across branches); a $text
    below $or whose sibling branches are indexed is then a TEXT plan holding such a union
    (``plan_special``), else 224.
    ``cluster``: the clustered index spec of a clustered collection (records keyed by ``_id``): its
    collection scans are bounded by the filter's ``_id`` range (``clustered_range``), an ``_id``
    equality prefers that scan to any index, and a hint naming the clustered index is such a scan.
    Such a scan gives a sort on ``{_id: ±1}`` by running in that direction (``clustered_range``).
    ``id_lookup``: the statement lets mongod's IDHACK answer it (a find without skip, min/max or
    showRecordId; a count; an update, delete or findAndModify): an unhinted simple ``{_id: v}``
    filter (``is_simple_id_query``) under the collection's default collation is then the ``_id``
    index's point lookup (``Plan.id_lookup``) whatever other index could serve it.
    ``table_scan`` False (``notablescan``, for a user's query with a filter: the caller decides,
    ``collections.table_scan_allowed``): a plan that would scan the whole collection is 291
    NoQueryExecutionPlans, as mongod's QueryPlanner::plan refuses it — a ``$natural`` hint too; a
    clustered collection's scan bounded by the filter's ``_id`` range is no table scan.
    ``variables``: the values of the ``$$names`` the filter's ``$expr`` reads (an equality of a field and
    a variable bounds the field's index: ``index_bounds.extract_bounds``).
    """
    if not table_scan and isinstance(hint, dict) and "$natural" in hint:
        raise no_table_scan("hint $natural is not allowed, because 'notablescan' is enabled")
    if id_lookup and filter is not None and hint in (None, {}, "") and is_simple_id_query(filter):
        plan = _id_lookup_plan(indexes, filter, collation, multikey_default)  # (a clustered collection
        if plan is not None:                                                  # has no _id index)
            return plan
    if cluster is not None and names_cluster(cluster, hint):
        hint = None  # the clustered index is no entry of `indexes`: its scan is the collection scan
        indexes = []
    if indexes and _api_strict():
        indexes = _strict_view(indexes)
    # an index union may hold a TEXT read ($text below $or) when the caller runs unions
    union = allow_or and hint in (None, {}, "")
    plan = _choose_plan(indexes, filter, sort, hint, multikey_default, collation, scalar_paths, union, variables)
    if plan.kind == "COLLSCAN" and allow_or and hint in (None, {}, "") and isinstance(filter, dict):
        branches = filter.get("$or")
        if isinstance(branches, list) and branches and all(isinstance(b, dict) for b in branches):
            subs = [_choose_plan(indexes, b, None, None, multikey_default, collation, scalar_paths,
                                 variables=variables) for b in branches]
            if all(sub.kind == "IXSCAN" for sub in subs):
                return Plan("OR", branches=subs)
    if cluster is not None and plan.kind in ("COLLSCAN", "IXSCAN"):
        record_range = clustered_range.record_range(filter, collation)
        if record_range is not None and (plan.kind == "COLLSCAN" or (
                record_range.is_point and hint in (None, {}, ""))):
            plan = Plan("COLLSCAN", natural_reverse=plan.natural_reverse, record_range=record_range)
    if cluster is not None and plan.kind == "COLLSCAN" and not (isinstance(hint, dict) and "$natural" in hint):
        # mongod 7.0 (query_planner.cpp) offers the clustered scan in the sort's direction when no
        # index gives the sort; the record order is binary, so only while strings compare binary-wise
        direction = clustered_range.sort_direction(sort)
        if direction and (collation is None or clustered_range.excludes_collatable(filter)):
            plan.natural_reverse = direction < 0
            plan.provides_sort = True
    if not table_scan and plan.kind == "COLLSCAN" and plan.record_range is None:
        raise no_table_scan("No indexed plans available, and running with 'notablescan'")
    return plan


def no_table_scan(reason: str) -> MongoError:
    """291: the planner may not scan the collection (``notablescan``)."""
    return MongoError(ErrorCode.NoQueryExecutionPlans,
                      f"error processing query: planner returned error :: caused by :: {reason}")


def names_cluster(cluster: dict, hint: Any) -> bool:
    """A hint naming the clustered index (by name or by its key pattern ``{_id: 1}``)."""
    if type(hint) is str:
        return hint == cluster["name"]
    return isinstance(hint, dict) and list(hint.items()) == list(cluster["key"].items())


def _choose_plan(indexes: list[dict], filter: dict | None, sort: dict | None, hint: Any,
                 multikey_default: bool, collation: Any = None,
                 scalar_paths: frozenset[str] = frozenset(), union: bool = False,
                 variables: Mapping[str, Any] | None = None) -> Plan:
    if isinstance(hint, dict) and "$natural" in hint:
        return Plan("COLLSCAN", natural_reverse=key_direction(hint["$natural"]) < 0)
    all_bounds = extract_bounds(filter, variables)
    if filter and plan_special.mentions_special(filter) or filter and "$or" in filter:
        special = plan_special.special_plan(indexes, filter, special_index_bounds(
            extract_bounds(filter, with_expr=False)), union, collation)
        if special is not None:
            return special
    if hint is not None and hint != {} and hint != "":
        spec = find_hinted_index(indexes, hint)
        if is_special(spec["key"]):
            return plan_special.hinted_plan(spec, filter, special_index_bounds(all_bounds))
        if is_wildcard(spec["key"]):
            return hinted_wildcard_plan(spec, filter, special_index_bounds(all_bounds), collation, sort, multikey_default)
        return plan_for(spec, all_bounds, sort, multikey_default, collation, scalar_paths)
    found = best_index(indexes, filter, all_bounds, sort, collation, multikey_default)
    if found is not None:
        return plan_for(found, all_bounds, sort, multikey_default, collation, scalar_paths)
    if filter:
        wildcard = best_wildcard_plan(indexes, filter, special_index_bounds(all_bounds), collation, sort, multikey_default)
        if wildcard is not None:
            return wildcard
    if any(is_special(spec["key"]) for spec in indexes):
        fallback = plan_special.fallback_plan(indexes, filter,
                                              bounds_for_hashed(indexes, special_index_bounds(all_bounds), collation))
        if fallback is not None:
            return fallback
    if sort:
        for spec in indexes:
            if spec.get("hidden") or spec.get("sparse") or "partialFilterExpression" in spec or is_wildcard(spec["key"]):
                continue
            bounds, same = bounds_for_index(spec, all_bounds, collation)
            if same and not is_special(spec["key"]) and _sort_match(spec, sort, bounds) is not None:
                return plan_for(spec, all_bounds, sort, multikey_default, collation, scalar_paths)
    return Plan("COLLSCAN")


def best_index(indexes: Sequence[dict], filter: dict | None, all_bounds: dict[str, FieldBounds],
               sort: dict | None, collation: Any = None, multikey_default: bool = True) -> dict | None:
    """The index whose bounds (``all_bounds``: ``extract_bounds(filter)``) serve the read best, or None.
    Hidden, special and wildcard indexes are never chosen here; a partial one only when ``filter``
    implies its ``partialFilterExpression``; a sparse one only when a conjunct on its leading field is
    false of a document lacking the field (``FieldBounds.present``, mongod's
    nodeIsSupportedBySparseIndex): every document the filter matches is then in the index. With no
    sort, no partial, sparse or special index and no collation (the query's or an index's), the answer
    depends only on the indexes and on which paths ``all_bounds`` bounds, and whether with points (a time-series read remembers it by that,
    ``timeseries.view``)."""
    best: tuple | None = None
    for spec in indexes:
        if spec.get("hidden") or is_special(spec["key"]) or is_wildcard(spec["key"]):
            continue
        fields, _ = key_fields(spec["key"])
        bounds, same = bounds_for_index(spec, all_bounds, collation)
        if multikey_index(spec, multikey_default):
            bounds = without_expr_ranges(bounds)  # (build_intervals leaves them out there too)
        # a partial index only under the query's own collation (its filter compared strings under it),
        # and only when the query implies its filter (mongod's isSubsetOf, strings collated)
        if "partialFilterExpression" in spec and not (
                same and filter_implies(filter, spec["partialFilterExpression"], collation)):
            continue
        lead = bounds.get(fields[0])
        if lead is None or spec.get("sparse") and not lead.present:
            continue
        prefix = 0
        for f in fields:
            b = bounds.get(f)
            if b is None:
                break
            prefix += 2 if b.is_point else 1
            if not b.is_point:
                break
        sorts = same and _sort_match(spec, sort, bounds) is not None
        score = (prefix, 1 if (spec.get("unique") or spec["name"] == "_id_") else 0,
                 1 if sorts else 0, -len(fields))
        if best is None or score > best[0]:
            best = (score, spec)
    return None if best is None else best[1]


def plan_for(spec: dict, bounds: dict[str, FieldBounds], sort: dict | None,
              multikey_default: bool = True, collation: Any = None,
              scalar_paths: frozenset[str] = frozenset()) -> Plan:
    bounds, same = bounds_for_index(spec, bounds, collation)
    exact: dict[str, Any] = {}
    intervals, desc = build_intervals(spec, bounds, multikey_default, scalar_paths, exact)
    reverse = _sort_match(spec, sort, bounds) if same and sort else None  # (None without a sort)
    if reverse is not None and _bounds_cut_a_multikey_sort(spec, sort, bounds, multikey_default, scalar_paths):
        reverse = None
    # Several point intervals scanned in order still give index order (build_intervals sorts them).
    return Plan("IXSCAN", index=spec, intervals=intervals, reverse=bool(reverse),
                provides_sort=reverse is not None, bounds_desc=desc, exact=exact)
