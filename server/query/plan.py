"""Index keys and index choice for regular collections.

Two pure halves, both synchronous and free of storage state:

1. **Key extraction** (`keyer_for(spec).entries`, `index_key_map`): which keys a document contributes to an
   index, with MongoDB's rules — dotted paths through sub-documents, multikey expansion of arrays (one
   key per element; an empty array indexes as null), missing fields index as null, sparse indexes skip
   documents lacking every key field, partial indexes skip documents failing their filter, and two
   arrays on one compound key are refused (171 CannotIndexParallelArrays).
2. **Planning** (`choose_plan`): equality / `$in` / range predicates of the top-level conjunction and
   the requested sort pick an index and key intervals for ``storage.index_scan``; a top-level `$or`
   whose branches are all indexed becomes an index union ("OR", opt-in); otherwise a collection scan.
   One-sided ranges stay in their type bracket; an equality-pinned prefix lets an index give the sort.
   Bounds may be loose (a superset): callers ALWAYS re-apply the full filter.
   A multikey document can appear more than once in an index scan; callers de-duplicate record ids.
   A range bounded on both sides is only used on an index known not to be multikey: the regular
   write paths set ``multikey: True`` in the stored spec the first time a document expands an array
   (``index_key_map_multikey``); without that knowledge (``multikey_default=True``) one side is kept.

Keys are encoded with ``storage.keys.encode_key`` so query bounds and stored entries compare alike.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex

from protocol.errors import ErrorCode, MongoError
from server.query import plan_special
from server.query.collation import parse_collation
from server.query.collation import same as same_collation
from server.query.index_kinds import SpecialKeyer
from server.query.match import compile_filter
from server.query.match_leaf import has_strings
from server.query.values import sort_key
from storage.keys import encode_key, encode_value

MAX_INTERVALS = 1000  # beyond this many point intervals, bounds collapse to a covering range
UNSUPPORTED_INDEX_TYPES = ("geoHaystack", "columnstore")

_MISSING = object()


def _encode_key(values, directions) -> bytes:
    return encode_key(values, directions)


# --------------------------------------------------------------------------------------------------
# key patterns
# --------------------------------------------------------------------------------------------------


def key_fields(key_pattern: dict) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(field paths, directions) of a validated ascending/descending key pattern."""
    fields = tuple(key_pattern.keys())
    directions = tuple(-1 if _num(v) < 0 else 1 for v in key_pattern.values())
    return fields, directions


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 1.0


def index_name_for(key_pattern: dict) -> str:
    """mongod's generated index name: ``a_1_b_-1`` (numbers printed as given, strings verbatim)."""
    parts = []
    for name, value in key_pattern.items():
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        parts.append(f"{name}_{value}")
    return "_".join(parts)


# --------------------------------------------------------------------------------------------------
# key extraction
# --------------------------------------------------------------------------------------------------


def _values_at(doc: Any, parts: tuple[str, ...], depth: int = 0) -> tuple[list[Any], bool]:
    """Leaf values for one key field and whether an array was expanded on the way.

    Arrays met before the last component are traversed element-wise (a numeric component also
    indexes positionally, like mongod); an array at the leaf contributes each element (empty -> null).
    """
    if depth == len(parts):
        if isinstance(doc, list):
            return (list(doc) if doc else [None]), True
        return [doc], False
    part = parts[depth]
    if isinstance(doc, dict):
        if part not in doc:
            return [_MISSING], False
        return _values_at(doc[part], parts, depth + 1)
    if isinstance(doc, list):
        out: list[Any] = []
        if part.isdigit() and int(part) < len(doc):
            vals, _ = _values_at(doc[int(part)], parts, depth + 1)
            out.extend(vals)
            return out, False
        for element in doc:
            if isinstance(element, dict):
                vals, _ = _values_at(element, parts, depth)
                out.extend(v for v in vals if v is not _MISSING)
        return (out or [_MISSING]), True
    return [_MISSING], False


