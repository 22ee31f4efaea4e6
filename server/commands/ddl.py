"""Namespace commands: create (collections and views), drop, dropDatabase, listCollections,
renameCollection, collMod.

Views live as documents ``{_id: "db.view", viewOn, pipeline}`` in ``<db>.system.views`` (as in
mongod); the catalog treats that collection like any other. Creating or changing a view validates the
database's view graph (``namespace.check_view_graph``: cycles 5, depth 165, collations 167) and refuses
while a stored definition is unloadable (182, ``check_view_doc``), as mongod's view catalog does. Time-series namespaces are delegated to
``tidemark.commands.timeseries`` (imported lazily; see server/README.md "Time-series seam").
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from bson.binary import Binary
from bson.int64 import Int64

from tidemark import collections as access
from tidemark.arguments import COMMAND_FIELDS, GENERIC_ARGUMENTS, check_command, missing, wrong_type
from tidemark.commands import timeseries as ts
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import capped, clustered, namespace
from tidemark.core import collection as C
from tidemark.core.coll_mod_index import CollModIndex, parse_coll_mod_index, ttl_seconds
from tidemark.core.collection import ensure_collection
from tidemark.cursors import dropped_reason
from tidemark.protocol.codec import decode, encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_logic import truthy  # BSON trueValue()
from tidemark.timeseries.collmod import parse_expire_after_seconds as parse_coll_mod_expire
from tidemark.timeseries.options import parse_expire_after_seconds

CREATE_OPTIONS = frozenset(COMMAND_FIELDS["create"])  # (mongod 7.0's create.idl)


async def _write(ctx: CommandContext, fn):
    return await asyncio.wrap_future(ctx.server.engine.write(fn))


# --------------------------------------------------------------------------------------------------
# create
# --------------------------------------------------------------------------------------------------


_TIMESERIES_OPTIONAL = ("metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds")


def drop_null_optionals(cmd: dict, fields) -> None:
    """mongod's IDL reads an optional field given as null as absent (mongoengine and other ODMs send
    ``expireAfterSeconds: null``, ``validator: null``, ``timeseries.metaField: null`` ...)."""
    for key in [k for k in cmd if k in fields and cmd[k] is None]:
        del cmd[key]
    ts = cmd.get("timeseries")
    if isinstance(ts, dict) and any(ts.get(k, 0) is None for k in _TIMESERIES_OPTIONAL):
        cmd["timeseries"] = {k: v for k, v in ts.items() if not (k in _TIMESERIES_OPTIONAL and v is None)}


def parse_create_options(cmd: dict, name: str = "", test_commands: bool = False) -> dict:
    """Validated collection/view options (the document listCollections shows as ``options``) of a
    create of ``name``; a clustered collection's ``clusteredIndex`` is its canonical index spec."""
    options: dict = {}
    for key, value in cmd.items():
        if key == "create" or key in GENERIC_ARGUMENTS:
            continue
        if key not in CREATE_OPTIONS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'create.{key}' is an unknown field.")
        if key == "storageEngine" and not isinstance(value, dict):
            raise wrong_type("create.storageEngine", value, "object")
        if key == "indexOptionDefaults":
            _parse_index_option_defaults(value)
        if key == "changeStreamPreAndPostImages":
            if not pre_and_post_images(value, "create"):
                continue  # (mongod's CollectionOptions show the option only while it is enabled)
            value = {"enabled": True}
        options[key] = value
    clustered_spec = clustered.parse_create_option(options["clusteredIndex"]) if "clusteredIndex" in options else None
    if clustered_spec:
        _check_clustered_capped(cmd, test_commands)
    if "expireAfterSeconds" in options:
        if clustered_spec is None:
            raise MongoError(ErrorCode.InvalidOptions, "'expireAfterSeconds' is only supported on time-series "
                                                       "collections or when the 'clusteredIndex' option is specified")
        if clustered_spec is False:
            raise MongoError(ErrorCode.InvalidOptions, "'expireAfterSeconds' requires clustering to be enabled")
    expand_collation(options)
    if "encryptedFields" in options:
        raise MongoError(ErrorCode.CommandNotSupported, "queryable encryption is not supported by Tidemark")
    cap = capped.parse_create_options(cmd) if not clustered_spec else {}
    # mongod keeps a true ``temp`` as ``temp: true`` (listCollections shows it; renameCollection clears
    # it unless stayTemp), placed after the capped fields as its CollectionOptions writes them
    temp = {"temp": True} if truthy(options.pop("temp", None)) else {}
    # a given autoIndexId is kept as a bool (listCollections shows it, a re-create compares it), after
    # the capped fields as mongod's CollectionOptions writes it
    auto = {"autoIndexId": truthy(options["autoIndexId"])} if "autoIndexId" in options else {}
    for k in ("capped", "size", "max", "autoIndexId", "flags"):
        options.pop(k, None)
    if cap and "viewOn" in options:
        raise MongoError(ErrorCode.InvalidOptions, "'capped' option not supported on a view")
    options = {**cap, **auto, **temp, **options}
    if "validator" in options:
        if not isinstance(options["validator"], dict):
            raise MongoError(ErrorCode.TypeMismatch,
                             "BSON field 'create.validator' is the wrong type, expected type 'object'")
    check_validation_options(options)
    _check_id_index(options, auto_index_id=cmd.get("autoIndexId"))
    if "pipeline" in options and "viewOn" not in options:
        raise MongoError(ErrorCode.BadValue, "'pipeline' requires 'viewOn' to also be specified")
    if "viewOn" in options:
        if type(options["viewOn"]) is not str:
            raise MongoError(ErrorCode.TypeMismatch,
                             "BSON field 'create.viewOn' is the wrong type, expected type 'string'")
        pipeline = options.setdefault("pipeline", [])
        if not isinstance(pipeline, list):
            raise MongoError(ErrorCode.TypeMismatch,
                             "BSON field 'create.pipeline' is the wrong type, expected type 'array'")
        for bad in ("validator", "validationLevel", "validationAction", "expireAfterSeconds"):
            if bad in options:
                raise MongoError(ErrorCode.InvalidOptions, f"'{bad}' option not supported on a view")
        if clustered_spec:
            raise MongoError(6026500, "The 'clusteredIndex' option is not supported with views")
    if clustered_spec:
        clustered.check_for_namespace(name, clustered_spec, id_index=bool(options.get("idIndex")),
                                      auto_index_id=cmd.get("autoIndexId"))
        if "expireAfterSeconds" in options:
            options["expireAfterSeconds"] = Int64(parse_expire_after_seconds(options["expireAfterSeconds"]))
        options["clusteredIndex"] = clustered_spec
    else:
        options.pop("clusteredIndex", None)  # clusteredIndex: false is an ordinary collection
    options.pop("idIndex", None)  # validated, then dropped: mongod keeps it out of the collection options
    # mongod's createCollection checks the engines named after the validator (views included)
    _check_storage_engines(options.get("storageEngine"), "has to be an embedded document.")
    defaults = options.get("indexOptionDefaults")
    if isinstance(defaults, dict) and "storageEngine" in defaults:
        _check_storage_engines(defaults["storageEngine"], "must be an embedded document")
    return options


