"""Index scans of wildcard (``$**``) indexes (pure): which predicate of a read a wildcard index may
answer, and the key intervals of that answer (the keys are ``wildcard.py``'s).

mongod's planner uses a wildcard index for a predicate on ONE path its projection covers: equality,
``$in`` and ranges of scalar values (also inside ``$elemMatch``: an element of the array is keyed at
the array's path), and ``$exists: true``; never for null equality, ``$exists: false``, ``$ne``/``$not``,
nor equality to a document or an array (leaves cannot answer them). It gives a sort only on the one path
it scans, when the index never held an array (``_give_sort``; mongod knows arrays per path). A compound
wildcard index also needs equality on the regular fields before its wildcard field for such a leaf
scan; when its first field is a regular one, it may instead be scanned by the regular prefix alone
(mongod's generic expansion, ``$_path`` bounds ``[MinKey, MinKey], ["", {})``: every path and the
documents without a wildcard leaf, ``wildcard.NO_LEAF``), which also answers the predicates no leaf
scan can (null, ``$ne``, ...) since the full filter is re-applied. Unhinted, that needs a bound on the
first field; hinted, it may scan the whole index. Anything else is left to the other plans (a
collection scan at worst); a hint naming a wildcard index that cannot answer the read is 291, as
mongod's planner finds no plan for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.access_path import Interval, Plan
from tidemark.query.collation import same as same_collation
from tidemark.query.implication import filter_implies
from tidemark.query.index_bounds import (
    FieldBounds,
    bounds_for_index,
    build_intervals,
    describe_range,
    extract_bounds,
    ranges_intervals,
    value_ranges,
)
from tidemark.query.index_keys import MULTIKEY_FLAG, index_collation
from tidemark.query.index_kinds import key_direction
from tidemark.query.wildcard import (
    PATH_FIELD,
    is_wildcard,
    parsed,
    path_prefix,
    scalar_bound,
    subtree_range,
    usable_path,
)
from tidemark.storage.keys import UNDEFINED, encode_key

_NO_PLAN = ("error processing query: planner returned error :: caused by :: hint provided does not correspond "
            "to an existing index")


def wildcard_indexes(indexes: list[dict]) -> list[dict]:
    return [spec for spec in indexes if is_wildcard(spec["key"])]


def best_wildcard_plan(indexes: list[dict], filter: dict | None, all_bounds: dict[str, FieldBounds],
                       collation: Any, sort: dict | None = None, multikey_default: bool = True) -> Plan | None:
    """The scan of the first visible wildcard index that can answer the read (equality before ranges
    before ``$exists``), or None. A partial one only when the filter implies its filter. ``sort`` and
    ``multikey_default`` (what a spec without the multikey flag means): whether the scan gives the sort
    (``_give_sort``)."""
    best: tuple[int, Plan] | None = None
    best_spec: dict = {}
    for spec in indexes:
        if spec.get("hidden") or not is_wildcard(spec["key"]):
            continue
        if "partialFilterExpression" in spec and not (
                filter_implies(filter, spec["partialFilterExpression"], collation)
                if same_collation(index_collation(spec), collation)
                else filter_implies(filter, spec["partialFilterExpression"])):  # (strings byte-equal only)
            continue
        found = _plan(spec, filter, all_bounds, collation, hinted=False)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
            best_spec = spec
    if best is None:
        return None
    if sort:
        _give_sort(best_spec, best[0], best[1], sort, collation, multikey_default)
    return best[1]


def hinted_wildcard_plan(spec: dict, filter: dict | None, all_bounds: dict[str, FieldBounds],
                         collation: Any, sort: dict | None = None, multikey_default: bool = True) -> Plan:
    found = _plan(spec, filter, all_bounds, collation, hinted=True)
    if found is None:
        raise MongoError(ErrorCode.NoQueryExecutionPlans, _NO_PLAN)
    if sort:
        _give_sort(spec, found[0], found[1], sort, collation, multikey_default)
    return found[1]


def _give_sort(spec: dict, rank: int, plan: Plan, sort: dict, collation: Any, multikey_default: bool) -> None:
    """Mark ``plan`` as giving ``sort`` when that is sure: a sort on the one path a leaf scan of a plain
    wildcard index reads (value bounds, no ``$exists`` subtree, one key path), an index that never
    held an array (each document then has exactly one key at that path, its sort value: the key order
    is the sort order; mongod tracks arrays per path, Tidemark per index, so it gives fewer such sorts),
    and the query's collation the index's. Backwards when the directions differ."""
    if rank > 1 or len(sort) != 1 or len(spec["key"]) != 1 or spec.get(MULTIKEY_FLAG, multikey_default):
        return
    ((path, direction),) = sort.items()
    if isinstance(direction, dict):  # ({$meta: ...}: no index order)
        return
    if plan.bounds_desc.get(PATH_FIELD) != [f'["{path}", "{path}"]'] or path not in plan.bounds_desc:
        return
    if not same_collation(index_collation(spec), collation):
        return
    plan.provides_sort = True
    plan.reverse = key_direction(direction) != parsed(spec).direction


def _conjuncts(filter: dict | None) -> Iterator[tuple[str, Any]]:
    """The (path or operator, condition) pairs of ``filter``'s top-level conjunction, ``$and`` flattened."""
    stack = [filter] if filter else []
    while stack:
        node = stack.pop()
        for k, v in node.items():
            if k == "$and" and isinstance(v, list):
                stack.extend(sub for sub in v if isinstance(sub, dict))
            else:
                yield k, v


