"""Shared helpers of the regular-collection command families.

- argument checks every command repeats (collection name, transactions on a standalone, namespaces);
- views: the `<db>.system.views` documents, chain resolution, the time-series test;
- documents: insert preparation (`_id` first, 16 MiB limit, field-name rules) and collection validators;
- index glue: keys for storage writes and the DuplicateKey error with keyPattern/keyValue;
- read streams: record/index scans that open a fresh LMDB read transaction per chunk, so a suspended
  cursor never holds a transaction (storage README, "LMDB discipline").
"""

from __future__ import annotations

import contextlib
import datetime
import math
import re
import threading
import uuid as uuid_mod
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, cast

from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from tidemark import log
from tidemark.core import namespace
from tidemark.protocol.codec import decode, encode, nesting_exceeds, relaxed_json
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.framing import MAX_STORED_DEPTH
from tidemark.query import interrupt
from tidemark.query.access_path import Plan
from tidemark.query.collation import parse_collation, same
from tidemark.query.docmeta import DocMeta, comparison_key_value
from tidemark.query.expr_base import (
    type_name as type_name,  # the one BSON type name for messages (C.type_name)
)
from tidemark.query.expressions import evaluate_let
from tidemark.query.index_keys import (
    MULTIKEY_FLAG,
    index_key_map,
    index_key_map_multikey,
    key_document,
    key_fields,
    keyer_for,
)
from tidemark.query.value_repr import bson_repr
from tidemark.storage.catalog import check_creatable
from tidemark.storage.errors import InvalidNamespace

MAX_BSON_SIZE = 16 * 1024 * 1024
MISSING_ID = object()  # "no _id" marker for comparisons
MAX_VIEW_DEPTH = 20
MAX_NAMESPACE_BYTES = 255
SYSTEM_VIEWS = namespace.SYSTEM_VIEWS
SYSTEM_PROFILE = namespace.SYSTEM_PROFILE
BUCKETS_PREFIX = namespace.BUCKETS_PREFIX
_ALLOWED_SYSTEM = {"system.views", "system.js", "system.profile", "system.users", "system.roles",
                   "system.version", "system.sessions"}


# --------------------------------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------------------------------


def parse_statements(raw_statements: list, parse: Callable[[Any], Any], ordered: bool) -> list:
    """Each write statement parsed by ``parse``; a statement that fails leaves its MongoError in its
    place (it becomes that statement's write error) and, in an ordered batch, ends the list there."""
    parsed: list = []
    for statement in raw_statements:
        try:
            parsed.append(parse(statement))
        except MongoError as e:
            parsed.append(e)
            if ordered:
                break
    return parsed


def collection_arg(cmd: dict, name: str) -> str:
    """The collection named by the command's first field (whatever alias spelled it), checked like mongod."""
    value = cmd[name] if name in cmd else (next(iter(cmd.values())) if cmd else None)
    if type(value) is not str:
        raise MongoError(ErrorCode.InvalidNamespace,
                         f"collection name has invalid type {type_name(value)}")
    check_collection_name(cmd.get("$db", ""), value)
    return value


def check_collection_name(db: str, name: str) -> None:
    if not name:
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{db}.'")
    if "$" in name or "\0" in name or name[0] == ".":
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid collection name: {_shown(name)}")
    # mongod counts UTF-8 bytes, 4 at most per character: names short enough in characters are not
    # encoded (every command naming a collection passes here)
    if (4 * (len(db) + len(name)) + 1 > MAX_NAMESPACE_BYTES
            and len(db.encode()) + 1 + len(name.encode("utf-8", "surrogatepass")) > MAX_NAMESPACE_BYTES):
        raise MongoError(ErrorCode.InvalidNamespace, "Fully qualified namespace is too long. Namespace: "
                         f"{db}.{_shown(name)} Max: {MAX_NAMESPACE_BYTES}")


def _shown(name: str) -> str:
    """A name as error messages show it (a 100,000-character name is cut)."""
    return name if len(name) <= 300 else name[:300] + "..."


def check_create_name(db: str, name: str) -> None:
    """Stricter rules for names a user may create (mongod's userAllowedCreateNS): a command may name a
    database with ``$`` (``$external``), but no collection is ever created in one."""
    check_collection_name(db, name)
    try:
        check_creatable(f"{db}.{name}")
    except InvalidNamespace as exc:  # (storage's own rule, the one every creation meets)
        raise MongoError(ErrorCode.InvalidNamespace, exc.message) from None
    if name.startswith("system.") and name not in _ALLOWED_SYSTEM and not name.startswith(BUCKETS_PREFIX):
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid system namespace: {db}.{name}")


def check_write_name(db: str, name: str) -> None:
    """mongod's userAllowedWriteNS: the profiler alone writes ``system.profile`` (73 "cannot write to
    <ns>": a user's insert, update, delete, findAndModify, renameCollection to or from it), and any
    other name is one a user may create (``check_create_name``)."""
    if name == SYSTEM_PROFILE:
        raise MongoError(ErrorCode.InvalidNamespace, f"cannot write to {db}.{name}")
    check_create_name(db, name)


# Characters mongod refuses in database names; '$' only where a collection would be created or named
# (its DollarInDbNameBehavior: a command's database may be ``$external``).
_INVALID_DB_CHARS = frozenset('/\\. "\x00')


def check_db_name(db: str, *, dollar: bool = False) -> None:
    """mongod's rule for a database name (every command's ``$db`` passes here: kept cheap).
    ``dollar``: whether ``$`` may appear (a command's database, as mongod's dispatch allows)."""
    if (not db or not _INVALID_DB_CHARS.isdisjoint(db) or len(db) >= 64 or (not dollar and "$" in db)
            or (len(db) >= 16 and not db.isascii() and len(db.encode()) >= 64)):  # (mongod counts bytes)
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid database name: '{db}'")


