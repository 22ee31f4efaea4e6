"""Index keys: the keys a document contributes to an index (pure; no storage state).

MongoDB's rules: dotted paths through sub-documents, multikey expansion of arrays (one key per
element; an empty array indexes as null), missing fields index as null, sparse indexes skip
documents lacking every key field, partial indexes skip documents failing their filter, and two
arrays on one compound key are refused (171 CannotIndexParallelArrays), and so is a numeric component
that is both a position of an array and a field of one of its documents (16746). Under an index collation a
string is stored as its ICU key (``collated_key_value``). An index with a 2dsphere, 2d, hashed or
text field is keyed by ``index_kinds.SpecialKeyer`` behind the same interface as ``IndexKeyer``.

Keys are encoded with ``tidemark.storage.keys.encode_key``, so the intervals of ``index_bounds`` and the stored
entries compare alike. The regular write paths record ``multikey: True`` (``MULTIKEY_FLAG``) in the
stored spec the first time a document expands an array (``index_key_map_multikey``); the planner
relies on it to use two-sided ranges.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import parse_collation
from tidemark.query.index_kinds import SpecialKeyer, is_special, key_direction, parallel_arrays
from tidemark.query.match import compile_filter
from tidemark.query.value_repr import bson_repr
from tidemark.storage.keys import encode_key

_ABSENT = object()  # a key field the document lacks (indexed as null unless the index is sparse)
# a document element of a traversed array lacks the rest of the path: a null key, but not a presence
# (a sparse index still leaves out a document no element of which holds the field)
_MISSING_IN_ELEMENT = object()


def key_fields(key_pattern: dict) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(field paths, directions) of a validated ascending/descending key pattern."""
    fields = tuple(key_pattern)
    # (the usual 1 / -1 inline: every plan asks this of every index it weighs)
    directions = tuple([(-1 if v < 0 else 1) if type(v) is int else key_direction(v) for v in key_pattern.values()])
    return fields, directions


def index_name_for(key_pattern: dict) -> str:
    """mongod's generated index name: ``a_1_b_-1`` (numbers printed as given, strings verbatim)."""
    parts = []
    for name, value in key_pattern.items():
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        parts.append(f"{name}_{value}")
    return "_".join(parts)


def _values_at(doc: Any, parts: tuple[str, ...], depth: int = 0) -> tuple[list[Any], frozenset[int]]:
    """Leaf values for one key field, and the arrays expanded on the way (each as the number of path
    components leading to it: one document's arrays are told apart by their paths).

    Arrays met before the last component are traversed element-wise (a numeric component also
    indexes positionally, like mongod); an array at the leaf contributes each element (empty -> null).
    A document element of a traversed array that lacks the rest of the path contributes null
    (``_MISSING_IN_ELEMENT``: ``{a: [{b: 3}, {}]}`` has the ``a.b`` keys 3 and null, so ``{"a.b": null}``
    finds it through the index as a collection scan does); a scalar element contributes nothing.
    """
    if depth == len(parts):
        if isinstance(doc, list):
            return (list(doc) if doc else [None]), frozenset((depth,))
        return [doc], _NO_ARRAYS
    part = parts[depth]
    if isinstance(doc, dict):
        if part not in doc:
            return [_ABSENT], _NO_ARRAYS
        return _values_at(doc[part], parts, depth + 1)
    if isinstance(doc, list):
        if part.isdigit() and int(part) < len(doc):
            # (only a numeric component gets here: a path without one pays nothing for this check)
            if any(type(element) is dict and part in element for element in doc) and part == str(int(part)):
                raise _ambiguous_field(part, doc)
            vals, _ = _values_at(doc[int(part)], parts, depth + 1)
            return vals, _NO_ARRAYS
        out: list[Any] = []
        arrays = {depth}
        missing = False
        for element in doc:
            if isinstance(element, dict):
                vals, inner = _values_at(element, parts, depth)
                arrays.update(inner)
                for v in vals:
                    if v is _ABSENT or v is _MISSING_IN_ELEMENT:
                        missing = True
                    else:
                        out.append(v)
        if missing or not out:
            out.append(_MISSING_IN_ELEMENT if missing else _ABSENT)
        return out, frozenset(arrays)
    return [_ABSENT], _NO_ARRAYS


_NO_ARRAYS: frozenset[int] = frozenset()


