"""Sorting documents in BSON order with mongod's array semantics and blocking-sort memory limit.

- ``parse_sort(spec)`` validates ``{path: 1 | -1 | {$meta: name}, ...}`` in mongod 7.0's SortPattern order
  (codes 17312/9/31138/31218/31219 for an object, then 15974/15975, then the field path's).
- ``make_sort_key(spec)`` -> ``fn(doc) -> tuple``: the keys mongod's index key generator gives the
  document for the sort pattern (one array expanded at a time; a positional component keeps an array
  found there whole; a path stopping at an empty array or a non-document element mid-path is null; a
  missing field is null; an empty leaf array is ``undefined``, below null), of which the sort takes the
  smallest in its order: per path min (ascending) / max (descending), and for paths sharing their first
  field (which alone can meet the same array) the smallest key *tuple*, element by element.
  ``sort_documents`` refuses a document whose sort fields expand parallel arrays (2, as mongod).
- ``sort_key_array(spec)`` -> ``fn(doc) -> list``: the values those keys were made of, as
  ``{$meta: "sortKey"}`` shows them; ``sort_documents`` notes them in the read's DocMeta when a
  projection asked (``DocMeta.wants``), and only then.
- ``sort_documents(docs, spec, limit=..., allow_disk_use=..., memory_limit=...)``: stable (ties
  keep input order); with ``limit`` only the best ``limit`` documents are kept (heapq, O(n log k));
  without ``allowDiskUse`` the buffered documents' BSON size may not exceed ``memory_limit``
  (292 QueryExceededMemoryLimitNoDiskUseAllowed). With ``allowDiskUse`` every ``memory_limit`` of
  buffered documents is sorted and spilled to disk as a run, and the runs are merged (``spill.py``);
  a top-k whose kept documents outgrow the limit continues as such an external sort. A ``$meta`` sort
  (textScore, randVal) is bounded and spills the same way (mongod's sorter holds the metadata sort
  key like any other): its runs are sorted by ``make_sort_key`` over the read's DocMeta, which the
  spilled documents get back before the merge keys them.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import spill
from tidemark.query.docmeta import comparison_key_value
from tidemark.query.interrupt import tick
from tidemark.query.paths import split_path
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import BRACKET_UNDEFINED, MISSING, Descending, is_number, sort_key

__all__ = ["parse_sort", "make_sort_key", "sort_key_array", "sort_documents", "DEFAULT_MEMORY_LIMIT", "estimate_size"]

DEFAULT_MEMORY_LIMIT = 100 * 1024 * 1024
_NULL_KEY = sort_key(None)
_EXACT_PREFIX = 1024
_SAMPLE_EVERY = 8
_EMPTY_ARRAY_KEY = (BRACKET_UNDEFINED,)


def parse_sort(spec: Mapping | None, *, allow_meta: bool = False) -> list[tuple[str, Any]]:
    """``{a: 1, "b.c": -1}`` -> ``[("a", 1), ("b.c", -1)]``; raises MongoError like mongod.

    With ``allow_meta`` (find and ``$sort``), ``{score: {$meta: "textScore"}}`` gives
    ``("score", "textScore")``: documents by descending text score (from the read's DocMeta);
    ``{$meta: "randVal"}`` gives ``("x", "randVal")``: a random order (a fresh random key per document)."""
    if spec is None:
        return []
    # (a dict first: an isinstance of the Mapping ABC costs a Python-level __instancecheck__ call)
    if not (type(spec) is dict or isinstance(spec, Mapping)):
        raise MongoError(ErrorCode.TypeMismatch, "Expected field sortto be of type object")
    out: list[tuple[str, Any]] = []
    for path, direction in spec.items():
        # mongod 7.0's SortPattern order: an object is a $meta sort (its field name is never read as a
        # path, so never validated); a number is checked (15974, 15975) before its field path
        if type(direction) is dict or type(direction) is not int and isinstance(direction, Mapping):  # (ABC last)
            out.append((path, _parse_meta_sort(direction, allow_meta)))
            continue
        if type(direction) is int and (direction == 1 or direction == -1):
            value = direction  # (the usual spelling: no further calls)
        else:
            if not is_number(direction):
                raise MongoError(15974, f"Illegal key in $sort specification: {path}: {bson_repr(direction)}")
            number = float(direction.to_decimal()) if isinstance(direction, Decimal128) else float(direction)
            if number not in (1.0, -1.0) or math.isnan(number):
                raise MongoError(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
            value = int(number)
        if path == "":
            raise MongoError(40352, "FieldPath cannot be constructed with empty string")
        if path[0] == "$":
            raise MongoError(
                16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."
            )
        if path[0] == "." or path[-1] == "." or ".." in path:  # (an empty part of the dotted path)
            raise MongoError(15998, "FieldPath field names may not be empty strings.")
        out.append((path, value))
    return out


def _parse_meta_sort(spec: Mapping, allow_meta: bool) -> str:
    """The metadata name of a ``{$meta: name}`` sort value, checked in mongod 7.0's SortPattern order:
    an object led by anything but ``$meta`` 17312, more keys 9, then the name: textScore / randVal
    sort (where the caller can give them: ``allow_meta``; elsewhere Tidemark refuses them, 224),
    searchScore 31218, searchHighlights 31219, geoNearDistance not supported here (224), anything
    else (a non-string too) 31138 naming the element."""
    if next(iter(spec), None) != "$meta":
        raise MongoError(17312, "$meta is the only expression supported by $sort right now")
    if len(spec) != 1:
        raise MongoError(ErrorCode.FailedToParse, "Cannot have additional keys in a $meta sort specification")
    meta = spec["$meta"]
    if meta in ("textScore", "randVal") and type(meta) is str:
        if allow_meta:
            return meta
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"$meta sort by '{meta}' is not supported by Tidemark")
    if meta == "searchScore":
        raise MongoError(31218, "$meta sort by 'searchScore' metadata is not supported")
    if meta == "searchHighlights":
        raise MongoError(31219, "$meta sort by 'searchHighlights' metadata is not supported")
    if meta == "geoNearDistance":
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$meta sort by 'geoNearDistance' is not supported by Tidemark")
    raise MongoError(31138, f"Illegal $meta sort: $meta: {bson_repr(meta)}")


def _field_key(doc: Any, path: str, descending: bool, sort_key: Callable[[Any], tuple] = sort_key) -> Any:
    """The BSON sort key of one sort field: min (ascending) / max (descending) over the keys the index
    key generator gives the path (``sort_key``: ``values.sort_key`` or a collation's)."""
    if "." not in path:
        v = doc.get(path, MISSING) if isinstance(doc, Mapping) else MISSING
        if type(v) is not list:
            return sort_key(v)
        if not v:
            return _EMPTY_ARRAY_KEY
        keys = [sort_key(e) for e in v]
    else:
        parts = split_path(path)
        v = _walk(doc, parts)
        if v is not _ARRAY:
            return sort_key(v)
        keys = [_value_key(v, sort_key) for v in _path_keys(doc, parts)]
    return max(keys) if descending else min(keys)


def _shares_prefix(fields: list[tuple[str, Any]]) -> bool:
    """Whether two sort paths start with the same field: only then can both pass through one array
    (paths under different fields meeting arrays meet two: parallel arrays), so only then are their
    keys taken jointly, element by element."""
    firsts = [path.split(".", 1)[0] for path, d in fields if type(d) is not str]
    return len(set(firsts)) < len(firsts)


def _joint_values(fields: list[tuple[str, Any]], skey: Callable[[Any], tuple]) -> Callable[[Any], tuple]:
    """For a compound sort whose paths may share an array: the document's key tuple (plain BSON sort
    keys, one per field) that comes first in the sort's order among those the key generator gives; a
    document meeting no array on any path has the one tuple of its values."""
    paths = [split_path(path) for path, _ in fields]
    ascending = [d == 1 for _, d in fields]

    def values(doc: Any) -> tuple:
        found = [_walk(doc, parts) for parts in paths]
        if not any(v is _ARRAY for v in found):
            return tuple(skey(v) for v in found)
        keyed = [tuple(_value_key(v, skey) for v in t) for t in _key_tuples(doc, paths)]
        if len(keyed) == 1:
            return keyed[0]
        return min(keyed, key=lambda t: tuple(k if up else Descending(k) for k, up in zip(t, ascending, strict=True)))

    return values


def _joint_key(fields: list[tuple[str, Any]], skey: Callable[[Any], tuple]) -> Callable[[Any], tuple]:
    """``_joint_values`` as a key for ``sorted`` (descending components inverted)."""
    values = _joint_values(fields, skey)
    ascending = [d == 1 for _, d in fields]
    if all(ascending):
        return values
    return lambda doc: tuple(k if up else Descending(k) for k, up in zip(values(doc), ascending, strict=True))


# --------------------------------------------------------------------------------------------------
# The sort key generator: mongod builds a document's sort key as its index key generator
# (BtreeKeyGenerator) builds index keys for the sort pattern, then takes the smallest key in the sort's
# order. Paths meeting arrays expand one array at a time: fields through the same array take their
# values from the same element (a compound sort on 'a.c' and 'a.b' pairs each element's c with its b);
# a positional component ('a.0') selects that element and keeps an array found there whole; a path that
# stops at an empty array mid-path gives null, a leaf empty array undefined; a non-document element on
# a path that continues gives null.
# --------------------------------------------------------------------------------------------------

_UNDEF = object()  # the undefined key of an empty array (sorts below null)


def _array_field(arr: list, name: str) -> Any:
    """``arr[name]`` as a BSON array reads it (field names "0", "1", ...: no sign, no leading zero)."""
    if name.isdigit() and name.isascii() and (name == "0" or name[0] != "0"):
        idx = int(name)
        if idx < len(arr):
            return arr[idx]
    return MISSING


def _along(obj: Any, parts: tuple[str, ...], i: int) -> tuple[Any, int]:
    """mongod's extractElementAtPathOrArrayAlongPath: follow ``parts[i:]`` through documents, stopping
    at the first array (returned with the index of the component after it); MISSING when the path
    leaves documents early."""
    n = len(parts)
    while True:
        if type(obj) is dict or isinstance(obj, Mapping):
            sub = obj.get(parts[i], MISSING)
        else:
            sub = _array_field(obj, parts[i])
        i += 1
        if sub is MISSING:
            return MISSING, n
        if type(sub) is list or i == n:
            return sub, i
        if not (type(sub) is dict or isinstance(sub, Mapping)):
            return MISSING, n
        obj = sub


class _Positional:
    """A positional component met at an array ('a.0.b' at ``a``): the element it selects, and what
    the rest of the path reaches from it (``dotted`` at component ``rest``), computed once per array."""

    __slots__ = ("elt", "dotted", "rest", "arr")

    def __init__(self, elt: Any, dotted: Any, rest: int, arr: list):
        self.elt, self.dotted, self.rest, self.arr = elt, dotted, rest, arr


def _ambiguous(arr: list, part: str) -> MongoError:
    shown = bson_repr({str(i): v for i, v in enumerate(arr)})
    return MongoError(16746, "Ambiguous field name found in array (do not use numeric field names in embedded "
                             f"elements in an array), field: '{part}' for array: {shown}")


def _parallel_error() -> MongoError:
    return MongoError(ErrorCode.BadValue, "cannot sort with keys that are parallel arrays")


def _keys_with_array(paths: list[tuple[str, ...]], at: list[int], fixed: list, obj: Any,
                     positional: list[_Positional | None], out: list[tuple]) -> None:
    """Append to ``out`` the key tuples of ``obj`` (a document or None) for the paths still going
    (``at[f] < len(paths[f])``): one array is expanded per level, the other fields are fixed."""
    at = at[:]
    fixed = fixed[:]
    arr: list | None = None
    on_arr: list[int] = []
    expand = True
    for f, parts in enumerate(paths):
        i = at[f]
        if i >= len(parts):
            continue
        pos = positional[f]
        have = isinstance(obj, Mapping) and parts[i] in obj
        nested = False
        if have:
            if pos is not None:
                raise _ambiguous(pos.arr, parts[i])
            e, i = _along(obj, parts, i)
        elif pos is not None:
            nested = type(pos.elt) is list
            e, i = pos.dotted, pos.rest
        else:
            e = MISSING
        if e is MISSING:
            fixed[f] = None
            at[f] = len(parts)
        elif type(e) is list:
            at[f] = i
            on_arr.append(f)
            if arr is None:
                arr = e
            elif e is not arr:
                raise _parallel_error()
            if nested:
                expand = False  # an array inside the positional element stays whole
        else:
            fixed[f] = e
            at[f] = len(parts)
    if arr is None:
        out.append(tuple(fixed))
        return
    if not arr:
        _keys_of_element(paths, at, fixed, _UNDEF, arr, on_arr, True, [None] * len(paths), out)
        return
    sub: list[_Positional | None] = [None] * len(paths)
    for f in on_arr:
        parts, i = paths[f], at[f]
        if i < len(parts):
            elt = _array_field(arr, parts[i])
            if elt is not MISSING:
                dotted, rest = _along(arr, parts, i)
                sub[f] = _Positional(elt, dotted, rest, arr)
    for element in arr:
        _keys_of_element(paths, at, fixed, element, arr, on_arr, expand, sub, out)


def _keys_of_element(paths: list[tuple[str, ...]], at: list[int], fixed: list, element: Any, arr: list,
                     on_arr: list[int], expand: bool, positional: list[_Positional | None], out: list) -> None:
    # Fields ending at the array take the element (or the whole array when it must stay whole); fields
    # continuing read on inside the element when it is a document, else they find nothing (null).
    fixed = fixed[:]
    for f in on_arr:
        if at[f] >= len(paths[f]):
            fixed[f] = element if expand else arr
    _keys_with_array(paths, at, fixed, element if isinstance(element, Mapping) else None, positional, out)


def _path_keys(doc: Any, parts: tuple[str, ...]) -> list:
    """``_key_tuples`` for one path, without the tuples: the values the key generator gives ``doc``."""
    out: list = []
    _one_path(doc, parts, 0, None, out)
    return out


def _one_path(obj: Any, parts: tuple[str, ...], i: int, pos: _Positional | None, out: list) -> None:
    # _keys_with_array specialised to a single path (the common dotted sort through arrays)
    have = obj is not None and parts[i] in obj
    nested = False
    if have:
        if pos is not None:
            raise _ambiguous(pos.arr, parts[i])
        e, i = _along(obj, parts, i)
    elif pos is not None:
        nested = type(pos.elt) is list
        e, i = pos.dotted, pos.rest
    else:
        e = MISSING
    if type(e) is not list:
        out.append(None if e is MISSING else e)
        return
    n = len(parts)
    if i >= n:  # the path ends at this array: its elements (or itself, inside a positional element)
        if not e:
            out.append(_UNDEF)
        elif nested:
            out.append(e)
        else:
            out.extend(e)
        return
    if not e:  # the path continues past an empty array: nothing there (null)
        out.append(None)
        return
    sub = None
    elt = _array_field(e, parts[i])
    if elt is not MISSING:
        dotted, rest = _along(e, parts, i)
        sub = _Positional(elt, dotted, rest, e)
    for element in e:
        _one_path(element if type(element) is dict or isinstance(element, Mapping) else None, parts, i, sub, out)


def _key_tuples(doc: Any, paths: list[tuple[str, ...]]) -> list[tuple]:
    """The key tuples the index key generator would give ``doc`` for ``paths`` (values; None for
    null/missing, ``_UNDEF`` for an empty array); BadValue for parallel arrays."""
    out: list[tuple] = []
    _keys_with_array(paths, [0] * len(paths), [None] * len(paths), doc, [None] * len(paths), out)
    return out


def _value_key(v: Any, skey: Callable[[Any], tuple]) -> tuple:
    return _EMPTY_ARRAY_KEY if v is _UNDEF else skey(v)


def _walk(doc: Any, parts: tuple[str, ...]) -> Any:
    """The value at ``parts`` when no array lies on the way (MISSING when absent); ``_ARRAY`` when
    one does (the key generator is needed then). The common, cheap case of every sort key."""
    cur = doc
    for part in parts:
        if type(cur) is dict:
            cur = cur.get(part, MISSING)
        elif type(cur) is list:
            return _ARRAY
        elif isinstance(cur, Mapping):
            cur = cur.get(part, MISSING)
        else:
            return MISSING
    return _ARRAY if type(cur) is list else cur


_ARRAY = object()


def _parallel_in(value: Any, fields: list[tuple[tuple[str, ...], int]]) -> bool:
    """Whether the paths ``parts[i:]`` of ``fields``, followed together from ``value`` as index key
    generation follows a compound key, meet parallel arrays: in one document, two of them reaching
    different arrays first (an empty one too). Paths reaching the same array go on together into each
    of its document elements; a numeric component in range indexes its array (no expansion)."""
    reached: dict[tuple[str, ...], tuple[list, list[tuple[tuple[str, ...], int]]]] = {}
    for parts, i in fields:
        v, n = value, len(parts)
        while i < n:
            if type(v) is list:
                part = parts[i]
                if part.isdigit() and int(part) < len(v):
                    v = v[int(part)]
                    i += 1
                    continue
                break
            if not isinstance(v, Mapping):
                break
            v = v.get(parts[i], MISSING)
            i += 1
        if type(v) is list:
            reached.setdefault(parts[:i], (v, []))[1].append((parts, i))
    if len(reached) > 1:
        return True
    for array, met in reached.values():
        going_on = [(parts, i) for parts, i in met if i < len(parts)]
        if going_on and any(isinstance(e, Mapping) and _parallel_in(e, going_on) for e in array):
            return True
    return False


def _parallel_check(fields: list[tuple[str, Any]]) -> Callable[[Any], None] | None:
    """mongod's sort key generator (the index key generator's rules): a document whose sort fields
    reach two different arrays in one document (``{a: [..], b: [..]}`` for ``{a: 1, b: 1}``;
    ``a.b``/``a.c`` through the one array ``a`` are fine, and so are arrays they reach in different
    elements of it) fails 2 BadValue "cannot sort
    with keys that are parallel arrays". None when the sort has fewer than two paths (nothing to check).
    Per document a field costs one lookup until an array is met."""
    paths = [tuple(path.split(".")) for path, d in fields if type(d) is not str]
    if len(paths) < 2:
        return None
    top = [p[0] for p in paths]

    def check(doc: Any) -> None:
        if not isinstance(doc, Mapping):
            return
        found = [i for i, name in enumerate(top) if type(v := doc.get(name)) is list or isinstance(v, Mapping)]
        if len(found) < 2:
            return
        if _parallel_in(doc, [(paths[i], 0) for i in found]):
            raise MongoError(ErrorCode.BadValue, "cannot sort with keys that are parallel arrays")

    return check


def _meta_key(meta: Any, name: str) -> Callable[[Any], Any]:
    """Sort key of a ``$meta`` sort field: descending score (absent scores last); ``randVal`` a
    random key per document (each key is computed once per sort, so the order is consistent)."""
    if name == "randVal":
        return lambda doc: random.random()
    return lambda doc: Descending(sort_key(meta.get(doc, name) if meta is not None else None))


def make_sort_key(spec: Mapping | list[tuple[str, Any]], collation: Any = None,
                  meta: Any = None) -> Callable[[Any], tuple]:
    """A key function for ``sorted``: a tuple ordered as mongod orders documents for ``spec``
    (strings under ``collation``, a ``collation.Collation`` or None for simple; ``$meta`` fields from
    the read's DocMeta ``meta``)."""
    fields = parse_sort(spec) if isinstance(spec, Mapping) else list(spec)
    skey = sort_key if collation is None else collation.sort_key
    if any(type(d) is str for _, d in fields):
        parts = [_meta_key(meta, d) if type(d) is str else
                 ((lambda p: lambda doc: _field_key(doc, p, False, skey))(path) if d == 1 else
                  (lambda p: lambda doc: Descending(_field_key(doc, p, True, skey)))(path)) for path, d in fields]
        return lambda doc: tuple(part(doc) for part in parts)
    if _shares_prefix(fields):
        return _joint_key(fields, skey)
    if len(fields) == 1:
        path, direction = fields[0]
        if direction == 1:
            return lambda doc: (_field_key(doc, path, False, skey),)
        return lambda doc: (Descending(_field_key(doc, path, True, skey)),)

    def key(doc: Any) -> tuple:
        out = []
        for path, direction in fields:
            if direction == 1:
                out.append(_field_key(doc, path, False, skey))
            else:
                out.append(Descending(_field_key(doc, path, True, skey)))
        return tuple(out)

    return key


# --------------------------------------------------------------------------------------------------
# The sort key as ``{$meta: "sortKey"}`` shows it: per sort field, the value the generator above chose
# (mongod's sort key document, serialized as an array), taken from the same choices the order uses.
# --------------------------------------------------------------------------------------------------


def _field_value(doc: Any, path: str, descending: bool, skey: Callable[[Any], tuple]) -> Any:
    """The value ``_field_key`` keys: of the values the key generator gives the path, the first
    smallest (ascending) / largest (descending); null for a missing field and for an empty array
    (mongod's undefined, which a reply cannot hold: the codec has no undefined)."""
    if "." not in path:
        v = doc.get(path, MISSING) if isinstance(doc, Mapping) else MISSING
        if type(v) is not list:
            return None if v is MISSING else v
        if not v:
            return None
        return max(v, key=skey) if descending else min(v, key=skey)
    parts = split_path(path)
    v = _walk(doc, parts)
    if v is not _ARRAY:
        return None if v is MISSING else v
    values = _path_keys(doc, parts)
    chosen = (max if descending else min)(values, key=lambda e: _value_key(e, skey))
    return None if chosen is _UNDEF else chosen


def _joint_raw(fields: list[tuple[str, Any]], skey: Callable[[Any], tuple]) -> Callable[[Any], tuple]:
    """``_joint_values`` giving the chosen key tuple's values rather than their sort keys."""
    paths = [split_path(path) for path, _ in fields]
    ascending = [d == 1 for _, d in fields]

    def order(t: tuple) -> tuple:
        return tuple(_value_key(v, skey) if up else Descending(_value_key(v, skey)) for v, up in zip(t, ascending,
                                                                                               strict=True))

    def values(doc: Any) -> tuple:
        found = [_walk(doc, parts) for parts in paths]
        if not any(v is _ARRAY for v in found):
            return tuple(None if v is MISSING else v for v in found)
        chosen = min(_key_tuples(doc, paths), key=order)
        return tuple(None if v is _UNDEF or v is MISSING else v for v in chosen)

    return values


def sort_key_array(spec: Mapping | list[tuple[str, Any]], collation: Any = None,
                   meta: Any = None) -> Callable[[Any], list]:
    """``fn(doc) -> list``: the document's sort key for ``spec`` as mongod's ``{$meta: "sortKey"}``
    shows it, one value per sort field: the value the sort's key generator chose (``make_sort_key``
    orders documents by exactly these), a ``$meta`` field's metadata (textScore from the read's
    DocMeta ``meta``; null where absent); under ``collation`` strings are comparison keys
    (``docmeta.comparison_key_value``)."""
    fields = parse_sort(spec, allow_meta=True) if isinstance(spec, Mapping) else list(spec)
    skey = sort_key if collation is None else collation.sort_key
    shown: Callable[[Any], Any] = ((lambda v: v) if collation is None else
                                   (lambda v: comparison_key_value(v, collation)))
    if not any(type(d) is str for _, d in fields) and _shares_prefix(fields):
        joint = _joint_raw(fields, skey)
        return lambda doc: [shown(v) for v in joint(doc)]

    def one(path: str, d: Any) -> Callable[[Any], Any]:
        if type(d) is str:
            # textScore; randVal's key is drawn per sort, never kept: mongod shows its randVal metadata
            return (lambda doc: meta.get(doc, d)) if meta is not None and d != "randVal" else (lambda doc: None)
        return lambda doc: shown(_field_value(doc, path, d == -1, skey))

    parts = [one(path, d) for path, d in fields]
    return lambda doc: [part(doc) for part in parts]


def _noting_sort_keys(docs: Iterable[Any], key_array: Callable[[Any], list], meta: Any) -> Iterator[Any]:
    for doc in docs:
        meta.set(doc, "sortKey", key_array(doc))
        yield doc


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
    stats: Any = None,
) -> Iterable[Any]:
    """Sort ``docs`` by ``spec`` (stable); keep only the first ``limit`` when given; strings
    compare under ``collation`` (None: simple); ``meta`` is the read's DocMeta for ``$meta`` fields.
    A list, unless runs were spilled to disk (then a lazy merge of them). ``stats``: the $sort stage's
    ``pipeline.StageStats``, told the bytes sorted and each spill (explain)."""
    fields = parse_sort(spec, allow_meta=True) if isinstance(spec, Mapping) else list(spec)
    check = _parallel_check(fields)
    if meta is not None and "sortKey" in meta.wants:
        # a projection shows the sort key ({$meta: "sortKey"}): each document's, noted as it arrives
        # (made only on request; a spilled run carries it with the rest of the metadata)
        docs = _noting_sort_keys(docs, sort_key_array(fields, collation, meta), meta)
    if limit is not None and limit > 0:
        key = make_sort_key(fields, collation, meta)
        if check is not None:
            plain_key = key

            def key(doc: Any) -> tuple:
                check(doc)
                return plain_key(doc)
        kept = _top_k(docs, key, limit, allow_disk_use, memory_limit, stats)
        if not isinstance(kept, _Outgrown):
            return kept
        if stats is not None:  # (counted again as the full sort buffers them)
            stats.data_bytes = 0
        return itertools.islice(_full_sort(kept.docs, fields, allow_disk_use, memory_limit, collation, check, meta,
                                           stats), limit)
    return _full_sort(docs, fields, allow_disk_use, memory_limit, collation, check, meta, stats)


def _full_sort(docs: Iterable[Any], fields: list[tuple[str, Any]], allow_disk_use: bool,
               memory_limit: int, collation: Any, check: Callable[[Any], None] | None = None,
               meta: Any = None, stats: Any = None) -> Iterable[Any]:
    if any(type(d) is str for _, d in fields):  # a $meta field: keys read the read's DocMeta
        meta_key = make_sort_key(fields, collation, meta)

        def in_order(docs: list) -> list:
            return sorted(docs, key=meta_key)
    else:
        def in_order(docs: list) -> list:
            return _stable_multi_sort(docs, fields, collation)
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
            runs.append(spill.write_run(in_order(buffered), meta, stats, used))
            if stats is not None:
                stats.data_bytes += used
            buffered, used = [], 0
        buffered.append(doc)
    ordered = in_order(buffered)
    if stats is not None:
        stats.data_bytes += used
    if not runs:
        return ordered
    return spill.merge(runs, ordered, make_sort_key(fields, collation, meta), meta)


def _stable_multi_sort(docs: list, fields: list[tuple[str, int]], collation: Any = None) -> list:
    """Sort by each field from the last to the first; stable sorts compose into the full order.

    Per field the key is the raw value when every document holds a plain number (no NaN) or
    every one a string at a top-level field: Python then sorts with its fast same-type compares.
    Otherwise the BSON sort-key tuples are used. ``reverse=True`` keeps ties in input order.
    Paths sharing their first field are keyed jointly (one key tuple per document, see ``_joint_key``).
    """
    order = list(range(len(docs)))
    skey = sort_key if collation is None else collation.sort_key
    if _shares_prefix(fields):
        # one key tuple per document, then the same field-by-field stable sorts over its columns
        rows = [_joint_values(fields, skey)(doc) for doc in docs] if docs else []
        for idx in range(len(fields) - 1, -1, -1):
            column = [row[idx] for row in rows]
            order.sort(key=column.__getitem__, reverse=fields[idx][1] == -1)
        return [docs[i] for i in order]
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


def _top_k(docs: Iterable[Any], key: Callable, k: int, allow_disk_use: bool, memory_limit: int,
           stats: Any = None) -> list | _Outgrown:
    # Max-heap of the best k by (key, arrival): entries are (inverted key, -seq, doc); the root
    # is the current worst kept document, replaced when a better one arrives.
    heap: list = []
    sizes: dict[int, int] = {}
    used = 0
    total = 0  # the bytes of every document the heap took (the stage's bytes sorted)
    counter = itertools.count()
    docs = iter(docs)
    for doc in docs:
        tick()
        seq = next(counter)
        entry = (Descending((key(doc), seq)), seq, doc)
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
        total += size
        if used > memory_limit:
            if not allow_disk_use:
                raise sort_limit_error(memory_limit)
            heap.sort(key=lambda e: e[1])  # arrival order: the external sort stays stable
            return _Outgrown(itertools.chain((e[2] for e in heap), docs))
    if stats is not None:
        stats.data_bytes += total
    heap.sort(key=lambda e: e[0].key)
    return [e[2] for e in heap]