@dataclass(frozen=True)
class IndexKeyer:
    """Compiled key extraction for one index spec (as listIndexes shows it)."""

    name: str
    fields: tuple[str, ...]
    parts: tuple[tuple[str, ...], ...]
    directions: tuple[int, ...]
    sparse: bool
    partial: Callable[[dict], bool] | None
    collation: Any = None  # collation.Collation of the index (None = simple): strings index by their key

    def _encode(self, combo: tuple) -> bytes:
        if self.collation is None:
            return _encode_key(combo, self.directions)
        return _encode_key(tuple(collated_key_value(v, self.collation) for v in combo), self.directions)

    def entries(self, doc: dict) -> list[tuple[bytes, tuple]]:
        """[(encoded key, key values)] this document contributes; [] when sparse/partial skip it."""
        return self.entries_multikey(doc)[0]

    def entries_multikey(self, doc: dict) -> tuple[list[tuple[bytes, tuple]], bool]:
        """``entries(doc)`` and whether an array was expanded (the document makes the index multikey)."""
        if self.partial is not None and not self.partial(doc):
            return [], False
        if len(self.parts) == 1 and len(self.parts[0]) == 1:
            # fast path: one top-level field holding a scalar or sub-document (the common case)
            value = doc.get(self.fields[0], _MISSING)
            if not isinstance(value, list):
                if value is _MISSING:
                    if self.sparse:
                        return [], False
                    value = None
                return [(self._encode((value,)), (value,))], False
        per_field = []
        array_fields = []
        present = False
        for name, parts in zip(self.fields, self.parts, strict=False):
            values, was_array = _values_at(doc, parts)
            if was_array and len(values) > 0:
                array_fields.append(name)
            if any(v is not _MISSING for v in values):
                present = True
            per_field.append([None if v is _MISSING else v for v in values])
        if self.sparse and not present:
            return [], False
        if len(array_fields) > 1:
            raise MongoError(
                ErrorCode.CannotIndexParallelArrays,
                f"cannot index parallel arrays [{array_fields[1]}] [{array_fields[0]}]",
            )
        seen: dict[bytes, tuple] = {}
        for combo in itertools.product(*per_field):
            key = self._encode(combo)
            if key not in seen:
                seen[key] = combo
        return list(seen.items()), bool(array_fields)

    def keys(self, doc: dict) -> list[bytes]:
        return [k for k, _ in self.entries(doc)]

    def key_value(self, doc: dict, key: bytes | None = None) -> dict:
        """``keyValue`` for a DuplicateKey error: the values of ``key`` (or the first key)."""
        entries = self.entries(doc)
        values: tuple = entries[0][1] if entries else tuple(None for _ in self.fields)
        for k, v in entries:
            if k == key:
                values = v
                break
        return dict(zip(self.fields, values, strict=False))


_KEYER_CACHE: dict[tuple, IndexKeyer] = {}
_KIND_OPTIONS = ("weights", "default_language", "language_override", "bits", "min", "max")


def collated_key_value(v: Any, collation: Any) -> Any:
    """The value an index with ``collation`` stores for ``v``: every string becomes its ICU key
    (bytes read as Latin-1, so that the key encoding keeps the byte order), as mongod indexes
    collator-generated comparison keys."""
    t = type(v)
    if t is str:
        return collation.string_key(v).decode("latin-1")
    if t is dict:
        return {k: collated_key_value(x, collation) for k, x in v.items()}
    if t is list:
        return [collated_key_value(x, collation) for x in v]
    return v


def index_collation(spec: dict) -> Any:
    """The ``collation.Collation`` of an index spec (None for the simple collation)."""
    raw = spec.get("collation")
    if not raw:
        return None

    return parse_collation(raw)


