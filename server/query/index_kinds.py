"""Index types beyond ascending/descending: ``2dsphere``, ``2d``, ``hashed`` and ``text`` (pure).

Each field of a stored key pattern has a *kind*: "btree" (1/-1), "2dsphere", "2d", "hashed", "text"
(the ``_fts`` field of a text index; its ``_ftsx`` partner is "skip") or "2dsphere_bucket" (the
bucket-level 2dsphere index of a time-series collection). ``special_entries`` computes the keys
of a document for an index that has at least one non-btree field:

- a btree field gives its values as usual (leaf arrays expanded); a hashed field the hash of its
  value (arrays refused, 16766); a 2dsphere / 2d field its cell / geohash keys; the text field the
  document's terms. Every combination becomes one key, in key-pattern order.
- 2dsphere, 2d and text indexes skip documents without a value for their special field(s) (they
  are sparse by nature); hashed indexes index a missing field as the hash of null.
- "2dsphere_bucket" (``data.<field>``) keys a time-series bucket by the cells of the points its
  measurements hold at ``<field>`` (``bucket_values``); a bucket with none is not indexed (sparse, as
  2dsphere); a value that is not a point refuses the write (geo_keys.bucket_point). Queries re-apply
  the exact per-measurement predicate after unpacking.

``check_key_pattern`` validates a new index's key pattern as mongod's validateKeyPattern does (its order
and messages) and answers its plugin name ("" for ascending/descending; "wildcard" for a ``$**`` index, whose
keys and rules are ``wildcard.py``'s).
"""

from __future__ import annotations

import itertools
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.geo_keys import Plane, bucket_sphere_keys, sphere_keys
from tidemark.query.hashed import hashed_key
from tidemark.query.paths import get_path_values
from tidemark.query.text_index import text_terms
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import DBREF_FIELDS, MISSING
from tidemark.query.wildcard import check_key_pattern as check_wildcard_key
from tidemark.storage.keys import UNDEFINED, encode_key

KINDS = ("2dsphere", "2d", "hashed", "text")
UNSUPPORTED_INDEX_TYPES = ("columnstore",)  # known to mongod 7.0, not built by Tidemark: 115
# every plugin name mongod 7.0 knows ("wildcard" is that of a "$**" key); geoHaystack is known only to be
# refused (67, by validateKeyPattern as soon as it finds the plugin name)
_KNOWN_PLUGINS = frozenset({*KINDS, "2dsphere_bucket", "wildcard", "columnstore", "geoHaystack"})
MAX_KEY_PATTERN_BYTES = 2048


def _plugin_name(key: dict) -> str:
    """mongod's IndexNames::findPluginName: the first string value, "wildcard" for a first "$**" key
    with a number, "" (btree) otherwise."""
    for name, value in key.items():
        if type(value) is str:  # (bson's Code is a str subclass, but no BSON string)
            return value
        if name == "$**" or name.endswith(".$**"):
            return "wildcard"
    return ""


def check_key_pattern(key: dict) -> str:
    """mongod 7.0's validateKeyPattern for a new (v: 2) index, its messages and order, with
    CannotCreateIndex (67) (wildcard ones: ``wildcard.check_key_pattern``); then Tidemark's refusal of index
    types it does not build (115). Returns the
    plugin name ("" for an ascending/descending index)."""
    from tidemark.protocol.codec import encode

    def bad(message: str) -> MongoError:
        return MongoError(ErrorCode.CannotCreateIndex, message)

    if len(encode(key)) > MAX_KEY_PATTERN_BYTES:
        raise bad("Index key pattern too large.")
    if not key:
        raise bad("Index keys cannot be empty.")
    plugin = _plugin_name(key)
    if plugin == "geoHaystack":  # removed in 5.0: mongod refuses it before looking at the fields
        raise bad("GeoHaystack indexes cannot be created in version 5.0 and above")
    if plugin and plugin not in _KNOWN_PLUGINS:
        raise bad(f"Unknown index plugin '{plugin}'")
    if plugin == "wildcard":  # validateWildcardIndex comes before the per-field rules
        check_wildcard_key(key)
    for name, value in key.items():
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool) or \
            type(value).__name__ in ("Decimal128", "Int64")
        if is_number:
            number = float(str(value)) if type(value).__name__ == "Decimal128" else float(value)
            if number != number:
                raise bad("Values in the index key pattern cannot be NaN.")
            if number == 0:
                raise bad("Values in the index key pattern cannot be 0.")
        elif type(value) is not str:
            raise bad(f"Values in v:2 index key pattern cannot be of type {_type_name(value)}. Only numbers > 0, "
                      "numbers < 0, and strings are allowed.")
        if type(value) is str and value != plugin:
            raise bad("Can't use more than one index plugin for a single index.")
        if value == "wildcard":
            raise bad("The key pattern value for an 'wildcard' index must be a non-zero number, not a string.")
        if name == "":
            raise bad("Index keys cannot be an empty field.")
        if name == "$**" and (is_number or value in ("text", "columnstore")):
            continue
        if name == "_fts" and value != "text":
            raise bad("Index key contains an illegal field name: '_fts'")
        parts = name.split(".")
        for i, part in enumerate(parts):
            if not part:
                raise bad("Index keys cannot contain an empty field.")
            if part[0] != "$":
                continue
            dbref = i != 0 and part in DBREF_FIELDS
            wildcard = i == len(parts) - 1 and part == "$**" and plugin in ("wildcard", "columnstore")
            if not dbref and not wildcard:
                raise bad("Index key contains an illegal field name: field name starts with '$'.")
    if any(value == "" for value in key.values()):
        raise bad("Values in the index key pattern cannot be empty strings")
    if plugin != "text" and len(key) > 32:  # mongod's Ordering of the key pattern (a text index's becomes
        raise MongoError(13103, "too many compound keys")  # {_fts, _ftsx} plus its prefix / suffix fields)
    if plugin == "wildcard":
        return plugin
    if plugin in UNSUPPORTED_INDEX_TYPES:
        raise MongoError(ErrorCode.CommandNotSupported, f"'{plugin}' indexes are not supported by Tidemark")
    if plugin and plugin not in KINDS:  # 2dsphere_bucket: only the time-series layer builds it
        raise bad(f"Unknown index plugin '{plugin}'")
    return plugin


