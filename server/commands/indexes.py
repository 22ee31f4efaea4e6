"""Index commands: createIndexes, listIndexes, dropIndexes.

Index specs are stored as listIndexes shows them: ``{v: 2, key, name, unique?, sparse?, background?,
partialFilterExpression?, expireAfterSeconds?, hidden?}``. Builds run in one write transaction: the
entries of every existing document are computed by ``tidemark.query.plan`` and handed to storage,
which refuses duplicate keys of a unique index (11000) leaving nothing behind.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tidemark.commands import timeseries as ts
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import clustered, namespace
from tidemark.core import collection as C
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import index_kinds
from tidemark.query.index_keys import index_name_for
from tidemark.query.index_kinds import UNSUPPORTED_INDEX_TYPES
from tidemark.storage.errors import DuplicateKey, StorageError

MAX_INDEXES = 64
SPEC_FIELDS = frozenset({"key", "name", "unique", "sparse", "partialFilterExpression", "expireAfterSeconds",
                         "hidden", "v", "background", "collation", "ns", "dropDups", "storageEngine"})
# options that belong to one index type (index_kinds): kept on the stored spec of that type only
KIND_OPTIONS = {"weights": "text", "default_language": "text", "language_override": "text",
                "textIndexVersion": "text", "2dsphereIndexVersion": "2dsphere", "bits": "2d", "min": "2d",
                "max": "2d"}
UNSUPPORTED_SPEC_FIELDS = ("bucketSize", "wildcardProjection", "columnstoreProjection", "prepareUnique")
MAX_TTL = 2147483647


def _not_supported(what: str) -> MongoError:
    return MongoError(ErrorCode.CommandNotSupported, f"{what} is not supported by Tidemark")


def validate_key_pattern(key: Any) -> None:
    if not isinstance(key, dict):
        raise MongoError(ErrorCode.TypeMismatch, "The field 'key' must be an object")
    if not key:
        raise MongoError(ErrorCode.CannotCreateIndex, "Index keys cannot be empty.")
    for name, value in key.items():
        if name == "" or name.endswith(".") or ".." in name or name.startswith("."):
            raise MongoError(ErrorCode.CannotCreateIndex, "Index keys cannot be an empty field.")
        if name == "$**" and value == "text":
            continue
        if name.startswith("$") and name != "$**" or name.endswith("$**") or name == "$**":
            if name == "$**" or name.endswith(".$**"):
                raise _not_supported("wildcard indexes")
            raise MongoError(ErrorCode.CannotCreateIndex, "Index key contains an illegal field name: field name "
                                                           "starts with '$'.")
        if isinstance(value, str):
            if value in index_kinds.KINDS:
                continue
            if value in UNSUPPORTED_INDEX_TYPES:
                raise _not_supported(f"'{value}' indexes")
            raise MongoError(ErrorCode.CannotCreateIndex, f"Unknown index plugin '{value}'")
        if isinstance(value, bool) or not isinstance(value, (int, float)) and type(value).__name__ != "Decimal128":
            raise MongoError(ErrorCode.CannotCreateIndex,
                             f"Values in v:2 index key pattern cannot be of type {C.type_name(value)}. Only numbers "
                             "> 0, numbers < 0, and strings are allowed.")
        num = float(str(value)) if not isinstance(value, (int, float)) else float(value)
        if num == 0 or num != num:
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "Values in the index key pattern can't be zero or NaN")


def normalize_spec(raw: Any, ns: str) -> dict:
    """A validated stored spec (``v: 2`` first) or a MongoError with mongod's code."""
    if not isinstance(raw, dict):
        raise MongoError(ErrorCode.TypeMismatch, "The elements of the 'indexes' array must be objects")
    if "key" not in raw:
        raise MongoError(ErrorCode.FailedToParse, "The 'key' field is a required property of an index specification")
    validate_key_pattern(raw["key"])
    kinds = [v for v in raw["key"].values() if isinstance(v, str)]
    for k in raw:
        if k in UNSUPPORTED_SPEC_FIELDS:
            raise _not_supported(f"index option '{k}'")
        if k in KIND_OPTIONS:
            if KIND_OPTIONS[k] not in kinds:
                raise MongoError(ErrorCode.CannotCreateIndex,
                                 f"The field '{k}' is only valid for {KIND_OPTIONS[k]} indexes. Specification: "
                                 f"{C.format_value(raw)}")
            continue
        if k not in SPEC_FIELDS:
            raise MongoError(ErrorCode.InvalidIndexSpecificationOption,
                             f"The field '{k}' is not valid for an index specification. Specification: "
                             f"{C.format_value(raw)}")
    name = raw.get("name")
    if name is None:
        name = index_name_for(raw["key"])
    kind_fields = _check_kinds(raw) if kinds else {}
    if not isinstance(name, str):
        raise MongoError(ErrorCode.TypeMismatch, "The field 'name' must be a string")
    if not name:
        raise MongoError(ErrorCode.CannotCreateIndex, "The index name cannot be empty")
    if "*" == name:
        raise MongoError(ErrorCode.BadValue, "The index name '*' is not valid.")
    spec: dict = {"v": 2, "key": dict(raw["key"]), "name": name}
    spec.update(kind_fields)
    is_id = list(raw["key"].keys()) == ["_id"]
    if raw.get("unique"):
        if is_id:
            raise MongoError(ErrorCode.InvalidIndexSpecificationOption,
                             "The field 'unique' is not valid for an _id index specification.")
        spec["unique"] = True
    if raw.get("sparse"):
        spec["sparse"] = True
    if "background" in raw:  # kept as given and shown by listIndexes, as mongod (builds ignore it)
        background = raw["background"]
        if not isinstance(background, (bool, int, float)):
            raise MongoError(ErrorCode.TypeMismatch,
                             f"The field 'background' must be a bool or number, not {C.type_name(background)}")
        spec["background"] = background
    if "partialFilterExpression" in raw:
        pfe = raw["partialFilterExpression"]
        if not isinstance(pfe, dict):
            raise MongoError(ErrorCode.TypeMismatch, "The field 'partialFilterExpression' must be an object")
        if spec.get("sparse"):
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "cannot mix \"partialFilterExpression\" and \"sparse\" options")
        from tidemark.query.match import compile_filter
        from tidemark.query.partial_filter import check_partial_filter

        check_partial_filter(pfe)  # (mongod's set of expressions: no negation, $regex, $expr, ...)
        compile_filter(pfe)
        spec["partialFilterExpression"] = pfe
    if "expireAfterSeconds" in raw:
        exp = raw["expireAfterSeconds"]
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "TTL index 'expireAfterSeconds' option must be numeric")
        if exp < 0 or exp > MAX_TTL or exp != exp:
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a "
                             "lower number")
        if is_id:
            raise MongoError(ErrorCode.CannotCreateIndex,
                             "The field 'expireAfterSeconds' is not valid for an _id index specification.")
        spec["expireAfterSeconds"] = int(exp)
    if raw.get("hidden"):
        if is_id or name == "_id_":
            raise MongoError(ErrorCode.BadValue, "can't hide _id index")
        spec["hidden"] = True
    if "collation" in raw:
        from tidemark.query.collation import parse_collation

        collation = parse_collation(raw["collation"], "collation")
        if collation is not None:
            spec["collation"] = dict(collation.spec)
        else:
            spec["collation"] = {"locale": "simple"}  # explicit: no collection default (C.index_collation)
    if "partialFilterExpression" in spec and spec.get("collation", {}).get("locale", "simple") != "simple":
        from tidemark.query.collation import parse_collation
        from tidemark.query.match import compile_filter

        compile_filter(spec["partialFilterExpression"], collation=parse_collation(spec["collation"]))
    return spec