def valid_target_namespace(db: str, coll: str) -> bool:
    """mongod's NamespaceString::isValid of ``db.coll``: validDBName (with '$' allowed) and
    validCollectionName (not empty, no leading '.', no NUL)."""
    return (bool(db) and _INVALID_DB_CHARS.isdisjoint(db) and len(db.encode()) < 64
            and bool(coll) and not coll.startswith(".") and "\0" not in coll)


def ns_of(db: str, coll: str) -> str:
    return f"{db}.{coll}"


def int_arg(cmd: dict, field: str, command: str, default: int | None = None) -> int | None:
    """A numeric argument (int, long or integral double) as int; 14 TypeMismatch otherwise."""
    if field not in cmd or cmd[field] is None:
        return default
    v = cmd[field]
    if isinstance(v, bool) or not isinstance(v, (int, float, Decimal128)):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field '{command}.{field}' is the wrong type '{type_name(v)}', expected types "
                         "'[long, int, decimal, double]'")
    if isinstance(v, Decimal128):
        v = v.to_decimal()
        finite = v.is_finite()
    else:
        finite = not isinstance(v, float) or math.isfinite(v)
    if not finite:
        raise MongoError(ErrorCode.BadValue, "Unable to coerce NaN/Inf to integral type")
    return min(max(int(v), -(2**63)), 2**63 - 1)  # (a value past the long range reads as its end)


def doc_arg(cmd: dict, field: str, command: str) -> dict | None:
    if field not in cmd or cmd[field] is None:
        return None
    v = cmd[field]
    if not isinstance(v, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field '{command}.{field}' is the wrong type '{type_name(v)}', expected type 'object'")
    return v


_RUNTIME_CONSTANTS = {"localNow": ("date", datetime.datetime), "clusterTime": ("timestamp", Timestamp),
                      "jsScope": ("object", dict), "isMapReduce": ("bool", bool), "userRoles": ("object", dict)}


def command_variables(cmd: dict, command: str) -> dict:
    """The variables a command's expressions see: ``$$NOW`` and its ``let``; given ``runtimeConstants``
    (mongod's LegacyRuntimeConstants: mongos sends them to shards, and mongod takes them from any client
    of find, aggregate, update, delete and findAndModify), ``$$NOW`` is their ``localNow`` and
    ``$$CLUSTER_TIME`` their ``clusterTime`` unless null (Variables::setLegacyRuntimeConstants)."""
    if "runtimeConstants" not in cmd:
        # (most commands give neither: no doc_arg call for an absent let)
        return evaluate_let(doc_arg(cmd, "let", command) if "let" in cmd else None)
    let = doc_arg(cmd, "let", command)
    constants = doc_arg(cmd, "runtimeConstants", command)
    if constants is None:
        return evaluate_let(let)
    where = f"{command}.runtimeConstants"
    for name, value in constants.items():
        if name not in _RUNTIME_CONSTANTS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{where}.{name}' is an unknown field.")
        expected, kind = _RUNTIME_CONSTANTS[name]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{where}.{name}' is the wrong type "
                                                     f"'{type_name(value)}', expected type '{expected}'")
    for name in ("localNow", "clusterTime"):
        if name not in constants:
            raise MongoError(ErrorCode.IDLFailedToParse,
                             f"BSON field '{where}.{name}' is missing but a required field")
    cluster_time = constants["clusterTime"]
    return evaluate_let(let, now=constants["localNow"],
                        cluster_time=None if (cluster_time.time, cluster_time.inc) == (0, 0) else cluster_time)


# --------------------------------------------------------------------------------------------------
# collation
# --------------------------------------------------------------------------------------------------


def collation_arg(cmd: dict, command: str, field: str = "collation") -> dict | None:
    """The collation document a command gives (None when absent, or null: an IDL ``object`` field
    ignores a null), validated now like mongod."""
    if field not in cmd:  # (most commands: no parse)
        return None
    raw = cmd[field]
    if raw is None or isinstance(raw, dict) and not raw:
        return None  # an empty collation document means "not given" on operations, as in mongod
    parse_collation(raw, f"{command}.{field}")
    return raw


def effective_collation(requested: dict | None, default: dict | None, *, on_view: bool = False):
    """The collation an operation runs with (``collation.Collation``, None = simple): the one it
    asks for, else the collection's or view's default. A view's default cannot be overridden (167)."""
    default_c = parse_collation(default) if default else None
    if requested is None:
        return default_c
    asked = parse_collation(requested)
    if on_view and not same(asked, default_c):
        raise MongoError(ErrorCode.OptionNotSupportedOnView, "Cannot override a view's default collation")
    return asked


def index_collation(spec: dict, default: dict | None) -> dict:
    """``spec`` with its collation as an index stores it (mongod's validateIndexSpecCollation): its own
    collation fully expanded, an explicit simple one removed (the index compares binary-wise), none:
    the collection's default ``default`` (None = simple)."""
    given = "collation" in spec
    collation = parse_collation(spec["collation"] if given else default or {"locale": "simple"}, "collation")
    if collation is None:
        return {k: v for k, v in spec.items() if k != "collation"} if given else spec
    return {**spec, "collation": dict(collation.spec)}


def default_collation_of(info=None, view: dict | None = None) -> dict | None:
    """The stored default collation spec of a collection (catalog info) or a view document."""
    if view is not None:
        return view.get("collation")
    if info is not None:
        return (info.options or {}).get("collation")
    return None


# --------------------------------------------------------------------------------------------------
# views
# --------------------------------------------------------------------------------------------------


# One implementation in server/core/namespace.py (point lookups through the system.views _id index);
# these names stay for the families that import them from here.
is_timeseries_view = namespace.is_timeseries_view
is_buckets_collection = namespace.is_buckets_collection
get_view = namespace.get_view
view_docs = namespace.all_views  # listing only (listCollections); one name: get_view / namespace.lookup
Resolved = namespace.Namespace


