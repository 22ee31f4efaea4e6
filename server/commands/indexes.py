"""Index commands: createIndexes, listIndexes, dropIndexes.

Index specs are stored as listIndexes shows them: ``{v, key, name, <type options>, unique?, sparse?,
background?, partialFilterExpression?, expireAfterSeconds?, hidden?, collation?}``. createIndexes checks
in mongod 7.0's order, with its codes and messages: every spec as index_key_validate does (``parse_spec``:
``_validate_spec``, whose errors read "Error in specification <spec> :: caused by :: <reason>", the key
pattern by ``index_kinds.check_key_pattern``, the partial filter's parse by ``partial_filter``; then the
_id index rules), the TTL options of every spec (``check_ttl``), then each spec's catalog checks
(``finish_spec``, mongod's _isSpecOk) and its conflicts with the existing indexes and with the command's
earlier specs (``_conflict``: mongod's index signature is the key, collation and normalized partial
filter). Builds run in one write transaction: the entries of every
existing document are computed by ``tidemark.query`` and handed to storage, which refuses duplicate
keys of a unique index (11000) leaving nothing behind.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bson import Decimal128

from tidemark.arguments import check_command, safe_number_long
from tidemark.commands import timeseries as ts
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import clustered, namespace
from tidemark.core import collection as C
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import index_kinds, wildcard
from tidemark.storage.errors import DuplicateKey, StorageError

MAX_INDEXES = 64


def check_index_count(ns: str, count: int, key: dict) -> None:
    """67 when a collection that has ``count`` indexes in its catalog may take no other (mongod's
    IndexCatalogImpl::_doesSpecConflictWithExisting: numIndexesTotal >= 64). A clustered collection's
    clustered index (a time-series collection's buckets too) is no catalog entry, so it takes 64 secondary
    indexes; the message names the collection that holds the index (``system.buckets.<name>`` for a
    time-series one) and its ``key`` as stored (a time-series one translated to the buckets' fields)."""
    if count >= MAX_INDEXES:
        raise MongoError(ErrorCode.CannotCreateIndex, f"add index fails, too many indexes for {ns} key:{C.format_value(key)}")
# mongod 7.0's IndexDescriptor field names: anything else is 197 (or dropped by ignoreUnknownIndexOptions)
ALLOWED_FIELDS = frozenset({
    "key", "name", "v", "unique", "sparse", "background", "partialFilterExpression", "expireAfterSeconds", "hidden",
    "collation", "ns", "dropDups", "storageEngine", "weights", "default_language", "language_override",
    "textIndexVersion", "2dsphereIndexVersion", "bits", "min", "max", "bucketSize", "wildcardProjection",
    "columnstoreProjection", "columnstoreCompressor", "originalSpec", "prepareUnique", "clustered",
    "coarsestIndexedLevel", "finestIndexedLevel",
})
# the fields an _id index spec may have (mongod's allowedIdIndexFieldNames)
ID_INDEX_FIELDS = frozenset({"key", "name", "v", "ns", "collation", "_id"})
# options that belong to one index type (index_kinds): kept on the stored spec of that type only
KIND_OPTIONS = {"weights": "text", "default_language": "text", "language_override": "text",
                "textIndexVersion": "text", "2dsphereIndexVersion": "2dsphere", "bits": "2d", "min": "2d",
                "max": "2d", "coarsestIndexedLevel": "2dsphere", "finestIndexedLevel": "2dsphere"}
UNSUPPORTED_SPEC_FIELDS = ("bucketSize", "columnstoreProjection", "columnstoreCompressor", "originalSpec")
_BOOL_FIELDS = ("background", "unique", "sparse", "dropDups", "prepareUnique", "clustered")
_STRING_FIELDS = ("default_language", "language_override")
_NUMBER_FIELDS = ("2dsphereIndexVersion", "textIndexVersion", "bits", "min", "max", "coarsestIndexedLevel",
                  "finestIndexedLevel")
INT32_MAX = 2147483647
IDL_OUT_OF_RANGE = 51024  # 7.0's IDL range-validator code


def _not_supported(what: str) -> MongoError:
    return MongoError(ErrorCode.CommandNotSupported, f"{what} is not supported by Tidemark")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) or isinstance(value, Decimal128)


def _is_string(value: Any) -> bool:
    return type(value) is str  # (bson's Code is a str subclass, but no BSON string)


def _as_float(value: Any) -> float:
    return float(str(value)) if isinstance(value, Decimal128) else float(value)


def _validate_spec(raw: dict, translated: bool = False) -> str:
    """mongod's index_key_validate::validateIndexSpec, field by field in the spec's order (the caller
    prefixes its errors with "Error in specification <spec> :: caused by :: "). Returns the plugin name.
    ``translated``: a time-series buckets spec, whose key and partial filter its translation made and
    checked (the key names the buckets' own index kinds): the other fields are checked."""
    for k in raw:
        if k not in ALLOWED_FIELDS:
            raise MongoError(ErrorCode.InvalidIndexSpecificationOption,
                             f"The field '{k}' is not valid for an index specification. Specification: "
                             f"{C.format_value(raw)}")
    plugin = ""
    version = 2
    for k, value in raw.items():
        if translated and k in ("key", "partialFilterExpression"):
            continue
        if k == "key":
            if not isinstance(value, dict):
                raise MongoError(ErrorCode.TypeMismatch, f"The field 'key' must be an object, but got {C.type_name(value)}")
            plugin = index_kinds.check_key_pattern(value)
            if plugin == "wildcard" and "$**" in value and len(value) > 1 and "wildcardProjection" not in raw:
                raise MongoError(ErrorCode.CannotCreateIndex, "Compound wildcard indexes on all fields must also "
                                                              "specify 'wildcardProjection' option")
        elif k == "name":
            if not _is_string(value):
                raise MongoError(ErrorCode.TypeMismatch,
                                 f"The field 'name' must be a string, but got {C.type_name(value)}")
        elif k == "hidden":
            if not isinstance(value, bool):  # (mongod names the wrong field in this message)
                raise MongoError(ErrorCode.TypeMismatch, f"The field 'name' must be a bool, but got {C.type_name(value)}")
        elif k == "v":
            version = _index_version(raw, value)
        elif k == "collation":
            if not isinstance(value, dict):
                raise MongoError(ErrorCode.TypeMismatch,
                                 f"The field 'collation' must be an object, but got {C.type_name(value)}")
            if not value:
                raise MongoError(ErrorCode.BadValue, "The field 'collation' cannot be an empty object.")
        elif k == "partialFilterExpression":
            if not isinstance(value, dict):
                raise MongoError(ErrorCode.TypeMismatch, "The field 'partialFilterExpression' must be an object, but "
                                                         f"got {C.type_name(value)}")
            from tidemark.query.partial_filter import parse_partial_filter

            parse_partial_filter(value)
        elif k == "wildcardProjection":
            key = raw.get("key")
            wildcard.check_projection_field(key if isinstance(key, dict) else {}, value)
        elif k == "weights":
            if not isinstance(value, dict) and not _is_string(value):
                raise MongoError(ErrorCode.TypeMismatch,
                                 f"The field 'weights' must be an object, but got {C.type_name(value)}")
        elif k in _BOOL_FIELDS:
            if not _is_number(value) and not isinstance(value, bool):
                raise MongoError(ErrorCode.TypeMismatch, f"The field '{k} has value {k}: {C.format_value(value)}, "
                                                         "which is not convertible to bool")
        elif k in _STRING_FIELDS:
            if not _is_string(value):
                raise MongoError(ErrorCode.TypeMismatch,
                                 f"The field '{k}' must be a string, but got {C.type_name(value)}")
        elif k in _NUMBER_FIELDS and not _is_number(value):
            raise MongoError(ErrorCode.TypeMismatch, f"The field '{k}' must be a number, but got {C.type_name(value)}")
    for required in ("key", "name"):
        if required not in raw:
            raise MongoError(ErrorCode.FailedToParse,
                             f"The '{required}' field is a required property of an index specification")
    if "collation" in raw and version < 2:
        raise MongoError(ErrorCode.CannotCreateIndex, f"Invalid index specification {C.format_value(raw)}; cannot "
                                                      f"create an index with the 'collation' option and v={version}")
    if "weights" in raw and plugin != "text":
        raise MongoError(ErrorCode.CannotCreateIndex, f"Invalid index specification {C.format_value(raw)}; the "
                                                      "field 'weights' can only be specified with text indexes")
    return plugin


def _index_version(raw: dict, value: Any) -> int:
    if not _is_number(value):
        raise MongoError(ErrorCode.TypeMismatch, f"The field 'v' must be a number, but got {C.type_name(value)}")
    number = _as_float(value)
    if number != number or number != int(number) or not -INT32_MAX - 1 <= number <= INT32_MAX:
        raise MongoError(ErrorCode.BadValue,
                         f"Index version must be representable as a 32-bit integer, but got {C.format_value(value)}")
    if int(number) not in (1, 2):
        raise MongoError(ErrorCode.CannotCreateIndex, f"Invalid index specification {C.format_value(raw)}; cannot "
                                                      f"create an index with v={int(number)}")
    return int(number)


def _is_id_pattern(key: dict) -> bool:
    """mongod's isIdIndexPattern: exactly one field, _id, whose value is 1 or -1 as an int."""
    if list(key) != ["_id"] or not _is_number(key["_id"]):
        return False
    number = _as_float(key["_id"])
    return number == number and abs(number) < 2 ** 31 and int(number) in (1, -1)


def check_ttl(raw: Any) -> None:
    """mongod's validateIndexSpecTTL, on a spec as given (after every spec of the command has parsed)."""
    if not isinstance(raw, dict) or "expireAfterSeconds" not in raw:
        return
    value = raw["expireAfterSeconds"]
    reason = None
    if not _is_number(value):
        reason = f"TTL index 'expireAfterSeconds' option must be numeric, but received a type of '{C.type_name(value)}'"
    elif _as_float(value) != _as_float(value):
        reason = "TTL index 'expireAfterSeconds' option must not be NaN"
    elif not -INT32_MAX - 1 <= _as_float(value) <= INT32_MAX:  # safeNumberInt() != safeNumberLong()
        reason = "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"
    elif _as_float(value) < 0:
        reason = "TTL index 'expireAfterSeconds' option cannot be less than 0"
    if reason is not None:  # (Status::withContext puts the context first)
        raise MongoError(ErrorCode.CannotCreateIndex, f". Index spec: {C.format_value(raw)} :: caused by :: {reason}")
    key = raw.get("key")
    if isinstance(key, dict) and len(key) != 1:
        raise MongoError(ErrorCode.CannotCreateIndex, "TTL indexes are single-field indexes, compound indexes do not "
                                                      f"support TTL. Index spec: {C.format_value(raw)}")


def parse_spec(raw: Any, ignore_unknown: bool = False, *, translated: bool = False) -> tuple[dict, str]:
    """mongod's parseAndValidateIndexSpecs for one spec (before any TTL or catalog check): the spec as
    validated and its plugin name (``translated``: a time-series buckets spec, ``_validate_spec``)."""
    if not isinstance(raw, dict):
        raise MongoError(ErrorCode.TypeMismatch, "The elements of the 'indexes' array must be objects")
    if ignore_unknown:  # mongod's removeUnknownFields
        raw = {k: v for k, v in raw.items() if k in ALLOWED_FIELDS}
    try:
        plugin = _validate_spec(raw, translated)
    except MongoError as e:
        raise MongoError(e.code, f"Error in specification {C.format_value(raw)} :: caused by :: {e.message}") from None
    name, key = raw["name"], raw["key"]
    if _is_id_pattern(key):  # mongod's validateIdIndexSpec (the spec as validated: v added last)
        shown = raw if "v" in raw else {**raw, "v": 2}
        for k in raw:
            if k not in ID_INDEX_FIELDS:
                raise MongoError(ErrorCode.InvalidIndexSpecificationOption,
                                 f"The field '{k}' is not valid for an _id index specification. Specification: "
                                 f"{C.format_value(shown)}")
        if _as_float(key["_id"]) != 1:
            raise MongoError(ErrorCode.BadValue,
                             f"The field 'key' for an _id index must be {{_id: 1}}, but got {C.format_value(key)}")
    elif name == "_id_":
        raise MongoError(ErrorCode.BadValue, "The index name '_id_' is reserved for the _id index, which must have "
                                             f"key pattern {{_id: 1}}, found key: {C.format_value(key)}")
    elif name == "*":
        # '*' means "every index" to dropIndexes: such an index could not be dropped on its own
        raise MongoError(ErrorCode.BadValue, "The index name '*' is not valid.")
    return raw, plugin


def finish_spec(raw: dict, plugin: str, *, translated: bool = False) -> dict:
    """The catalog's checks of a parsed spec (IndexCatalog::_isSpecOk) and the spec as stored.
    ``translated``: a time-series buckets spec: its ``originalSpec`` (the user's spec, which
    listIndexes on the view shows) is kept."""
    name, key = raw["name"], raw["key"]
    version = int(_as_float(raw.get("v", 2)))
    for k in raw:
        if k in UNSUPPORTED_SPEC_FIELDS and not (translated and k == "originalSpec"):
            raise _not_supported(f"index option '{k}'")
    # another type's options (a 2d index's bits on an ascending one, ...) mean nothing there: mongod
    # keeps them as given ('weights' aside, refused above)
    foreign = {k: raw[k] for k in KIND_OPTIONS if k in raw and k != "weights" and KIND_OPTIONS[k] != plugin}
    # IndexCatalog::_isSpecOk
    if "\0" in name:
        raise MongoError(ErrorCode.CannotCreateIndex, "index name cannot contain NUL bytes")
    if not name:
        raise MongoError(ErrorCode.CannotCreateIndex, "index name cannot be empty")
    if plugin == "wildcard":
        if version < 2:  # (_isSpecOk's validateKeyPattern under the spec's own version)
            raise MongoError(ErrorCode.CannotCreateIndex, f"bad index key pattern {C.format_value(key)}: 'wildcard' "
                                                          f"index plugin is not allowed with index version v:{version}")
        wildcard.check_spec_options(raw)
    kind_fields = _check_kinds(raw) if plugin and plugin != "wildcard" else {}
    spec: dict = {"v": version, "key": dict(key), "name": name}
    spec.update(kind_fields)
    if plugin == "wildcard" and "wildcardProjection" in raw:
        spec["wildcardProjection"] = raw["wildcardProjection"]
    spec.update(foreign)
    if raw.get("unique"):
        spec["unique"] = True
    if raw.get("prepareUnique"):  # (refuses new duplicate keys: the first step of collMod's conversion)
        if spec.get("unique"):
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "Index cannot have both 'unique' and 'prepareUnique' set to true")
        spec["prepareUnique"] = True
    if raw.get("sparse"):
        spec["sparse"] = True
    if "background" in raw:  # kept as given and shown by listIndexes, as mongod (builds ignore it)
        spec["background"] = raw["background"]
    if "partialFilterExpression" in raw:
        pfe = raw["partialFilterExpression"]
        if spec.get("sparse"):
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "cannot mix \"partialFilterExpression\" and \"sparse\" options")
        from tidemark.query.match import compile_filter
        from tidemark.query.partial_filter import check_partial_filter

        check_partial_filter(pfe)  # (mongod's set of expressions: no negation, $regex, $expr, ...)
        compile_filter(pfe)
        spec["partialFilterExpression"] = pfe
    if "expireAfterSeconds" in raw:  # (check_ttl has refused bad values)
        spec["expireAfterSeconds"] = int(_as_float(raw["expireAfterSeconds"]))
    if raw.get("hidden"):
        spec["hidden"] = True
    if "collation" in raw:
        from tidemark.query.collation import parse_collation

        collation = parse_collation(raw["collation"], "collation")
        if collation is not None:
            spec["collation"] = dict(collation.spec)
            _check_collation_support(spec, plugin)
        else:
            spec["collation"] = {"locale": "simple"}  # explicit: no collection default (C.index_collation)
    elif version < 2:
        spec["collation"] = {"locale": "simple"}  # a v: 1 index never inherits the collection's collation
    if "storageEngine" in raw:
        engine = raw["storageEngine"]
        if not isinstance(engine, dict):
            raise MongoError(ErrorCode.CannotCreateIndex, '"storageEngine" options must be a document if present')
        if not engine:
            raise MongoError(ErrorCode.CannotCreateIndex, 'Empty "storageEngine" options are invalid. Please remove '
                                                          "the field or include valid options.")
        spec["storageEngine"] = engine
    if "partialFilterExpression" in spec and spec.get("collation", {}).get("locale", "simple") != "simple":
        from tidemark.query.collation import parse_collation
        from tidemark.query.match import compile_filter

        compile_filter(spec["partialFilterExpression"], collation=parse_collation(spec["collation"]))
    if translated and isinstance(raw.get("originalSpec"), dict):
        spec["originalSpec"] = raw["originalSpec"]
    return spec