def _check_kinds(raw: dict) -> dict:
    """mongod's rules for special index types; the type's stored options (text: the fixed key too)."""
    key = raw["key"]
    kinds = [v for v in key.values() if isinstance(v, str)]
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
        return {"2dsphereIndexVersion": int(version)}
    from tidemark.query.text_index import normalize_text_spec

    fixed = normalize_text_spec(raw, key)
    if raw.get("name") is None:
        from tidemark.query.text_index import default_name

        fixed["name"] = default_name(key)
    return fixed



_OPTION_KEYS = ("unique", "sparse", "partialFilterExpression", "expireAfterSeconds", "collation", "weights",
                "default_language", "language_override", "bits", "min", "max")


def _same_options(a: dict, b: dict) -> bool:
    return all(bool(a.get(k)) == bool(b.get(k)) if k in ("unique", "sparse") else a.get(k) == b.get(k)
               for k in _OPTION_KEYS)


def _conflict(existing: list[dict], spec: dict) -> str | None:
    """'exists' when an identical index exists; raises 85/86 on conflicts; None when new."""
    for old in existing:
        same_key = list(old["key"].items()) == list(spec["key"].items())
        if old["name"] == spec["name"]:
            if not same_key:
                raise MongoError(ErrorCode.IndexKeySpecsConflict,
                                 "An existing index has the same name as the requested index but different key "
                                 f"spec. Requested index: {C.format_value(spec)}, existing index: "
                                 f"{C.format_value(C.public_index_spec(old))}")
            if _same_options(old, spec):
                return "exists"
            raise MongoError(ErrorCode.IndexOptionsConflict,
                             "An existing index has the same name as the requested index. When index names are "
                             "not specified, they are auto generated and can cause conflicts. Please refer to our "
                             f"documentation. Requested index: {C.format_value(spec)}, existing index: "
                             f"{C.format_value(C.public_index_spec(old))}")
        if (same_key and old.get("partialFilterExpression") == spec.get("partialFilterExpression")
                and old.get("collation") == spec.get("collation")):
            if _same_options(old, spec):
                raise MongoError(ErrorCode.IndexOptionsConflict,
                                 f"Index already exists with a different name: {old['name']}")
            raise MongoError(ErrorCode.IndexOptionsConflict,
                             f"An equivalent index already exists with the same name but different options. "
                             f"Requested index: {C.format_value(spec)}, existing index: {C.format_value(old)}"
                             if old["name"] == spec["name"] else
                             f"Index already exists with a different name: {old['name']}")
    return None


