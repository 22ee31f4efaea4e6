"""Index keys: the keys a document contributes to an index (pure; no storage state).

MongoDB's rules (mongod's BtreeKeyGenerator): dotted paths through sub-documents, multikey expansion of
arrays (one key per element, the key fields stopping at one array expanding it together, element by
element; a scalar element where the path continues is a null key; an empty array at the end of the
path indexes as undefined, ``keys.UNDEFINED``, as mongod's: below null, and no null key, so ``{a: null}``
does not find ``{a: []}``), missing fields index as null, sparse indexes leave
out keys whose fields are all missing, partial indexes skip documents failing their filter, and two
fields stopping at different arrays are refused (171 CannotIndexParallelArrays), and so is a numeric component
that is both a position of an array and a field of one of its documents (16746). Under an index collation a
string is stored as its ICU key (``collated_key_value``). An index with a 2dsphere, 2d, hashed or
text field is keyed by ``index_kinds.SpecialKeyer`` behind the same interface as ``IndexKeyer``, a wildcard
(``$**``) index by ``wildcard.WildcardKeyer``.

Keys are encoded with ``tidemark.storage.keys.encode_key``, so the intervals of ``index_bounds`` and the stored
entries compare alike. The regular write paths record ``multikey: True`` (``MULTIKEY_FLAG``) in the
stored spec the first time a document expands an array (``index_key_map_multikey``); the planner
relies on it to use two-sided ranges.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import parse_collation
from tidemark.query.index_kinds import SpecialKeyer, is_special, key_direction, parallel_arrays
from tidemark.query.match import compile_filter
from tidemark.query.value_repr import bson_repr
from tidemark.query.wildcard import WildcardKeyer, is_wildcard, is_wildcard_field
from tidemark.storage.keys import UNDEFINED, encode_key

_ABSENT = object()  # a key field the document lacks (indexed as null unless the index is sparse)
_EMPTY = object()  # the one "element" of an empty array being expanded (a leaf key of undefined)


def key_fields(key_pattern: dict) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(field paths, directions) of a validated ascending/descending key pattern."""
    # (the usual 1 / -1 inline, and a loop, not a comprehension: every plan asks this of every index it
    # weighs)
    directions: tuple[int, ...] = ()
    for v in key_pattern.values():
        directions += ((-1 if v < 0 else 1) if type(v) is int else key_direction(v),)
    return tuple(key_pattern), directions


def index_name_for(key_pattern: dict) -> str:
    """mongod's generated index name: ``a_1_b_-1`` (numbers printed as given, strings verbatim)."""
    parts = []
    for name, value in key_pattern.items():
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        parts.append(f"{name}_{value}")
    return "_".join(parts)


def _dotted_or_array(obj: Any, path: tuple[str, ...]) -> tuple[Any, tuple[str, ...] | None, str]:
    """Follow ``path`` from ``obj`` through sub-documents (and positional components) up to the first
    array met by field name, as mongod's ``getFieldDottedOrArray``: (the array, the path left after it
    — ``()`` at the leaf —, its field name); (the leaf value, None, name) when no such array stands in
    the way; ``_ABSENT`` when the path ends at a missing field or at a scalar mid-path.

    A numeric component indexes an array positionally when in range (``a.0``); out of range it names a
    field of the array's documents. An array reached positionally at the leaf is expanded like any other
    (mongod keys ``a.0`` of ``{a: [[1]]}`` as the whole ``[1]``, which ``{"a.0": 1}`` — matched by the
    collection scan — could not find through the index: Tidemark keeps the answers equal instead)."""
    cur = obj
    name = ""
    for depth, part in enumerate(path):
        kind = type(cur)
        if kind is dict or (kind is not list and isinstance(cur, dict)):
            if part not in cur:
                return _ABSENT, None, part
            cur = cur[part]
            name = part
        elif kind is list:
            if part.isdigit() and int(part) < len(cur):
                # (only a numeric component gets here: a path without one pays nothing for this check)
                if part == str(int(part)) and any(type(e) is dict and part in e for e in cur):
                    raise _ambiguous_field(part, cur)
                cur = cur[int(part)]
                name = part
            else:
                return cur, path[depth:], name
        else:
            return _ABSENT, None, part  # a scalar mid-path: nothing there
    if type(cur) is list:
        return cur, (), name
    return cur, None, name


