"""Namespace resolution: what ``<db>.<name>`` is, found once per command by point lookups.

``lookup(r, db, name)`` -> ``Namespace``: the catalog entry of the name (one get), its
``system.views`` document (one get through the ``_id`` index of ``<db>.system.views``), and, for a
view, one more of each per level of the view chain; for a time-series view (or its
``system.buckets.<c>``) the buckets collection's entry. The cost does not depend on how many views
or collections the database holds (listing them — listCollections — still scans).

Kinds (``Namespace.kind``):

- ``missing``    — neither a collection nor a view;
- ``regular``    — an ordinary collection (``capped`` when it has the ``capped`` option);
- ``view``       — a ``system.views`` entry that is not time-series (``base``/``pipeline``: the chain
  followed to its base collection; ``ts_view``: set when the chain ends at a time-series view);
- ``timeseries`` — the view ``db.c`` of a time-series collection (``buckets_info``: its options are
  ``tidemark.timeseries.ddl.stored_options(buckets_info)``);
- ``buckets``    — ``db.system.buckets.c`` (clustered; ``buckets_info`` is ``info``);
- ``system``     — any other ``system.*`` collection that exists.

The module is part of ``tidemark.core``, below the command families, the read core and the time-series
engine (it imports protocol and ``tidemark.query`` only), so each of them can hand the one object down.
A ``Namespace`` describes one read snapshot; writers re-check what they rely on inside their own
write transaction, as before.

``collectionUUID``: a command naming the UUID it expects (``collection_uuid_arg``) hands it to
``lookup`` (or ``resolve``/``lookup_once``), which raises ``CollectionUUIDMismatch`` (361) unless
``db.name`` is a collection with that UUID — mongod's checkCollectionUUIDMismatch. A view never
matches (it has no UUID; a time-series collection's view neither: its buckets collection has the
UUID), a missing name neither. The error names the collection of the database that has the UUID
(``actualCollection``, null when none). Read commands answer it as their error; writes turn it into
one write error per statement (``CollectionUUIDMismatch.namespace`` says what was resolved).
"""

from __future__ import annotations

import uuid as uuid_module
from dataclasses import dataclass, field
from typing import Any, cast

from bson.binary import Binary

from tidemark.arguments import wrong_type
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.index_keys import keyers_for
from tidemark.storage.readview import ReadView

# The one spelling of the two system namespaces every layer names (mongod's NamespaceString).
SYSTEM_VIEWS = "system.views"
BUCKETS_PREFIX = "system.buckets."
MAX_VIEW_DEPTH = 20
ID_INDEX = "_id_"

MISSING = "missing"
REGULAR = "regular"
CAPPED = "capped"
VIEW = "view"
TIMESERIES = "timeseries"
BUCKETS = "buckets"
SYSTEM = "system"


def is_timeseries_view(view_doc: dict | None) -> bool:
    """True for the system.views entry of a time-series collection (pipeline starts with
    ``$_internalUnpackBucket``). The one definition of the test."""
    if not view_doc:
        return False
    pipeline = view_doc.get("pipeline") or []
    return bool(pipeline) and isinstance(pipeline[0], dict) and "$_internalUnpackBucket" in pipeline[0]


def is_buckets_collection(name: str, info: Any) -> bool:
    """``system.buckets.<c>`` of a time-series collection (its bucket documents)."""
    return info is not None and info.clustered and name.startswith(BUCKETS_PREFIX)


def find_view(r: Any, db: str, name: str) -> tuple[bytes | None, dict | None]:
    """(record id, document) of the ``system.views`` entry of ``db.name``, else (None, None).

    A point lookup through the ``_id`` index of ``db.system.views`` (a scan only if that index is
    missing, which Tidemark never creates). ``r``: a read view or a write transaction."""
    info = r.get_collection(f"{db}.{SYSTEM_VIEWS}")
    if info is None:
        return None, None
    target = f"{db}.{name}"
    if ID_INDEX not in info.index_idents:
        for rid, raw in r.scan(info):
            doc = decode(raw)
            if doc.get("_id") == target:
                return bytes(rid), doc
        return None, None
    key = _id_key(info, target)
    for _key, rid in r.index_scan(info, ID_INDEX, key, key):
        raw = r.get(info, bytes(rid))
        if raw is not None:
            return bytes(rid), decode(raw)
    return None, None


def _id_key(info: Any, value: str) -> bytes:
    """The ``_id`` index key of a view document (the keys writes store, so lookups always agree)."""
    keyer = next(k for k in keyers_for(info.indexes) if k.name == ID_INDEX)  # cached per catalog entry
    return keyer.keys({"_id": value})[0]


