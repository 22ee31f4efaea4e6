"""Wildcard (``$**``) indexes (pure): their spec rules, their keys, and the scans that may use them.

A wildcard index keys a document by every leaf it reaches under its projection: one key
``(path, value)`` per leaf (mongod's WildcardKeyGenerator), the path being the dotted field names with
array positions left out. Sub-documents are descended; an array is expanded element by element (an
element that is itself an array is a leaf value, a document is descended); an empty document or
array is a leaf of its own (an empty array keyed undefined, as a btree index keys it; one inside an
array is a value, ``[]``); fields whose name holds a "." are skipped (a document holding only such
fields is a leaf, so that its path still exists for ``$exists``). The projection is
``{"a.$**": 1}``'s subtree ``a``, or ``{"$**": 1}``'s ``wildcardProjection`` (inclusion or exclusion),
and ``_id`` is left out unless the projection includes it. A compound wildcard index (7.0) puts the
regular fields' values (btree rules, ``index_keys.IndexKeyer``) around the ``(path, value)`` pair, in
key-pattern order; a document with no wildcard leaf is keyed by its regular values around ``(MinKey,
null)`` (``NO_LEAF``: mongod's generic entry, whose ``$_path`` bounds are ``[MinKey, MinKey], ["", {})``),
so that a scan bounded only by the regular prefix finds every document (a plain wildcard index keys no
such document).

What the planner may ask of such an index (``scan_for``): a predicate on ONE path the projection
covers, with equality / ``$in`` / range bounds of scalar values (no null; documents and arrays only
when empty: others are not leaves) or ``$exists: true`` (the path's own keys and every key below it).
A numeric path component may be a field name or an array position (then left out of the key
path, or the rest lies in a nested array: ``wildcard_plan.key_paths`` scans each reading). A
compound index whose first field is a regular one may also be scanned by its regular prefix alone
(the generic scan: every path, every value). A leaf scan of a plain wildcard index that never held
an array gives a sort on its path (``wildcard_plan._give_sort``); nothing else does. Bounds are loose as everywhere: the
caller re-applies the full filter; every path may hold arrays, so ranges keep one side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bson.max_key import MaxKey
from bson.min_key import MinKey

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.value_repr import bson_repr
from tidemark.storage.keys import T_STRING, UNDEFINED, encode_key

WILDCARD = "$**"
PATH_FIELD = "$_path"  # explain's name of the path component (mongod's)
# the (path, value) pair of a compound wildcard index's document that has no wildcard leaf: MinKey
# sorts before every path string, so the generic scan reads it and no leaf scan ever does
NO_LEAF = (MinKey(), None)

# a trie of projection paths: {part: child}; a child of None ends a path (everything below it)
Trie = dict[str, Any]


def is_wildcard_field(name: str) -> bool:
    return name == WILDCARD or name.endswith(".$**")


def is_wildcard(key: dict) -> bool:
    """A key pattern with a ``$**`` field holding a number (``{"$**": "text"}`` is a text index)."""
    for name, value in key.items():
        if is_wildcard_field(name) and type(value) is not str:
            return True
    return False


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    try:
        return float(str(value)) != 0
    except ValueError:
        return True


def _is_number_or_bool(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) or type(value).__name__ in ("Decimal128", "Int64")


# --------------------------------------------------------------------------------------------------
# spec rules (index_key_validate.cpp, wildcard_validation.cpp, the projection parser)
# --------------------------------------------------------------------------------------------------


def check_key_pattern(key: dict) -> None:
    """mongod 7.0's validateWildcardIndex: one wildcard field (7246201) that no regular field lies under
    (7246204)."""
    wildcard = ""
    regular: list[str] = []
    for name in key:
        if is_wildcard_field(name):
            if wildcard:
                raise MongoError(7246201, "Index Key can contain only one wildcard index field")
            wildcard = name
        else:
            regular.append(name)
    if not wildcard:
        raise MongoError(7246202, "No wildcard index field is specified for the wildcard index")
    base = wildcard[:-len(WILDCARD)].rstrip(".").split(".") if wildcard != WILDCARD else []
    for field in regular:  # ("$**" lies over every field: its projection must leave them out, checked there)
        if base and field.split(".")[:len(base)] == base:
            raise MongoError(7246204, "A wildcard index field should not overlap with and index key fields if "
                                      f"wildcard projection is empty, however '{field}' is overlapping with the "
                                      "wildcard index field.")


def check_projection_field(key: dict, projection: Any) -> None:
    """The ``wildcardProjection`` field of validateIndexSpec (in the spec's field order)."""
    if not is_wildcard(key):
        raise MongoError(ErrorCode.BadValue, "The field 'wildcardProjection' is only allowed in 'wildcard' indexes")
    if not isinstance(projection, dict):
        from tidemark.query.expr_base import type_name

        raise MongoError(ErrorCode.TypeMismatch, "The field 'wildcardProjection' must be a non-empty object, but got "
                                                 f"{type_name(projection)}")
    if WILDCARD not in key:
        raise MongoError(ErrorCode.FailedToParse, "The field 'wildcardProjection' is only allowed when 'key' is "
                                                  '{"$**": ±1} or {"$**": "columnstore"}')
    if not projection:
        raise MongoError(ErrorCode.FailedToParse, "The 'wildcardProjection' field can't be an empty object")
    if len(key) > 1:
        _check_compound_projection(key, projection)
    try:
        parse_projection(projection)
    except MongoError as e:
        raise MongoError(e.code, f"Failed to parse projection: wildcardProjection :: caused by :: {e.message}") from None


def _prefix_or_equal(a: list[str], b: list[str]) -> bool:
    return b[:len(a)] == a


def _check_compound_projection(key: dict, projection: dict) -> None:
    """mongod 7.0's validateWildcardProjection (compound wildcard indexes): numbers only, no overlap
    within the projection, included paths apart from the regular fields, excluded ones covering them all,
    inclusion and exclusion not mixed (but for _id)."""
    regular = sorted(name for name in key if not is_wildcard_field(name))
    included: list[str] = []
    excluded: list[str] = []
    for name, value in projection.items():
        if not _is_number_or_bool(value):
            from tidemark.query.expr_base import type_name

            raise MongoError(7246207, f"Fields in wildcardProjection must be numbers, however '{name}: "
                                      f"{bson_repr(value)}' is a {type_name(value)}.")
        (included if _truthy(value) else excluded).append(name)
    included.sort()
    excluded.sort()
    for paths in (included, excluded):
        for a, b in zip(paths, paths[1:], strict=False):
            if _prefix_or_equal(a.split("."), b.split(".")) or _prefix_or_equal(b.split("."), a.split(".")):
                raise MongoError(7246200, f"Fields in Wildcard Projection cannot overlap, however '{a}' is "
                                          f"overlapped with '{b}")
    fields = sorted(f.split(".") for f in regular)
    inc = sorted(p.split(".") for p in included)
    i = j = 0
    while i < len(fields) and j < len(inc):  # mongod's merge walk over the sorted paths
        if _prefix_or_equal(inc[j], fields[i]):
            raise MongoError(7246208, "Index Key and Wildcard Projection cannot contain overlapping fields, "
                                      f"however '{'.'.join(fields[i])}' index field is ovverlapping with "
                                      f"'{'.'.join(inc[j])}' wildcardProjection path.")
        if inc[j] < fields[i]:
            j += 1
        else:
            i += 1
    if excluded:
        exc = sorted(p.split(".") for p in excluded)
        i = j = 0
        while i < len(fields) and j < len(exc):
            if _prefix_or_equal(exc[j], fields[i]):
                i += 1
            elif exc[j] < fields[i]:
                j += 1
            else:
                raise MongoError(7246209, "wildcardProjection paths must exclude all regular index fields, however "
                                          f"'{'.'.join(fields[i])}'is not excluded.")
        if i < len(fields):
            raise MongoError(7246210, "wildcardProjection paths must exclude all regular index fields, however "
                                      f"'{'.'.join(fields[i])}'is not excluded.")
    if included and excluded and not (included == ["_id"] or excluded == ["_id"]):
        raise MongoError(7246211, "Inclusion and exclusion statements cannot combine in the wildcardProjection with "
                                  "an exception of explicitly including _id field")


def parse_projection(projection: dict) -> tuple[bool, list[str]]:
    """(inclusion?, paths) of a wildcardProjection, checked as mongod's projection parser does for an
    index (no computed fields: 51271; no mixing: 31253 / 31254; no path collision: 31249 / 31250).
    ``_id`` is left out unless included; an exclusion projection that includes ``_id`` keeps it."""
    flat: list[tuple[str, bool]] = []
    _flatten(projection, "", flat)
    inclusion: bool | None = None
    seen: list[list[str]] = []
    for path, include in flat:
        parts = path.split(".")
        for other in seen:
            if _prefix_or_equal(other, parts) and other != parts:
                raise MongoError(31249, f"Path collision at {path} remaining portion {'.'.join(parts[len(other):])}")
            if _prefix_or_equal(parts, other):
                raise MongoError(31250, f"Path collision at {path}")
        seen.append(parts)
        if path == "_id":
            continue
        if inclusion is None:
            inclusion = include
        elif inclusion and not include:
            raise MongoError(31254, f"Cannot do exclusion on field {path} in inclusion projection")
        elif not inclusion and include:
            raise MongoError(31253, f"Cannot do inclusion on field {path} in exclusion projection")
    id_included = any(path == "_id" and include for path, include in flat)
    if inclusion is None:  # only _id named
        return (True, ["_id"]) if id_included else (False, ["_id"])
    if inclusion:
        return True, [path for path, include in flat if include]
    return False, [path for path, _ in flat if path != "_id"] + ([] if id_included else ["_id"])


def _flatten(projection: dict, prefix: str, out: list[tuple[str, bool]]) -> None:
    for name, value in projection.items():
        path = prefix + name
        if isinstance(value, dict) and value and not any(k.startswith("$") for k in value):
            _flatten(value, path + ".", out)
        elif _is_number_or_bool(value) and not name.startswith("$") and "" not in path.split("."):
            out.append((path, _truthy(value)))
        else:
            raise MongoError(51271, "Bad projection specification, cannot use computed fields when parsing a spec in "
                                    "kBanComputedFields mode")


def check_spec_options(spec: dict) -> None:
    """IndexCatalogImpl::_isSpecOk for a wildcard index (CannotCreateIndex)."""
    for option, message in (("sparse", "does not support the sparse option"),
                            ("unique", "does not support the unique option")):
        if spec.get(option):
            raise MongoError(ErrorCode.CannotCreateIndex, f"Index type 'wildcard' {message}")
    if "expireAfterSeconds" in spec:
        raise MongoError(ErrorCode.CannotCreateIndex, "Index type 'wildcard' cannot be a TTL index")


# --------------------------------------------------------------------------------------------------
# the parsed index: projection trie, keys
# --------------------------------------------------------------------------------------------------


def _trie(paths: list[str]) -> Trie:
    root: Trie = {}
    for path in paths:
        node: Trie = root
        parts = path.split(".")
        for part in parts[:-1]:
            child: Trie | None = node.get(part, {})
            if child is None:  # a shorter path holds the subtree already
                break
            node[part] = child
            node = child
        else:
            node[parts[-1]] = None
    return root


@dataclass(frozen=True)
class WildcardIndex:
    """A wildcard index spec, parsed once: where its wildcard field sits, its projection as a trie."""

    position: int  # of the wildcard field in the key pattern
    direction: int  # of its values
    inclusion: bool
    trie: Trie
    regular: tuple[str, ...]  # the other key fields, in order

    def covers(self, path: str, *, subtree: bool = False) -> bool:
        """Whether every leaf at ``path`` is keyed (``subtree``: also every leaf below it)."""
        node: Any = self.trie
        for part in path.split("."):
            if node is None:
                return self.inclusion
            if part not in node:
                return not self.inclusion
            node = node[part]
        if node is None:
            return self.inclusion
        # a path above the projection's paths: its own leaves are keyed only by an exclusion, and
        # its subtree not wholly (some path below is left out)
        return not self.inclusion and not subtree


def parse_index(spec: dict) -> WildcardIndex:
    key = spec["key"]
    names = list(key)
    position = next(i for i, name in enumerate(names) if is_wildcard_field(name))
    field = names[position]
    value = key[field]
    direction = -1 if float(str(value)) < 0 else 1
    if field != WILDCARD:
        inclusion, paths = True, [field[:-len(WILDCARD) - 1]]
    elif "wildcardProjection" in spec:
        inclusion, paths = parse_projection(spec["wildcardProjection"])
    else:
        inclusion, paths = False, ["_id"]
    regular = tuple(name for name in names if name != field)
    return WildcardIndex(position, direction, inclusion, _trie(paths), regular)


_PARSED: dict[tuple, WildcardIndex] = {}


def parsed(spec: dict) -> WildcardIndex:
    cache_key = (repr(spec["key"]), repr(spec.get("wildcardProjection")))
    found = _PARSED.get(cache_key)
    if found is None:
        if len(_PARSED) > 1024:
            _PARSED.clear()
        found = _PARSED[cache_key] = parse_index(spec)
    return found


def leaves(doc: dict, index: WildcardIndex) -> tuple[list[tuple[str, Any]], bool]:
    """The (path, value) leaves of ``doc`` the index keys, and whether an array was expanded."""
    out: list[tuple[str, Any]] = []
    state = [False]
    _walk_object(doc, "", index.trie, index.inclusion, out, state)
    return out, state[0]


def _walk_object(obj: dict, prefix: str, node: Trie | None, inclusion: bool, out: list, state: list[bool]) -> None:
    """Leaves under ``obj``; ``node``: the projection below here (None: everything is kept)."""
    for name, value in obj.items():
        if "." in name:
            continue  # not reachable by a path: mongod leaves such fields out
        if node is None:
            child: Trie | None = None
            keep = True
        elif name in node:
            child = node[name]
            if child is None:
                if not inclusion:
                    continue  # an excluded subtree
                keep = True
            else:
                keep = not inclusion  # above an included path, only the path down is kept
        elif inclusion:
            continue
        else:
            child, keep = None, True
        _walk_value(value, prefix + name, child, inclusion, keep, False, out, state)


def _walk_value(value: Any, path: str, node: Trie | None, inclusion: bool, keep: bool, in_array: bool,
                out: list, state: list[bool]) -> None:
    kind = type(value)
    if kind is list:
        if in_array:
            if keep:
                out.append((path, value))  # an array in an array is a value, not descended
            return
        state[0] = True
        for element in value:
            _walk_value(element, path, node, inclusion, keep, True, out, state)
        if not value and keep:
            out.append((path, UNDEFINED))  # (as a btree index: mongod's _addKeyForEmptyLeaf)
    elif kind is dict or (kind is not str and isinstance(value, dict)):
        if not value or all("." in name for name in value):
            # an empty document is a leaf; so is one whose fields all hold a "." (mongod keys none of
            # them and so nothing at all, which would hide the path from ``$exists: true``)
            if keep:
                out.append((path, value))
            return
        _walk_object(value, path + ".", node, inclusion, out, state)
    elif keep:
        out.append((path, value))


class WildcardKeyer:
    """The ``index_keys.IndexKeyer`` interface for a wildcard index. ``regular``: an IndexKeyer over the
    regular fields of a compound wildcard index (None for a plain one); ``collate``: the index
    collation's value mapping (None = simple)."""

    __slots__ = ("name", "spec", "fields", "partial", "sparse", "index", "regular", "collate", "directions")

    def __init__(self, spec: dict, partial: Callable[[dict], bool] | None, regular: Any,
                 collate: Callable[[Any], Any] | None):
        self.name = spec["name"]
        self.spec = spec
        self.fields = tuple(spec["key"])
        self.partial = partial
        self.sparse = False
        self.index = parsed(spec)
        self.regular = regular
        self.collate = collate
        directions = list(getattr(regular, "directions", ()) or ())
        directions[self.index.position:self.index.position] = [1, self.index.direction]
        self.directions = tuple(directions)

    def entries_multikey(self, doc: dict) -> tuple[list[tuple[bytes, tuple]], bool]:
        if self.partial is not None and not self.partial(doc):
            return [], False
        found, multikey = leaves(doc, self.index)
        collate = self.collate
        pairs: list[tuple[Any, Any]]
        if found:
            pairs = [(path, collate(v) if collate is not None else v) for path, v in found]
        elif self.regular is None:
            return [], multikey
        else:
            pairs = [NO_LEAF]
        seen: dict[bytes, tuple] = {}
        if self.regular is None:
            for pair in pairs:
                seen.setdefault(encode_key(pair, self.directions), pair)
            return list(seen.items()), multikey
        combos, regular_multikey = self.regular.entries_multikey(doc)
        at = self.index.position
        for _, values in combos:
            if collate is not None:
                values = tuple(collate(v) for v in values)
            for pair in pairs:
                combo = (*values[:at], *pair, *values[at:])
                seen.setdefault(encode_key(combo, self.directions), combo)
        return list(seen.items()), multikey or regular_multikey

    def entries(self, doc: dict) -> list[tuple[bytes, tuple]]:
        return self.entries_multikey(doc)[0]

    def keys(self, doc: dict) -> list[bytes]:
        return [k for k, _ in self.entries(doc)]

    def key_value(self, doc: dict, key: bytes | None = None) -> dict:
        return {f: doc.get(f) for f in self.fields}

    def key_document(self, values: tuple) -> dict:
        """An entry's key as mongod shows it (returnKey, ``{$meta: "indexKey"}``): the regular fields by
        name and, in the wildcard field's place, ``$_path`` and the path with its value."""
        at = self.index.position
        values = tuple(None if v is UNDEFINED else v for v in values)  # a regular field's empty array
        shown = dict(zip(self.fields[:at], values[:at], strict=True))
        path, value = values[at], values[at + 1]
        shown[PATH_FIELD] = path
        if type(path) is str:  # (NO_LEAF's entry names no path)
            shown[path] = value
        shown.update(zip(self.fields[at + 1:], values[at + 2:], strict=True))
        return shown


# --------------------------------------------------------------------------------------------------
# scans
# --------------------------------------------------------------------------------------------------


def usable_path(path: str) -> bool:
    """A query path a wildcard index can answer: no empty and no ``$`` component (numeric ones are
    read both ways by ``wildcard_plan.key_paths``)."""
    for part in path.split("."):
        if not part or part.startswith("$"):
            return False
    return True


def scalar_bound(value: Any) -> bool:
    """A bound value leaves answer: not null (missing fields have no key), not a document or an array
    (those are descended, not keyed whole), not MinKey/MaxKey (they span every type)."""
    return not (value is None or isinstance(value, (dict, list, MinKey, MaxKey)))


def path_prefix(path: str) -> bytes:
    """The key bytes of the path component ``path`` (a point)."""
    return encode_key((path,), (1,))


def subtree_range(path: str) -> tuple[bytes, bytes]:
    """(lo inclusive, hi exclusive) of the path component for every path below ``path``: the strings
    starting with ``path + "."`` (the key encoding keeps a string's bytes, then a terminator)."""
    raw = path.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff")
    return bytes([T_STRING]) + raw + b".", bytes([T_STRING]) + raw + b"/"