def resolve(r, db: str, name: str) -> namespace.Namespace:
    """``db.name`` resolved (view chain followed, depth limit 20 like mongod): ``namespace.lookup``."""
    return namespace.lookup(r, db, name)


def view_write_error(db: str, name: str, command: str = "") -> MongoError:
    return MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {db}.{name} is a view, not a collection")


# --------------------------------------------------------------------------------------------------
# documents
# --------------------------------------------------------------------------------------------------


def prepare_insert(doc: Any, *, from_oplog: bool = False) -> dict:
    """The document to store: ``_id`` first (generated if absent) and MongoDB's storage rules
    (``from_oplog``: an applyOps insert, see ``check_storable``; no nesting limit either)."""
    if not isinstance(doc, dict):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field 'insert.documents' elements must be objects")
    if "_id" not in doc:
        doc = {"_id": ObjectId(), **doc}
    elif next(iter(doc)) != "_id":
        doc = {"_id": doc["_id"], **{k: v for k, v in doc.items() if k != "_id"}}
    check_storable(doc, top_level_dollar=True, from_oplog=from_oplog)
    if not from_oplog and nesting_exceeds(doc, MAX_STORED_DEPTH):
        raise MongoError(ErrorCode.Overflow,
                         f"cannot insert document because it exceeds {MAX_STORED_DEPTH} levels of nesting")
    return doc


def ensure_collection(w, ns: str):
    """The collection ``ns``, created implicitly (empty options) when absent — as mongod's writes do.
    A view (a time-series collection's too) of that name made since the write looked the name up
    wins, as mongod's create checks the catalog under the collection's lock (checkIfNamespaceExists):
    48, never a collection and a view of one name."""
    info = w.get_collection(ns)
    if info is None:
        db, _, name = ns.partition(".")
        view = get_view(w, db, name)
        if view is not None:
            kind = "timeseries collection" if is_timeseries_view(view) else "view"
            raise MongoError(ErrorCode.NamespaceExists, f"A {kind} already exists. NS: {ns}")
        info = w.create_collection(ns, {})
    return info


class _StorageRules(threading.local):
    # whether the storage rules refuse top-level ``$``-prefixed names on the writing thread: yes (a
    # replacement document's), unless ``update_rules`` says the update's kind checks its own
    refuse_dollar_names: bool = True


_STORAGE_RULES = _StorageRules()


@contextlib.contextmanager
def update_rules(kind: str) -> Iterator[None]:
    """While an update of ``kind`` writes its results (on this thread), which top-level ``$``-prefixed
    names its storage rules refuse, as mongod's: a replacement's, every one (storage_validation's
    scanDocument); a pipeline's, none (``$replaceWith``/``$setField`` make them); an operator
    update's, none here: ``query.update.apply_update`` refuses the ones its operations write as each
    applies (a ``$y`` the document already held — an insert may store it — stays, and ``{$set: {a:
    1}}`` updates the document). Upserts store them whatever the kind (``check_storable``'s
    ``top_level_dollar``)."""
    saved = _STORAGE_RULES.refuse_dollar_names
    _STORAGE_RULES.refuse_dollar_names = kind not in ("pipeline", "operators")
    try:
        yield
    finally:
        _STORAGE_RULES.refuse_dollar_names = saved


def check_storable(doc: dict, *, top_level_dollar: bool = False, from_oplog: bool = False) -> None:
    """_id type rules (insert and replacement) and top-level ``$`` names: mongod 5.0+ stores them on
    insert (``top_level_dollar``; ``$ref``/``$id``/``$db`` too, jstests/core/field_name_validation.js)
    but refuses them in a replacement document; ``_id`` never holds a ``$``-prefixed field (52).

    ``from_oplog`` (applyOps): mongod's oplog application stores what the entry says, ``$`` names
    anywhere (repl/oplog.cpp applyOperation_inlock inserts without insert.cpp's fixDocumentForInsert;
    its updates are fromOplogApplication, which UpdateStage does not validate for storage). The
    ``_id`` type rules stay: Tidemark's ``_id`` index and point reads take one scalar-or-document key."""
    _id = doc.get("_id")
    if isinstance(_id, list):
        raise MongoError(ErrorCode.InvalidIdField, "The '_id' value cannot be of type array")
    if isinstance(_id, (Regex, re.Pattern)):
        raise MongoError(ErrorCode.InvalidIdField, "can't use a regex for _id")
    if from_oplog:
        return
    if isinstance(_id, dict):
        for k in _id:
            if type(k) is str and k.startswith("$"):
                raise MongoError(ErrorCode.DollarPrefixedFieldName,
                                 f"_id fields may not contain '$'-prefixed fields: {k} is not valid for storage.")
    if top_level_dollar:
        return
    if not _STORAGE_RULES.refuse_dollar_names:
        return
    for k in doc:
        if type(k) is str and k.startswith("$"):
            raise MongoError(ErrorCode.DollarPrefixedFieldName,
                             f"The dollar ($) prefixed field '{k}' in '{k}' is not allowed in the context of an "
                             "update's replacement document. Consider using an aggregation pipeline with "
                             "$replaceWith.")


# mongod's answer for a document over 16 MiB, by the write storing it: an insert's is fixDocumentForInsert's,
# an update's result UpdateStage's and an upserted document (``_id`` included) UpsertStage's, whatever
# the kind of update (operators, replacement, pipeline; update, findAndModify, applyOps, $merge)
_TOO_LARGE = {
    "insert": (ErrorCode.BadValue, "object to insert too large. size in bytes: {size}, max size: {limit}"),
    "update": (17419, "Resulting document after update is larger than {limit}"),
    "upsert": (17420, "Document to upsert is larger than {limit}"),
}