def _ambiguous_field(part: str, array: list) -> MongoError:
    """mongod's BtreeKeyGenerator: a numeric key component that is both a position of the array and a
    field of one of its document elements cannot say which it means (16746; the array printed as its
    BSON object, shortened past 1024 characters)."""
    shown = bson_repr({str(i): v for i, v in enumerate(array)})
    if len(shown) >= 1024:
        shown = f"{shown[:1024 // 3]} .......... {shown[len(shown) - 1024 // 3:]}"
    return MongoError(16746, "Ambiguous field name found in array (do not use numeric field names in embedded "
                             f"elements in an array), field: '{part}' for array: {shown}")


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
        seen: dict[bytes, tuple] = {}
        state = [False]  # whether an array was expanded
        self._walk(doc, list(self.parts), [None] * len(self.parts), 0, seen, state)
        return list(seen.items()), state[0]

    def _walk(self, obj: Any, rest: list[tuple[str, ...] | None], fixed: list[Any], not_found: int,
              seen: dict[bytes, tuple], state: list[bool]) -> None:
        """mongod's BtreeKeyGenerator: resolve every pending key field (``rest``: its path left, None once
        resolved) in ``obj``; the fields that stop at one array expand it together, element by element
        (each element a leaf key, or the document the rest of their paths continues in: a scalar
        element there is a null key), so ``{a: [{b: 1, c: 1}, {b: 2, c: 2}]}`` has the ``{a.b, a.c}``
        keys (1, 1) and (2, 2), never (1, 2). Two fields stopping at different arrays of one document
        are parallel arrays (171). A key whose fields were all missing is left out of a sparse index
        (``not_found``: mongod's numNotFound, per key)."""
        array: Any = None
        array_name = ""
        expanding: list[int] = []
        for i, path in enumerate(rest):
            if path is None:
                continue
            value, remaining, name = _dotted_or_array(obj, path)
            if value is _ABSENT:
                rest[i] = None
                fixed[i] = None
                not_found += 1
            elif remaining is None:
                rest[i] = None
                fixed[i] = value
            else:
                if array is None:
                    array, array_name = value, name
                elif value is not array:
                    raise parallel_arrays([array_name, name])
                expanding.append(i)
                rest[i] = remaining
        if array is None:
            if not (self.sparse and not_found == len(fixed)):
                combo = tuple(fixed)
                key = self._encode(combo)
                if key not in seen:
                    seen[key] = combo
            return
        state[0] = True
        for element in array or (_EMPTY,):
            sub_rest = list(rest)
            sub_fixed = list(fixed)
            for i in expanding:
                if not sub_rest[i]:  # the array is the leaf: the element is the key (empty: undefined)
                    sub_rest[i] = None
                    sub_fixed[i] = UNDEFINED if element is _EMPTY else element
            self._walk(element if type(element) is dict else {}, sub_rest, sub_fixed, not_found, seen, state)

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
        return dict(zip(self.fields, map(_shown, values), strict=False))


_KEYER_CACHE: dict[tuple, IndexKeyer] = {}
# Options of special index kinds that change the keys: two specs differing only in one of them (a text
# index rebuilt with another textIndexVersion under the same name) must not share a cached keyer.
_KIND_OPTIONS = ("weights", "default_language", "language_override", "textIndexVersion", "bits", "min", "max",
                 "2dsphereIndexVersion", "wildcardProjection")


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


def key_document(keyer: Any, values: tuple | list) -> dict:
    """An index entry's key as mongod shows it (find's returnKey, ``{$meta: "indexKey"}``): named by the
    key pattern's fields; a wildcard index's by ``$_path`` and the path (``WildcardKeyer.key_document``)."""
    shown = getattr(keyer, "key_document", None)
    if shown is not None:
        return shown(tuple(values))
    return dict(zip(keyer.fields, map(_shown, values), strict=False))


def _shown(v: Any) -> Any:
    """A key value as a reply holds it: an empty array's undefined key as null (the codec has no
    undefined; pymongo reads mongod's undefined as None too)."""
    return None if v is UNDEFINED else v


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
        if is_wildcard(spec["key"]):
            _KEYER_CACHE[cache_key] = keyer = cast(IndexKeyer, _wildcard_keyer(spec, partial, collation))
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


def _wildcard_keyer(spec: dict, partial: Callable[[dict], bool] | None, collation: Any) -> WildcardKeyer:
    """A wildcard index's keyer; the regular fields of a compound one are keyed by an IndexKeyer (btree
    rules, strings left uncollated: the wildcard keyer collates every value of the key once)."""
    regular = None
    others = {k: v for k, v in spec["key"].items() if not is_wildcard_field(k)}
    if others:
        fields, directions = key_fields(others)
        regular = IndexKeyer(name=spec["name"], fields=fields, parts=tuple(tuple(f.split(".")) for f in fields),
                             directions=directions, sparse=False, partial=None)
    collate = None if collation is None else (lambda v: collated_key_value(v, collation))
    return WildcardKeyer(spec, partial, regular, collate)


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
    """Whether an index may hold no key for some documents: sparse, partial, wildcard, or with a 2dsphere,
    2d, text or time-series 2dsphere field (those skip documents without a value for it)."""
    return bool(spec.get("sparse")) or "partialFilterExpression" in spec or any(
        type(v) is str and v != "hashed" for v in spec["key"].values()) or is_wildcard(spec["key"])


def holds(spec: dict, doc: dict) -> bool:
    """Whether the index has at least one key for ``doc`` (a scan of it would return the document)."""
    return bool(keyer_for(spec).entries(doc))
