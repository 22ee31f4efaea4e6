"""Clustered collections: a collection whose records are keyed by their ``_id`` (storage's ``clustered``
record ids), so a scan in record order is a scan in ``_id`` order and no separate ``_id`` index exists.

Two spellings, as in mongod 7.0 (``clustered_collection_util.cpp``):
- the *legacy* form ``clusteredIndex: true``, which only ``system.buckets.*`` namespaces use (time series);
- the *index spec* form ``clusteredIndex: {key: {_id: 1}, unique: true[, name][, v]}`` of every other
  collection, stored canonically (``{v, key, name, unique}``) and shown by ``listCollections``; its
  ``listIndexes`` entry is that spec with the collection's default collation and ``clustered: true``.
The buckets collection of a time-series collection shows no clustered index in ``listIndexes``.

Pure functions: option parsing with mongod's codes and messages, and the specs shown for the index.
"""

from __future__ import annotations

from typing import Any

from tidemark.core.collection import format_value
from tidemark.core.namespace import BUCKETS_PREFIX
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name

CLUSTER_KEY = {"_id": 1}
DEFAULT_NAME = "_id_"
_SPEC_FIELDS = ("v", "key", "name", "unique")


def requires_legacy_format(name: str) -> bool:
    """Only time-series buckets collections are clustered with ``clusteredIndex: true``."""
    return name.startswith(BUCKETS_PREFIX)