# The engines a create may name options for: this server's, and mongod's default (``--storageEngine
# wiredTiger`` is accepted for launchers; dumps of collections created with wiredTiger options restore).
STORAGE_ENGINES = frozenset({"lmdb", "wiredTiger"})


def pre_and_post_images(value: Any, command: str) -> bool:
    """The ``changeStreamPreAndPostImages`` option of a create or collMod: the IDL struct
    ChangeStreamPreAndPostImagesOptions (strict, ``enabled`` a required bool); whether it enables them."""
    path = f"{command}.changeStreamPreAndPostImages"
    if not isinstance(value, dict):
        raise wrong_type(path, value, "object")
    for key in value:
        if key != "enabled":
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{path}.{key}' is an unknown field.")
    if "enabled" not in value:
        raise missing(f"{path}.enabled")
    if type(value["enabled"]) is not bool:
        raise wrong_type(f"{path}.enabled", value["enabled"], "bool")
    return value["enabled"]


def check_pre_and_post_images_permitted(db: str) -> None:
    """mongod's validateChangeStreamPreAndPostImagesOptionIsPermitted on a standalone: not in the
    admin, local or config database (a standalone records pre-images elsewhere: it has no change
    streams to read them, but the option is kept as mongod keeps it)."""
    if db in ("admin", "local", "config"):
        raise MongoError(ErrorCode.InvalidOptions,
                         f"changeStreamPreAndPostImages collection option is not supported on the {db} database")


def _parse_index_option_defaults(value: Any) -> None:
    """``create.indexOptionDefaults`` as mongod's IDL parses it (a strict struct whose only field,
    ``storageEngine``, is a document of one embedded document per engine)."""
    if not isinstance(value, dict):
        raise wrong_type("create.indexOptionDefaults", value, "object")
    for field, engines in value.items():
        if field != "storageEngine":
            raise MongoError(ErrorCode.IDLUnknownField,
                             f"BSON field 'create.indexOptionDefaults.{field}' is an unknown field.")
        if not isinstance(engines, dict):
            raise wrong_type("create.indexOptionDefaults.storageEngine", engines, "object")
        for name, engine_options in engines.items():
            if not isinstance(engine_options, dict):
                raise MongoError(ErrorCode.BadValue, f"'storageEngine.{name}' must be an embedded document")


def _check_storage_engines(engines: dict | None, not_a_document: str) -> None:
    """mongod's validateStorageOptions: each field names a registered engine and holds a document
    (``not_a_document``: the collection's check words it one way, the index defaults' IDL another)."""
    for name, engine_options in (engines or {}).items():
        if not isinstance(engine_options, dict):
            raise MongoError(ErrorCode.BadValue, f"'storageEngine.{name}' {not_a_document}")
        if name not in STORAGE_ENGINES:
            raise MongoError(ErrorCode.InvalidOptions, f"{name} is not a registered storage engine for this server")


def _check_clustered_capped(cmd: dict, test_commands: bool) -> None:
    """A clustered collection is capped by age (``expireAfterSeconds``), never by size or count."""
    if cmd.get("capped") and not test_commands:
        raise MongoError(6127800, "Clustered capped collection only available with 'enableTestCommands' server "
                                  "parameter")
    hint = "Did you mean 'capped: true' with 'expireAfterSeconds'?"
    if cmd.get("size") is not None:
        raise MongoError(6049200, f"'size' field for capped collections is not allowed on clustered collections. {hint}")
    if cmd.get("max") is not None:
        raise MongoError(6049204, f"'max' field for capped collections is not allowed on clustered collections. {hint}")
    if cmd.get("capped"):
        if cmd.get("expireAfterSeconds") is None:
            raise MongoError(6049201, "A capped clustered collection requires the 'expireAfterSeconds' field")
        raise MongoError(ErrorCode.CommandNotSupported, "capped clustered collections are not supported by Tidemark")


# the fields mongod's validateIdIndexSpec lets an _id index spec hold ("_id": legacy specs had one)
_ID_INDEX_FIELDS = frozenset({"key", "name", "v", "ns", "collation", "_id"})


def _check_id_index(options: dict, auto_index_id: Any = None) -> None:
    """mongod's checks of ``create.idIndex`` (mongorestore sends the dumped ``_id`` index spec), in its
    order: not with a view nor with ``autoIndexId``, a document, an index spec (``key`` and ``name``
    required), only _id-index fields (197), the key ``{_id: 1}``, and the collection's default collation
    (``options`` holds it expanded, or none)."""
    if "idIndex" not in options:
        return
    spec = options["idIndex"]
    shown = f"idIndex: {C.format_value(spec)}"
    if "viewOn" in options:
        raise MongoError(ErrorCode.InvalidOptions, f"'idIndex' is not allowed with 'viewOn': {shown}")
    if auto_index_id is not None:
        raise MongoError(ErrorCode.InvalidOptions, f"'idIndex' is not allowed with 'autoIndexId': {shown}")
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.TypeMismatch, f"'idIndex' has to be a document: {shown}")
    for field in ("key", "name"):
        if field not in spec:
            raise MongoError(ErrorCode.FailedToParse,
                             f"The '{field}' field is a required property of an index specification")
    for field in spec:
        if field not in _ID_INDEX_FIELDS:
            raise MongoError(ErrorCode.InvalidIndexSpecificationOption,
                             f"The field '{field}' is not valid for an _id index specification. Specification: "
                             f"{C.format_value(spec)}")
    key = spec.get("key")
    if not isinstance(key, dict) or list(key) != ["_id"] or key["_id"] != 1:
        raise MongoError(ErrorCode.BadValue,
                         f"The field 'key' for an _id index must be {{ _id: 1 }}, but got {C.format_value(key)}")
    if "collation" in spec:
        from tidemark.query.collation import parse_collation

        collation = parse_collation(spec["collation"], "idIndex.collation")
        id_collation = dict(collation.spec) if collation is not None else None
        if id_collation != options.get("collation"):
            raise MongoError(ErrorCode.BadValue, "'idIndex' must have the same collation as the collection.")


def id_index_version(cmd: dict) -> int | None:
    """The index version a validated ``create.idIndex`` asks for (mongod builds the _id index with it;
    2, the default, when absent)."""
    spec = cmd.get("idIndex")
    version = spec.get("v") if isinstance(spec, dict) else None
    return int(version) if isinstance(version, (int, float)) and not isinstance(version, bool) else None


def expand_collation(options: dict) -> None:
    """A default collation is stored (and listed) as mongod's fully expanded spec; the simple
    collation is stored as none. Invalid specs fail like mongod (2 for an unknown locale...)."""
    if "collation" not in options:
        return
    from tidemark.query.collation import parse_collation

    collation = parse_collation(options["collation"], "create.collation")
    if collation is None:
        del options["collation"]
    else:
        options["collation"] = dict(collation.spec)