def keyer_for(spec: dict) -> IndexKeyer:
    """A cached IndexKeyer for an index spec (cache key: name, key pattern, sparse, partial filter,
    collation)."""
    partial_spec = spec.get("partialFilterExpression")
    cache_key = (spec["name"], repr(spec["key"]), bool(spec.get("sparse")), repr(partial_spec),
                 repr(spec.get("collation")), repr([spec.get(k) for k in _KIND_OPTIONS]))
    keyer = _KEYER_CACHE.get(cache_key)
    if keyer is None:
        fields, directions = key_fields(spec["key"])
        partial = None
        collation = index_collation(spec)
        if partial_spec is not None:
            partial = compile_filter(partial_spec, collation=collation)
        if not _is_btree(spec["key"]):
            _KEYER_CACHE[cache_key] = keyer = SpecialKeyer(spec, partial)
            return keyer
        keyer = IndexKeyer(
            name=spec["name"],
            fields=fields,
            parts=tuple(tuple(f.split(".")) for f in fields),
            directions=directions,
            sparse=bool(spec.get("sparse")),
            partial=partial,
            collation=collation,
        )
        if len(_KEYER_CACHE) > 4096:
            _KEYER_CACHE.clear()
        _KEYER_CACHE[cache_key] = keyer
    return keyer


_KEYERS_BY_INDEXES: dict[int, tuple[Any, list[IndexKeyer]]] = {}


def keyers_for(indexes: Iterable[dict]) -> list[IndexKeyer]:
    """Keyers of a collection's index tuple, cached by the tuple's identity (catalog infos are reused)."""
    hit = _KEYERS_BY_INDEXES.get(id(indexes))
    if hit is not None and hit[0] is indexes:
        return hit[1]
    keyers = [keyer_for(spec) for spec in indexes]
    if isinstance(indexes, tuple):
        if len(_KEYERS_BY_INDEXES) > 1024:
            _KEYERS_BY_INDEXES.clear()
        _KEYERS_BY_INDEXES[id(indexes)] = (indexes, keyers)
    return keyers


def index_key_map(indexes: Iterable[dict], doc: dict) -> dict[str, list[bytes]]:
    """{index name: [encoded keys]} for every index of a collection — what storage insert/update take."""
    return {k.name: k.keys(doc) for k in keyers_for(indexes)}


def index_key_map_multikey(indexes: Iterable[dict], doc: dict) -> tuple[dict[str, list[bytes]], set[str]]:
    """``index_key_map`` plus the names of the indexes this document makes multikey."""
    keys: dict[str, list[bytes]] = {}
    multikey: set[str] = set()
    for k in keyers_for(indexes):
        entries, mk = k.entries_multikey(doc)
        keys[k.name] = [key for key, _ in entries]
        if mk:
            multikey.add(k.name)
    return keys, multikey


MULTIKEY_FLAG = "multikey"  # kept in the stored spec by the write paths; hidden from listIndexes


# --------------------------------------------------------------------------------------------------
# planning
# --------------------------------------------------------------------------------------------------


@dataclass
class FieldBounds:
    """What the conjunction says about one path: a set of points or a (possibly open) range."""

    points: list[Any] | None = None
    lo: Any = _MISSING
    lo_incl: bool = True
    hi: Any = _MISSING
    hi_incl: bool = True

    @property
    def is_point(self) -> bool:
        return self.points is not None

    @property
    def is_range(self) -> bool:
        return self.points is None and (self.lo is not _MISSING or self.hi is not _MISSING)


@dataclass(frozen=True)
class Interval:
    """One key interval of an index scan (encoded bounds; None = open)."""

    lo: bytes | None
    hi: bytes | None
    lo_incl: bool = True
    hi_incl: bool = True