def encode_doc(doc: dict, write: str = "insert") -> bytes:
    """BSON bytes of a document to store (``_id`` in place); beyond 16 MiB the answer of the ``write``
    storing it (``_TOO_LARGE``: "insert", "update" or "upsert"). The one size check of every write:
    the size is known only once encoded, and the encoding is what is stored."""
    raw = encode(doc)
    if len(raw) > MAX_BSON_SIZE:
        code, message = _TOO_LARGE[write]
        raise MongoError(code, message.format(size=len(raw), limit=MAX_BSON_SIZE))
    return raw


class Validator:
    """A collection's validator (query filter or $jsonSchema) with its level and action.

    A query validator follows the collection's default collation (``$jsonSchema`` ignores every
    collation, as in mongod); it is compiled once, here, and cached per collection by ``validator_for``.
    A document it refuses gets mongod's explanation (``validation_error_info``), generated only then:
    in the 121 error (action "error") or in warning 20294 of the log (action "warn")."""

    def __init__(self, options: dict, ns: str = ""):
        self.spec = options.get("validator") or None
        self.level = options.get("validationLevel", "strict")
        self.action = options.get("validationAction", "error")
        self.ns = ns
        self._fn: Callable[[dict], bool] | None = None
        self._collation = None
        if self.spec and self.level != "off":
            from tidemark.query.match import compile_filter

            self._collation = parse_collation(options["collation"]) if options.get("collation") else None
            self._fn = compile_filter(self.spec, collation=self._collation)

    def accepts(self, doc: dict) -> bool:
        """Whether ``doc`` passes the validator whatever its action (validationLevel "off" passes every
        document): what validate reads (mongod's checkValidation)."""
        return self._fn is None or bool(self._fn(doc))

    def error_info(self, doc: dict) -> dict:
        """The ``errInfo`` of a document the validator refuses."""
        from tidemark.query.validation_error import validation_error_info

        return validation_error_info(self.spec or {}, doc, collation=self._collation)

    def check(self, doc: dict, *, old_doc: dict | None = None) -> None:
        """Raise 121 DocumentValidationFailure when ``doc`` fails (moderate: only if old_doc passed);
        with action "warn", log mongod's warning instead."""
        fn = self._fn
        if fn is None:
            return
        if self.action == "error":
            if (old_doc is not None and self.level == "moderate" and not fn(old_doc)) or fn(doc):
                return
            raise MongoError(ErrorCode.DocumentValidationFailure, "Document failed validation",
                             extra={"errInfo": self.error_info(doc)})
        try:
            if (old_doc is not None and self.level == "moderate" and not fn(old_doc)) or fn(doc):
                return
        except MongoError:
            pass  # a validator that throws warns and accepts the write (mongod's 'warn' action)
        log.warning("STORAGE", 20294, "Document would fail validation", namespace=self.ns,
                    document=relaxed_json(doc), errInfo=relaxed_json(self.error_info(doc)))


# --------------------------------------------------------------------------------------------------
# validator parsing (create/collMod): mongod's allowed-features mask of validator MatchExpressions
# --------------------------------------------------------------------------------------------------

# kDefaultSpecialFeatures has neither kText, kJavascript nor kGeoNear: these answer 2 BadValue.
# Expressions that refuse to be parsed while isParsingCollectionValidator is set (code, message).
_VALIDATOR_BANNED_EXPRESSIONS = {
    "$function": (4660800, "$function cannot be used inside a validator."),
    "$_internalJsEmit": (4660801, "$_internalJsEmit cannot be used inside a validator."),
    "$rand": (3040500, "$rand not allowed inside collection validators"),
}
_INTERNAL_DBS = frozenset({"admin", "local", "config"})


def parse_validator(spec: Any, *, level: str | None, action: str | None) -> None:
    """Parse ``spec`` as mongod parses a validator given to create/collMod: the query language minus
    ``$text``, ``$where`` and the near operators, ``$expr`` without ``$function``/``$rand`` or an
    unbound ``$$variable`` (17276), and — with action 'warn' or level 'moderate' — no encryption
    keyword (224). Raises the MongoError mongod answers; the features are checked in document order,
    before the rest of the parse (run once per create/collMod, never per document)."""
    from tidemark.query.expressions import defined_variables
    from tidemark.query.jsonschema import encrypt_keywords_refused
    from tidemark.query.match import compile_filter
    from tidemark.query.match_parse import refuse_special_features

    if not spec:
        return
    refuse_special_features(spec, _VALIDATOR_BANNED_EXPRESSIONS)  # (a non-document: compile_filter's error)
    with defined_variables(()), encrypt_keywords_refused(action == "warn" or level == "moderate"):
        compile_filter(spec)


def bypasses_validation() -> bool:
    """The running command's ``bypassDocumentValidation``, read from the operation bound to this
    thread: the $out/$merge callbacks of a pipeline do not see the command otherwise. Call it where
    the command runs, not on the writer thread (no operation is bound there)."""
    command = getattr(interrupt.current(), "command", None)
    if not isinstance(command, Mapping):
        return False
    # mongod reads the flag as BSONElement::trueValue: numbers by value, any other type ("false") true
    flag = command.get("bypassDocumentValidation")
    if flag is None or isinstance(flag, bool):
        return bool(flag)
    if isinstance(flag, int | float):
        return flag != 0
    if isinstance(flag, Decimal128):
        return not flag.to_decimal().is_zero()
    return True


def uuid_of(info: Any) -> uuid_mod.UUID:
    """A collection's UUID (its catalog entry keeps the 16 bytes) as a ``uuid.UUID``: how messages and
    option documents show it (``UUID("...")``)."""
    value = info.uuid
    return value if isinstance(value, uuid_mod.UUID) else uuid_mod.UUID(bytes=bytes(value))