def _exists_paths(filter: dict | None) -> list[str]:
    """Paths of ``{path: {$exists: <true>}}`` in the top-level conjunction (``$and`` flattened). (Not
    ``{$ne: null}``, which mongod 7.0 plans alike: ``{"a.b": {$ne: null}}`` also matches ``{a: []}``,
    which has no key at ``a.b``.)"""
    out: list[str] = []
    for k, v in _conjuncts(filter):
        if not k.startswith("$") and isinstance(v, dict) and "$exists" in v:
            flag = v["$exists"]
            if flag is not None and flag is not False and not (isinstance(flag, (int, float)) and flag == 0):
                out.append(k)
    return out


def _empty_array_equalities(filter: dict | None) -> list[str]:
    """Paths of ``{path: []}`` / ``{path: {$eq: []}}`` in the top-level conjunction: an empty array is a
    leaf of its own (``extract_bounds`` leaves array values out, a btree index keys their elements)."""
    return [k for k, v in _conjuncts(filter)
            if not k.startswith("$") and (v == [] or isinstance(v, dict) and v.get("$eq", None) == [])]


_VALUE_OPERATORS = frozenset({"$eq", "$in", "$gt", "$gte", "$lt", "$lte"})
_LOGICAL = frozenset({"$and", "$or", "$nor", "$expr", "$where", "$jsonSchema", "$comment", "$alwaysTrue",
                      "$alwaysFalse", "$text"})


def _elem_match_bounds(filter: dict | None) -> dict[str, FieldBounds]:
    """Bounds of the ``$elemMatch`` conditions of the top-level conjunction: an element of the array at
    ``path`` is keyed at ``path`` itself (a value form's comparisons bound ``path``), a document element's
    fields at ``path.<field>`` (an object form's conjunction bounds those). Loose, as every bound: a
    matching document has a key inside them, and the full filter is re-applied."""
    out: dict[str, FieldBounds] = {}
    for k, v in _conjuncts(filter):
        if k.startswith("$") or not isinstance(v, dict) or not isinstance(v.get("$elemMatch"), dict):
            continue
        inner = v["$elemMatch"]
        if inner and all(op.startswith("$") and op not in _LOGICAL for op in inner):
            if _VALUE_OPERATORS.intersection(inner):
                found = extract_bounds({k: inner}).get(k)
                if found is not None:
                    out.setdefault(k, found)
        elif not _VALUE_OPERATORS.intersection(inner):
            for sub, found in extract_bounds(inner).items():
                out.setdefault(f"{k}.{sub}", found)
    return out