def _ambiguous_field(part: str, array: list) -> MongoError:
    """mongod's BtreeKeyGenerator: a numeric key component that is both a position of the array and a
    field of one of its document elements cannot say which it means (16746; the array printed as its
    BSON object, shortened past 1024 characters)."""
    shown = bson_repr({str(i): v for i, v in enumerate(array)})
    if len(shown) >= 1024:
        shown = f"{shown[:1024 // 3]} .......... {shown[len(shown) - 1024 // 3:]}"
    return MongoError(16746, "Ambiguous field name found in array (do not use numeric field names in embedded "
                             f"elements in an array), field: '{part}' for array: {shown}")


def _parallel(arrays: list[tuple[str, tuple[str, ...], frozenset[int]]]) -> list[str] | None:
    """Two key fields that expanded different arrays (each an array the other did not: mongod's
    "parallel arrays", whose keys would be a cross product of unrelated arrays), as [first, second];
    None when every field's arrays are among another's (``a.b`` and ``a.c`` through the one array
    ``a``, or ``x.y`` through ``x`` and ``x.z`` through ``x`` and ``x.z``: the keys are then the
    product of values reached through one array, which mongod indexes too)."""
    paths = [(name, frozenset(parts[:depth] for depth in depths)) for name, parts, depths in arrays]
    for i, (name, mine) in enumerate(paths):
        for other, theirs in paths[i + 1:]:
            if mine - theirs and theirs - mine:
                return [name, other]
    return None


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
            return encode_key(combo, self.directions)
        return encode_key(tuple(collated_key_value(v, self.collation) for v in combo), self.directions)

    def entries(self, doc: dict) -> list[tuple[bytes, tuple]]:
        """[(encoded key, key values)] this document contributes; [] when sparse/partial skip it."""
        return self.entries_multikey(doc)[0]

    def entries_multikey(self, doc: dict) -> tuple[list[tuple[bytes, tuple]], bool]:
        """``entries(doc)`` and whether an array was expanded (the document makes the index multikey)."""
        if self.partial is not None and not self.partial(doc):
            return [], False
        if len(self.parts) == 1 and len(self.parts[0]) == 1:
            # fast path: one top-level field holding a scalar or sub-document (the common case)
            value = doc.get(self.fields[0], _ABSENT)
            if not isinstance(value, list):
                if value is _ABSENT:
                    if self.sparse:
                        return [], False
                    value = None
                return [(self._encode((value,)), (value,))], False
        per_field = []
        expanded = []  # (field, its path, the depths of the arrays it expanded), for each field that did
        present = False
        for name, parts in zip(self.fields, self.parts, strict=False):
            values, arrays = _values_at(doc, parts)
            if arrays:
                expanded.append((name, parts, arrays))
            if any(v is not _ABSENT and v is not _MISSING_IN_ELEMENT for v in values):
                present = True
            per_field.append([None if v is _ABSENT or v is _MISSING_IN_ELEMENT else v for v in values])
        if self.sparse and not present:
            return [], False
        if len(expanded) > 1 and (pair := _parallel(expanded)) is not None:
            raise parallel_arrays(pair)
        seen: dict[bytes, tuple] = {}
        for combo in itertools.product(*per_field):
            key = self._encode(combo)
            if key not in seen:
                seen[key] = combo
        return list(seen.items()), bool(expanded)

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
# Options of special index kinds that change the keys: two specs differing only in one of them (a text
# index rebuilt with another textIndexVersion under the same name) must not share a cached keyer.
_KIND_OPTIONS = ("weights", "default_language", "language_override", "textIndexVersion", "bits", "min", "max")


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
        if is_special(spec["key"]):
            # the same interface, duck-typed (index_kinds.SpecialKeyer)
            _KEYER_CACHE[cache_key] = keyer = cast(IndexKeyer, SpecialKeyer(spec, partial))
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


def may_leave_out(spec: dict) -> bool:
    """Whether an index may hold no key for some documents: sparse, partial, or with a 2dsphere, 2d,
    text or time-series 2dsphere field (those skip documents without a value for it)."""
    return bool(spec.get("sparse")) or "partialFilterExpression" in spec or any(
        isinstance(v, str) and v != "hashed" for v in spec["key"].values())


def holds(spec: dict, doc: dict) -> bool:
    """Whether the index has at least one key for ``doc`` (a scan of it would return the document)."""
    return bool(keyer_for(spec).entries(doc))