def check_validator_namespace(ns: str, validator: Any, uuid: Any) -> None:
    """mongod's checkValidatorCanBeUsedOnNs: no validator on a system collection (time-series buckets
    aside) nor on a collection of the admin, local or config database (72 InvalidOptions)."""
    if not validator:
        return
    db, _, coll = ns.partition(".")
    if coll.startswith(BUCKETS_PREFIX):
        return
    if coll.startswith("system."):
        raise MongoError(ErrorCode.InvalidOptions,
                         f"Document validators not allowed on system collection {ns} with UUID {uuid}")
    if db in _INTERNAL_DBS:
        raise MongoError(ErrorCode.InvalidOptions, f"Document validators are not allowed on collection {ns} "
                                                   f"with UUID {uuid} in the {db} internal database")


_VALIDATORS: dict[tuple, Validator] = {}


def validator_for(info) -> Validator | None:
    """Cached per collection uuid and options; None when the collection has no validator."""
    opts = info.options or {}
    if not opts.get("validator"):
        return None
    key = (info.uuid, info.ns, repr(opts.get("validator")), opts.get("validationLevel"), opts.get("validationAction"))
    v = _VALIDATORS.get(key)
    if v is None:
        if len(_VALIDATORS) > 1024:
            _VALIDATORS.clear()
        v = _VALIDATORS[key] = Validator(opts, info.ns)
    return v


# --------------------------------------------------------------------------------------------------
# index glue
# --------------------------------------------------------------------------------------------------


def index_keys(info, doc: dict) -> dict[str, list[bytes]]:
    """Keys of ``doc`` for every index of the collection (what storage insert/update/delete take)."""
    return index_key_map(info.indexes, doc)


def index_signature(indexes) -> tuple:
    """What key extraction depends on (names, key patterns, sparse, partial filter) — equal
    signatures mean keys computed against one index list are valid for the other."""
    return tuple((s["name"], tuple(s["key"].items()), bool(s.get("sparse")),
                  repr(s.get("partialFilterExpression"))) for s in indexes)


def write_keys(w, info, doc: dict, precomputed: tuple[dict, set] | None = None):
    """(current info, index keys) for writing ``doc``: first flags every index the document makes
    multikey (``multikey: True`` in the stored spec), so the planner knows when a two-sided range is
    unsafe. Returns a refreshed CollectionInfo when a flag was set (storage requires current infos).
    ``precomputed`` = ``index_key_map_multikey`` result computed off the writer thread against an index
    list with the same ``index_signature``."""
    keys, multikey = precomputed or index_key_map_multikey(info.indexes, doc)
    if multikey:
        new_flags = [s["name"] for s in info.indexes
                     if s["name"] in multikey and not s.get(MULTIKEY_FLAG)]
        if new_flags:
            for name in new_flags:
                info = w.set_index_options(info, name, {MULTIKEY_FLAG: True})
    return info, keys


def build_index_entries(w, info, spec: dict) -> list[tuple[bytes, bytes]]:
    """(key, rid) entries of every document for a new index (computed before storage sees them);
    flags ``spec`` multikey (``multikey: True``) when a document expands an array, as ``write_keys``
    does for the documents written later."""
    keyer = keyer_for(spec)
    entries = []
    multikey = False
    for rid, raw in w.scan(info):
        rid = bytes(rid)
        keys, mk = keyer.entries_multikey(decode(raw))
        multikey = multikey or mk
        for key, _values in keys:
            entries.append((key, rid))
    if multikey:
        spec[MULTIKEY_FLAG] = True
    return entries


def public_index_spec(spec: dict) -> dict:
    """An index spec as listIndexes shows it (internal flags removed)."""
    return {k: v for k, v in spec.items() if k != MULTIKEY_FLAG}


def duplicate_key_error(info, index_name: str, doc: dict | None, key: bytes | None = None) -> MongoError:
    """11000 with mongod's message, keyPattern and keyValue."""
    spec = next((s for s in info.indexes if s["name"] == index_name), None)
    if spec is None:
        key_pattern, key_value = {"_id": 1}, {"_id": (doc or {}).get("_id")}
    elif doc is None:
        from tidemark.storage.keys import decode_key

        fields, directions = key_fields(spec["key"])
        key_pattern = dict(spec["key"])
        try:
            key_value = dict(zip(fields, decode_key(cast(bytes, key), directions), strict=False))  # a None key fails as before
        except Exception:  # noqa: BLE001 - a message detail only
            key_value = {f: None for f in fields}
    else:
        key_pattern = dict(spec["key"])
        key_value = keyer_for(spec).key_value(doc, key)
    shown = ", ".join(f"{k}: {format_value(v)}" for k, v in key_value.items())
    # a clustered collection's record key is no index: mongod's record store names none
    where = "" if spec is None and getattr(info, "clustered", False) else f" index: {index_name}"
    return MongoError(
        ErrorCode.DuplicateKey,
        f"E11000 duplicate key error collection: {info.ns}{where} dup key: {{ {shown} }}",
        extra={"keyPattern": key_pattern, "keyValue": key_value},
    )