def prepare_specs(raw_specs: list, ignore_unknown: bool, default_collation: dict | None, *,
                  translated: bool = False) -> list[dict]:
    """A command's index specs as they are stored, in mongod 7.0's order: every spec parsed and
    validated (``parse_spec``), then the TTL options of all (``check_ttl``), then each spec's catalog
    checks (``finish_spec``) with the collation it has or inherits (``default_collation``, the
    collection's); an _id index must have the collection default. ``translated``: the buckets specs
    of a time-series collection's createIndexes (``timeseries.indexes.to_bucket_index_spec``), which
    mongod runs through this same path on the buckets collection (createIndexes typedRun:
    makeTimeseriesCreateIndexesCommand, then runCreateIndexesWithCoordinator)."""
    parsed = [parse_spec(s, ignore_unknown, translated=translated) for s in raw_specs]
    for raw in raw_specs:
        check_ttl(raw)
    specs = [_stored_spec(raw, plugin, default_collation, translated) for raw, plugin in parsed]
    id_collation = C.index_collation({}, default_collation).get("collation")
    for spec in specs:
        if _is_id_pattern(spec["key"]) and spec.get("collation") != id_collation:
            raise MongoError(ErrorCode.CannotCreateIndex, "_id index must have the collection default collation")
    return specs