def check_validation_options(options: dict, *, current: dict | None = None, ns: str | None = None,
                             uuid: Any = None) -> None:
    """The validation options of a create (``options``) or the changes of a collMod (``options``, with
    ``current``: the collection's options, ``ns`` and ``uuid``). The validator is parsed as mongod parses
    a collection validator (``C.parse_validator``) under the level and action it will have, so a collMod
    of only the level or action re-parses the current validator (encryption keywords: 224)."""
    level = options.get("validationLevel")
    for field in ("validationLevel", "validationAction"):  # IDL enums: a string first (14), then a member
        if options.get(field) is not None and type(options[field]) is not str:
            raise wrong_type(field, options[field], "string")
    if level is not None and level not in ("off", "strict", "moderate"):
        raise MongoError(ErrorCode.BadValue,
                         f"Enumeration value '{level}' for field 'validationLevel' is not a valid value.")
    action = options.get("validationAction")
    if action is not None and action not in ("error", "warn"):
        raise MongoError(ErrorCode.BadValue,
                         f"Enumeration value '{action}' for field 'validationAction' is not a valid value.")
    effective = {**{k: v for k, v in (current or {}).items()
                    if k in ("validator", "validationLevel", "validationAction")}, **options}
    if not options.keys() & {"validator", "validationLevel", "validationAction"}:
        return
    validator = effective.get("validator")
    if "validator" in options and ns is not None:
        C.check_validator_namespace(ns, validator, uuid)  # collMod: before the parse, as mongod
    C.parse_validator(validator, level=effective.get("validationLevel"), action=effective.get("validationAction"))


def check_view_pipeline(pipeline: list) -> None:
    for stage in pipeline:
        if not isinstance(stage, dict):
            raise MongoError(ErrorCode.TypeMismatch, "Each element of the 'pipeline' array must be an object")
        for name in ("$out", "$merge"):
            if name in stage:
                raise MongoError(ErrorCode.OptionNotSupportedOnView,
                                 f"{name} cannot be used in a view definition")
    from tidemark.query.pipeline import PipelineContext, parse_pipeline

    # a checking context: an undefined $$variable is refused when the view is defined (17276), as mongod
    parse_pipeline(pipeline, PipelineContext())


async def create(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "create")
    check_command(cmd, "create")  # mongod's IDL: 40415 unknown fields, 14 wrong types
    C.check_create_name(db, name)
    drop_null_optionals(cmd, CREATE_OPTIONS)
    if name.startswith(C.BUCKETS_PREFIX) and "timeseries" not in cmd and "clusteredIndex" in cmd:
        return await _create_clustered_buckets(ctx, db, name, cmd)
    if "timeseries" in cmd or name.startswith(C.BUCKETS_PREFIX):
        expand_collation(cmd)  # the time-series view keeps the expanded default collation
        return await ts.VIEW_COMMANDS["create"](ctx, cmd)
    options = parse_create_options(cmd, name, bool(ctx.server.params["enableTestCommands"]))
    if "changeStreamPreAndPostImages" in options:
        check_pre_and_post_images_permitted(db)
    ns = C.ns_of(db, name)
    # after the validator's parse (parse_create_options), as mongod's collection init; the UUID the
    # collection would have had
    C.check_validator_namespace(ns, options.get("validator"), uuid.uuid4())
    if "viewOn" in options:
        if name == C.SYSTEM_VIEWS:
            raise MongoError(ErrorCode.InvalidNamespace,
                             f"Cannot create a view called '{name}': this is a reserved system namespace")
        if options["viewOn"].startswith(C.BUCKETS_PREFIX):
            raise MongoError(ErrorCode.InvalidNamespace, "Cannot create view on a system.buckets namespace except by "
                                                         "creating a time-series collection")
        check_view_pipeline(options["pipeline"])
        return await _create_view(ctx, db, name, options)
    with_id_index = _builds_id_index(db, name, options)

    def fn(w):
        existing = w.get_collection(ns)
        if existing is None and C.get_view(w, db, name) is not None:
            raise MongoError(ErrorCode.NamespaceExists, f"Namespace {ns} already exists")
        if existing is not None:
            if _same_options(existing.options, options):
                return
            # mongod shows the existing collection's options as it stores them: its UUID first
            shown = {"uuid": C.uuid_of(existing), **existing.options}
            raise MongoError(ErrorCode.NamespaceExists,
                             f"namespace {ns} already exists, but with different options: {C.format_value(shown)}")
        info = access.create_collection(w, ns, options, clustered="clusteredIndex" in options)
        if not with_id_index and "_id_" in info.index_idents:
            w.drop_index(info, "_id_")
        elif version is not None and version != 2 and "_id_" in info.index_idents:
            w.set_index_options(info, "_id_", {"v": version})

    version = id_index_version(cmd)
    await _write(ctx, fn)
    # mongod notes the deprecation whenever the option is given, true or false
    return {"note": AUTO_INDEX_ID_NOTE} if "autoIndexId" in options else {}


AUTO_INDEX_ID_NOTE = "The autoIndexId option is deprecated and will be removed in a future release"


def _builds_id_index(db: str, name: str, options: dict) -> bool:
    """Whether creating ``db.name`` builds the _id index, as mongod's createCollection decides: never for
    ``system.profile`` (its entries have no _id: requiresIdIndex), nor with ``autoIndexId: false`` —
    which only an unreplicated namespace (the local database, system.profile) may ask for (50001)."""
    if name == C.SYSTEM_PROFILE:
        return False
    if options.get("autoIndexId", True):
        return True
    if db != "local":
        raise MongoError(50001, f"autoIndexId:false is not allowed for collection {C.ns_of(db, name)} because it "
                                "can be replicated")
    return False


async def _create_clustered_buckets(ctx: CommandContext, db: str, name: str, cmd: dict) -> dict:
    """MongoDB 7.0 lets ``create: "system.buckets.x"`` with only ``clusteredIndex: true`` (the legacy form
    buckets collections use) make the clustered collection (restore tools do this before the time-series
    options are known); the index-spec form is refused there (5979703)."""
    for key in cmd:
        if key not in ("create", "clusteredIndex") and key not in GENERIC_ARGUMENTS and key not in CREATE_OPTIONS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'create.{key}' is an unknown field.")
    spec = clustered.parse_create_option(cmd["clusteredIndex"])
    if spec is False:
        raise MongoError(ErrorCode.IllegalOperation,
                         f"Cannot create a system.buckets collection without timeseries options: {db}.{name}")
    clustered.check_for_namespace(name, spec, id_index=bool(cmd.get("idIndex")), auto_index_id=cmd.get("autoIndexId"))
    ns = C.ns_of(db, name)
    options = {"clusteredIndex": True}

    def fn(w):
        existing = w.get_collection(ns)
        if existing is not None:
            if existing.clustered:
                return
            raise MongoError(ErrorCode.NamespaceExists, f"Namespace {ns} already exists")
        w.create_collection(ns, options, clustered=True)

    await _write(ctx, fn)
    return {}


def _same_options(a: dict, b: dict) -> bool:
    return encode(dict(a or {})) == encode(dict(b or {}))