def format_value(v: Any) -> str:
    """mongod's short rendering of a value inside error messages."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if type(v) is str:
        return '"' + v.replace('"', '\\"') + '"'
    if isinstance(v, ObjectId):
        return f"ObjectId('{v}')"
    if isinstance(v, Int64):
        return str(int(v))
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else f"{v:.1f}"
    if isinstance(v, datetime.datetime):
        return f"new Date({int(v.replace(tzinfo=datetime.UTC).timestamp() * 1000)})"
    if isinstance(v, uuid_mod.UUID):
        return f"UUID(\"{v}\")"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k}: {format_value(x)}" for k, x in v.items()) + " }" if v else "{}"
    if isinstance(v, list):
        return "[ " + ", ".join(format_value(x) for x in v) + " ]" if v else "[]"
    return bson_repr(v)  # the other BSON types as query.value_repr renders them (BinData, Decimal128...)


# --------------------------------------------------------------------------------------------------
# read streams (fresh read transaction per chunk; nothing held while a cursor waits)
# --------------------------------------------------------------------------------------------------

CHUNK = 256
# A stream's first read takes FIRST_CHUNK records and each next one twice as many, up to CHUNK: a cursor
# left idle after a small first batch (batchSize 1, or 101 of a big collection) holds a few records,
# not 256 (measured: 59 KB per idle cursor over 230-byte documents, most of it kept by the allocator
# after the cursor closed), while a full scan still reads 256 per transaction after 5 reads.
FIRST_CHUNK = 8


def _chunk_sizes(chunk: int) -> Iterator[int]:
    size = min(FIRST_CHUNK, chunk)
    while True:
        yield size
        size = min(size * 2, chunk)


def scan_docs(engine, ns: str, uuid, *, reverse: bool = False, chunk: int = CHUNK,
              stats: dict | None = None, raw: bool = False,
              resume_after: bytes | None = None, record_range: Any = None) -> Iterator[tuple[bytes, dict]]:
    """(rid, document) in record order; stops if the collection disappears or is re-created.

    ``raw=True`` yields RawBSONDocuments over the stored bytes (no decode/re-encode) for callers that
    pass documents straight to a cursor. ``resume_after``: start past this record, which must exist
    (a find's ``$_resumeAfter``: 211 KeyNotFound otherwise, as mongod). ``record_range``: a clustered
    collection's inclusive ``_id`` range (``clustered_range.RecordRange``), None for every record."""
    lo, hi = (record_range.lo, record_range.hi) if record_range is not None else (None, None)
    make = _raw_doc if raw else decode
    if stats is not None:
        stats.setdefault("docs", 0)
    last: bytes | None = resume_after
    first = True
    for chunk in _chunk_sizes(chunk):  # noqa: B020 - the growing size of this read
        batch: list[tuple[bytes, bytes]] = []
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None or info.uuid != uuid:
                return
            if first:
                if resume_after is not None and r.get(info, resume_after) is None:
                    raise MongoError(ErrorCode.KeyNotFound, "Failed to resume collection scan: the recordId "
                                                            "from which we are attempting to resume no longer "
                                                            "exists in the collection")
                if (info.options or {}).get("capped"):
                    break  # (read below, with its position checked at each getMore)
                first = False
            for item in r.scan(info, start_after=last, reverse=reverse, lo=lo, hi=hi):
                batch.append((bytes(item[0]), bytes(item[1])))
                if len(batch) >= chunk:
                    break
        if stats is None:
            for rid, data in batch:
                yield rid, make(data)
        else:
            for rid, data in batch:
                # counted as handed on, not as read ahead: a cursor's batch examined what it consumed
                stats["docs"] += 1
                yield rid, make(data)
        if len(batch) < chunk:
            return
        last = batch[-1][0]
    if first:  # a capped collection
        yield from _capped_scan(engine, ns, uuid, reverse=reverse, chunk=chunk, stats=stats, make=make,
                                last=resume_after, lo=lo, hi=hi)


class _Draws(threading.local):
    """The getMore this thread is drawing a batch for (``restoring``): a fresh token each time."""
    token: object = None
    held_back = False


_DRAWS = _Draws()


def restoring(held_back: bool) -> None:
    """The cursor registry's call before it draws a getMore's batch on this thread (mongod's
    restoreState): a capped collection's scan suspended in that cursor checks its position when it is
    next pulled (``_capped_scan``). ``held_back``: the registry holds the last document it drew (a peek
    past a full batch), so the client's position is the document before it."""
    _DRAWS.token = object()
    _DRAWS.held_back = held_back


def position_lost(rid: bytes) -> MongoError:
    """136 CappedPositionLost: the record a scan of a capped collection stood on was trimmed (or deleted)."""
    return MongoError(ErrorCode.CappedPositionLost,
                      "CollectionScan died due to position in capped collection being deleted. "
                      f"Last seen record id: RecordId({int.from_bytes(rid, 'big')})")


def _capped_scan(engine, ns: str, uuid, *, reverse: bool, chunk: int, stats: dict | None,
                 make: Callable[[bytes], Any], last: bytes | None, lo: Any, hi: Any) -> Iterator[tuple[bytes, Any]]:
    """``scan_docs`` of a capped collection. A scan resumed by a later getMore (``restoring``) first
    checks that its position — the record of the last document the client was given — is still
    there, else 136 (``position_lost``), as mongod's collection scan does on restoring: the trim
    overtook the reader. What it had read ahead is then dropped and read again past its last record
    (read before the trim, some of it may be gone). The token compare is the per-document cost, for
    capped collections only."""
    seen = _DRAWS.token
    before: bytes | None = None
    for size in _chunk_sizes(chunk):
        batch: list[tuple[bytes, bytes]] = []
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None or info.uuid != uuid:
                return
            for item in r.scan(info, start_after=last, reverse=reverse, lo=lo, hi=hi):
                batch.append((bytes(item[0]), bytes(item[1])))
                if len(batch) >= size:
                    break
        restored = False
        for rid, data in batch:
            if stats is not None:  # (counted as returned: what a restore drops is read again)
                stats["docs"] = stats.get("docs", 0) + 1
            before, last = last, rid
            yield rid, make(data)
            if _DRAWS.token is not seen:
                seen = _DRAWS.token
                _check_position(engine, ns, uuid, before if _DRAWS.held_back else last)
                restored = True
                break
        if not restored and len(batch) < size:
            return


def _check_position(engine, ns: str, uuid, rid: bytes | None) -> None:
    if rid is None:  # nothing given to the client yet
        return
    with engine.read() as r:
        info = r.get_collection(ns)
        # (a dropped or re-created collection: the registry's catalog rules answer for the cursor)
        if info is not None and info.uuid == uuid and r.get(info, rid) is None:
            raise position_lost(rid)


def index_docs(engine, ns: str, uuid, plan, *, chunk: int = CHUNK, stats: dict | None = None,
               seen: set[bytes] | None = None,
               on_key: Callable[[dict, bytes, dict], None] | None = None) -> Iterator[tuple[bytes, dict]]:
    """(rid, document) through an index plan's intervals, each record once (multikey de-dup;
    ``seen`` may be shared across the branches of an OR plan). ``on_key(index, key, doc)``: told the
    index entry each document was met at (the first, for a multikey one) before it is yielded."""
    if plan.kind == "OR":
        shared: set[bytes] = set()
        for branch in plan.branches:
            yield from index_docs(engine, ns, uuid, branch, chunk=chunk, stats=stats, seen=shared, on_key=on_key)
        return
    seen = set() if seen is None else seen
    name = plan.index["name"]
    intervals = list(reversed(plan.intervals)) if plan.reverse else list(plan.intervals)
    sizes = _chunk_sizes(chunk)
    counts = stats if stats is not None else {}
    counts.setdefault("keys", 0)
    counts.setdefault("docs", 0)
    # one read transaction serves as many intervals as the chunk holds, an interval counting as an
    # entry (a $in of 400,000 points is 400,000 intervals: a transaction each cost more than their
    # entries), and the interruption check runs between transactions
    pos, resume = 0, None
    while pos < len(intervals):
        interrupt.check()
        chunk = next(sizes)
        # (rid, document bytes, key, the entries read since the previous document: its own and the
        # duplicates before it): keys and documents are counted as each document is handed on, not
        # as the chunk is read ahead, so a cursor's batch examined what it consumed
        batch: list[tuple[bytes, bytes, bytes, int]] = []
        n = taken = 0
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None or info.uuid != uuid:
                return
            started = pos
            index = r.index_reader(info, name)  # (looked up once for the chunk's intervals)
            while pos < len(intervals) and n + pos - started < chunk:
                lo, hi, lo_incl, hi_incl = intervals[pos]
                for key, rid in index.scan(lo, hi, lo_inclusive=lo_incl, hi_inclusive=hi_incl,
                                           reverse=plan.reverse, start_after=resume):
                    key, rid = bytes(key), bytes(rid)
                    n += 1
                    resume = (key, rid)
                    if rid in seen:
                        if n >= chunk:
                            break
                        continue
                    seen.add(rid)
                    raw = r.get(info, rid)
                    if raw is not None:
                        batch.append((rid, bytes(raw), key, n - taken))
                        taken = n
                    if n >= chunk:
                        break
                else:
                    pos, resume = pos + 1, None
        for rid, raw, key, keys in batch:
            counts["keys"] += keys
            counts["docs"] += 1
            doc = decode(raw)
            if on_key is not None:
                on_key(plan.index, key, doc)
            yield rid, doc
        counts["keys"] += n - taken  # entries past the chunk's last document (duplicates), once passed


def _raw_doc(data: bytes):
    from bson.raw_bson import RawBSONDocument

    from tidemark.protocol.codec import RAW_CODEC_OPTIONS

    return RawBSONDocument(data, RAW_CODEC_OPTIONS)


def plan_docs(engine, info, plan, *, stats: dict | None = None, raw: bool = False) -> Iterator[dict]:
    """Documents of a collection through ``plan`` (no filtering here: callers re-apply the filter).
    ``raw`` (collection scans only) yields undecoded RawBSONDocuments.

    The read's DocMeta (``plan.meta``) gets what a projection asked for (``DocMeta.wants``, decided
    when it was parsed; nothing is made otherwise): ``indexKey``, the key of the index entry an
    index scan met the document at; ``sortKey``, when the plan yields the sort's order itself (no
    sort runs to make it), from the find's ``DocMeta.sort_keys``."""
    if plan.meta is None:  # (the common read: no metadata, no extra layer)
        return _plan_docs(engine, info, plan, stats, raw, None)
    return _plan_docs_with_meta(engine, info, plan, stats, raw)


def _plan_docs_with_meta(engine, info, plan, stats: dict | None, raw: bool) -> Iterator[dict]:
    # a generator: what is wanted is read at the first pull, once every consumer was parsed (an
    # aggregation parses the stages after the source opened)
    meta = plan.meta
    wants = meta.wants
    on_key = _index_key_noter(meta) if "indexKey" in wants and plan.kind in ("IXSCAN", "OR") else None
    sort_keys = meta.sort_keys if "sortKey" in wants and plan.provides_sort else None
    if sort_keys is None:
        yield from _plan_docs(engine, info, plan, stats, raw, on_key)
        return
    for doc in _plan_docs(engine, info, plan, stats, raw, on_key):
        meta.set(doc, "sortKey", sort_keys(doc))
        yield doc


def _plan_docs(engine, info, plan, stats: dict | None, raw: bool,
               on_key: Callable[[dict, bytes, dict], None] | None) -> Iterator[dict]:
    if plan.kind == "COLLSCAN":
        it = scan_docs(engine, info.ns, info.uuid, reverse=plan.natural_reverse, stats=stats, raw=raw,
                       resume_after=plan.resume_after, record_range=plan.record_range)
    elif plan.kind in _SPECIAL_KINDS:
        seen: set[bytes] = set()
        it = _special_pairs(plan, lambda intervals, index=None: index_docs(
            engine, info.ns, info.uuid, Plan("IXSCAN", index=index or plan.index, intervals=intervals),
            stats=stats, seen=seen))
    else:
        it = index_docs(engine, info.ns, info.uuid, plan, stats=stats, on_key=on_key)
    if isinstance(plan.meta, RecordIdMeta):  # find showRecordId: the record id rides in the document
        for rid, doc in it:
            doc["$recordId"] = record_id_value(rid, info.clustered)
            yield doc
        return
    for _, doc in it:
        yield doc


def _index_key_noter(meta: DocMeta) -> Callable[[dict, bytes, dict], None]:
    """``on_key`` for ``index_docs``: the document's ``indexKey`` metadata, mongod's key document
    (named by the key pattern's fields) of the entry the scan met. Its values are the document's own
    (types kept, which the encoded key loses) for the entry whose encoding is that key; under the
    index's collation each string is the collator's comparison key, as the index holds it."""
    by_index: dict[str, tuple[Any, Any]] = {}

    def note(index: dict, key: bytes, doc: dict) -> None:
        known = by_index.get(index["name"])
        if known is None:
            keyer = keyer_for(index)
            known = by_index[index["name"]] = (keyer, getattr(keyer, "collation", None))
        keyer, collation = known
        entries = keyer.entries(doc)
        if not entries:
            return
        values = entries[0][1]
        if len(entries) > 1:
            values = next((v for encoded, v in entries if encoded == key), values)
        if collation is not None:
            values = [comparison_key_value(v, collation) for v in values]
        meta.set(doc, "indexKey", key_document(keyer, values))

    return note


class RecordIdMeta(DocMeta):
    """The metadata table of a find with ``showRecordId``: ``plan_docs`` puts each document's record id
    in it as the field ``$recordId`` (the find's command layer moves it past the projection)."""

    __slots__ = ()


def record_id_value(rid: bytes, clustered: bool) -> Any:
    """``$recordId`` as mongod shows it: the long of a counter record id, a clustered collection's key
    bytes as BinData (mongod's form for its string record ids; the bytes are Tidemark's key encoding)."""
    return bytes(rid) if clustered else Int64(int.from_bytes(rid, "big"))


def record_id_from_value(value: Any, clustered: bool) -> bytes | None:
    """Inverse of ``record_id_value`` for a resume token's ``$recordId`` (None: from the start)."""
    if value is None:
        return None
    if clustered:
        if not isinstance(value, bytes):
            raise MongoError(ErrorCode.BadValue, "Malformed resume token: the '$recordId' of a clustered "
                                                 "collection is BinData")
        return bytes(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MongoError(ErrorCode.BadValue, "Malformed resume token: the '$recordId' of a collection is a "
                                             "non-negative NumberLong")
    return int(value).to_bytes(8, "big")


_SPECIAL_KINDS = ("TEXT", "GEO_NEAR")


def _special_pairs(plan, scan) -> Iterator[tuple[bytes, dict]]:
    """A $text or $near read: ``scan(intervals, index=None)`` yields not-yet-seen (rid, doc) of index
    intervals, of the plan's index or of ``index`` (a $text union's sibling scans)."""
    from tidemark.query import plan_special

    return plan_special.special_scan(plan, scan)


def docs_in_txn(r, info, plan, stats: dict | None = None) -> Generator[tuple[bytes, dict], None, None]:
    """(rid, document) through ``plan`` inside one transaction (the writer's, for updates/deletes).
    ``stats``: its ``keys`` / ``docs`` grow by the index entries and records examined, as each is
    handed on (a caller that stops at its first match counts only what it consumed, as mongod's)."""
    counts = stats if stats is not None else {}
    counts.setdefault("keys", 0)
    counts.setdefault("docs", 0)
    if plan.kind == "COLLSCAN":
        bounds = plan.record_range
        for rid, raw in r.scan(info, reverse=plan.natural_reverse, lo=bounds and bounds.lo, hi=bounds and bounds.hi):
            counts["docs"] += 1
            yield bytes(rid), decode(raw)
        return
    seen: set[bytes] = set()
    if plan.kind in _SPECIAL_KINDS:
        yield from _special_pairs(plan, lambda intervals, index=None: _index_docs_in_txn(
            r, info, Plan("IXSCAN", index=index or plan.index, intervals=intervals), seen, counts))
        return
    for branch in (plan.branches if plan.kind == "OR" else [plan]):
        yield from _index_docs_in_txn(r, info, branch, seen, counts)


def _index_docs_in_txn(r, info, plan, seen: set[bytes], counts: dict[str, int]) -> Iterator[tuple[bytes, dict]]:
    intervals = list(reversed(plan.intervals)) if plan.reverse else list(plan.intervals)
    for iv in intervals:
        for _key, rid in r.index_scan(info, plan.index["name"], iv.lo, iv.hi, lo_inclusive=iv.lo_incl,
                                      hi_inclusive=iv.hi_incl, reverse=plan.reverse):
            counts["keys"] += 1  # every entry read, a multikey duplicate too (mongod's keysExamined)
            rid = bytes(rid)
            if rid in seen:
                continue
            seen.add(rid)
            raw = r.get(info, rid)
            if raw is not None:
                counts["docs"] += 1
                yield rid, decode(raw)


def bson_size(doc: dict) -> int:
    return len(encode(doc))


_NO_VALUE = object()


def system_js_globals(engine, db: str) -> tuple[tuple[str, Any], ...]:
    """``(name, value)`` of each document of ``<db>.system.js`` in record order: the globals mongod's
    Scope::loadStored gives a ``$where`` or mapReduce scope (a Code value becomes a function). 10209 for
    an ``_id`` that is no string, 10210 for a missing ``value``, 4546000 for a CodeWithScope one."""
    with engine.read() as r:
        info = namespace.lookup(r, db, "system.js").info
    if info is None:
        return ()
    stored: list[tuple[str, Any]] = []
    for _, doc in scan_docs(engine, info.ns, info.uuid):
        name, value = doc.get("_id"), doc.get("value", _NO_VALUE)
        if type(name) is not str:
            raise MongoError(10209, "name has to be a string")
        if value is _NO_VALUE:
            raise MongoError(10210, "value has to be set")
        if isinstance(value, Code) and value.scope is not None:
            raise MongoError(4546000, "BSON type 'CodeWithScope' not supported in system.js scripts. As an "
                                      f"alternative use 'Code'. Script _id value: '{name}'")
        stored.append((name, value))
    return tuple(stored)