def _stored_spec(raw: dict, plugin: str, default_collation: dict | None, translated: bool) -> dict:
    spec = _check_collation_support(C.index_collation(finish_spec(raw, plugin, translated=translated),
                                                      default_collation), plugin)
    original = spec.pop("originalSpec", None)
    if isinstance(original, dict):  # last, with its collation as stored (what the view's listIndexes shows)
        spec["originalSpec"] = C.index_collation(original, default_collation)
    return spec


_COLLATED_PLUGINS = frozenset({"", "2dsphere", "hashed", "wildcard"})  # the index types mongod compares strings in


def _check_collation_support(spec: dict, plugin: str) -> dict:
    """``spec`` (its collation given, or the collection default it inherits: ``C.index_collation``), or
    mongod's IndexCatalog::_isSpecOk refusal of a non-simple collation on an index type that compares no
    strings under one (text, 2d): 67 with the collation it would have."""
    collation = spec.get("collation")
    if plugin not in _COLLATED_PLUGINS and collation is not None and collation.get("locale") != "simple":
        raise MongoError(ErrorCode.CannotCreateIndex,
                         f"Index type '{plugin}' does not support collation: {C.format_value(collation)}")
    return spec


def _check_kinds(raw: dict) -> dict:
    """mongod's rules for special index types; the type's stored options (text: the fixed key too)."""
    key = raw["key"]
    kinds = [v for v in key.values() if type(v) is str]
    if len(set(kinds)) > 1:
        raise MongoError(16750, "Can't use more than one index plugin for a single index.")
    kind = kinds[0]
    if kind == "hashed":
        if len(kinds) > 1:
            raise MongoError(31303, "A maximum of one index field is allowed to be hashed but found "
                                    f"{len(kinds)} for 'key' {C.format_value(key)}")
        if raw.get("unique"):
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
        return {}
    if kind == "2d":
        if next(iter(key.values())) != "2d":
            raise MongoError(16801, "2d has to be first in index")
        if len(kinds) > 1:
            raise MongoError(16800, "can't have 2 geo fields")
        from tidemark.query.geo_keys import check_plane_spec

        check_plane_spec(raw)
        return {k: raw[k] for k in ("bits", "min", "max") if k in raw}
    if kind == "2dsphere":
        version = raw.get("2dsphereIndexVersion", 3)
        if version not in (1, 2, 3) or isinstance(version, bool):
            raise MongoError(ErrorCode.CannotCreateIndex,
                             f"unsupported geo index version {{ 2dsphereIndexVersion : {version} }}, only support "
                             "versions: [1,2,3]")
        return {"2dsphereIndexVersion": int(version), **_s2_levels(raw)}
    from tidemark.query.text_index import normalize_text_spec

    fixed = normalize_text_spec(raw, key)
    if raw.get("name") is None:
        from tidemark.query.text_index import default_name

        fixed["name"] = default_name(key)
    return fixed