def _answerable(b: FieldBounds) -> bool:
    """Bounds that leaves answer: scalar points and ranges, an empty document or array as a point (each
    is a leaf), an empty document as the high end of a range starting below it (``$lte: {}``: nothing
    else of the object bracket lies below it)."""
    if b.is_point:
        return all(scalar_bound(v) or v == {} or v == [] for v in b.points or ())
    return all(scalar_bound(v) or v == {} for v in b.values()) and not (type(b.lo) is dict and b.lo == {})


def key_paths(path: str) -> list[tuple[str, bool]] | None:
    """The key paths a query path may be stored under, and whether with the value itself (True) or
    inside a nested array (False: the key's value is that array). A numeric component is a field name,
    or a position of an array (left out of key paths); after a position, a nested array stops the keys.
    None when the path is not one a wildcard index answers (an empty or ``$`` component, or more than
    eight numeric ones, as mongod)."""
    parts = path.split(".")
    if not usable_path(path):
        return None
    numeric = sum(1 for part in parts if part.isdigit())
    if numeric > 8:  # (mongod's limit; 2^8 readings at most)
        return None
    found: dict[tuple[str, bool], None] = {}
    pending: list[tuple[int, tuple[str, ...]]] = [(0, ())]
    while pending:
        i, acc = pending.pop()
        if i == len(parts):
            found[(".".join(acc), True)] = None
            continue
        part = parts[i]
        pending.append((i + 1, (*acc, part)))
        if part.isdigit() and acc:  # (a top-level component names a field: the document is no array)
            pending.append((i + 1, acc))
            found[(".".join(acc), False)] = None
    return sorted(found)


_IN_ARRAY = FieldBounds(lo=[], lo_incl=True)  # every array value: the bracket of arrays


def _plan(spec: dict, filter: dict | None, all_bounds: dict[str, FieldBounds], collation: Any, *,
          hinted: bool) -> tuple[int, Plan] | None:
    """(rank, plan) of ``spec`` for the read (rank 0 equality, 1 range, 2 ``$exists``, 3 the generic
    scan of a compound index by its regular prefix), or None."""
    index = parsed(spec)
    bounds, _ = bounds_for_index(spec, all_bounds, collation)
    extra: dict[str, FieldBounds] = {}
    for path in _empty_array_equalities(filter):
        # the path's own empty array (keyed undefined) and one inside an array (a value, [])
        extra.setdefault(path, FieldBounds(points=[UNDEFINED, []]))
    for path, b in _elem_match_bounds(filter).items():
        extra.setdefault(path, b)
    if extra:
        # (the $elemMatch bounds under the index's collation rules, as the others)
        extra_bounds, _ = bounds_for_index(spec, {p: b for p, b in extra.items() if p not in bounds}, collation)
        bounds = {**bounds, **extra_bounds}
    found = _leaf_plan(spec, index, filter, bounds)
    if found is None and index.position > 0:
        found = _generic_plan(spec, index, bounds, hinted)
    return found


def _generic_plan(spec: dict, index: Any, bounds: dict[str, FieldBounds], hinted: bool) -> tuple[int, Plan] | None:
    """The scan of a compound wildcard index whose first field is a regular one by the bounds of its
    regular prefix only: every ``$_path`` (and ``NO_LEAF``'s MinKey), every value, then the trailing
    fields. The key layout is a btree's over (prefix..., path, value, suffix...), so its intervals are
    ``build_intervals``' for that layout. Unhinted only with a bound on the first field (mongod's
    planner needs a predicate on the index's leading field)."""
    before = index.regular[:index.position]
    if not hinted and before[0] not in bounds:
        return None
    key: dict[str, Any] = {}
    for name, value in spec["key"].items():
        if name in before:
            key[name] = value
        elif name not in index.regular:  # the wildcard field: its path, then its value (never bounded)
            key[PATH_FIELD] = 1
            key["\0value"] = index.direction
        else:
            key[name] = value
    layout = {"name": spec["name"], "key": key, MULTIKEY_FLAG: spec.get(MULTIKEY_FLAG, True)}
    intervals, desc = build_intervals(layout, {f: bounds[f] for f in before if f in bounds})
    shown = {f: list(desc[f]) for f in before}
    shown[PATH_FIELD] = ["[MinKey, MinKey]", '["", {})']
    for f in index.regular[index.position:]:
        shown[f] = ["[MinKey, MaxKey]"]
    return 3, Plan("IXSCAN", index=spec, intervals=intervals, bounds_desc=shown)