@dataclass
class Plan:
    """The chosen access path. ``intervals`` are in index key order (reverse=True scans them backwards)."""

    kind: str  # "COLLSCAN" | "IXSCAN" | "OR" (an index union: one IXSCAN per $or branch, in `branches`)
    index: dict | None = None
    intervals: list[Interval] = field(default_factory=list)
    reverse: bool = False
    provides_sort: bool = False
    bounds_desc: dict[str, list[str]] = field(default_factory=dict)
    natural_reverse: bool = False
    branches: list[Plan] = field(default_factory=list)
    special: Any = None  # TEXT / GEO_NEAR: what the read needs beyond intervals (plan_special)
    meta: Any = None  # the read's DocMeta when its projection/sort/pipeline asks for $meta

    def _ixscan(self) -> dict:
        assert self.index is not None
        return {
            "stage": "IXSCAN",
            "keyPattern": self.index["key"],
            "indexName": self.index["name"],
            "isMultiKey": bool(self.index.get(MULTIKEY_FLAG)),
            "isUnique": bool(self.index.get("unique")) or self.index["name"] == "_id_",
            "isSparse": bool(self.index.get("sparse")),
            "isPartial": "partialFilterExpression" in self.index,
            "indexVersion": 2,
            "direction": "backward" if self.reverse else "forward",
            "indexBounds": self.bounds_desc,
        }

    def explain(self, *, has_sort: bool = False, filter: dict | None = None) -> dict:
        """The winningPlan tree mongod's explain shows (without projection/limit decorations)."""
        if self.kind == "OR":
            node = {"stage": "FETCH", "inputStage": {"stage": "OR",
                                                     "inputStages": [b._ixscan() for b in self.branches]}}
            if filter:
                node = {"stage": "FETCH", "filter": filter, "inputStage": node["inputStage"]}
        elif self.kind in ("TEXT", "GEO_NEAR"):
            node = plan_special.explain(self, filter)
        elif self.kind == "COLLSCAN":
            node: dict = {"stage": "COLLSCAN", "filter": filter or {},
                          "direction": "backward" if self.natural_reverse else "forward"}
        else:
            ixscan = self._ixscan()
            node = {"stage": "FETCH", "inputStage": ixscan}
            if filter:
                node = {"stage": "FETCH", "filter": filter, "inputStage": ixscan}
        if has_sort and not self.provides_sort:
            node = {"stage": "SORT", "inputStage": node}
        return node


def _is_plain_value(v: Any) -> bool:
    """A value usable as an index point: not a regex, not an array, not an operator document."""
    if isinstance(v, (Regex, re.Pattern, list)):
        return False
    if isinstance(v, dict) and any(isinstance(k, str) and k.startswith("$") for k in v):
        return False
    return True


def extract_bounds(filter: dict | None) -> dict[str, FieldBounds]:
    """Per-path bounds implied by the top-level conjunction of ``filter`` (loose; ignores the rest)."""
    out: dict[str, FieldBounds] = {}
    if not filter:
        return out
    conjuncts: list[tuple[str, Any]] = []

    def collect(f: dict) -> None:
        for k, v in f.items():
            if k == "$and" and isinstance(v, list):
                for sub in v:
                    if isinstance(sub, dict):
                        collect(sub)
            elif not k.startswith("$"):
                conjuncts.append((k, v))

    collect(filter)
    for path, cond in conjuncts:
        b = out.setdefault(path, FieldBounds())
        if isinstance(cond, dict) and cond and all(isinstance(k, str) and k.startswith("$") for k in cond):
            for op, arg in cond.items():
                if op == "$eq" and _is_plain_value(arg):
                    _add_points(b, [arg])
                elif op == "$in" and isinstance(arg, list) and all(_is_plain_value(a) for a in arg):
                    _add_points(b, list(arg))
                elif op in ("$gt", "$gte") and _is_plain_value(arg) and arg is not None:
                    if b.points is None and b.lo is _MISSING:
                        b.lo, b.lo_incl = arg, op == "$gte"
                elif op in ("$lt", "$lte") and _is_plain_value(arg) and arg is not None:
                    if b.points is None and b.hi is _MISSING:
                        b.hi, b.hi_incl = arg, op == "$lte"
        elif _is_plain_value(cond):
            _add_points(b, [cond])
    return {p: b for p, b in out.items() if b.is_point or b.is_range}


def _add_points(b: FieldBounds, values: list) -> None:
    if b.points is None:
        b.points = values
        b.lo = b.hi = _MISSING
    else:  # a second equality on the same path: keep the smaller set (both are re-checked anyway)
        if len(values) < len(b.points):
            b.points = values