def _type_name(value: Any) -> str:
    from tidemark.query.expr_base import type_name

    return type_name(value)


def field_kind(name: str, value: Any) -> str:
    if name == "_fts":
        return "text"
    if name == "_ftsx":
        return "skip"
    if type(value) is str:
        return value
    return "btree"


def is_special(key: dict) -> bool:
    """A key pattern with a field that is not ascending/descending (its value is a type name)."""
    for v in key.values():  # (a loop: every plan asks this of every index)
        if type(v) is str:
            return True
    return False


def key_direction(value: Any) -> int:
    """-1 for a descending key-pattern (or sort) value, else 1 (any numeric type, as mongod)."""
    if type(value) is int or type(value) is float:  # the usual 1 / -1: what float(str(v)) gives
        return -1 if value < 0 else 1
    try:
        return -1 if float(str(value)) < 0 else 1
    except ValueError:
        return 1


def _raw_values(doc: dict, path: str) -> list:
    """Values at ``path`` with non-leaf arrays traversed and leaf arrays kept whole."""
    return [v for v in get_path_values(doc, path) if v is not MISSING]


def _btree_values(doc: dict, path: str) -> tuple[list, bool]:
    vals = _raw_values(doc, path)
    if not vals:
        return [None], False
    out: list = []
    was_array = False
    for v in vals:
        if isinstance(v, list):
            was_array = True
            out.extend(v if v else [UNDEFINED])  # (an empty array's key, as the btree keyer's)
        else:
            out.append(v)
    return out, was_array


def special_entries(spec: dict, doc: dict) -> tuple[list[tuple[bytes, tuple]], bool]:
    """``[(encoded key, values)]`` of ``doc`` for an index with special fields, and whether a btree
    field expanded an array (multikey)."""
    key = spec["key"]
    if "hashed" in key.values():
        return _hashed_entries(spec, doc)
    per_field: list[list] = []
    directions: list[int] = []
    array_fields: list[str] = []
    for name, value in key.items():
        kind = field_kind(name, value)
        if kind == "skip":
            continue
        vals: list[Any] | None
        if kind == "btree":
            vals, was_array = _btree_values(doc, name)
            if was_array:
                array_fields.append(name)
            directions.append(key_direction(value))
        else:
            vals = _special_values(kind, spec, name, doc)
            if vals is None:
                return [], False  # sparse: no value for a geo / text field
            directions.append(1)
        per_field.append(vals)
    if len(array_fields) > 1 and not any(kind in _GEO_KINDS for kind in map(field_kind, key, key.values())):
        # (mongod's 2d and 2dsphere key generators have no parallel-array check: the keys are the cross
        # product of the non-geo fields' values, loose bounds the full filter re-checks)
        raise parallel_arrays(array_fields)
    seen: dict[bytes, tuple] = {}
    for combo in itertools.product(*per_field):
        seen.setdefault(encode_key(combo, directions), combo)
    return list(seen.items()), bool(array_fields)