# mongod's default S2 cell levels (initialize2dsphereParams): S2::kAvgEdge.GetClosestLevel of 500 m and of
# 100 km on a 6378.1 km sphere
_S2_FINEST_DEFAULT, _S2_COARSEST_DEFAULT = 14, 7


def _s2_levels(raw: dict) -> dict:
    """A 2dsphere index's finestIndexedLevel / coarsestIndexedLevel, checked as mongod's
    initialize2dsphereParams does (16747, 16748, 16749) and kept as given. (Tidemark's cell keys do not
    depend on them: its reads and writes agree on the cells whatever the levels, so answers do not
    change.)"""
    finest = int(_as_float(raw.get("finestIndexedLevel", _S2_FINEST_DEFAULT)))
    coarsest = int(_as_float(raw.get("coarsestIndexedLevel", _S2_COARSEST_DEFAULT)))
    if coarsest < 0:
        raise MongoError(16747, "coarsestIndexedLevel must be >= 0")
    if finest > 30:
        raise MongoError(16748, "finestIndexedLevel must be <= 30")
    if finest < coarsest:
        raise MongoError(16749, "finestIndexedLevel must be >= coarsestIndexedLevel")
    return {k: raw[k] for k in ("finestIndexedLevel", "coarsestIndexedLevel") if k in raw}