def _fmt(v: Any) -> str:
    if v is MinKey or isinstance(v, MinKey):
        return "MinKey"
    if v is MaxKey or isinstance(v, MaxKey):
        return "MaxKey"
    if isinstance(v, str):
        return f'"{v}"'
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _interval_desc(lo, hi, lo_incl, hi_incl) -> str:
    return f"{'[' if lo_incl else '('}{_fmt(lo)}, {_fmt(hi)}{']' if hi_incl else ')'}"


def _component_ranges(b: FieldBounds | None, direction: int,
                      multikey: bool = True) -> list[tuple[Any, Any, bool, bool]]:
    """Value ranges (lo, hi, lo_incl, hi_incl) for one key component, in ascending value order.

    On a multikey index a range keeps one side only: {a: {$gt: 5, $lt: 8}} matches a: [1, 10] (each
    bound met by a different element) although no single key lies in (5, 8)."""
    if b is None:
        return [(MinKey(), MaxKey(), True, True)]
    if b.is_point:
        uniq: dict[bytes, Any] = {}
        for p in b.points or []:
            uniq.setdefault(_encode_key((p,), (1,)), p)
        pts = sorted(uniq.values(), key=sort_key)
        return [(p, p, True, True) for p in pts]
    lo = MinKey() if b.lo is _MISSING else b.lo
    hi = MaxKey() if b.hi is _MISSING or (multikey and b.lo is not _MISSING) else b.hi
    hi_incl = b.hi_incl if b.hi is not _MISSING and not isinstance(hi, MaxKey) else True
    return [(lo, hi, b.lo_incl if b.lo is not _MISSING else True, hi_incl)]


def _build_intervals(spec: dict, bounds: dict[str, FieldBounds],
                     multikey_default: bool = True) -> tuple[list[Interval], dict]:
    """Intervals over the full compound key: equality prefix, then one range, then MinKey..MaxKey."""
    fields, directions = key_fields(spec["key"])
    multikey = bool(spec.get(MULTIKEY_FLAG, multikey_default)) and spec["name"] != "_id_"
    per_component: list[list[tuple]] = []
    desc: dict[str, list[str]] = {}
    bounded = True
    for f, d in zip(fields, directions, strict=False):
        b = bounds.get(f) if bounded else None
        ranges = _component_ranges(b, d, multikey)
        if b is None or not b.is_point:
            bounded = False  # components after a range or an unbounded field are scanned fully
        per_component.append(ranges)
        shown = ranges if d == 1 else [(h, lo, hi_i, lo_i) for (lo, h, lo_i, hi_i) in reversed(ranges)]
        desc[f] = [_interval_desc(*r) for r in shown]
    total = 1
    for ranges in per_component:
        total *= len(ranges)
    if total > MAX_INTERVALS:
        # Too many point combinations ($in on several fields): scan each component's hull instead.
        per_component = [[(r[0][0], r[-1][1], True, True)] if len(r) > 1 else r for r in per_component]
    intervals = []
    for combo in itertools.product(*per_component):
        intervals.append(_interval_for(combo, directions))
    if len(intervals) > 1:
        intervals.sort(key=lambda iv: iv.lo or b"")
    return intervals, desc


def _is_placeholder(v: Any) -> bool:
    return isinstance(v, (MinKey, MaxKey))


