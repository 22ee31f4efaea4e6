"""Insert paths of time-series collections.

- ``insert_measurements``: ``insert`` on the view. Each document is validated (time field must be a BSON
  date), given an ``_id`` when it has none, routed by the bucket catalog, and the command waits for
  the group commit that makes it durable. ``n`` counts measurements; ordered inserts stop at the
  first error, unordered ones report every failing index in ``writeErrors`` (spec §4).
- ``insert_bucket_documents``: ``insert`` into ``system.buckets.<c>``: whole bucket documents checked
  against the collection's ``$jsonSchema`` validator (121 otherwise), stored as they are.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import time
from typing import Any

from bson.objectid import ObjectId

from protocol.codec import encode
from protocol.errors import ErrorCode, MongoError
from protocol.messages import RawDocuments, materialize
from server.query import plan as planner
from server.timeseries import options as ts_options
from server.timeseries import rawbatch
from server.timeseries.buckets import EPOCH, date_ms
from server.timeseries.commit import clustered_rid
from server.timeseries.ddl import BUCKETS_PREFIX, buckets_ns

MAX_WRITE_BATCH = 100_000
_ONE_MS = _dt.timedelta(milliseconds=1)
_COUNTER_SPACE = 0x1000000  # ObjectId's 3-byte counter


def object_id_factory(n: int) -> Any:
    """A function ``i -> ObjectId`` for ``0 <= i < n``: ``n`` new, distinct ObjectIds sharing one
    timestamp and one lock round-trip on pymongo's process-wide counter (``ObjectId()`` per document
    costs several microseconds; this costs one ``ObjectId(bytes)``). Ids not asked for are skipped."""
    try:
        with ObjectId._inc_lock:
            base = ObjectId._inc
            ObjectId._inc = (base + n) % _COUNTER_SPACE
        prefix = int(time.time()).to_bytes(4, "big") + ObjectId._random()
    except AttributeError:  # pragma: no cover - pymongo internals changed: the plain constructor
        return lambda i: ObjectId()
    return lambda i: ObjectId(prefix + ((base + i) % _COUNTER_SPACE).to_bytes(3, "big"))


def _buckets_info(ctx: Any, ns: str) -> Any:
    with ctx.server.engine.read() as r:
        return r.get_collection(ns)


def _documents(cmd: dict) -> list:
    docs = materialize(cmd.get("documents"))
    if not isinstance(docs, list):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field 'insert.documents' is missing or not an array")
    if len(docs) > MAX_WRITE_BATCH:
        raise MongoError(ErrorCode.InvalidLength,
                         f"Write batch sizes must be between 1 and {MAX_WRITE_BATCH}. Got {len(docs)} operations.")
    return docs


async def insert_measurements(ctx: Any, cmd: dict) -> dict:
    db = cmd.get("$db") or ctx.db
    name = cmd["insert"]
    bns = buckets_ns(db, name)
    raw = cmd.get("documents")
    columnar = (type(raw) is RawDocuments and 0 < len(raw) <= MAX_WRITE_BATCH  # try the column-wise path
                and ctx.server.params["timeseriesColumnarInserts"])
    docs = None if columnar else _documents(cmd)
    ordered = cmd.get("ordered", True) is not False
    info = _buckets_info(ctx, bns)
    if info is None or not (info.options or {}).get("timeseries"):
        raise MongoError(ErrorCode.NamespaceNotFound,
                         f"Buckets collection not found for time-series collection {db}.{name}")
    options = ts_options.from_document(info.options["timeseries"])
    catalog = ctx.server.bucket_catalog
    committer = ctx.server.ts_committer
    state = catalog.collection(bns, options)
    time_field = options.time_field
    if columnar:
        batch = rawbatch.parse(raw.buffer, raw.offsets, time_field, options.meta_field, state.last_layout)
        if batch is not None and catalog.insert_batch(state, batch, committer.loader):
            await committer.commit((bns,))
            return {"n": batch.n}
        docs = _documents(cmd)
    time_error = f"'{time_field}' must be present and contain a valid BSON UTC datetime value"
    items: list[tuple[dict, int, Any]] = []
    errors: list[dict] = []
    new_id = object_id_factory(len(docs))
    datetime, epoch, one_ms = _dt.datetime, EPOCH, _ONE_MS
    append = items.append
    for index, doc in enumerate(docs):
        if type(doc) is not dict and not isinstance(doc, dict):
            errors.append(MongoError(ErrorCode.TypeMismatch, "documents must be objects").to_write_error(index))
            if ordered:
                break
            continue
        time_value = doc.get(time_field)
        if type(time_value) is datetime and time_value.tzinfo is None:
            t_ms = (time_value - epoch) // one_ms  # == date_ms(time_value), without the type dispatch
        else:
            t_ms = date_ms(time_value) if time_value is not None else None
            if t_ms is None:
                errors.append(MongoError(ErrorCode.BadValue, time_error).to_write_error(index))
                if ordered:
                    break
                continue
        if "_id" not in doc:
            doc = {"_id": new_id(index), **doc}
        append((doc, t_ms, time_value))
    if items:
        catalog.insert_many(state, items, committer.loader)
        await committer.commit((bns,))
    reply: dict[str, Any] = {"n": len(items)}
    if errors:
        reply["writeErrors"] = errors
    return reply


async def insert_bucket_documents(ctx: Any, cmd: dict) -> dict:
    db = cmd.get("$db") or ctx.db
    name = cmd["insert"]
    ns = f"{db}.{name}"
    docs = _documents(cmd)
    ordered = cmd.get("ordered", True) is not False
    info = _buckets_info(ctx, ns)
    if info is None or not name.startswith(BUCKETS_PREFIX):
        raise MongoError(ErrorCode.NamespaceNotFound, f"Namespace {ns} not found")
    validator = _validator(info)
    accepted: list[tuple[int, dict]] = []
    errors: list[dict] = []
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict) or (validator is not None and not validator(doc)):
            failing = doc.get("_id") if isinstance(doc, dict) else None
            errors.append(MongoError(ErrorCode.DocumentValidationFailure, "Document failed validation",
                                     extra={"errInfo": {"failingDocumentId": failing,
                                                        "details": {"operatorName": "$jsonSchema",
                                                                    "schemaRulesNotSatisfied": []}}})
                          .to_write_error(index))
            if ordered:
                break
            continue
        accepted.append((index, doc))

    def fn(w: Any) -> list[dict]:
        target = w.get_collection(ns)
        failures = []
        for index, doc in accepted:
            rid = clustered_rid(doc["_id"])
            if w.get(target, rid) is not None:
                failures.append(MongoError(
                    ErrorCode.DuplicateKey,
                    f"E11000 duplicate key error collection: {ns} dup key: {{ _id: {doc['_id']!r} }}",
                    extra={"keyPattern": {"_id": 1}, "keyValue": {"_id": doc["_id"]}}).to_write_error(index))
                if ordered:
                    break
                continue
            w.insert(target, encode(doc), planner.index_key_map(target.indexes, doc) if target.indexes else {},
                     rid=rid)
        return failures

    failures = await asyncio.wrap_future(ctx.server.engine.write(fn)) if accepted else []
    errors = sorted(errors + failures, key=lambda e: e["index"])
    if ordered and errors:
        first = errors[0]["index"]
        n = sum(1 for index, _ in accepted if index < first)
        errors = errors[:1]
    else:
        n = len(accepted) - len(failures)
    reply: dict[str, Any] = {"n": n}
    if errors:
        reply["writeErrors"] = errors
    return reply


def _validator(info: Any) -> Any:
    spec = (info.options or {}).get("validator")
    if not spec:
        return None
    from server.query.match import compile_filter

    return compile_filter(spec)