# Options that tell two indexes on one key apart (mongod's index signature besides key, collation and
# partial filter: since 4.9 also unique and sparse, index_signature.js) and the other options, which
# must be identical for a request to be "already existing".
_SIGNATURE_FLAGS: tuple[str, ...] = ("unique", "sparse")
_OTHER_OPTIONS = ("unique", "sparse", "prepareUnique", "expireAfterSeconds", "hidden", "weights",
                  "default_language", "language_override", "bits", "min", "max", "storageEngine")


def _option(spec: dict, k: str) -> Any:
    return bool(spec.get(k)) if k in ("unique", "sparse", "hidden", "prepareUnique") else spec.get(k)


def _same_signature(old: dict, spec: dict) -> bool:
    """mongod's compareIndexOptions != kDifferent: the same key pattern, collation and (equivalent)
    partial filter."""
    if list(old["key"].items()) != list(spec["key"].items()) or old.get("collation") != spec.get("collation"):
        return False
    if any(_option(old, k) != _option(spec, k) for k in _SIGNATURE_FLAGS):
        return False
    if old.get("wildcardProjection") != spec.get("wildcardProjection"):
        return False  # (mongod's signature holds a wildcard index's projection)
    a, b = old.get("partialFilterExpression"), spec.get("partialFilterExpression")
    if a is None or b is None:
        return a is b
    from tidemark.query.partial_filter import filter_signature

    return a == b or filter_signature(a) == filter_signature(b)