def _interval_for(combo: tuple, directions: tuple[int, ...]) -> Interval:
    """Encoded bounds for one combination of per-component value ranges.

    Bounds stop after the first non-point component and rely on storage's *prefix* semantics
    (storage/indexes.py): ``lo = hi = enc(5)`` inclusive spans every key starting with 5 (any trailing
    fields, any record id), an exclusive ``lo = enc(5)`` skips them all. A range open on one side stays
    inside the type bracket of its other side (``$gt: 5`` only matches numbers, as in MongoDB): the
    open side becomes the bracket's first byte (inclusive) or the byte after it (exclusive). A range
    open on both sides is left out, so the bound is the equality prefix alone (None without one)."""
    prefix = b""
    for (vlo, vhi, vlo_incl, vhi_incl), d in zip(combo, directions, strict=False):
        if vlo is vhi and not _is_placeholder(vlo):  # a point (from _component_ranges)
            prefix += _encode_key((vlo,), (d,))
            continue
        real = vlo if not _is_placeholder(vlo) else (vhi if not _is_placeholder(vhi) else None)
        if real is None:
            break
        tag = encode_value(real)[0]
        bracket_lo, bracket_end = (bytes([tag]), bytes([tag + 1])) if d == 1 else (bytes([255 - tag]),
                                                                                  bytes([256 - tag]))
        # key order: ascending fields keep value order, descending ones reverse it
        klo, klo_incl, khi, khi_incl = (vlo, vlo_incl, vhi, vhi_incl) if d == 1 else (vhi, vhi_incl, vlo, vlo_incl)
        if _is_placeholder(klo):
            lo, lo_incl = prefix + bracket_lo, True
        else:
            lo, lo_incl = prefix + _encode_key((klo,), (d,)), klo_incl
        if _is_placeholder(khi):
            hi, hi_incl = prefix + bracket_end, False
        else:
            hi, hi_incl = prefix + _encode_key((khi,), (d,)), khi_incl
        return Interval(lo, hi, lo_incl, hi_incl)
    return Interval(prefix or None, prefix or None, True, True)


def _sort_match(spec: dict, sort: dict | None, bounds: dict[str, FieldBounds] | None = None) -> bool | None:
    """True/False when the index order (forward/reverse) gives ``sort``; None when it cannot.

    Leading index fields pinned to a single value by the filter do not disturb the order, so
    ``{device: X}`` sorted by ``{ts: -1}`` is served by an index on ``{device: 1, ts: 1}``."""
    if not sort:
        return None
    fields, directions = key_fields(spec["key"])
    sort_items = [(k, -1 if _num(v) < 0 else 1) for k, v in sort.items()]
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


def find_hinted_index(indexes: list[dict], hint: Any) -> dict | None:
    """The index a hint names (by name or key pattern); raises 2 BadValue when none matches."""
    for spec in indexes:
        if (isinstance(hint, str) and spec["name"] == hint) or (
            isinstance(hint, dict) and list(spec["key"].items()) == list(hint.items())
        ):
            if spec.get("hidden"):
                break
            return spec
        if isinstance(hint, dict) and spec["key"] == hint and not spec.get("hidden"):
            return spec
    raise MongoError(ErrorCode.BadValue, "hint provided does not correspond to an existing index")


def choose_plan(indexes: list[dict], filter: dict | None, sort: dict | None = None, hint: Any = None, *,
                multikey_default: bool = True, allow_or: bool = False, collation: Any = None) -> Plan:
    """Pick an access path. Hidden indexes are never chosen; sparse/partial ones only when hinted.

    ``collation`` is the query's (``collation.Collation``, None = simple): an index bounds strings
    only when its collation is the same (then with collation keys), and gives a sort only then.

    ``multikey_default`` is what a spec without the ``multikey`` flag means: the regular-collection
    write paths maintain the flag (pass False); for anything else assume multikey (one-sided ranges).
    ``allow_or``: when no index serves the conjunction but every branch of a top-level ``$or`` has
    one, answer an "OR" plan (index union; callers de-duplicate record ids across branches).
    """
    plan = _choose_plan(indexes, filter, sort, hint, multikey_default, collation)
    if plan.kind == "COLLSCAN" and allow_or and hint in (None, {}, "") and isinstance(filter, dict):
        branches = filter.get("$or")
        if isinstance(branches, list) and branches and all(isinstance(b, dict) for b in branches):
            subs = [_choose_plan(indexes, b, None, None, multikey_default, collation) for b in branches]
            if all(sub.kind == "IXSCAN" for sub in subs):
                return Plan("OR", branches=subs)
    return plan