async def create_indexes(ctx: CommandContext, cmd: dict) -> dict:
    C.check_no_transaction(cmd)
    db = ctx.db
    name = C.collection_arg(cmd, "createIndexes")
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
    ns = C.ns_of(db, name)

    resolved = await ctx.run_blocking(namespace.resolve, ctx.server.engine, db, name, follow=False,
                                      collection_uuid=namespace.collection_uuid_arg(cmd, "createIndexes"))
    info, view = resolved.info, resolved.view
    if C.is_timeseries_view(view):
        return await ts.VIEW_COMMANDS["createIndexes"](ctx, cmd, resolved)
    if C.is_buckets_collection(name, info):
        await ts.close_buckets(ctx, db, name)  # in-memory buckets reach storage first: their keys are built
    if view is not None:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {ns} is a view, not a collection")
    if info is None:
        clustered.check_implicit_creation(raw_specs)
    else:  # the clustered index exists implicitly: a spec naming it is a no-op (after mongod's checks)
        raw_specs = [s for s in raw_specs if not clustered.index_exists_as_cluster_key(info, s)]
    default_collation = C.default_collation_of(info)
    specs = [C.index_collation(normalize_spec(s, ns), default_collation) for s in raw_specs]
    names = [s["name"] for s in specs]
    if len(set(names)) != len(names):
        raise MongoError(ErrorCode.BadValue,
                         "Cannot create indexes with the same name in the same createIndexes command")

    def fn(w):
        from tidemark.core.collection import ensure_collection

        created = w.get_collection(ns) is None
        coll = ensure_collection(w, ns)
        before = len(coll.indexes)
        new_specs: list[dict] = []
        for spec in specs:
            if spec["name"] == "_id_" or list(spec["key"].items()) == [("_id", 1)]:
                if list(spec["key"].items()) == [("_id", 1)] and spec["name"] == "_id_":
                    continue
            state = _one_text_index(list(coll.indexes) + new_specs, spec) or \
                _conflict(list(coll.indexes) + new_specs, spec)
            if state == "exists":
                continue
            new_specs.append(spec)
        if before + len(new_specs) > MAX_INDEXES:
            raise MongoError(ErrorCode.CannotCreateIndex,
                             f"add index fails, too many indexes for {ns} key:{C.format_value(new_specs[-1]['key'])}")
        for spec in new_specs:
            spec = dict(spec)
            if "expireAfterSeconds" in spec and (coll.options or {}).get("capped"):
                raise MongoError(ErrorCode.CannotCreateIndex, "Cannot create TTL index on a capped collection")
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
        return created, before, len(coll.indexes), not new_specs

    created, before, after, nothing = await asyncio.wrap_future(ctx.server.engine.write(fn))
    reply: dict = {"numIndexesBefore": before, "numIndexesAfter": after}
    if nothing:
        reply["note"] = "all indexes already exist"
    reply["createdCollectionAutomatically"] = created
    return reply


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
    ns = C.ns_of(db, name)
    cursor_opts = C.doc_arg(cmd, "cursor", "listIndexes") or {}

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


async def drop_indexes(ctx: CommandContext, cmd: dict) -> dict:
    C.check_no_transaction(cmd)
    db = ctx.db
    command = "dropIndexes" if "dropIndexes" in cmd else "deleteIndexes"
    name = C.collection_arg(cmd, command)
    ns = C.ns_of(db, name)
    if "index" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse, f"BSON field '{command}.index' is missing but a required field")
    target = cmd["index"]
    if not isinstance(target, (str, dict, list)):
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
        elif isinstance(target, str):
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
            victims = [_by_name(coll, t) if isinstance(t, str) else _bad_name(t) for t in target]
        for v in victims:
            if v == "_id_":
                raise MongoError(ErrorCode.InvalidOptions, "cannot drop _id index")
        for v in victims:
            w.drop_index(coll, v)
            coll = w.get_collection(ns)
        return was

    was = await asyncio.wrap_future(ctx.server.engine.write(fn))
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