async def _create_view(ctx: CommandContext, db: str, name: str, options: dict) -> dict:
    ns = C.ns_of(db, name)
    view_doc = {"_id": ns, "viewOn": options["viewOn"], "pipeline": options["pipeline"]}
    if "collation" in options:
        view_doc["collation"] = options["collation"]

    def fn(w):
        if w.get_collection(ns) is not None:
            raise MongoError(ErrorCode.NamespaceExists, f"Namespace {ns} already exists")
        existing = C.get_view(w, db, name)
        if existing is not None:
            if existing.get("viewOn") == view_doc["viewOn"] and existing.get("pipeline") == view_doc["pipeline"] \
                    and existing.get("collation") == view_doc.get("collation"):
                return  # the same view again: a no-op (its collation included, as mongod compares them)
            raise MongoError(ErrorCode.NamespaceExists, f"Namespace {ns} already exists")
        _check_view_graph(w, db, name, view_doc)
        info = ensure_collection(w, C.ns_of(db, C.SYSTEM_VIEWS))
        raw = encode(view_doc)
        w.insert(info, raw, C.index_keys(info, view_doc))

    await _write(ctx, fn)
    return {}


def _check_view_graph(r, db: str, name: str, view_doc: dict) -> None:
    """Validate ``view_doc`` (the new definition of ``db.name``) against the database's view graph
    (cycles, depth, collations; ``namespace.check_view_graph``). Like mongod, which re-parses every
    stored view when it rebuilds its catalog, a stored view holding ``$out``/``$merge`` (written around
    create, e.g. by applyOps) makes the change fail (167). Reads every view of the database: a DDL cost."""
    views: dict[str, dict] = {}
    for doc in namespace.all_views(r, db):
        check_view_doc(db, doc)
        other = doc["_id"][len(db) + 1:]
        if other == name or C.is_timeseries_view(doc):
            continue
        stored = doc.get("pipeline")
        if isinstance(stored, list):
            for stage in stored:
                for banned in ("$out", "$merge"):
                    if isinstance(stage, dict) and banned in stage:
                        raise MongoError(ErrorCode.OptionNotSupportedOnView,
                                         f"{banned} cannot be used in a view definition")
        views[other] = doc
    namespace.check_view_graph(db, views, name, view_doc["viewOn"], view_doc["pipeline"], view_doc.get("collation"))


def delete_view_doc(w, db: str, name: str) -> bool:
    info = w.get_collection(C.ns_of(db, C.SYSTEM_VIEWS))
    if info is None:
        return False
    rid, doc = namespace.find_view(w, db, name)
    if rid is None or doc is None:  # found by its rid: never None then
        return False
    w.delete(info, rid, C.index_keys(info, doc))
    return True


# --------------------------------------------------------------------------------------------------
# drop / dropDatabase
# --------------------------------------------------------------------------------------------------


async def drop(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "drop")
    check_command(cmd, "drop")  # mongod's IDL: 40415 unknown fields
    ns = C.ns_of(db, name)

    resolved = await ctx.run_blocking(namespace.resolve, ctx.server.engine, db, name, follow=False,
                                      collection_uuid=namespace.collection_uuid_arg(cmd, "drop"))
    info, view = resolved.info, resolved.view
    if C.is_timeseries_view(view) or (name.startswith(C.BUCKETS_PREFIX) and info is not None):
        return await ts.drop(ctx, db, name)
    if view is not None:
        await _write(ctx, lambda w: delete_view_doc(w, db, name))
        return {"ns": ns}
    if info is None and await ctx.run_blocking(_has_buckets, ctx.server.engine, db, name):
        # mongod's drop: "Timeseries bucket collection may exist even without the view. If that is the
        # case delete it." (a view dropped or never made: the buckets would otherwise be left for good)
        return await ts.drop(ctx, db, name)
    if name == C.SYSTEM_PROFILE and info is not None and ctx.server.profiler.level(db) != 0:
        # the profiler writes there while it is on (dropDatabase drops it all the same, as mongod)
        raise MongoError(ErrorCode.IllegalOperation, "turn off profiling before dropping system.profile collection")

    def fn(w):
        current = w.get_collection(ns)
        if current is None:
            return None
        w.drop_collection(ns)
        return current

    dropped = await _write(ctx, fn)
    if dropped is None:  # nothing by that name: since 7.0 (SERVER-43894) a success, not 26 NamespaceNotFound
        return {}
    n = len(dropped.indexes)
    _kill_cursors(ctx, ns, dropped_reason(dropped.uuid))
    ctx.server.top.forget(ns)  # mongotop stops showing a dropped collection, as with mongod
    return {"nIndexesWas": n, "ns": ns}


def _has_buckets(engine, db: str, name: str) -> bool:
    with engine.read() as r:
        return r.get_collection(C.ns_of(db, C.BUCKETS_PREFIX + name)) is not None


def _kill_cursors(ctx: CommandContext, ns: str, reason: str) -> None:
    """Kill the cursors reading ``ns``; their next getMore answers 175 with ``reason``."""
    ctx.server.cursors.kill_namespace(ns, reason)


async def drop_database(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    C.check_db_name(db, dollar=True)

    def ts_views():
        with ctx.server.engine.read() as r:
            return [v["_id"].split(".", 1)[1] for v in C.view_docs(r, db) if C.is_timeseries_view(v)]

    for name in await ctx.run_blocking(ts_views):
        try:
            await ts.drop(ctx, db, name)
        except MongoError as e:
            if e.code != ErrorCode.NamespaceNotFound:
                raise

    def fn(w):
        if db not in w.list_databases():
            return []
        infos = w.list_collections(db)
        w.drop_database(db)
        return infos

    # the database's collections go, and the cursors reading them, as each collection's drop kills them
    for info in await _write(ctx, fn):
        _kill_cursors(ctx, info.ns, dropped_reason(info.uuid))
        ctx.server.top.forget(info.ns)  # as each collection's drop does
    return {"dropped": db}


# --------------------------------------------------------------------------------------------------
# listCollections
# --------------------------------------------------------------------------------------------------

_ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}


def _collection_entry(info) -> dict:
    entry = {"name": info.name, "type": "collection", "options": dict(info.options or {}),
             "info": {"readOnly": False, "uuid": info.uuid}}
    if "_id_" in info.index_idents:  # none for a clustered collection, system.profile, autoIndexId: false
        entry["idIndex"] = dict(_ID_INDEX)
    return entry




def check_view_doc(db: str, view: dict) -> None:
    """A ``system.views`` document mongod can load into its view catalog (one written around create,
    e.g. by applyOps, may not be): ``_id`` a name of this database, ``viewOn`` a string, ``pipeline``
    an array of documents, ``collation`` a document. mongod then refuses every use of the catalog —
    listing, new views — with 182 (its reads of existing collections still work)."""
    view_id, pipeline, collation = view.get("_id"), view.get("pipeline"), view.get("collation", {})
    if not (type(view_id) is str and view_id.startswith(db + ".") and len(view_id) > len(db) + 1
            and "\x00" not in view_id and type(view.get("viewOn")) is str and view["viewOn"]
            and isinstance(pipeline, list) and all(isinstance(stage, dict) for stage in pipeline)
            and isinstance(collation, dict)):
        raise MongoError(ErrorCode.InvalidViewDefinition,
                         "Invalid view definition detected in the view catalog. Remove the invalid view "
                         "manually to prevent disallowing any further usage of the view catalog.")


def _view_entry(view: dict) -> dict:
    options = {"viewOn": view["viewOn"], "pipeline": view.get("pipeline", [])}
    if "collation" in view:
        options["collation"] = view["collation"]
    return {"name": view["_id"].split(".", 1)[1], "type": "view", "options": options,
            "info": {"readOnly": True}}


