"""The TTL monitor: every ``ttlMonitorSleepSecs`` seconds, delete expired documents.

A document is expired for a TTL index ``{field: 1|-1}, expireAfterSeconds: N`` when ``field`` holds a
date (or an array holding dates: the earliest counts) older than ``now - N`` seconds. Documents whose
field is missing or not a date never expire. Compound-key indexes are ignored (as mongod does).
A clustered collection created with ``expireAfterSeconds: N`` (or given it by collMod) expires as if
its clustered index ``{_id: 1}`` were such a TTL index: documents whose ``_id`` is a date older than
``now - N`` (mongod's ttl.cpp: general-purpose clustered collections expire ``Date`` ids only; an
ObjectId ``_id`` never expires), read from the record range of those dates instead of an index.

Started by ``app.py`` with ``start_ttl_monitor(server_state)``; the task ends when cancelled. Each pass
reads candidate records through the index (dates below the cutoff) and deletes them in one write
transaction per collection, re-checking each document there so a concurrent update is respected.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any

from bson.datetime_ms import DatetimeMS

from tidemark.context import ServerState, run_in_pool, stop_task
from tidemark.core.clustered import cluster_info
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import MongoError
from tidemark.query.index_keys import index_key_map
from tidemark.session_cache import SESSIONS_NS
from tidemark.timeseries import collection as ts_collection
from tidemark.timeseries import ttl as ts_ttl

log = logging.getLogger("tidemark.ttl")
ts_log = logging.getLogger("tidemark.timeseries")

# serverStatus ``metrics.ttl`` (as mongod): ``passes`` counts the monitor's completed passes (regular and
# time-series collections both done), ``deletedDocuments`` the documents its regular passes deleted.
TTL_STATS = {"passes": 0, "deletedDocuments": 0}
DEFAULT_SLEEP_SECS = 60
RECHECK_SECS = 1.0  # how often a wait between passes reads ttlMonitorSleepSecs again


def _param(server: ServerState, name: str, default: Any) -> Any:
    """A server parameter (``tidemark.params[name]``), or ``default`` when unknown (``ttlMonitorEnabled``
    is not one of Tidemark's parameters: the monitor is always on)."""
    try:
        value = server.params[name]
    except KeyError:
        return default
    return default if value is None else value


def _as_datetime(v: Any) -> datetime.datetime | None:
    if isinstance(v, datetime.datetime):
        return v.replace(tzinfo=None) if v.tzinfo is None else v.astimezone(datetime.UTC).replace(tzinfo=None)
    if isinstance(v, DatetimeMS):
        ms = int(v)
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms) if -62135596800000 < ms < 253402300799999 else None
    return None


def expired(doc: dict, field: str, cutoff: datetime.datetime) -> bool:
    """True when ``doc``'s TTL field holds a date before ``cutoff``."""
    value: Any = doc
    for part in field.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        else:
            return False
    values = value if isinstance(value, list) else [value]
    dates = [d for d in (_as_datetime(v) for v in values) if d is not None]
    return bool(dates) and min(dates) < cutoff


def ttl_indexes(info) -> list[dict]:
    return [s for s in info.indexes if "expireAfterSeconds" in s and len(s["key"]) == 1]


def ttl_specs(info) -> list[dict]:
    """What expires documents of a regular collection: its TTL indexes, and for a clustered collection
    with a collection-level ``expireAfterSeconds`` its clustered index (marked ``clustered``)."""
    specs = ttl_indexes(info)
    cluster = cluster_info(info)
    expire = (info.options or {}).get("expireAfterSeconds")
    if cluster is not None and isinstance(expire, int):
        specs.append({**cluster, "expireAfterSeconds": int(expire), "clustered": True})
    return specs


def _still_expires(info, spec: dict) -> bool:
    """``spec`` (from ``ttl_specs``) still applies to ``info`` as the writer sees it now."""
    if spec.get("clustered"):
        return info.clustered and isinstance((info.options or {}).get("expireAfterSeconds"), int)
    return any(s["name"] == spec["name"] for s in info.indexes)


def _candidates(w, info, spec: dict, cutoff: datetime.datetime):
    """(rid, stored document) of the records whose TTL key is a date before ``cutoff``: through the
    TTL index, or a clustered collection's record range of those ``_id`` dates."""
    lo, hi = _date_bounds(spec, cutoff)
    if spec.get("clustered"):
        yield from w.scan(info, lo=lo, hi=hi, lo_inclusive=True, hi_inclusive=False)
        return
    seen = set()
    for _key, rid in w.index_scan(info, spec["name"], lo, hi, lo_inclusive=True, hi_inclusive=False):
        rid = bytes(rid)
        if rid in seen:
            continue
        seen.add(rid)
        raw = w.get(info, rid)
        if raw is not None:
            yield rid, raw


