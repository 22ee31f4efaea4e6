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

``check_view_graph`` is mongod's ViewGraph for create/collMod of a view: the views a definition
reads (``viewOn`` and ``involved_namespaces`` of its pipeline) may not lead back to it, nor make a
path of more than 20 views, nor join views of different default collations.

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

# The one spelling of the system namespaces every layer names (mongod's NamespaceString).
SYSTEM_VIEWS = "system.views"
SYSTEM_PROFILE = "system.profile"
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

    ``follow``: follow a view chain to its base (depth limit 20 like mongod: 165 beyond it).
    ``collection_uuid``: the UUID the command expects ``db.name`` to have (see the module)."""
    resolved = _lookup(r, db, name, follow)
    if collection_uuid is not None:
        check_collection_uuid(r, resolved, collection_uuid)
    return resolved


# (db, name, follow) -> (engine, catalog generation, snapshot id, resolution), from the read view it was
# read in. Two ways to reuse it, both without reading anything again:
# - a lookup in a read view of the same snapshot (same engine, same LMDB transaction id: every commit
#   advances it, so nothing can differ) — the view's own reads and the resolution agree exactly;
# - ``resolve`` (no read view of its own) while the engine's catalog generation is the one the view
#   carried: no commit has changed the catalog or a view definition since (storage: Engine.
#   catalog_generation), so the resolution is what the catalog says at this instant — as one read
#   transaction of its own would have said (a DDL committing meanwhile is ordered before or after).
# Write transactions never use it (their pending changes are their own). The Namespace is shared:
# read-only.
_RESOLVED: dict[tuple[str, str, bool], tuple[Any, int, int, Namespace]] = {}
_RESOLVED_MAX = 1024


def _lookup(r: Any, db: str, name: str, follow: bool) -> Namespace:
    if type(r) is not ReadView:
        return _resolve(r, db, name, follow)
    engine, snapshot = r.snapshot_key()
    key = (db, name, follow)
    hit = _RESOLVED.get(key)
    if hit is not None and hit[0] is engine and hit[2] == snapshot:
        if hit[1] < r.catalog_generation:  # the same state, known current at a later generation
            _RESOLVED[key] = (engine, r.catalog_generation, snapshot, hit[3])
        return hit[3]
    resolved = _resolve(r, db, name, follow)
    if len(_RESOLVED) >= _RESOLVED_MAX:
        _RESOLVED.clear()
    _RESOLVED[key] = (engine, r.catalog_generation, snapshot, resolved)
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
    if known is None or not known.followed or known.db != db or known.name != name:
        known = _lookup(r, db, name, True)  # (lookup's resolution; its UUID check is the one below)
    if collection_uuid is not None:
        check_collection_uuid(r, known, collection_uuid)
    return known


def _follow(r: Any, ns: Namespace) -> None:
    """Fill ``chain``/``base``/``pipeline``/``ts_view`` of a view: one point lookup per level.

    mongod's resolveView looks up at most 20 names, the view itself included, so a chain of 20 views
    is already too deep to read (165) although the view graph lets it be created. A view whose
    pipeline starts with ``$collStats`` ends the chain: the stage reports on its ``viewOn``, which is
    not resolved further (as mongod)."""
    chain = [cast(dict, ns.view)]  # a view: _follow is only called on one
    current = chain[0]["viewOn"]
    if _starts_with_coll_stats(chain[0]):
        ns.chain, ns.base, ns.base_info = tuple(chain), current, r.get_collection(f"{ns.db}.{current}")
        ns.pipeline = _combined(chain)
        return
    for _ in range(MAX_VIEW_DEPTH - 1):
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
        if _starts_with_coll_stats(view):
            ns.chain, ns.base, ns.base_info = tuple(chain), current, r.get_collection(f"{ns.db}.{current}")
            ns.pipeline = _combined(chain)
            return
    raise MongoError(ErrorCode.ViewDepthLimitExceeded,
                     f"View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}")


def _starts_with_coll_stats(view: dict) -> bool:
    pipeline = view.get("pipeline") or []
    return bool(pipeline) and isinstance(pipeline[0], dict) and "$collStats" in pipeline[0]


def _combined(chain: list[dict]) -> list[dict]:
    """The pipelines of a view chain, innermost first (what runs on the base collection)."""
    pipeline: list[dict] = []
    for view in reversed(chain):
        pipeline.extend(view.get("pipeline") or [])
    return pipeline


def resolve(engine: Any, db: str, name: str, *, follow: bool = True, collection_uuid: Any = None,
            checked: bool = False) -> Namespace:
    """``lookup`` in its own short read transaction — none while the catalog generation is the one the
    last resolution of ``db.name`` was read at (see ``_RESOLVED``); the interruption check a read
    transaction makes (``engine.interrupt_check``: killOp, maxTimeMS) runs either way, unless the
    caller made it just before in the same job (``checked``: a cursor's first read, after
    ``cursors._open_and_fill``'s check; three calls per read)."""
    if collection_uuid is None:
        hit = _RESOLVED.get((db, name, follow))
        if hit is not None and hit[0] is engine and hit[1] == engine.catalog_generation:
            if not checked:
                check = engine.interrupt_check
                if check is not None:
                    check()
            return hit[3]
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


# ------------------------------------------------------------------ the view graph (create / collMod)


def involved_namespaces(*pipelines: Any) -> list[str]:
    """The collections of the same database the pipelines read besides their source, as mongod's
    LiteParsedPipeline lists them: ``$lookup``/``$graphLookup`` ``from``, ``$unionWith``, and the
    sub-pipelines of ``$lookup``, ``$unionWith`` and ``$facet`` (other databases are left out: a view
    graph is per database), each pipeline's in turn. Malformed stages contribute nothing (parsing
    reports them)."""
    found: list[str] = []
    stack = list(reversed(pipelines))
    while stack:  # iterative: a client controls the nesting
        stages = stack.pop()
        if type(stages) is not list and not isinstance(stages, list):
            continue
        for stage in stages:
            # (most stages read nothing else: one membership test each, the spec taken only for the rest)
            if type(stage) is not dict and not isinstance(stage, dict):
                continue
            try:
                [op] = stage  # (its one field; none or several: malformed)
            except ValueError:
                continue
            if op not in _READING_STAGES:
                continue
            spec = stage[op]
            if op != "$unionWith" and op != "$facet":  # $lookup, $graphLookup
                if isinstance(spec, dict):
                    _add_target(found, spec.get("from"))
                    if op == "$lookup":
                        stack.append(spec.get("pipeline"))
            elif op == "$unionWith":
                if isinstance(spec, dict):
                    _add_target(found, spec.get("coll"))
                    stack.append(spec.get("pipeline"))
                else:
                    _add_target(found, spec)
            elif isinstance(spec, dict):  # $facet
                stack.extend(spec.values())
    return found


_READING_STAGES = frozenset({"$lookup", "$graphLookup", "$unionWith", "$facet"})


def _add_target(found: list[str], target: Any) -> None:
    if type(target) is str:
        found.append(target)
    elif isinstance(target, dict) and "db" not in target and type(target.get("coll")) is str:
        found.append(target["coll"])


def _simple(collation: Any) -> Any:
    """A stored view collation, None for the simple one (given explicitly or not)."""
    if not collation or (isinstance(collation, dict) and collation.get("locale") == "simple"):
        return None
    return collation


def check_view_graph(db: str, views: dict[str, dict], name: str, view_on: str, pipeline: list,
                     collation: Any) -> None:
    """mongod's ViewGraph::insertAndValidate for the view ``name`` (``viewOn``/``pipeline``/``collation``)
    among ``views`` (name -> system.views document: the database's other views).

    A view's children are its ``viewOn`` and the collections its pipeline reads
    (``involved_namespaces``). Refused: a cycle through the new view (5 GraphContainsCycle), a view
    child or parent with another default collation (167), and a longest path of views through it of
    more than 20 (165: its parents' height plus its children's). Work is linear in the database's
    views: each node is walked once per direction (a view referencing the next one four times, twenty
    deep, is 20 visits, not 4**20)."""
    children: dict[str, list[Any]] = {n: [v.get("viewOn"), *involved_namespaces(v.get("pipeline"))]
                                      for n, v in views.items() if n != name}
    children[name] = [view_on, *involved_namespaces(pipeline)]
    collations = {n: _simple(v.get("collation")) for n, v in views.items() if n != name}
    collations[name] = _simple(collation)
    # mongod walks a node's children and parents in the order the graph first met each name (its
    # node ids): which error a definition breaking two rules gets depends on it. The stored views
    # come first, in catalog order, then the new view and the names only it reads.
    rank: dict[str, int] = {}
    for node in [*(n for n in views if n != name), name]:
        for seen in (node, *children[node]):
            if type(seen) is str:
                rank.setdefault(seen, len(rank))
    children = {node: sorted({k for k in kids if type(k) is str}, key=rank.__getitem__)
                for node, kids in children.items()}
    parents: dict[str, list[str]] = {}
    for node, kids in children.items():
        for kid in kids:
            parents.setdefault(kid, []).append(node)
    for ups in parents.values():
        ups.sort(key=rank.__getitem__)

    def mismatch(a: str, b: str) -> MongoError:
        return MongoError(ErrorCode.OptionNotSupportedOnView,
                          f"View {db}.{a} has a collation that does not match the collation of view {db}.{b}")

    # children: depth-first with an explicit stack; heights of the nodes below, the cycle trail
    height: dict[str, int] = {}
    visited: dict[str, list[str]] = {}  # the children a node walked (mongod skips checked ones)
    trail: list[str] = [name]
    stack: list[tuple[str, int, int]] = [(name, 0, 0)]  # (node, depth, next child index)
    while stack:
        node, depth, index = stack[-1]
        kids = children.get(node, [])
        if index < len(kids):
            stack[-1] = (node, depth, index + 1)
            kid = kids[index]
            if kid in height:
                continue
            if kid == name:
                shown = [name, name, *reversed(trail)]  # mongod's rendering: the start twice
                raise MongoError(ErrorCode.GraphContainsCycle,
                                 "View cycle detected: " + " => ".join(f"{db}.{n}" for n in shown))
            if kid in children and collations[node] != collations[kid]:
                raise mismatch(node, kid)
            if depth + 1 > MAX_VIEW_DEPTH:
                raise MongoError(ErrorCode.ViewDepthLimitExceeded,
                                 f"View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}")
            visited.setdefault(node, []).append(kid)
            trail.append(kid)
            stack.append((kid, depth + 1, 0))
            continue
        stack.pop()
        trail.pop()
        height[node] = 1 + max((height.get(k, 0) for k in visited.get(node, ())), default=0)
    children_height = height[name] - 1  # the non-view leaves count one

    # parents: the longest chain of views reading this one
    up: dict[str, int] = {}
    pstack: list[tuple[str, int, int]] = [(name, 0, 0)]
    while pstack:
        node, depth, index = pstack[-1]
        ups = parents.get(node, [])
        if index < len(ups):
            pstack[-1] = (node, depth, index + 1)
            parent = ups[index]
            if collations.get(parent) != collations[node] and parent in children:
                raise mismatch(node, parent)
            if parent not in up:
                if depth + 1 > MAX_VIEW_DEPTH:
                    raise MongoError(ErrorCode.ViewDepthLimitExceeded,
                                     f"View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}")
                pstack.append((parent, depth + 1, 0))
            continue
        pstack.pop()
        up[node] = 1 + max((up.get(p, 0) for p in ups), default=0)
    if up[name] + children_height - 1 > MAX_VIEW_DEPTH:
        raise MongoError(ErrorCode.ViewDepthLimitExceeded,
                         f"View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}")