def list_collection_entries(r, db: str, names: set[str] | None = None, views_too: bool = True) -> list[dict]:
    """Every entry of ``db`` as listCollections shows it (collections, views, time-series); with
    ``names``, only the entries of those names, found by point lookups (a driver's ``create_collection``
    asks for its one name first: listing every entry made each create O(collections) — 2.5 ms at the
    first and 23 ms at the 3,000th). Without ``views_too`` the view catalog is not read at all (nor
    checked for invalid definitions; with ``names`` it is read whole only for that check, which is
    O(views), not O(collections))."""
    if not views_too:
        infos = {info.name: info for info in r.list_collections(db)
                 if names is None or info.name in names}
        views = []
    elif names is None:
        infos = {info.name: info for info in r.list_collections(db)}
        views = C.view_docs(r, db)
    else:
        infos, views = {}, []
        # mongod iterates its view catalog for any filter but the collections-only one, pinned names
        # too, and that refuses while the catalog holds an invalid definition (182)
        for doc in C.view_docs(r, db):
            check_view_doc(db, doc)
        for name in sorted(names):
            info = r.get_collection(f"{db}.{name}")
            if info is not None:
                infos[info.name] = info
            view = namespace.get_view(r, db, name)
            if view is not None:
                views.append(view)

    def buckets_of(name: str) -> Any:
        key = C.BUCKETS_PREFIX + name
        return infos.get(key) if names is None else r.get_collection(f"{db}.{key}")

    if names is None and views_too:
        for view in views:
            check_view_doc(db, view)
    entries = []
    for info in infos.values():
        if info.name.startswith(C.BUCKETS_PREFIX):
            entries.append(ts.buckets_list_collections_entry(info))
        else:
            entries.append(_collection_entry(info))
    for view in views:
        if C.is_timeseries_view(view):
            name = view["_id"].split(".", 1)[1]
            entries.append(ts.list_collections_entry(name, view, buckets_of(name)))
        else:
            entries.append(_view_entry(view))
    entries.sort(key=lambda e: e["name"])
    return entries


def pinned_names(flt: Any) -> set[str] | None:
    """The names a listCollections filter's top-level conjunction pins ``name`` to (an equality to a
    string, or ``$in`` of strings; several: their intersection), or None when it pins none. An entry
    of another name cannot match the filter (the filter itself still decides)."""
    if not isinstance(flt, dict):
        return None
    found: set[str] | None = None
    for key, value in flt.items():
        names: set[str] | None = None
        if key == "name":
            if type(value) is str:
                names = {value}
            elif isinstance(value, dict) and len(value) == 1:
                ((op, arg),) = value.items()
                if op == "$eq" and type(arg) is str:
                    names = {arg}
                elif op == "$in" and isinstance(arg, list) and all(type(a) is str for a in arg):
                    names = set(arg)
        elif key == "$and" and isinstance(value, list):
            for clause in value:
                pinned = pinned_names(clause)
                if pinned is not None:
                    names = pinned if names is None else names & pinned
        if names is not None:
            found = names if found is None else found & names
    return found


def check_catalog_filter(flt: Any) -> None:
    """mongod reads listCollections and listDatabases filters with the default special features only:
    ``$text``, ``$where`` and the near operators are refused (2), before the filter is compiled."""
    from tidemark.query.match_parse import refuse_special_features

    refuse_special_features(flt)


def _is_collections_only(flt: Any) -> bool:
    """mongod skips the view catalog (and its validation) for exactly the filter drivers send to list
    collections only: ``{$or: [{type: "collection"}, {type: {$exists: false}}]}``."""
    return (isinstance(flt, dict) and list(flt) == ["$or"] and isinstance(flt["$or"], list)
            and len(flt["$or"]) == 2 and flt["$or"][0] == {"type": "collection"}
            and flt["$or"][1] == {"type": {"$exists": False}}
            and flt["$or"][1]["type"]["$exists"] is False)


async def list_collections(ctx: CommandContext, cmd: dict) -> dict:
    from tidemark.commands.indexes import cursor_options

    db = ctx.db
    check_command(cmd, "listCollections")  # mongod's IDL: 40415 unknown fields, 14 wrong types
    flt = cmd.get("filter")
    name_only = bool(cmd.get("nameOnly"))  # (includePendingDrops: there are no pending drops to include)
    cursor_opts = cursor_options(cmd, "listCollections")
    match = None
    if flt:
        from tidemark.query.match import compile_filter

        check_catalog_filter(flt)
        match = compile_filter(flt)

    names = pinned_names(flt)
    views_too = not _is_collections_only(flt)

    def work():
        with ctx.server.engine.read() as r:
            return list_collection_entries(r, db, names, views_too)

    entries = await ctx.run_blocking(work)
    if match is not None:
        entries = [e for e in entries if match(e)]
    if name_only:
        entries = [{"name": e["name"], "type": e["type"]} for e in entries]
    return await cursor_from_list(ctx, f"{db}.$cmd.listCollections", entries, cursor_opts)


async def cursor_from_list(ctx: CommandContext, ns: str, docs: list[dict], cursor_opts: dict) -> dict:
    """A cursor reply over an in-memory list, honouring cursor.batchSize when given."""
    batch_size = cursor_opts.get("batchSize")
    if batch_size is None or batch_size >= len(docs):
        return {"cursor": {"id": Int64(0), "ns": ns, "firstBatch": docs}}
    from tidemark.cursors import cursor_reply

    # materialised now (mongod's queued data stage): no later drop or rename kills it
    return await cursor_reply(ctx, ns, iter(docs), int(batch_size), False, first=True, snapshot=True)


# --------------------------------------------------------------------------------------------------
# renameCollection
# --------------------------------------------------------------------------------------------------


