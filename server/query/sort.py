"""Sorting documents in BSON order with mongod's array semantics and blocking-sort memory limit.

- ``parse_sort(spec)`` validates ``{path: 1 | -1, ...}`` (mongod codes 15974/15975/17312/31138).
- ``make_sort_key(spec)`` -> ``fn(doc) -> tuple``: per path, the values the path reaches (implicit
  array traversal, leaf arrays expanded); ascending takes the smallest, descending the largest;
  a missing field sorts as null; an empty leaf array sorts below null (as ``undefined``).
  ``sort_documents`` refuses a document whose sort fields expand parallel arrays (2, as mongod).
- ``sort_documents(docs, spec, limit=..., allow_disk_use=..., memory_limit=...)``: stable (ties
  keep input order); with ``limit`` only the best ``limit`` documents are kept (heapq, O(n log k));
  without ``allowDiskUse`` the buffered documents' BSON size may not exceed ``memory_limit``
  (292 QueryExceededMemoryLimitNoDiskUseAllowed). With ``allowDiskUse`` every ``memory_limit`` of
  buffered documents is sorted and spilled to disk as a run, and the runs are merged (``spill.py``);
  a top-k whose kept documents outgrow the limit continues as such an external sort.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import spill
from tidemark.query.interrupt import tick
from tidemark.query.paths import get_path_values
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import BRACKET_UNDEFINED, MISSING, is_number, sort_key

__all__ = ["parse_sort", "make_sort_key", "sort_documents", "DEFAULT_MEMORY_LIMIT", "estimate_size"]

DEFAULT_MEMORY_LIMIT = 100 * 1024 * 1024
_NULL_KEY = sort_key(None)
_EXACT_PREFIX = 1024
_SAMPLE_EVERY = 8
_EMPTY_ARRAY_KEY = (BRACKET_UNDEFINED,)


def parse_sort(spec: Mapping | None, *, allow_meta: bool = False) -> list[tuple[str, Any]]:
    """``{a: 1, "b.c": -1}`` -> ``[("a", 1), ("b.c", -1)]``; raises MongoError like mongod.

    With ``allow_meta`` (find and ``$sort``), ``{score: {$meta: "textScore"}}`` gives
    ``("score", "textScore")``: documents by descending text score (from the read's DocMeta)."""
    if spec is None:
        return []
    if not isinstance(spec, Mapping):
        raise MongoError(ErrorCode.TypeMismatch, "Expected field sortto be of type object")
    out: list[tuple[str, int]] = []
    for path, direction in spec.items():
        if path == "":
            raise MongoError(40352, "FieldPath cannot be constructed with empty string")
        if path.startswith("$"):
            raise MongoError(
                16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."
            )
        if any(part == "" for part in path.split(".")):
            raise MongoError(15998, "FieldPath field names may not be empty strings.")
        if isinstance(direction, Mapping):
            if set(direction) == {"$meta"}:
                meta = direction["$meta"]
                if meta == "textScore" and allow_meta:
                    out.append((path, meta))
                    continue
                if meta in ("textScore", "randVal", "searchScore"):
                    raise MongoError(
                        ErrorCode.QueryFeatureNotAllowed,
                        f"$meta sort by '{meta}' is not supported by Tidemark",
                    )
                raise MongoError(31138, f"Illegal $meta sort: $meta: {meta!r}")
            raise MongoError(17312, "$meta is the only expression supported by $sort right now")
        if not is_number(direction):
            raise MongoError(15974, f"Illegal key in $sort specification: {path}: {bson_repr(direction)}")
        value = float(direction.to_decimal()) if isinstance(direction, Decimal128) else float(direction)
        if value not in (1.0, -1.0) or math.isnan(value):
            raise MongoError(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
        out.append((path, int(value)))
    return out


class _Desc:
    """Inverts the order of a sort-key component (for descending fields in a multi-key sort)."""

    __slots__ = ("key",)

    def __init__(self, key: Any):
        self.key = key

    def __lt__(self, other: _Desc) -> bool:
        return other.key < self.key

    def __gt__(self, other: _Desc) -> bool:
        return other.key > self.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.key == other.key

    def __le__(self, other: _Desc) -> bool:
        return other.key <= self.key

    def __ge__(self, other: _Desc) -> bool:
        return other.key >= self.key

    __hash__ = None  # type: ignore[assignment]


def _field_key(doc: Any, path: str, descending: bool, sort_key: Callable[[Any], tuple] = sort_key) -> Any:
    """The BSON sort key of one sort field: min (ascending) / max (descending) over the values
    (``sort_key``: ``values.sort_key`` or a collation's)."""
    if "." not in path:
        v = doc.get(path, MISSING) if isinstance(doc, Mapping) else MISSING
        if type(v) is not list:
            return sort_key(v)
        raw = [v]
    else:
        raw = get_path_values(doc, path, sort_keys=True)
    keys = []
    for v in raw:
        if type(v) is list:
            if not v:
                keys.append(_EMPTY_ARRAY_KEY)
            else:
                keys.extend(sort_key(e) for e in v)
        else:
            keys.append(sort_key(v))
    if not keys:
        return _NULL_KEY
    return max(keys) if descending else min(keys)


def _arrays_on(value: Any, parts: tuple[str, ...], i: int, out: set[tuple[str, ...]]) -> None:
    """Add to ``out`` the arrays the path ``parts[i:]`` expands in ``value`` (each named by the
    components leading to it), as index key generation expands them: a numeric component in range
    indexes its array positionally (no expansion)."""
    n = len(parts)
    while i < n:
        if type(value) is list:
            part = parts[i]
            if part.isdigit() and int(part) < len(value):
                value = value[int(part)]
                i += 1
                continue
            out.add(parts[:i])
            for element in value:
                if isinstance(element, Mapping):
                    _arrays_on(element, parts, i, out)
            return
        if not isinstance(value, Mapping):
            return
        value = value.get(parts[i], MISSING)
        i += 1
    if type(value) is list:  # a leaf array, an empty one too
        out.add(parts)


def _parallel_check(fields: list[tuple[str, Any]]) -> Callable[[Any], None] | None:
    """mongod's sort key generator (the index key generator's rules): a document whose sort fields
    expand two arrays neither of which the other field expands (``{a: [..], b: [..]}`` for
    ``{a: 1, b: 1}``; ``a.b``/``a.c`` through the one array ``a`` are fine) fails 2 BadValue "cannot sort
    with keys that are parallel arrays". None when the sort has fewer than two paths (nothing to check).
    Per document a field costs one lookup until an array is met."""
    paths = [tuple(path.split(".")) for path, d in fields if not isinstance(d, str)]
    if len(paths) < 2:
        return None
    top = [p[0] for p in paths]

    def check(doc: Any) -> None:
        if not isinstance(doc, Mapping):
            return
        found = [i for i, name in enumerate(top) if type(v := doc.get(name)) is list or isinstance(v, Mapping)]
        if len(found) < 2:
            return
        arrays: list[set[tuple[str, ...]]] = []
        for i in found:
            out: set[tuple[str, ...]] = set()
            _arrays_on(doc, paths[i], 0, out)
            if out:
                arrays.append(out)
        for j, mine in enumerate(arrays):
            for theirs in arrays[j + 1:]:
                if mine - theirs and theirs - mine:
                    raise MongoError(ErrorCode.BadValue, "cannot sort with keys that are parallel arrays")

    return check


def _meta_key(meta: Any, name: str) -> Callable[[Any], Any]:
    """Sort key of a ``$meta`` sort field: descending score (absent scores last)."""
    return lambda doc: _Desc(sort_key(meta.get(doc, name) if meta is not None else None))


def make_sort_key(spec: Mapping | list[tuple[str, Any]], collation: Any = None,
                  meta: Any = None) -> Callable[[Any], tuple]:
    """A key function for ``sorted``: a tuple ordered as mongod orders documents for ``spec``
    (strings under ``collation``, a ``collation.Collation`` or None for simple; ``$meta`` fields from
    the read's DocMeta ``meta``)."""
    fields = parse_sort(spec) if isinstance(spec, Mapping) else list(spec)
    skey = sort_key if collation is None else collation.sort_key
    if any(isinstance(d, str) for _, d in fields):
        parts = [_meta_key(meta, d) if isinstance(d, str) else
                 ((lambda p: lambda doc: _field_key(doc, p, False, skey))(path) if d == 1 else
                  (lambda p: lambda doc: _Desc(_field_key(doc, p, True, skey)))(path)) for path, d in fields]
        return lambda doc: tuple(part(doc) for part in parts)
    if len(fields) == 1:
        path, direction = fields[0]
        if direction == 1:
            return lambda doc: (_field_key(doc, path, False, skey),)
        return lambda doc: (_Desc(_field_key(doc, path, True, skey)),)

    def key(doc: Any) -> tuple:
        out = []
        for path, direction in fields:
            if direction == 1:
                out.append(_field_key(doc, path, False, skey))
            else:
                out.append(_Desc(_field_key(doc, path, True, skey)))
        return tuple(out)

    return key


def estimate_size(doc: Any) -> int:
    """Approximate buffered size of a document (its BSON size)."""
    try:
        return len(encode(doc))
    except Exception:  # documents holding non-BSON values (e.g. MISSING) are still sortable
        return len(repr(doc))


def sort_limit_error(limit: int) -> MongoError:
    """292: a blocking sort kept more than ``limit`` bytes of documents without allowDiskUse (also the
    time-series bounded sort's, ``timeseries.time_sort``)."""
    return MongoError(
        ErrorCode.QueryExceededMemoryLimitNoDiskUseAllowed,
        f"Sort exceeded memory limit of {limit} bytes, but did not opt in to external sorting.",
    )


def sort_documents(
    docs: Iterable[Any],
    spec: Mapping | list[tuple[str, int]],
    *,
    limit: int | None = None,
    allow_disk_use: bool = False,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    collation: Any = None,
    meta: Any = None,
) -> Iterable[Any]:
    """Sort ``docs`` by ``spec`` (stable); keep only the first ``limit`` when given; strings
    compare under ``collation`` (None: simple); ``meta`` is the read's DocMeta for ``$meta`` fields.
    A list, unless runs were spilled to disk (then a lazy merge of them); ``$meta`` sorts stay in
    memory (the scores live beside the documents, not in them)."""
    fields = parse_sort(spec, allow_meta=True) if isinstance(spec, Mapping) else list(spec)
    has_meta = any(isinstance(d, str) for _, d in fields)
    check = _parallel_check(fields)
    if (limit is not None and limit > 0) or has_meta:
        key = make_sort_key(fields, collation, meta)
        if check is not None:
            plain_key = key

            def key(doc: Any) -> tuple:
                check(doc)
                return plain_key(doc)
        if not (limit is not None and limit > 0):
            return sorted(docs, key=key)
        kept = _top_k(docs, key, limit, allow_disk_use, memory_limit)
        if not isinstance(kept, _Outgrown):
            return kept
        if has_meta:
            return sorted(kept.docs, key=key)[:limit]
        return itertools.islice(_full_sort(kept.docs, fields, allow_disk_use, memory_limit, collation, check),
                                limit)
    return _full_sort(docs, fields, allow_disk_use, memory_limit, collation, check)


def _full_sort(docs: Iterable[Any], fields: list[tuple[str, int]], allow_disk_use: bool,
               memory_limit: int, collation: Any, check: Callable[[Any], None] | None = None) -> Iterable[Any]:
    buffered: list = []
    runs: list = []
    used = 0
    for n, doc in enumerate(docs):
        tick()
        if check is not None:
            check(doc)
        # Exact sizes for the first documents, then every 8th document counted 8 times: the
        # estimate stays close while a million-document sort does not encode every document.
        if n < _EXACT_PREFIX:
            used += estimate_size(doc)
        elif n % _SAMPLE_EVERY == 0:
            used += estimate_size(doc) * _SAMPLE_EVERY
        if used > memory_limit:
            if not allow_disk_use:
                raise sort_limit_error(memory_limit)
            runs.append(spill.write_run(_stable_multi_sort(buffered, fields, collation)))
            buffered, used = [], 0
        buffered.append(doc)
    ordered = _stable_multi_sort(buffered, fields, collation)
    if not runs:
        return ordered
    return spill.merge(runs, ordered, make_sort_key(fields, collation))


def _stable_multi_sort(docs: list, fields: list[tuple[str, int]], collation: Any = None) -> list:
    """Sort by each field from the last to the first; stable sorts compose into the full order.

    Per field the key is the raw value when every document holds a plain number (no NaN) or
    every one a string at a top-level field: Python then sorts with its fast same-type compares.
    Otherwise the BSON sort-key tuples are used. ``reverse=True`` keeps ties in input order.
    """
    order = list(range(len(docs)))
    skey = sort_key if collation is None else collation.sort_key
    for path, direction in reversed(fields):
        keys = _raw_keys(docs, path, collation)
        if keys is None:
            descending = direction == -1
            keys = [_field_key(doc, path, descending, skey) for doc in docs]
        order.sort(key=keys.__getitem__, reverse=direction == -1)
    return [docs[i] for i in order]


def _raw_keys(docs: list, path: str, collation: Any = None) -> list | None:
    if "." in path or not docs:
        return None
    values = [doc.get(path, MISSING) if type(doc) is dict else MISSING for doc in docs]
    first = type(values[0])
    if first is str:
        if not all(type(v) is str for v in values):
            return None
        return values if collation is None else [collation.string_key(v) for v in values]
    if first is int or first is float or first is Int64:
        for v in values:
            t = type(v)
            if not (t is int or t is Int64 or (t is float and v == v)):
                return None
        return values
    return None


class _Outgrown:
    """A top-k whose kept documents passed the memory limit (with allowDiskUse): every document, in
    arrival order, for an external sort instead."""

    __slots__ = ("docs",)

    def __init__(self, docs: Iterable[Any]):
        self.docs = docs


def _top_k(docs: Iterable[Any], key: Callable, k: int, allow_disk_use: bool, memory_limit: int) -> list | _Outgrown:
    # Max-heap of the best k by (key, arrival): entries are (inverted key, -seq, doc); the root
    # is the current worst kept document, replaced when a better one arrives.
    heap: list = []
    sizes: dict[int, int] = {}
    used = 0
    counter = itertools.count()
    docs = iter(docs)
    for doc in docs:
        tick()
        seq = next(counter)
        entry = (_Desc((key(doc), seq)), seq, doc)
        if len(heap) < k:
            heapq.heappush(heap, entry)
        elif entry[0].key < heap[0][0].key:
            old = heapq.heapreplace(heap, entry)
            used -= sizes.pop(old[1], 0)
        else:
            continue
        size = estimate_size(doc)
        sizes[seq] = size
        used += size
        if used > memory_limit:
            if not allow_disk_use:
                raise sort_limit_error(memory_limit)
            heap.sort(key=lambda e: e[1])  # arrival order: the external sort stays stable
            return _Outgrown(itertools.chain((e[2] for e in heap), docs))
    heap.sort(key=lambda e: e[0].key)
    return [e[2] for e in heap]