def _same_options(a: dict, b: dict) -> bool:
    return all(_option(a, k) == _option(b, k) for k in _OTHER_OPTIONS)


def _conflict(existing: list[dict], spec: dict) -> str | None:
    """mongod's _doesSpecConflictWithExisting: 'exists' when an identical index exists (same name,
    signature and options); 86 for another index of the same name, 85 for an equivalent one (same
    signature) with other options or another name; None when the index is new."""
    old = next((o for o in existing if o["name"] == spec["name"]), None)
    if old is not None:
        shown = f"Requested index: {C.format_value(spec)}, existing index: {C.format_value(C.public_index_spec(old))}"
        if not _same_signature(old, spec):
            raise MongoError(ErrorCode.IndexKeySpecsConflict,
                             "An existing index has the same name as the requested index. When index names are "
                             "not specified, they are auto generated and can cause conflicts. Please refer to our "
                             f"documentation. {shown}")
        if not _same_options(old, spec):
            raise MongoError(ErrorCode.IndexOptionsConflict,
                             f"An equivalent index already exists with the same name but different options. {shown}")
        return "exists"
    old = next((o for o in existing if _same_signature(o, spec)), None)
    if old is not None:
        if not _same_options(old, spec):
            raise MongoError(ErrorCode.IndexOptionsConflict,
                             "An equivalent index already exists with a different name and options. Requested index: "
                             f"{C.format_value(spec)}, existing index: {C.format_value(C.public_index_spec(old))}")
        raise MongoError(ErrorCode.IndexOptionsConflict, f"Index already exists with a different name: {old['name']}")
    return None


async def create_indexes(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "createIndexes")
    check_command(cmd, "createIndexes")
    if "indexes" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         "BSON field 'createIndexes.indexes' is missing but a required field")
    raw_specs = cmd["indexes"]
    if not isinstance(raw_specs, list):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'createIndexes.indexes' is the wrong type '{C.type_name(raw_specs)}', "
                         "expected type 'array'")
    if not raw_specs:
        raise MongoError(ErrorCode.BadValue, "Must specify at least one index to create")
    ignore_unknown = cmd.get("ignoreUnknownIndexOptions") is True  # (a bool or null: check_command)
    ns = C.ns_of(db, name)

    resolved = await ctx.run_blocking(namespace.resolve, ctx.server.engine, db, name, follow=False,
                                      collection_uuid=namespace.collection_uuid_arg(cmd, "createIndexes"))
    info, view = resolved.info, resolved.view
    if C.is_timeseries_view(view):
        return await ts.VIEW_COMMANDS["createIndexes"](ctx, cmd, resolved)
    if view is not None:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {ns} is a view, not a collection")
    if info is None:
        clustered.check_implicit_creation(raw_specs)
    else:  # the clustered index exists implicitly: a spec naming it is a no-op (after mongod's checks)
        raw_specs = [s for s in raw_specs if not clustered.index_exists_as_cluster_key(info, s)]
    default_collation = C.default_collation_of(info)
    specs = prepare_specs(raw_specs, ignore_unknown, default_collation)
    requested = len(specs)
    if C.is_buckets_collection(name, info):
        # what the build must see of the in-memory buckets reaches storage first (they stay open)
        await ts.before_index_build(ctx, db, name, specs, info)

    def fn(w):
        from tidemark.core.collection import ensure_collection

        created = w.get_collection(ns) is None
        coll = ensure_collection(w, ns)
        before = len(coll.indexes)
        new_specs = new_indexes(coll, specs, created)
        for spec in new_specs:
            spec = dict(spec)
            entries = C.build_index_entries(w, coll, spec)
            try:
                w.create_index(coll, spec, entries)
            except DuplicateKey as e:
                err = C.duplicate_key_error(coll if any(s["name"] == spec["name"] for s in coll.indexes)
                                            else _with_index(coll, spec), e.index_name, None, e.key)
                raise MongoError(err.code, f"Index build failed: {err.message}", extra=err.extra) from None
            except StorageError as e:
                raise MongoError(e.code, e.message) from None
            coll = w.get_collection(ns)
        return created, before, len(coll.indexes)

    created, before, after = await asyncio.wrap_future(ctx.server.engine.write(fn))
    reply: dict = {"numIndexesBefore": before, "numIndexesAfter": after}
    if after == before:
        reply["note"] = "all indexes already exist"
    elif after < before + requested:
        reply["note"] = "index already exists"
    if created or after != before:  # (mongod's early "all indexes already exist" reply has no such field)
        reply["createdCollectionAutomatically"] = created
    return reply