async def rename_collection(ctx: CommandContext, cmd: dict) -> dict:
    if ctx.db != "admin":
        raise MongoError(ErrorCode.Unauthorized, "renameCollection may only be run against the admin database.")
    src: Any = cmd.get("renameCollection")
    dst: Any = cmd.get("to")
    for label, value in (("renameCollection", src), ("to", dst)):
        if type(value) is not str:
            raise MongoError(ErrorCode.TypeMismatch,
                             f"BSON field 'renameCollection.{label}' is the wrong type '{C.type_name(value)}', "
                             "expected type 'string'")
        if "." not in value or value.startswith(".") or value.endswith("."):
            raise MongoError(ErrorCode.InvalidNamespace, f"Invalid {'target' if label == 'to' else 'source'} "
                             f"namespace: {value}")
    src_db, src_name = src.split(".", 1)
    dst_db, dst_name = dst.split(".", 1)
    C.check_db_name(dst_db)
    if src == dst:
        raise MongoError(ErrorCode.IllegalOperation, "Can't rename a collection to itself")
    _check_rename_namespaces(src_db, src_name, dst_db, dst_name)
    expected_uuid = namespace.collection_uuid_arg(cmd, "renameCollection")
    drop_target_arg = cmd.get("dropTarget", False)
    # dropTarget is a bool or the UUID the target must have (mongod's variant [bool, uuid])
    target_uuid = (namespace.collection_uuid_arg({"collectionUUID": drop_target_arg}, "renameCollection")
                   if isinstance(drop_target_arg, (Binary, uuid.UUID)) else None)
    drop_target = target_uuid is not None or truthy(drop_target_arg)
    stay_temp = truthy(cmd.get("stayTemp"))
    if (expected_uuid is not None or target_uuid is not None) and src_db != dst_db:
        raise MongoError(ErrorCode.InvalidOptions,
                         "Cannot provide an expected collection UUID when renaming between databases")

    if src_name.startswith(C.BUCKETS_PREFIX):
        # the source's in-memory buckets reach storage and the bucket catalog forgets its name (as
        # before a $out's swap); so does a buckets target the rename drops
        await ctx.server.ts_committer.close_collection(src)
        await ctx.server.ts_committer.forget_collection(src)
        if drop_target:
            await ctx.server.ts_committer.close_collection(dst)
            await ctx.server.ts_committer.forget_collection(dst)

    def fn(w):
        # the expected UUIDs first: a mismatch is reported even when the source is missing or a view
        namespace.lookup(w, src_db, src_name, follow=False, collection_uuid=expected_uuid)
        if target_uuid is not None:
            namespace.lookup(w, dst_db, dst_name, follow=False, collection_uuid=target_uuid)
        src_view = C.get_view(w, src_db, src_name)
        if src_view is not None:
            raise MongoError(ErrorCode.CommandNotSupportedOnView, f"cannot rename view: {src}")
        if w.get_collection(src) is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"Source collection {src} does not exist")
        if C.get_view(w, dst_db, dst_name) is not None:
            raise MongoError(ErrorCode.NamespaceExists, "a view already exists with that name")
        target = w.get_collection(dst)
        if target is not None:
            if not drop_target:
                raise MongoError(ErrorCode.NamespaceExists, "target namespace exists")
            w.drop_collection(dst)
        source_uuid = w.get_collection(src).uuid
        info = w.rename_collection(src, dst)
        if not stay_temp and (info.options or {}).get("temp"):  # a renamed temp collection stays unless stayTemp
            w.set_options(dst, {k: v for k, v in info.options.items() if k != "temp"})
        return source_uuid, None if target is None else target.uuid

    source_uuid, target_uuid_dropped = await _write(ctx, fn)
    if target_uuid_dropped is not None:  # dropTarget dropped the target: its cursors die as in a drop
        _kill_cursors(ctx, dst, dropped_reason(target_uuid_dropped))
    # across databases mongod copies the collection and drops the source (a new UUID at the target)
    _kill_cursors(ctx, src, f"collection renamed from '{src}' to '{dst}'. UUID {source_uuid}" if src_db == dst_db
                  else dropped_reason(source_uuid))
    return {}


def _check_rename_namespaces(src_db: str, src_name: str, dst_db: str, dst_name: str) -> None:
    """mongod's validateNamespacesForRenameCollection: both names must be ones a user may write (its
    InvalidNamespace reason wrapped in 20 IllegalOperation: system.profile is the profiler's), a
    time-series buckets collection only to another buckets name and nothing else to one, and neither
    admin.system.version, system.views (renaming it away or over it left the view catalog unreadable:
    182 to every listCollections), system.js nor system.users (of any database: renaming admin's away
    left no user, so the localhost exception let anyone create a root user) is renamed, nor is any of
    them a target (rename_collection.cpp since 6.0; the older views_rename.js renamed system.views away
    and back)."""
    for label, db, name in (("source", src_db, src_name), ("target", dst_db, dst_name)):
        try:
            C.check_write_name(db, name)
        except MongoError as e:
            if e.code != ErrorCode.InvalidNamespace:
                raise
            raise MongoError(ErrorCode.IllegalOperation, f"error with {label} namespace: {e.message}") from None
    if (src_db, src_name) == ("admin", "system.version"):
        raise MongoError(ErrorCode.IllegalOperation,
                         "renaming the server configuration collection (admin.system.version) is not allowed")
    if "system.views" in (src_name, dst_name):  # the view catalog is read from it by name
        raise MongoError(ErrorCode.IllegalOperation,
                         "renaming system.views collection or renaming to system.views is not allowed")
    if "system.js" in (src_name, dst_name):
        raise MongoError(ErrorCode.IllegalOperation,
                         "renaming system.js collection or renaming to system.js is not allowed")
    if "system.users" in (src_name, dst_name):  # (any database: admin's holds the users authentication reads)
        raise MongoError(ErrorCode.IllegalOperation,
                         "renaming system.users collection or renaming to system.users is not allowed")
    if src_name.startswith(C.BUCKETS_PREFIX):
        # a buckets collection moves only to another buckets name (mongod 7.0: for a client allowed
        # setUserWriteBlockMode, which the auth rules check; its view stays behind, and creating the
        # time-series collection of the new name puts a view over the moved buckets)
        if not dst_name.startswith(C.BUCKETS_PREFIX):
            raise MongoError(ErrorCode.IllegalOperation,
                             f"Cannot rename time-series buckets collection {{{src_db}.{src_name}}} to a "
                             f"non-time-series buckets namespace {{{dst_db}.{dst_name}}}")
    elif dst_name.startswith(C.BUCKETS_PREFIX):
        raise MongoError(ErrorCode.IllegalOperation,
                         "Renaming a collection to a time-series bucket collection is not allowed")


# --------------------------------------------------------------------------------------------------
# collMod
# --------------------------------------------------------------------------------------------------

COLLMOD_FIELDS = frozenset(COMMAND_FIELDS["collMod"])  # (mongod 7.0's coll_mod.idl)
# What a view refuses, in the order mongod's parseCollModRequest looks at the options (its first error
# wins). cappedSize/cappedMax: 7.0 dereferenced the view's missing collection (SERVER-124967); the fixed
# mongod refuses them as the other collection options (jstests/core/ddl/coll_mod_cappedsize_on_view.js).
_NOT_ON_A_VIEW = ("cappedSize", "cappedMax", "index", "validator", "validationLevel", "validationAction",
                  "changeStreamPreAndPostImages", "expireAfterSeconds")
_ONLY_ON_TIMESERIES = ("timeseries", "timeseriesBucketsMayHaveMixedSchemaData")