def _leaf_plan(spec: dict, index: Any, filter: dict | None, bounds: dict[str, FieldBounds]) -> tuple[int, Plan] | None:
    """The scan of the keys of one query path (a leaf scan), after an equality prefix, or None."""
    # the regular fields before the wildcard one: equality on each (a btree prefix)
    prefix_ranges: list[list[tuple]] = []
    directions: list[int] = []
    shown: dict[str, list[str]] = {}
    key_directions = [(-1 if float(str(v)) < 0 else 1) for k, v in spec["key"].items()]
    for i, field in enumerate(index.regular[:index.position]):
        b = bounds.get(field)
        if b is None or not b.is_point:
            return None
        ranges = value_ranges(b, key_directions[i])
        prefix_ranges.append(ranges)
        directions.append(key_directions[i])
        shown[field] = [describe_range(r) for r in ranges]
    regular = set(index.regular)
    chosen: tuple[int, str, FieldBounds | None, list[tuple[str, bool]]] | None = None
    for path, b in bounds.items():
        if path in regular or not _answerable(b):
            continue
        paths = key_paths(path)
        if not paths or not all(index.covers(kp) for kp, _ in paths):
            continue
        rank = 0 if b.is_point else 1
        if chosen is None or rank < chosen[0]:
            chosen = (rank, path, b, paths)
    if chosen is None:
        for path in _exists_paths(filter):
            if path not in regular and key_paths(path) == [(path, True)] and index.covers(path, subtree=True):
                chosen = (2, path, None, [(path, True)])
                break
    if chosen is None:
        return None
    rank, path, b, paths = chosen
    shown[PATH_FIELD] = [f'["{kp}", "{kp}"]' for kp, _ in paths]
    if b is not None:
        ranges = value_ranges(b, index.direction)
        nested = value_ranges(_IN_ARRAY, index.direction)
        intervals: list[Interval] = []
        for kp, exact in paths:
            intervals += ranges_intervals([*prefix_ranges, [(kp, kp, True, True)], ranges if exact else nested],
                                          (*directions, 1, index.direction))
        intervals.sort(key=lambda iv: iv.lo or b"")
        shown[path] = [describe_range(r) for r in ranges]
    else:
        intervals = _exists_intervals(prefix_ranges, tuple(directions), path)
        shown[PATH_FIELD].append(f'["{path}.", "{path}/")')
        shown[path] = ["[MinKey, MaxKey]"]
    # explain's indexBounds in key order: the prefix, the path and its values, then the trailing fields
    ordered = {f: shown[f] for f in index.regular[:index.position]}
    ordered[PATH_FIELD] = shown[PATH_FIELD]
    ordered[path] = shown[path]
    for f in index.regular[index.position:]:
        ordered[f] = ["[MinKey, MaxKey]"]
    return rank, Plan("IXSCAN", index=spec, intervals=intervals, bounds_desc=ordered)


def _exists_intervals(prefix_ranges: list[list[tuple]], directions: tuple[int, ...], path: str) -> list[Interval]:
    """Every key of ``path`` itself and of the paths below it, after each equality prefix."""
    prefixes = [b""]
    for ranges, d in zip(prefix_ranges, directions, strict=False):
        prefixes = [p + encode_key((r[0],), (d,)) for p in prefixes for r in ranges]
    own = path_prefix(path)
    lo, hi = subtree_range(path)
    out: list[Interval] = []
    for p in prefixes:
        out.append(Interval(p + own, p + own, True, True))
        out.append(Interval(p + lo, p + hi, True, False))
    out.sort(key=lambda iv: iv.lo or b"")
    return out


__all__ = ["best_wildcard_plan", "hinted_wildcard_plan", "wildcard_indexes"]