def new_indexes(coll, specs: list[dict], created: bool = False) -> list[dict]:
    """The specs (``prepare_specs``) a createIndexes builds on ``coll``, after mongod's catalog checks
    of each against the existing indexes and the command's earlier specs (IndexCatalogImpl::
    _doesSpecConflictWithExisting: 86 IndexKeySpecsConflict, 85 IndexOptionsConflict, an identical one
    skipped — 68 IndexAlreadyExists among a new collection's specs —, 67 past 64 indexes or for a
    second text index). ``created``: the command made the collection. The one check of every
    createIndexes: a time-series collection's runs it on its buckets specs."""
    before = len(coll.indexes)
    new_specs: list[dict] = []
    for spec in specs:
        if _is_id_pattern(spec["key"]):
            spec = {**spec, "name": "_id_"}  # mongod names the _id index "_id_", whatever was asked
        if "expireAfterSeconds" in spec and (coll.options or {}).get("capped"):
            raise MongoError(ErrorCode.CannotCreateIndex, "Cannot create TTL index on a capped collection")
        # mongod's _doesSpecConflictWithExisting order: name and signature conflicts, then the index
        # count, then the one-text-index rule (so another single text index is 85, same signature)
        if _conflict(coll.indexes, spec) == "exists":
            continue
        # the specs of this command before this one are mongod's unfinished indexes (on a new
        # collection, built ones): an identical one is an error there, not "already exists"
        if _conflict(new_specs, spec) == "exists":
            if created:
                raise MongoError(ErrorCode.IndexAlreadyExists, f"Identical index already exists: {spec['name']}")
            raise MongoError(ErrorCode.OperationFailed,
                             "Cannot build two identical indexes. Try again without duplicate indexes.")
        check_index_count(coll.ns, before + len(new_specs), spec["key"])
        if _one_text_index(list(coll.indexes) + new_specs, spec) == "exists":
            continue
        new_specs.append(spec)
    return new_specs


_TEXT_OPTIONS = ("key", "name", "weights", "default_language", "language_override")


def _one_text_index(existing: list[dict], spec: dict) -> str | None:
    """'exists' for the identical text index; 67 for any other second text index (mongod)."""
    if "_fts" not in spec["key"]:
        return None
    for old in existing:
        if "_fts" in old["key"]:
            if all(old.get(k) == spec.get(k) for k in _TEXT_OPTIONS) and _same_options(old, spec):
                return "exists"
            raise MongoError(ErrorCode.CannotCreateIndex, "only one text index per collection allowed, found "
                                                          f"existing text index \"{old['name']}\"")
    return None


class _with_index:
    """A CollectionInfo stand-in that also knows an index not yet in the catalog (for messages)."""

    def __init__(self, info, spec):
        self.ns = info.ns
        self.indexes = (*info.indexes, spec)


async def list_indexes(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "listIndexes")
    check_command(cmd, "listIndexes")
    ns = C.ns_of(db, name)
    cursor_opts = cursor_options(cmd)

    resolved = await ctx.run_blocking(namespace.resolve, ctx.server.engine, db, name, follow=False)
    info, view = resolved.info, resolved.view
    if C.is_timeseries_view(view):
        return await ts.VIEW_COMMANDS["listIndexes"](ctx, cmd, resolved)
    if view is not None:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {ns} is a view, not a collection")
    if info is None:
        raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {ns}")
    from tidemark.commands.ddl import cursor_from_list

    cluster = clustered.index_spec(info)  # the clustered index comes first, as mongod lists it
    specs = ([cluster] if cluster else []) + [C.public_index_spec(s) for s in info.indexes]
    return await cursor_from_list(ctx, ns, specs, cursor_opts)