def _hashed_entries(spec: dict, doc: dict) -> tuple[list[tuple[bytes, tuple]], bool]:
    """The one key of ``doc`` for an index with a hashed field (mongod's getHashKeys): each field's value
    (the hashed one hashed, null when missing); an array anywhere along any field's path is refused
    (16766), so such an index is never multikey. A sparse one leaves out a document missing every field."""
    values: list[Any] = []
    directions: list[int] = []
    present = False
    for name, direction in spec["key"].items():
        value = _value_along(doc, name)
        if value is MISSING:
            value = None
        else:
            present = True
        if direction == "hashed":
            value = hashed_key(value)
            directions.append(1)
        else:
            directions.append(key_direction(direction))
        values.append(value)
    if spec.get("sparse") and not present:
        return [], False
    combo = tuple(values)
    return [(encode_key(combo, directions), combo)], False


def _value_along(doc: Any, path: str) -> Any:
    """The value at dotted ``path`` through sub-documents only (``MISSING`` when absent); 16766 when an
    array stands anywhere along it, naming the path up to that array."""
    parts = path.split(".")
    cur = doc
    for depth, part in enumerate(parts):
        if type(cur) is not dict and not isinstance(cur, dict):
            return MISSING
        if part not in cur:
            return MISSING
        cur = cur[part]
        if isinstance(cur, list):
            raise MongoError(16766, "Error: hashed indexes do not currently support array values. Found array at "
                                    f"path: {'.'.join(parts[:depth + 1])}")
    return cur


def parallel_arrays(array_fields: list[str]) -> MongoError:
    """171: two fields of one compound key hold arrays (their keys would be a cross product)."""
    return MongoError(ErrorCode.CannotIndexParallelArrays,
                      f"cannot index parallel arrays [{array_fields[1]}] [{array_fields[0]}]")


def _special_values(kind: str, spec: dict, name: str, doc: dict) -> list | None:
    if kind == "hashed":
        vals = _raw_values(doc, name)
        if len(vals) > 1:  # an array on the way to the field
            vals = [vals]
        return [hashed_key(vals[0] if vals else None)]
    if kind == "text":
        terms = text_terms(spec, doc)
        return terms or None
    if kind == "2dsphere_bucket":
        return bucket_sphere_keys(bucket_values(doc, name)) or None
    vals = _raw_values(doc, name)
    if not vals:
        return None
    if kind == "2dsphere":
        if spec.get("2dsphereIndexVersion") == 1:
            for v in vals:
                _check_s2_v1(v, doc)
        keys = [k for v in vals for k in sphere_keys(v, doc)]
    elif kind == "2d":
        plane = Plane(spec)
        keys = [k for v in vals for k in plane.keys(v, doc)]
    else:
        raise MongoError(ErrorCode.CannotCreateIndex, f"Unknown index plugin '{kind}'")
    return sorted(set(keys)) or None


_GEO_KINDS = frozenset({"2d", "2dsphere"})
# the GeoJSON types a {2dsphereIndexVersion: 1} index cannot hold (mongod: not a "simple container")
_S2_V1_REFUSED = frozenset({"MultiPoint", "MultiLineString", "MultiPolygon", "GeometryCollection"})


def _check_s2_v1(value: Any, doc: dict) -> None:
    """mongod's version-1 2dsphere keys: only points, lines and polygons (16755)."""
    if isinstance(value, dict) and value.get("type") in _S2_V1_REFUSED:
        raise MongoError(16755, f"Can't extract geo keys: {bson_repr(doc)}  given geometry can't be indexed in the "
                                "old index format")


def bucket_values(bucket: dict, path: str) -> list:
    """The measurement values a time-series bucket document holds at ``data.<field>[.<sub>]``: each
    value of the ``<field>`` column (``{"<pos>": value}``), followed down ``<sub>``."""
    first, _, sub = path[len("data."):].partition(".")
    data = bucket.get("data")
    column = data.get(first) if isinstance(data, dict) else None
    if not isinstance(column, dict):
        return []
    if not sub:
        return list(column.values())
    return [v for value in column.values() for v in get_path_values(value, sub) if v is not MISSING]


class SpecialKeyer:
    """The ``index_keys.IndexKeyer`` interface for an index with special fields."""

    __slots__ = ("name", "spec", "fields", "partial", "sparse")

    def __init__(self, spec: dict, partial):
        self.name = spec["name"]
        self.spec = spec
        self.fields = tuple(spec["key"])
        self.partial = partial
        self.sparse = bool(spec.get("sparse"))

    def entries_multikey(self, doc: dict) -> tuple[list[tuple[bytes, tuple]], bool]:
        if self.partial is not None and not self.partial(doc):
            return [], False
        return special_entries(self.spec, doc)

    def entries(self, doc: dict) -> list[tuple[bytes, tuple]]:
        return self.entries_multikey(doc)[0]

    def keys(self, doc: dict) -> list[bytes]:
        return [k for k, _ in self.entries(doc)]

    def key_value(self, doc: dict, key: bytes | None = None) -> dict:
        return {f: doc.get(f) for f in self.fields if f not in ("_fts", "_ftsx")}