def _date_bounds(spec: dict, cutoff: datetime.datetime) -> tuple[bytes, bytes]:
    """Index key bounds holding exactly the dates before ``cutoff`` (either key direction)."""
    from tidemark.storage.keys import T_DATE, encode_key

    if float(next(iter(spec["key"].values()))) >= 0:
        return bytes([T_DATE]), encode_key((cutoff,), (1,))
    return encode_key((cutoff,), (-1,)), bytes([255 - T_DATE + 1])


def run_pass(engine, now: datetime.datetime | None = None) -> int:
    """One TTL pass over every regular collection; returns the number of documents deleted."""
    now = now or datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    work: list[tuple[str, dict, datetime.datetime]] = []
    with engine.read() as r:
        for db in r.list_databases():
            for info in r.list_collections(db):
                if info.name.startswith("system.") and info.ns != SESSIONS_NS:
                    continue  # (the sessions collection's records expire: mongod's lsidTTLIndex)
                for spec in ttl_specs(info):
                    cutoff = now - datetime.timedelta(seconds=int(spec["expireAfterSeconds"]))
                    work.append((info.ns, spec, cutoff))
    deleted = 0
    for ns, spec, cutoff in work:
        field = next(iter(spec["key"]))

        def fn(w, ns=ns, spec=spec, cutoff=cutoff, field=field):
            info = w.get_collection(ns)
            if info is None or not _still_expires(info, spec):
                return 0
            victims = []
            for rid, raw in _candidates(w, info, spec, cutoff):
                doc = decode(raw)
                if expired(doc, field, cutoff):
                    victims.append((bytes(rid), doc))
            for rid, doc in victims:
                w.delete(info, rid, index_key_map(info.indexes, doc))
            return len(victims)

        deleted += engine.write(fn).result()
    TTL_STATS["deletedDocuments"] += deleted
    return deleted


async def _wait_for_next_pass(server: ServerState) -> None:
    """Wait ``ttlMonitorSleepSecs`` from now, reading the parameter again at least every second: a
    value set meanwhile (setParameter) applies to this wait, as mongod's monitor does
    (jstests/noPassthrough/ttl_changes_are_immediate.js: 1000 s shortened to 1 s)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        secs = max(float(_param(server, "ttlMonitorSleepSecs", DEFAULT_SLEEP_SECS)), 0.05)
        left = started + secs - loop.time()
        if left <= 0:
            return
        await asyncio.sleep(min(left, RECHECK_SECS))


async def ttl_loop(server: ServerState) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await _wait_for_next_pass(server)
        if not _param(server, "ttlMonitorEnabled", True):
            continue
        try:
            await loop.run_in_executor(None, run_pass, server.engine)
            await timeseries_pass(server)  # time-series buckets (spec §9)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the monitor must survive one bad pass
            log.exception("TTL pass failed")
        TTL_STATS["passes"] += 1  # after the pass ended: a test waits on it instead of sleeping


def metrics() -> dict[str, int]:
    """serverStatus ``metrics.ttl``: ``{passes, deletedDocuments}``."""
    return dict(TTL_STATS)


async def timeseries_pass(server: ServerState, now: datetime.datetime | None = None) -> int:
    """One TTL monitor pass over every time-series collection (spec §9); returns the buckets deleted."""
    now = now or datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    catalog = server.bucket_catalog
    total = 0
    for bns, expire, span in await run_in_pool(server, None, ts_collection.ttl_collections, server.engine):
        cutoff = ts_ttl.cutoff_seconds(now, expire, span)
        live = catalog.live_buckets(bns)
        try:
            if any(bucket.start_s <= cutoff for bucket in live):
                # an expired bucket still in memory must not be written back later
                total += await ts_collection.direct_write(
                    server, bns, lambda w, bns=bns: ts_collection.expired_in_txn(w, bns, now))
            else:
                with catalog.direct_write(bns):  # no expired bucket reopened from storage meanwhile
                    total += await ts_collection.write(
                        server, lambda w, bns=bns: ts_collection.expired_in_txn(w, bns, now))
        except MongoError:  # dropped meanwhile, or one bad collection: the others still expire
            ts_log.warning("time-series TTL pass failed for %s", bns, exc_info=True)
    return total


def start_ttl_monitor(server: ServerState) -> asyncio.Task:
    """Start the monitor on the running loop; cancel the returned task at shutdown."""
    return asyncio.get_running_loop().create_task(ttl_loop(server), name="ttl-monitor")


# --- lifecycle hooks (tidemark.app.LIFECYCLE_HOOKS) ---------------------------------------------------

_TASKS: dict[int, asyncio.Task] = {}


async def on_startup(state: ServerState) -> None:
    _TASKS[id(state)] = start_ttl_monitor(state)


async def on_shutdown(state: ServerState) -> None:
    await stop_task(_TASKS.pop(id(state), None))