def get_view(r: Any, db: str, name: str) -> dict | None:
    """The ``system.views`` document of ``db.name`` (point lookup), or None."""
    return find_view(r, db, name)[1]


def all_views(r: Any, db: str) -> list[dict]:
    """Every view definition of ``db`` — for listing only (listCollections, dbStats); lookups of
    one name use ``find_view``."""
    info = r.get_collection(f"{db}.{SYSTEM_VIEWS}")
    if info is None:
        return []
    return [decode(raw) for _, raw in r.scan(info)]


@dataclass
class Namespace:
    """``db.name`` resolved: its kind and everything the command families and the read core need.

    For a view, ``chain`` is the view documents followed (``chain[0]`` = ``view``), ``base`` the name
    the chain ends at and ``base_info`` its catalog entry, and ``pipeline`` the combined pipeline to
    run on it. When the chain ends at a time-series view, ``ts_view`` is that view, ``base`` its
    name and ``pipeline`` only the *outer* views' stages (what runs after its unpack stage)."""

    db: str
    name: str
    kind: str
    info: Any = None  # catalog entry of db.name (None for views and missing names)
    view: dict | None = None  # system.views document of db.name
    view_rid: bytes | None = None
    chain: tuple = ()
    base: str = ""
    base_info: Any = None
    pipeline: list = field(default_factory=list)
    ts_view: dict | None = None
    buckets_info: Any = None  # for time-series views and system.buckets.<c>
    followed: bool = True  # False: a view whose chain was not followed (lookup(follow=False))

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def is_view(self) -> bool:
        return bool(self.chain)

    @property
    def top_view(self) -> dict | None:
        return self.chain[0] if self.chain else None

    @property
    def is_timeseries(self) -> bool:
        """``db.name`` is the view of a time-series collection."""
        return self.kind == TIMESERIES

    @property
    def is_buckets(self) -> bool:
        return self.kind == BUCKETS

    @property
    def collation(self) -> dict | None:
        """The stored default collation (of the view for views, else of the collection)."""
        if self.chain:
            return self.chain[0].get("collation")
        if self.info is not None:
            return (self.info.options or {}).get("collation")
        return None


def lookup(r: Any, db: str, name: str, *, follow: bool = True, collection_uuid: Any = None) -> Namespace:
    """``db.name`` resolved inside the read view (or write transaction) ``r``: point lookups only.

    ``follow``: follow a view chain to its base (depth limit 20 like mongod: 149 beyond it).
    ``collection_uuid``: the UUID the command expects ``db.name`` to have (see the module)."""
    resolved = _lookup(r, db, name, follow)
    check_collection_uuid(r, resolved, collection_uuid)
    return resolved


# (db, name, follow) -> (snapshot key, resolution): a resolution read in a read view is reused by
# every later lookup in a view of the same snapshot (same engine, same LMDB transaction id: every
# commit, a DDL or any other write, advances it, so nothing can have changed). Write transactions
# never use it (their pending changes are their own). The Namespace is shared: read-only.
_RESOLVED: dict[tuple[str, str, bool], tuple[Any, Namespace]] = {}
_RESOLVED_MAX = 1024


def _lookup(r: Any, db: str, name: str, follow: bool) -> Namespace:
    if type(r) is not ReadView:
        return _resolve(r, db, name, follow)
    snapshot = r.snapshot_key()
    key = (db, name, follow)
    hit = _RESOLVED.get(key)
    if hit is not None and hit[0][0] is snapshot[0] and hit[0][1] == snapshot[1]:
        return hit[1]
    resolved = _resolve(r, db, name, follow)
    if len(_RESOLVED) >= _RESOLVED_MAX:
        _RESOLVED.clear()
    _RESOLVED[key] = (snapshot, resolved)
    return resolved


def _resolve(r: Any, db: str, name: str, follow: bool) -> Namespace:
    info = r.get_collection(f"{db}.{name}")
    if info is not None:
        if is_buckets_collection(name, info):
            return Namespace(db, name, BUCKETS, info, base=name, base_info=info, buckets_info=info)
        if name.startswith("system."):
            kind = SYSTEM
        else:
            kind = CAPPED if (info.options or {}).get("capped") else REGULAR
        return Namespace(db, name, kind, info, base=name, base_info=info)
    rid, view = find_view(r, db, name)
    if view is None:
        return Namespace(db, name, MISSING, base=name)
    if is_timeseries_view(view):
        buckets = r.get_collection(f"{db}.{view.get('viewOn')}")
        return Namespace(db, name, TIMESERIES, None, view, rid, (view,), name, None, [], view, buckets)
    out = Namespace(db, name, VIEW, None, view, rid, (view,), followed=follow)
    if follow:
        _follow(r, out)
    return out