async def coll_mod(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "collMod")
    ns = C.ns_of(db, name)
    drop_null_optionals(cmd, COLLMOD_FIELDS)
    check_command(cmd, "collMod")  # mongod's IDL: 40415 unknown fields, 14 wrong types

    dry_run = truthy(cmd.get("dryRun", False))
    if dry_run:
        _check_dry_run(cmd)
    resolved = await ctx.run_blocking(namespace.resolve, ctx.server.engine, db, name, follow=False,
                                      collection_uuid=namespace.collection_uuid_arg(cmd, "collMod"))
    info, view = resolved.info, resolved.view
    if C.is_timeseries_view(view) or name.startswith(C.BUCKETS_PREFIX):
        return await ts.VIEW_COMMANDS["collMod"](ctx, cmd, resolved)
    if view is not None:
        return await _coll_mod_view(ctx, db, name, cmd)
    if info is None:
        if not dry_run and _asks_unique(cmd):  # (mongod's scan for duplicates comes first: its message)
            raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist for unique index conversion: {ns}")
        raise MongoError(ErrorCode.NamespaceNotFound, "ns does not exist")
    if "viewOn" in cmd or "pipeline" in cmd:
        raise MongoError(ErrorCode.InvalidOptions, "option only supported on a view: viewOn")
    for option in _ONLY_ON_TIMESERIES:
        if option in cmd:
            raise MongoError(ErrorCode.InvalidOptions, f"option only supported on a time-series collection: {option}")
    expire = None  # a clustered collection's TTL (the TTL monitor expires its dated _ids): seconds or "off"
    if "expireAfterSeconds" in cmd:
        if clustered.index_spec(info) is None:
            raise MongoError(ErrorCode.InvalidOptions,
                             "'expireAfterSeconds' option is only supported on collections clustered by _id")
        expire = parse_coll_mod_expire(cmd["expireAfterSeconds"])
    changes: dict = {}
    for k in ("validator", "validationLevel", "validationAction"):
        if k in cmd:
            changes[k] = cmd[k]
    check_validation_options(changes, current=info.options or {}, ns=ns, uuid=info.uuid)
    images = None  # True / False: collMod turns the collection's pre- and post-images on / off
    if "changeStreamPreAndPostImages" in cmd:
        images = pre_and_post_images(cmd["changeStreamPreAndPostImages"], "collMod")
        if images:
            check_pre_and_post_images_permitted(db)
    cap_changes = capped.parse_coll_mod(cmd)
    index_change = parse_coll_mod_index(cmd["index"]) if "index" in cmd else None
    # mongod's numModifications: each index change asked and each other option given
    modifications = sum(v is not None for v in (
        index_change.expire_after_seconds, index_change.unique, index_change.hidden, index_change.prepare_unique,
        index_change.force_non_unique)) if index_change is not None else 0
    modifications += sum(option in cmd for option in _MODIFICATIONS)

    def fn(w):
        current = w.get_collection(ns)
        if current is None:
            raise MongoError(ErrorCode.NamespaceNotFound, "ns does not exist")
        reply: dict = {}
        if index_change is not None:
            reply.update(_coll_mod_index(w, current, index_change, modifications, dry_run))
            if dry_run:
                return {}
            current = w.get_collection(ns)
        if changes or expire is not None or images is not None:
            options = dict(current.options or {})
            for k, v in changes.items():
                if k == "validator" and not v:
                    options.pop("validator", None)
                else:
                    options[k] = v
            if images:
                options["changeStreamPreAndPostImages"] = {"enabled": True}
            elif images is not None:
                options.pop("changeStreamPreAndPostImages", None)
            if expire == "off":
                options.pop("expireAfterSeconds", None)
            elif expire is not None:
                options["expireAfterSeconds"] = Int64(expire)
            current = w.set_options(ns, options)
        if cap_changes:
            capped.coll_mod(w, current, cap_changes)
        return reply

    return await _write(ctx, fn)


def _check_dry_run(cmd: dict) -> None:
    """mongod's _processCollModDryRunMode, before anything else: a dry run only checks a conversion to
    unique (``_coll_mod_index`` then reports the duplicates it would meet), and changes nothing."""
    index = cmd.get("index")
    if index is None:
        raise MongoError(ErrorCode.InvalidOptions, "dry run mode requires an valid index modification.")
    if not (isinstance(index, dict) and truthy(index.get("unique", False))):
        raise MongoError(ErrorCode.InvalidOptions, "dry run mode requires an index modification with unique: true.")


# the collMod options besides ``index`` that count as modifications (mongod's numModifications)
_MODIFICATIONS = ("validator", "validationLevel", "validationAction", "viewOn", "pipeline", "recordPreImages",
                  "changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries", "cappedSize", "cappedMax")
# mongod returns the _ids of duplicates up to half the maximum document size (buildConvertUniqueErrorStatus)
_MAX_VIOLATION_BYTES = 16 * 1024 * 1024 // 2


def _asks_unique(cmd: dict) -> bool:
    index = cmd.get("index")
    return isinstance(index, dict) and truthy(index.get("unique", False))


def _coll_mod_index(w, info, change: CollModIndex, modifications: int, dry_run: bool) -> dict:
    """One index's changes (mongod 7.0's parseCollModRequest and processCollModIndexRequest): its TTL
    (an index without one becomes a TTL index if it has one field and is not ``_id``), ``hidden``, and
    the conversion to unique in two steps (``prepareUnique``, which refuses new duplicate keys, then
    ``unique``, refused with 359 and the duplicates' _ids while any remain) or back (``forceNonUnique``).
    A dry run (only ``unique: true``) makes the checks and reports the duplicates; nothing changes."""
    if change.expire_after_seconds is not None:
        if (info.options or {}).get("capped"):
            raise MongoError(ErrorCode.InvalidOptions, "TTL indexes are not supported for capped collections.")
        ttl_seconds(change.expire_after_seconds)
    cluster = clustered.index_spec(info)
    if change.hidden is not None and cluster is not None and (
            change.name == cluster.get("name") or (change.key_pattern is not None and
                                                   list(change.key_pattern.items()) == list(cluster["key"].items()))):
        # (parseCollModRequest: a clustered collection's clusteredIndex cannot be hidden)
        raise MongoError(6011800, "The 'hidden' option is not supported for a clusteredIndex")
    spec = _coll_mod_target(info, change)
    is_unique = bool(spec.get("unique")) or spec["name"] == "_id_"
    updates: dict = {}
    reply: dict = {}
    if change.expire_after_seconds is not None:
        new_exp = change.expire_after_seconds
        old_exp = spec.get("expireAfterSeconds")
        if old_exp is None:
            if spec["name"] == "_id_":
                raise MongoError(ErrorCode.InvalidOptions, "the _id field does not support TTL indexes")
            if len(spec["key"]) != 1:
                raise MongoError(ErrorCode.InvalidOptions,
                                 "TTL indexes are single-field indexes, compound indexes do not support TTL")
            updates["expireAfterSeconds"] = new_exp
            reply["expireAfterSeconds_new"] = new_exp
        elif isinstance(old_exp, bool) or not isinstance(old_exp, int | float):
            raise MongoError(ErrorCode.InvalidOptions, "existing expireAfterSeconds field is not a number")
        elif new_exp != old_exp:
            updates["expireAfterSeconds"] = new_exp
            reply.update({"expireAfterSeconds_old": old_exp, "expireAfterSeconds_new": new_exp})
    to_unique = False
    if change.unique is not None:
        if not change.unique:
            raise MongoError(ErrorCode.BadValue, "Cannot make index non-unique")
        if not is_unique:  # (an index already unique: nothing to do)
            if not spec.get("prepareUnique"):  # one step is refused: new duplicates could slip in meanwhile
                raise MongoError(ErrorCode.InvalidOptions, "Cannot make index unique with 'prepareUnique=false'. "
                                                           "Run collMod to set it first.")
            to_unique = True
    if change.hidden is not None:
        coll = info.ns.partition(".")[2]
        if coll.startswith("system.") and not coll.startswith(C.BUCKETS_PREFIX):
            raise MongoError(ErrorCode.BadValue, "Can't hide index on system collection")
        if spec["name"] == "_id_":
            raise MongoError(ErrorCode.BadValue, "can't hide _id index")
        old = bool(spec.get("hidden", False))
        if change.hidden != old:
            updates["hidden"] = True if change.hidden else None  # unhiding removes the field, as mongod's collMod
            reply.update({"hidden_old": old, "hidden_new": change.hidden})
    prepare: bool | None = None
    if change.prepare_unique is not None and not is_unique and bool(spec.get("prepareUnique")) != change.prepare_unique:
        prepare = change.prepare_unique
    to_non_unique = False
    if change.force_non_unique is not None:
        if not change.force_non_unique:
            raise MongoError(ErrorCode.BadValue, "'forceNonUnique: false' is not supported")
        if spec["name"] == "_id_":
            raise MongoError(ErrorCode.InvalidOptions, "the _id index cannot be made non-unique")
        to_non_unique = is_unique
    if prepare is not None and modifications > 1:
        raise MongoError(ErrorCode.InvalidOptions, "prepareUnique cannot be combined with any other modification.")
    if dry_run:
        if modifications > 1:
            raise MongoError(ErrorCode.InvalidOptions,
                             "unique: true cannot be combined with any other modification in dry run mode.")
        _check_no_duplicates(w, info, spec["name"])
        return {}
    if to_unique:
        _check_no_duplicates(w, info, spec["name"])
    if prepare is not None:
        updates["prepareUnique"] = True if prepare else None  # (false removes it, as listIndexes then shows)
    if updates:
        info = w.set_index_options(info, spec["name"], updates)
    if to_unique or to_non_unique:
        w.set_index_unique(info, spec["name"], to_unique)
    # mongod's reply order (processCollModIndexRequest's commit handler)
    if to_unique:
        reply["unique_new"] = True
    if prepare is not None:
        reply.update({"prepareUnique_old": not prepare, "prepareUnique_new": prepare})
    if to_non_unique:
        reply["forceNonUnique_new"] = True
    return reply