def _choose_plan(indexes: list[dict], filter: dict | None, sort: dict | None, hint: Any,
                 multikey_default: bool, collation: Any = None) -> Plan:
    if isinstance(hint, dict) and "$natural" in hint:
        return Plan("COLLSCAN", natural_reverse=_num(hint["$natural"]) < 0)
    all_bounds = extract_bounds(filter)
    if filter and plan_special.mentions_special(filter) or filter and "$or" in filter:
        special = plan_special.special_plan(indexes, filter, all_bounds, Plan, Interval)
        if special is not None:
            return special
    if hint is not None and hint != {} and hint != "":
        spec = find_hinted_index(indexes, hint)
        if not _is_btree(spec["key"]):
            return plan_special.hinted_plan(spec, filter, all_bounds, Plan, Interval)
        return _plan_for(spec, all_bounds, sort, multikey_default, collation)
    best: tuple | None = None
    for spec in indexes:
        if spec.get("hidden") or spec.get("sparse") or "partialFilterExpression" in spec:
            continue
        if not _is_btree(spec["key"]):
            continue
        fields, _ = key_fields(spec["key"])
        bounds, same = _bounds_for_index(spec, all_bounds, collation)
        lead = bounds.get(fields[0])
        if lead is None:
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
    if best is not None:
        return _plan_for(best[1], all_bounds, sort, multikey_default, collation)
    if any(not _is_btree(spec["key"]) for spec in indexes):
        fallback = plan_special.fallback_plan(indexes, filter, _bounds_for_index_kinds(indexes, all_bounds, collation),
                                              Plan, Interval)
        if fallback is not None:
            return fallback
    if sort:
        for spec in indexes:
            if spec.get("hidden") or spec.get("sparse") or "partialFilterExpression" in spec:
                continue
            bounds, same = _bounds_for_index(spec, all_bounds, collation)
            if same and _is_btree(spec["key"]) and _sort_match(spec, sort, bounds) is not None:
                return _plan_for(spec, all_bounds, sort, multikey_default, collation)
    return Plan("COLLSCAN")


def _bounds_for_index_kinds(indexes: list[dict], bounds: dict[str, FieldBounds],
                            collation: Any) -> dict[str, FieldBounds]:
    """Bounds for hashed equality: string points only under the simple collation (hashes of
    strings are not collation-aware)."""
    if collation is None:
        return bounds
    return {p: b for p, b in bounds.items()
            if not any(has_strings(v) for v in ((b.points or []) if b.is_point else []))}


def _bounds_for_index(spec: dict, bounds: dict[str, FieldBounds],
                      collation: Any) -> tuple[dict[str, FieldBounds], bool]:
    """The bounds an index can use under the query's collation, and whether the collations match.

    Same collation: string bounds become the index's collation keys. Different: string (and
    string-holding) bounds are dropped: the index orders strings differently (the full filter is
    re-applied to whatever the scan returns)."""
    icoll = index_collation(spec)
    same = same_collation(icoll, collation)
    if same and icoll is None:
        return bounds, True
    out: dict[str, FieldBounds] = {}
    for path, b in bounds.items():
        values = (b.points or []) if b.is_point else [x for x in (b.lo, b.hi) if x is not _MISSING]
        if not any(has_strings(v) for v in values):
            out[path] = b
        elif same:
            out[path] = FieldBounds(
                points=[collated_key_value(p, icoll) for p in b.points] if b.points is not None else None,
                lo=b.lo if b.lo is _MISSING else collated_key_value(b.lo, icoll), lo_incl=b.lo_incl,
                hi=b.hi if b.hi is _MISSING else collated_key_value(b.hi, icoll), hi_incl=b.hi_incl)
    return out, same


def _is_btree(key: dict) -> bool:
    return all(not isinstance(v, str) for v in key.values())


def _plan_for(spec: dict, bounds: dict[str, FieldBounds], sort: dict | None,
              multikey_default: bool = True, collation: Any = None) -> Plan:
    bounds, same = _bounds_for_index(spec, bounds, collation)
    intervals, desc = _build_intervals(spec, bounds, multikey_default)
    reverse = _sort_match(spec, sort, bounds) if same else None
    return Plan("IXSCAN", index=spec, intervals=intervals, reverse=bool(reverse),
                provides_sort=reverse is not None and _single_range_order(intervals), bounds_desc=desc)


def _single_range_order(intervals: list[Interval]) -> bool:
    """Several point intervals scanned in order still give index order (they are sorted)."""
    return True