def lookup_once(r: Any, db: str, name: str, known: Namespace | None, *, collection_uuid: Any = None) -> Namespace:
    """``known`` when it already resolves ``db.name`` with its chain followed, else ``lookup``: a
    caller hands down what it resolved and the callee reads nothing again."""
    if known is not None and known.followed and known.db == db and known.name == name:
        check_collection_uuid(r, known, collection_uuid)
        return known
    return lookup(r, db, name, collection_uuid=collection_uuid)


def _follow(r: Any, ns: Namespace) -> None:
    """Fill ``chain``/``base``/``pipeline``/``ts_view`` of a view: one point lookup per level."""
    chain = [cast(dict, ns.view)]  # a view: _follow is only called on one
    current = chain[0]["viewOn"]
    for _ in range(MAX_VIEW_DEPTH):
        info = r.get_collection(f"{ns.db}.{current}")
        view = None if info is not None else find_view(r, ns.db, current)[1]
        if view is None:
            ns.chain, ns.base, ns.base_info = tuple(chain), current, info
            ns.pipeline = _combined(chain)
            return
        chain.append(view)
        if is_timeseries_view(view):
            ns.chain, ns.base, ns.ts_view = tuple(chain), current, view
            ns.buckets_info = r.get_collection(f"{ns.db}.{view.get('viewOn')}")
            ns.pipeline = _combined(chain[:-1])
            return
        current = view["viewOn"]
    raise MongoError(ErrorCode.ViewDepthLimitExceeded,
                     f"View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}")


def _combined(chain: list[dict]) -> list[dict]:
    """The pipelines of a view chain, innermost first (what runs on the base collection)."""
    pipeline: list[dict] = []
    for view in reversed(chain):
        pipeline.extend(view.get("pipeline") or [])
    return pipeline


def resolve(engine: Any, db: str, name: str, *, follow: bool = True, collection_uuid: Any = None) -> Namespace:
    """``lookup`` in its own short read transaction."""
    with engine.read() as r:
        return lookup(r, db, name, follow=follow, collection_uuid=collection_uuid)


# ------------------------------------------------------------------ collectionUUID


class CollectionUUIDMismatch(MongoError):
    """361, with mongod's extra fields (``db``, ``collectionUUID``, ``expectedCollection``,
    ``actualCollection``); ``namespace``: what ``db.name`` resolved to."""

    def __init__(self, namespace: Namespace, expected: uuid_module.UUID, actual: str | None):
        super().__init__(ErrorCode.CollectionUUIDMismatch, "Collection UUID does not match that specified",
                         extra={"db": namespace.db, "collectionUUID": expected,
                                "expectedCollection": namespace.name, "actualCollection": actual})
        self.namespace = namespace


# mongod's names of BSON binary subtypes (typeName(BinDataType)), for the IDL's type error
_SUBTYPE_NAMES = {0: "generic", 1: "function", 2: "binary", 3: "uuid_old", 5: "MD5", 6: "encrypt", 7: "column",
                  8: "sensitive", 9: "vector", 128: "user"}


def collection_uuid_arg(cmd: dict, command: str) -> uuid_module.UUID | None:
    """The command's ``collectionUUID`` (binary subtype 4), checked like mongod's IDL (14 otherwise)."""
    value = cmd.get("collectionUUID")
    if value is None and "collectionUUID" not in cmd:
        return None
    if isinstance(value, uuid_module.UUID):
        return value
    path = f"{command}.collectionUUID"
    if isinstance(value, Binary):
        if value.subtype == 4 and len(value) == 16:
            return uuid_module.UUID(bytes=bytes(value))
        subtype = _SUBTYPE_NAMES.get(value.subtype, str(value.subtype))
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field '{path}' is the wrong binData type '{subtype}', expected type 'UUID'")
    raise wrong_type(path, value, "binData")


def check_collection_uuid(r: Any, resolved: Namespace, expected: uuid_module.UUID | None) -> None:
    """mongod's checkCollectionUUIDMismatch: nothing when ``expected`` is None or ``resolved`` is a
    collection with that UUID, else ``CollectionUUIDMismatch`` naming the collection of the same
    database that has it (one scan of the database's catalog entries, on the error path only)."""
    if expected is None:
        return
    info = resolved.info
    if info is not None and info.uuid == expected:
        return
    actual = next((entry.name for entry in r.list_collections(resolved.db)
                   if entry.uuid == expected), None)
    raise CollectionUUIDMismatch(resolved, expected, actual)