def parse_create_option(value: Any) -> dict | bool:
    """``create.clusteredIndex`` as IDL parses it: a bool (the legacy form, returned as given) or the
    canonical index spec ``{v, key, name, unique}`` (not yet checked against the namespace)."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'create.clusteredIndex' is the wrong type '{type_name(value)}', expected types "
                         "'[bool, object]'")
    for field in value:
        if field not in _SPEC_FIELDS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'create.clusteredIndex.{field}' is an unknown field.")
    for field in ("key", "unique"):
        if field not in value:
            raise MongoError(ErrorCode.IDLFailedToParse,
                             f"BSON field 'create.clusteredIndex.{field}' is missing but a required field")
    _check_type(value, "key", dict, "object")
    _check_type(value, "unique", bool, "bool")
    _check_type(value, "name", str, "string")
    v = value.get("v", 2)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'create.clusteredIndex.v' is the wrong type '{type_name(v)}', expected types "
                         "'[long, int, decimal, double]'")
    key = dict(value["key"])
    name = value.get("name")
    if name is None:
        first = next(iter(key), "_id")
        name = DEFAULT_NAME if first == "_id" else f"{first}_1"
    return {"v": int(v), "key": key, "name": name, "unique": value["unique"]}


def _check_type(value: dict, field: str, kind: type, label: str) -> None:
    if field in value and not isinstance(value[field], kind):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'create.clusteredIndex.{field}' is the wrong type "
                         f"'{type_name(value[field])}', expected type '{label}'")


def check_for_namespace(name: str, clustered: dict | bool, *, id_index: bool, auto_index_id: Any) -> None:
    """mongod's checks of a clustered create against its namespace and other options
    (``create_collection.cpp``: ``_createCollection`` and ``validateClusteredIndexSpec``)."""
    if requires_legacy_format(name) != (clustered is True):
        raise MongoError(5979703, "The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported for "
                                  "specific internal collections and vice versa")
    if id_index:
        raise MongoError(ErrorCode.InvalidOptions, "The 'clusteredIndex' option is not supported with the 'idIndex' "
                                                   "option")
    if auto_index_id is not None and not auto_index_id:
        raise MongoError(6026501, "The 'clusteredIndex' option does not support {autoIndexId: false}")
    if clustered is True:
        return
    assert isinstance(clustered, dict)
    if not clustered["unique"]:
        raise MongoError(5979700, "The clusteredIndex option requires unique: true to be specified")
    if clustered["key"] != CLUSTER_KEY or list(clustered["key"].values()) != [1] or \
            type(clustered["key"]["_id"]) is not int:
        raise MongoError(ErrorCode.InvalidIndexSpecificationOption,
                         "The clusteredIndex option is only supported for key: {_id: 1}")
    if clustered["v"] != 2:
        raise MongoError(5979704, f"Invalid clusteredIndex specification {format_value(clustered)}; cannot create a "
                                  f"clusteredIndex with v={clustered['v']}")


def index_spec(info: Any) -> dict | None:
    """The clustered index as ``listIndexes`` shows it (None: not a clustered collection with an index
    spec, e.g. a buckets collection)."""
    if info is None or not info.clustered:
        return None
    spec = (info.options or {}).get("clusteredIndex")
    if not isinstance(spec, dict):
        return None
    shown = {k: spec[k] for k in _SPEC_FIELDS if k in spec}
    collation = (info.options or {}).get("collation")
    if collation:
        shown["collation"] = collation
    shown["clustered"] = True
    return shown


def is_cluster_key(key: Any) -> bool:
    """A key pattern naming the cluster key ``{_id: 1}`` (createIndex on it is a no-op)."""
    return isinstance(key, dict) and list(key) == ["_id"] and key["_id"] == 1


def cluster_info(info: Any) -> dict | None:
    """The collection's clustered index spec ``{v, key, name, unique}`` (the legacy form's canonical one
    for buckets collections), None when the collection is not clustered."""
    if info is None or not info.clustered:
        return None
    spec = (info.options or {}).get("clusteredIndex")
    return spec if isinstance(spec, dict) else {"v": 2, "key": dict(CLUSTER_KEY), "name": DEFAULT_NAME,
                                                "unique": True}


def index_exists_as_cluster_key(info: Any, raw: Any) -> bool:
    """createIndexes of ``raw`` on an existing collection ``info`` against its clustered index (mongod's
    ``isSpecOKClusteredIndexCheck``): True when the spec *is* the clustered index (a no-op), False when it
    does not touch it; otherwise mongod's error."""
    if not isinstance(raw, dict):
        return False
    cluster = cluster_info(info)
    option = raw.get("clustered")
    if option is not None and not option:
        raise MongoError(6492800, "Cannot create an index with 'clustered' set to false")
    if option and not raw.get("unique"):
        raise MongoError(ErrorCode.CannotCreateIndex, "The 'clustered' index option requires 'unique: true'")
    if option is None and cluster is None:
        return False
    keys_match = cluster is not None and is_cluster_key(raw.get("key"))
    if option and not keys_match:
        raise MongoError(6243700, "Cannot create index with option 'clustered' that does not match an existing "
                                  "clustered index")
    names_match = cluster is not None and raw.get("name") == cluster["name"]
    if not keys_match and not names_match:
        return False
    assert cluster is not None
    if names_match and not keys_match:
        raise MongoError(6100906, "Cannot create an index where the name matches the clusteredIndex but the key "
                                  f"does not - indexSpec: {format_value(raw)}, clusteredIndex: {format_value(cluster)}")
    v = raw.get("v", 2)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v != cluster["v"]:
        raise MongoError(6100908, "Cannot create an index with the same key pattern as the collection's "
                                  "clusteredIndex but a different 'v' field")
    if "unique" in raw and raw["unique"] is False:
        raise MongoError(6100909, "Cannot create an index with the same key pattern as the collection's "
                                  "clusteredIndex but a different 'unique' field")
    return True


def check_implicit_creation(raw_specs: list) -> None:
    """createIndexes on a missing collection never makes it clustered (mongod 6492800 / 6100900)."""
    for raw in raw_specs:
        if isinstance(raw, dict) and "clustered" in raw:
            if not raw["clustered"]:
                raise MongoError(6492800, "Cannot create an index with 'clustered' set to false")
            raise MongoError(6100900, "Cannot create a clustered collection implicitly through createIndexes")


def check_drop(info: Any, target: Any) -> None:
    """dropIndexes naming the clustered index (by name or key pattern) fails: records are keyed by it."""
    cluster = index_spec(info)
    if cluster is None:
        return
    targets = target if isinstance(target, list) else [target]
    if any(t == cluster["name"] or (isinstance(t, dict) and is_cluster_key(t)) for t in targets):
        raise MongoError(5979800, "It is illegal to drop the clusteredIndex")
