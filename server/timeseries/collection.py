"""A time-series collection as stored, for the layers that are not commands: the target a name
resolves to, settling (every in-memory bucket written in full, then out of memory), the direct write
of bucket documents, collStats / ``$collStats`` documents, the TTL deletion of expired buckets, and the
refusal of ``$out``/``$merge`` into a time-series collection. Nothing here takes a command context:
the read core (``tidemark.collections``), the TTL monitor (``tidemark.ttl``) and the time-series command
family (``tidemark.commands.timeseries*``) all call it with the server state.

Invariant (bucket catalog safety): before anything rewrites or deletes stored buckets it *settles*
the collection, so the catalog never appends to, nor later rewrites, a bucket changed on disk.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from typing import Any

from bson.int64 import Int64

from tidemark.arguments import scale_arg
from tidemark.core import collection as C
from tidemark.core.namespace import find_view as get_view
from tidemark.core.namespace import is_timeseries_view
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import match
from tidemark.query import plan as planner
from tidemark.timeseries import filters, scan
from tidemark.timeseries import indexes as ts_indexes
from tidemark.timeseries import modify as ts_modify
from tidemark.timeseries import ttl as ts_ttl
from tidemark.timeseries.ddl import buckets_ns, stored_options, view_name_of


class Target:
    """A time-series collection addressed by a command (view name or ``system.buckets.<c>``)."""

    def __init__(self, db: str, name: str, view: dict[str, Any] | None, info: Any):
        self.db = db
        self.view_name = view_name_of(name)
        self.on_buckets = name != self.view_name
        self.view = view
        self.info = info
        self.bns = buckets_ns(db, self.view_name)
        self.ns = f"{db}.{self.view_name}"
        options = stored_options(info)
        if options is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {self.bns}")
        self.options = options
        self.time_field = options.time_field
        self.meta_field = options.meta_field

    def buckets_in(self, txn: Any, missing: str = "ns does not exist: {ns}") -> Any:
        """The buckets collection as ``txn`` sees it: a drop may have committed since the command
        resolved its target, and then the command answers as for a missing collection (26, with
        ``missing`` naming the view), never a Python error."""
        info = txn.get_collection(self.bns)
        if info is None:
            raise MongoError(ErrorCode.NamespaceNotFound, missing.format(ns=self.ns))
        return info


def resolve_target(engine: Any, db: str, name: str) -> Target:
    with engine.read() as r:
        _, view = get_view(r, db, view_name_of(name))
        info = r.get_collection(buckets_ns(db, view_name_of(name)))
    if info is None or (view is not None and not is_timeseries_view(view)):
        raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {db}.{name}")
    return Target(db, name, view, info)


def target_of(namespace: Any) -> Target:
    """The target of a ``tidemark.core.namespace.Namespace`` already resolved to a time-series view."""
    if namespace.buckets_info is None:
        raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {namespace.ns}")
    return Target(namespace.db, namespace.name, namespace.view, namespace.buckets_info)


async def settle(server: Any, bns: str, buckets: list[Any] | None = None) -> None:
    """Write every in-memory bucket of ``bns`` (only ``buckets`` when given) in full and let it leave
    memory."""
    await server.ts_committer.close_collection(bns, buckets)


async def direct_write(server: Any, bns: str, fn: Any, buckets: list[Any] | None = None) -> Any:
    """Run the storage write ``fn`` on the bucket documents of ``bns`` after settling it — only
    ``buckets`` when given: the in-memory buckets ``fn`` may change (``buckets_a_write_may_touch``) —
    with no bucket reopened from storage meanwhile: a bucket loaded between the settle and ``fn`` would
    be written back over what ``fn`` changed."""
    catalog = server.bucket_catalog
    with catalog.direct_write(bns):
        await settle(server, bns, buckets)
        return await write(server, fn)


async def before_index_build(server: Any, bns: str, bucket_specs: list[dict[str, Any]], time_field: str) -> None:
    """What an index build on ``bns`` needs of the in-memory buckets before it runs. An index that may
    refuse a bucket (a measurement index refuses an array, a geo index what is not a point, a meta index
    a meta it cannot key — ``indexes.measurement_rules`` —, a unique or other special index whatever
    it refuses) must see their rows, and so must an index reading the meta while an in-memory bucket's
    meta holds an array (the build flags the index multikey from what it sees: explain's ``isMultiKey``,
    as mongod's build over every bucket): the buckets holding rows not yet in their stored document are
    written in full (a checkpoint of the collection) and stay open. Any other index needs nothing: a
    bucket's keys are made when it is written in full, under the indexes of that moment
    (``commit.write_full_document``), and a read through the index places the in-memory buckets where
    their entries will be (``scan.index_buckets``). mongod's index builds leave the bucket catalog alone
    (only a drop or a rollback clears it: timeseries_op_observer.cpp), so a series keeps its open bucket;
    closing every bucket here cost 61 s and a 4 s stall of the loop at 100,000 series, and each series
    then reopened its bucket from storage."""
    state = server.bucket_catalog.get(bns)
    arrays = state is not None and state.array_metas > 0
    if any(_may_refuse(spec, time_field) or (arrays and _reads_meta(spec)) for spec in bucket_specs):
        await server.ts_committer.checkpoint(force=True, ns=bns)


def _reads_meta(spec: dict[str, Any]) -> bool:
    return any(path == "meta" or str(path).startswith("meta.") for path in spec.get("key") or {})


def _may_refuse(spec: dict[str, Any], time_field: str) -> bool:
    key = spec.get("key")
    if spec.get("unique") or not isinstance(key, dict) or any(type(v) is str for v in key.values()):
        return True
    return ts_indexes.measurement_rules([spec], time_field) is not None


def buckets_a_write_may_touch(server: Any, target: Target, statements: list[Any]) -> list[Any] | None:
    """The in-memory buckets an update or delete of these statements (each a dict with its view filter
    ``q``) may change, or None for every one: those holding a meta point each filter's meta part
    requires (a meta equality or ``$in``: ``catalog.live_buckets``, as a read takes them; the others fail
    the filter, and so do their stored versions). mongod marks only the buckets a write touches
    (bucket_catalog directWriteStart per bucket); settling every bucket of the collection made an update
    of one series among 100,000 in memory take 62 s (12 s of CPU) and every other series reopen its
    bucket from storage at its next insert. None when a statement has a collation or the collection a
    default one (the points are of the simple collation), or a filter names no point."""
    if target.view is None or target.view.get("collation") is not None:
        return None
    found: dict[int, Any] = {}
    for statement in statements:
        if not isinstance(statement, dict) or statement.get("collation") is not None:
            return None
        try:
            node = match.parse_filter(statement.get("q"))
            derived = filters.derive(node, target.time_field, target.meta_field,
                                     target.options.bucket_max_span_seconds)
        except MongoError:
            return None
        alternatives = filters.point_alternatives(derived.predicate)
        if not alternatives:
            return None
        for bucket in server.bucket_catalog.live_buckets(target.bns, alternatives):
            found[id(bucket)] = bucket
    return list(found.values())


async def write(server: Any, fn: Any) -> Any:
    return await asyncio.wrap_future(server.engine.write(fn))


def measurements(bucket: dict[str, Any], time_field: str) -> int:
    return ts_modify.bucket_measurement_count(bucket, time_field)


def coll_stats_document(server: Any, db: str, name: str, scale: int = 1, namespace: Any = None) -> dict[str, Any]:
    """collStats of a time-series view (spec §3.4): no count/avgObjSize, a ``timeseries`` section.
    ``namespace``: the view as the caller resolved it."""
    if namespace is not None and namespace.is_timeseries and (namespace.db, namespace.name) == (db, name):
        target = target_of(namespace)
    else:
        target = resolve_target(server.engine, db, name)
    catalog = server.bucket_catalog
    unstored, unstored_size = scan.unstored_buckets(server, target.bns)
    with server.engine.read() as r:
        info = target.buckets_in(r)
        stored = r.count(info)
        size = r.data_size(info)
        storage_size = r.storage_size(info)
        index_sizes = {}
        for spec in info.indexes:
            user = ts_indexes.to_user_index_spec(spec, target.time_field, target.meta_field)
            if user is not None:
                index_sizes[spec["name"]] = r.index_size(info, spec["name"]) // scale
    bucket_count = stored + unstored
    size += unstored_size
    storage_size += unstored_size  # until written, an in-memory bucket occupies about its size
    timeseries: dict[str, Any] = {"bucketsNs": target.bns, "bucketCount": bucket_count}
    if bucket_count:
        timeseries["avgBucketSize"] = size // bucket_count
    timeseries.update(catalog.collection_stats(target.bns))
    total_index = sum(index_sizes.values())
    return {
        "ns": target.ns,
        "size": Int64(size // scale),
        "timeseries": timeseries,
        "numOrphanDocs": Int64(0),
        "storageSize": Int64(storage_size // scale),
        "freeStorageSize": Int64(0),
        "capped": False,
        "nindexes": len(index_sizes),
        "indexDetails": {},
        "indexBuilds": [],
        "totalIndexSize": Int64(total_index),
        "totalSize": Int64(storage_size // scale + total_index),
        "indexSizes": {k: Int64(v) for k, v in index_sizes.items()},
        "scaleFactor": scale,
    }


def coll_stats_stage_document(server: Any, db: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The document ``$collStats`` yields on a time-series view (``storageStats`` holds collStats)."""
    out: dict[str, Any] = {
        "ns": f"{db}.{name}",
        "host": "localhost",
        "localTime": _dt.datetime.now(_dt.UTC).replace(tzinfo=None),
    }
    if "storageStats" in spec:
        stats_spec = spec["storageStats"] if isinstance(spec["storageStats"], dict) else {}
        out["storageStats"] = coll_stats_document(server, db, name, scale_arg(stats_spec))
    if "count" in spec:
        with server.engine.read() as r:
            info = r.get_collection(buckets_ns(db, name))
        options = stored_options(info)
        if options is None:  # dropped since the view was resolved
            raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {buckets_ns(db, name)}")
        out["count"] = sum(measurements(doc, options.time_field) for doc in scan.bucket_documents(server, info.ns))
    if "queryExecStats" in spec:  # the scans of the buckets collection (mongod asks it of the buckets namespace)
        with server.engine.read() as r:
            info = r.get_collection(buckets_ns(db, name))
        if info is None:
            raise MongoError(ErrorCode.NamespaceNotFound, "Unable to retrieve queryExecStats in $collStats stage :: "
                                                          f"caused by :: Collection [{buckets_ns(db, name)}] not found.")
        out["queryExecStats"] = server.index_usage.query_exec_stats(info)
    return out


def expired_in_txn(w: Any, bns: str, now: _dt.datetime) -> int:
    """Delete every expired bucket of one collection in the writer's transaction."""
    info = w.get_collection(bns)
    options = stored_options(info)
    if options is None:  # no such collection (stored_options(None) is None), or not a time-series one
        return 0
    span = options.bucket_max_span_seconds
    doomed: list[tuple[bytes, dict[str, Any]]] = []
    expire = (info.options or {}).get("expireAfterSeconds")
    if expire is not None:
        bound = ts_ttl.expiry_id_bound(ts_ttl.cutoff_seconds(now, int(expire), span))
        for rid, raw in w.scan(info):
            bucket = decode(raw)
            if not ts_ttl.bucket_is_expired(bucket["_id"], bound):
                break  # clustered by _id: every later bucket is newer
            doomed.append((bytes(rid), bucket))
    time_path = "control.min." + options.time_field
    for ttl_index in ts_ttl.partial_ttl_indexes(list(info.indexes), options.time_field):
        cutoff = ts_ttl.control_min_cutoff(now, ttl_index.expire_after_seconds, span)
        partial = match.compile_filter(ttl_index.bucket_filter) if ttl_index.bucket_filter else None
        seen = {rid for rid, _ in doomed}
        # the partial TTL index holds exactly the buckets matching its filter, keyed by bucket start
        specs = [
            dict(s, hidden=False) if s["name"] == ttl_index.name else s for s in info.indexes
        ]  # hidden TTL still expires
        plan = planner.choose_plan(specs, {time_path: {"$lte": cutoff}}, None, ttl_index.name)
        for rid, bucket in C.docs_in_txn(w, info, plan):
            start = bucket.get("control", {}).get("min", {}).get(options.time_field)
            if rid in seen or not isinstance(start, _dt.datetime) or start > cutoff:
                continue
            if partial is None or partial(bucket):
                doomed.append((rid, bucket))
                seen.add(rid)
    for rid, bucket in doomed:
        w.delete(info, rid, C.index_keys(info, bucket))
    return len(doomed)


def ttl_collections(engine: Any) -> list[tuple[str, int, int]]:
    """(buckets ns, smallest expireAfterSeconds, bucketMaxSpanSeconds) of every TS collection with a TTL."""
    out = []
    with engine.read() as r:
        for db in r.list_databases():
            for info in r.list_collections(db):
                options = info.options or {}
                ts = stored_options(info) if info.name.startswith(C.BUCKETS_PREFIX) else None
                if ts is None:
                    continue
                expiries = [int(s["expireAfterSeconds"]) for s in info.indexes if "expireAfterSeconds" in s]
                if "expireAfterSeconds" in options:
                    expiries.append(int(options["expireAfterSeconds"]))
                if expiries:
                    out.append((info.ns, min(expiries), ts.bucket_max_span_seconds))
    return out


def check_write_stage_target(r: Any, db: str, coll: str, stage: str, spec: Any = None) -> None:
    """Raise when ``$out`` / ``$merge`` (``stage``) would write into a time-series collection.

    ``$merge`` into a time-series collection is not supported by MongoDB 7.0 (the target is a view);
    ``$out`` to one (the 7.0.3+ ``{$out: {db, coll, timeseries}}`` form included) is not supported by
    this server. Called with a read view ``r`` before the pipeline runs.
    """
    if stage == "$out" and isinstance(spec, dict) and "timeseries" in spec:
        raise MongoError(
            ErrorCode.CommandNotSupported,
            "$out with 'timeseries' options (writing a time-series collection) is not supported by this server",
        )
    _, view = get_view(r, db, view_name_of(coll))
    if is_timeseries_view(view) or coll.startswith(C.BUCKETS_PREFIX):
        raise MongoError(
            ErrorCode.CommandNotSupportedOnView,
            f"{stage} into the time-series collection {db}.{view_name_of(coll)} is not supported",
        )