def cursor_options(cmd: dict, command: str = "listIndexes") -> dict:
    """The ``cursor`` of listIndexes (and listCollections, the same IDL ``SimpleCursorOptions``) as mongod
    reads it: only ``batchSize``, a number >= 0."""
    opts = C.doc_arg(cmd, "cursor", command) or {}
    for k in opts:
        if k != "batchSize":
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{command}.cursor.{k}' is an unknown field.")
    if "batchSize" in opts:
        size = opts["batchSize"]
        if not _is_number(size):
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{command}.cursor.batchSize' is the wrong type "
                                                     f"'{C.type_name(size)}', expected types '[long, int, decimal, "
                                                     "double]'")
        number = safe_number_long(size)  # NaN is 0, infinities saturate
        if number < 0:
            raise MongoError(IDL_OUT_OF_RANGE, f"BSON field 'batchSize' value must be >= 0, actual value "
                                               f"'{number}'")
        opts = {"batchSize": number}
    return opts


async def drop_indexes(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    command = "dropIndexes" if "dropIndexes" in cmd else "deleteIndexes"
    name = C.collection_arg(cmd, command)
    check_command(cmd, "dropIndexes", command)
    ns = C.ns_of(db, name)
    if "index" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse, f"BSON field '{command}.index' is missing but a required field")
    target = cmd["index"]
    if not (_is_string(target) or isinstance(target, (dict, list))):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field '{command}.index' is the wrong type '{C.type_name(target)}', expected types "
                         "'[string, object, array]'")

    resolved = await ctx.run_blocking(namespace.resolve, ctx.server.engine, db, name, follow=False,
                                      collection_uuid=namespace.collection_uuid_arg(cmd, command))
    view = resolved.view
    if C.is_timeseries_view(view) or name.startswith(C.BUCKETS_PREFIX):
        return await ts.VIEW_COMMANDS["dropIndexes"](ctx, cmd, resolved)
    if view is not None:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {ns} is a view, not a collection")

    def fn(w):
        coll = w.get_collection(ns)
        if coll is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"ns not found {ns}")
        was = len(coll.indexes)
        clustered.check_drop(coll, target)
        if target == "*":
            victims = [s["name"] for s in coll.indexes if s["name"] != "_id_"]
        elif _is_string(target):
            victims = [_by_name(coll, target)]
        elif isinstance(target, dict):
            matches = [s for s in coll.indexes if list(s["key"].items()) == list(target.items())]
            if not matches:
                raise MongoError(ErrorCode.IndexNotFound, f"can't find index with key: {C.format_value(target)}")
            if len(matches) > 1:
                raise MongoError(ErrorCode.AmbiguousIndexKeyPattern,
                                 f"{len(matches)} indexes found for key: {C.format_value(target)}, identify by name "
                                 "instead. Conflicting indexes: " + ", ".join(C.format_value(m) for m in matches))
            victims = [matches[0]["name"]]
        else:
            victims = [_by_name(coll, t) if _is_string(t) else _bad_name(t) for t in target]
        for v in victims:
            if v == "_id_":
                raise MongoError(ErrorCode.InvalidOptions, "cannot drop _id index")
        for v in victims:
            w.drop_index(coll, v)
            coll = w.get_collection(ns)
        return was, victims

    was, dropped = await asyncio.wrap_future(ctx.server.engine.write(fn))
    # a cursor whose plan scans a dropped index dies (mongod's index scan fails to restore): 175 at its getMore
    ctx.server.cursors.kill_index_scans(ns, set(dropped))
    reply: dict = {"nIndexesWas": was}
    if target == "*":
        reply["msg"] = "non-_id indexes dropped for collection"
    return reply


def _by_name(coll, name: str) -> str:
    if not any(s["name"] == name for s in coll.indexes):
        raise MongoError(ErrorCode.IndexNotFound, f"index not found with name [{name}]")
    return name


def _bad_name(value) -> str:
    raise MongoError(ErrorCode.TypeMismatch, "dropIndexes 'index' array elements must be strings")


COMMANDS = [
    CommandSpec("createIndexes", create_indexes,
                help="create indexes (single, compound, multikey, unique, sparse, partial, hidden, TTL)"),
    CommandSpec("listIndexes", list_indexes, help="list the indexes of a collection"),
    CommandSpec("dropIndexes", drop_indexes, help="drop indexes by name, key pattern, list or '*'",
                aliases=("deleteIndexes",)),
]