def _check_no_duplicates(w, info, name: str) -> None:
    """mongod's scanIndexForDuplicates and buildConvertUniqueErrorStatus: 359 with ``violations``, one
    ``{ids: [...]}`` per index key that more than one document holds (in index order), the _ids up to
    ``_MAX_VIOLATION_BYTES`` (at least one); none: nothing."""
    groups: list[list[bytes]] = []
    previous: tuple[bytes, bytes] | None = None
    current: list[bytes] = []
    for key, rid in w.index_scan(info, name):
        if previous is not None and key == previous[0]:
            if not current:
                current.append(previous[1])
            current.append(bytes(rid))
        elif current:
            groups.append(current)
            current = []
        previous = (bytes(key), bytes(rid))
    if current:
        groups.append(current)
    if not groups:
        return
    violations: list[dict] = []
    size = 0
    for rids in groups:
        ids: list = []
        for rid in rids:
            raw = w.get(info, rid)
            doc_id = decode(raw).get("_id") if raw is not None else None
            size += len(encode({"_id": doc_id})) - 5  # (the BSON element's size, as mongod counts it)
            if size > _MAX_VIOLATION_BYTES:
                if not violations and not ids:
                    ids.append(doc_id)
                if ids:
                    violations.append({"ids": ids})
                raise MongoError(ErrorCode.CannotConvertIndexToUnique,
                                 "Cannot convert the index to unique. Too many conflicting documents were "
                                 "detected. Please resolve them and rerun collMod.", extra={"violations": violations})
            ids.append(doc_id)
        violations.append({"ids": ids})
    raise MongoError(ErrorCode.CannotConvertIndexToUnique, "Cannot convert the index to unique. Please resolve "
                     "conflicting documents before running collMod again.", extra={"violations": violations})


def _coll_mod_target(info, change: CollModIndex) -> dict:
    """The index ``change`` names: by name, or by key pattern (ordered: {a: 1, b: 1} is another index
    than {b: 1, a: 1}, as mongod's findIndexesByKeyPattern compares them), which must match one index
    (indexes on one key with other collations or options: 119)."""
    if change.name is not None:
        for spec in info.indexes:
            if spec["name"] == change.name:
                return spec
        raise MongoError(ErrorCode.IndexNotFound, f"cannot find index {change.name} for ns {info.ns}")
    assert change.key_pattern is not None
    wanted = list(change.key_pattern.items())
    matches = [spec for spec in info.indexes if list(spec["key"].items()) == wanted]
    if not matches:
        raise MongoError(ErrorCode.IndexNotFound,
                         f"cannot find index {C.format_value(change.key_pattern)} for ns {info.ns}")
    if len(matches) > 1:
        raise MongoError(ErrorCode.AmbiguousIndexKeyPattern,
                         f"index keyPattern {C.format_value(change.key_pattern)} matches {len(matches)} indexes, "
                         f"must use index name. Conflicting indexes:{C.format_value(matches[0])}, "
                         f"{C.format_value(matches[1])}")
    return matches[0]


async def _coll_mod_view(ctx: CommandContext, db: str, name: str, cmd: dict) -> dict:
    for k in _NOT_ON_A_VIEW:
        if k in cmd:
            raise MongoError(ErrorCode.InvalidOptions, f"option not supported on a view: {k}")
    for k in _ONLY_ON_TIMESERIES:
        if k in cmd:
            raise MongoError(ErrorCode.InvalidOptions, f"option only supported on a time-series collection: {k}")
    # Without auth mongod lets collMod give one of viewOn/pipeline and keeps the other (with auth,
    # both are required: tidemark.auth.rules refuses it before the command runs).
    if "viewOn" not in cmd and "pipeline" not in cmd:
        return {}
    if "viewOn" in cmd and type(cmd["viewOn"]) is not str:
        raise wrong_type("collMod.viewOn", cmd["viewOn"], "string")
    if "pipeline" in cmd:
        if not isinstance(cmd["pipeline"], list):
            raise wrong_type("collMod.pipeline", cmd["pipeline"], "array")
        check_view_pipeline(cmd["pipeline"])

    def fn(w):
        old = C.get_view(w, db, name) or {}
        view_on = cmd["viewOn"] if "viewOn" in cmd else old.get("viewOn")
        pipeline = cmd["pipeline"] if "pipeline" in cmd else old.get("pipeline", [])
        delete_view_doc(w, db, name)
        # the view keeps its default collation: collMod cannot change it
        doc = {"_id": C.ns_of(db, name), "viewOn": view_on, "pipeline": pipeline}
        if "collation" in old:
            doc["collation"] = old["collation"]
        _check_view_graph(w, db, name, doc)
        info = ensure_collection(w, C.ns_of(db, C.SYSTEM_VIEWS))
        w.insert(info, encode(doc), C.index_keys(info, doc))

    await _write(ctx, fn)
    return {}


COMMANDS = [
    CommandSpec("create", create, help="create a collection, a view or a time-series collection"),
    CommandSpec("drop", drop, help="drop a collection or view"),
    CommandSpec("dropDatabase", drop_database, help="drop the current database"),
    CommandSpec("listCollections", list_collections, help="list collections and views (filter, nameOnly)"),
    CommandSpec("renameCollection", rename_collection, help="rename a collection (admin; dropTarget)"),
    CommandSpec("collMod", coll_mod, help="modify collection options, views and index hidden/TTL"),
]
