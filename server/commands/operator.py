"""Operator commands: fsync (and its lock), fsyncUnlock, shutdown, compact, reIndex, dbHash.

Replies follow mongod 7.0 standalone. The fsync lock's state and the waiting of writes live in
``server/fsync_lock.py`` (dispatch makes write commands wait while it is held).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import time
from typing import Any

from bson.decimal128 import Decimal128

from tidemark import log
from tidemark.arguments import check_fields, wrong_type
from tidemark.auth.session import UNIX_SOCKET_PEER
from tidemark.context import CloseConnection, CommandContext, CommandSpec, ServerState
from tidemark.core import collection as C
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_logic import truthy  # BSON trueValue()
from tidemark.query.index_keys import MULTIKEY_FLAG

FSYNC_URL = "http://dochub.mongodb.org/core/fsynccommand"


# mongod's fsync IDL (strict): these fields only, the safeBools a bool or a number, the timeout an int.
_FSYNC_FIELDS = {"lock", "forBackup", "allowFsyncFailure", "fsyncLockAcquisitionTimeoutMillis"}
_SAFE_BOOL_TYPES = ("bool", "long", "int", "decimal", "double")


def _check_fsync_arguments(cmd: dict[str, Any]) -> None:
    """40415 for an unknown field (``unlock`` is fsyncUnlock's business), 14 for a wrong type; a null
    is an absent field, as the IDL reads it."""
    check_fields(cmd, "fsync", _FSYNC_FIELDS)
    for name in ("lock", "forBackup", "allowFsyncFailure"):
        value = cmd.get(name)
        if value is not None and not isinstance(value, bool | int | float | Decimal128):
            raise wrong_type(f"fsync.{name}", value, _SAFE_BOOL_TYPES)
    timeout = cmd.get("fsyncLockAcquisitionTimeoutMillis")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)):
        raise wrong_type("fsync.fsyncLockAcquisitionTimeoutMillis", timeout, "int")


async def _flush(ctx: CommandContext) -> None:
    """Every queued write committed (each commit is fsynced: nothing else is left to flush)."""
    await asyncio.wrap_future(ctx.server.engine.write(lambda w: None))


async def fsync(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    _check_fsync_arguments(cmd)
    lock = truthy(cmd.get("lock"))
    log.info("COMMAND", 20461, "CMD fsync", ctx=f"conn{ctx.conn.id}", lock=lock,
             forBackup=truthy(cmd.get("forBackup")))
    fsync_lock = ctx.server.fsync_lock
    if not lock:
        if not fsync_lock.locked:  # under the lock everything is flushed already (and the writer held)
            await _flush(ctx)
        return {"numFiles": 1}
    count = fsync_lock.acquire()  # new write commands wait from now on
    try:
        if count == 1:
            await fsync_lock.drain(ctx.op)  # running ones finish
            # then the storage writer commits what is queued and stops: internal writers (TTL monitor,
            # time-series checkpoints, profiler) wait too, so the files do not change until unlocked
            await asyncio.wrap_future(ctx.server.engine.hold_writes())
    except BaseException:
        _release(ctx.server)
        raise
    log.info("COMMAND", 20462, "mongod is locked and no writes are allowed", ctx=f"conn{ctx.conn.id}",
             lockCount=count, seeAlso=FSYNC_URL)
    return {"info": "now locked against writes, use db.fsyncUnlock() to unlock", "lockCount": count,
            "seeAlso": FSYNC_URL}


def _release(server: ServerState) -> int:
    """One fewer fsync lock request; the storage writer goes on when none is left."""
    count = server.fsync_lock.release()
    if count == 0:
        server.engine.release_writes()
    return count


async def fsync_unlock(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    log.info("COMMAND", 20465, "command: unlock requested", ctx=f"conn{ctx.conn.id}")
    fsync_lock = ctx.server.fsync_lock
    if not fsync_lock.locked:
        raise MongoError(ErrorCode.IllegalOperation, "fsyncUnlock called when not locked")
    count = _release(ctx.server)
    log.info("COMMAND", 20466, "fsyncUnlock complete", ctx=f"conn{ctx.conn.id}", lockCount=count)
    return {"info": "fsyncUnlock completed", "lockCount": count}


def _is_localhost(peer: str) -> bool:
    host = peer.rsplit(":", 1)[0].strip("[]") if ":" in peer else peer
    if not host or host in (UNIX_SOCKET_PEER, "localhost"):  # a unix socket is local
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def shutdown(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's shutdown on a standalone: no reply, the connection closes and the process exits 0.
    ``force``/``timeoutSecs`` only matter for a primary's step-down; they are validated and accepted."""
    timeout = cmd.get("timeoutSecs")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field 'shutdown.timeoutSecs' is the wrong type, "
                                                 "expected type 'long'")
    server = ctx.server
    if not server.auth.enabled and not _is_localhost(ctx.conn.peer):
        raise MongoError(ErrorCode.Unauthorized, "shutdown must run from localhost when running db without auth")
    if server.request_shutdown is None:
        raise MongoError(ErrorCode.IllegalOperation, "this server cannot be shut down by a command")
    log.info("COMMAND", 20475, "Terminating via shutdown command", ctx=f"conn{ctx.conn.id}",
             force=truthy(cmd.get("force")), timeoutSecs=timeout if timeout is not None else 15)
    server.request_shutdown()
    raise CloseConnection()


async def _target(ctx: CommandContext, cmd: dict[str, Any], command: str):
    """(info of the collection to work on, its name): a time-series view's buckets collection."""
    db = ctx.db
    name = C.collection_arg(cmd, command)
    ns = C.ns_of(db, name)

    def inspect():
        with ctx.server.engine.read() as r:
            return r.get_collection(ns), C.get_view(r, db, name)

    info, view = await ctx.run_blocking(inspect)
    if C.is_timeseries_view(view):
        return view["viewOn"], True
    if view is not None:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, "can't compact a view")
    if info is None:
        raise MongoError(ErrorCode.NamespaceNotFound, "collection does not exist")
    return name, False


async def compact(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """Standalone compact: ``{bytesFreed}``. LMDB reuses freed pages in place and the file is
    rewritten packed at a clean shutdown (storage/README.md, "Compaction"), so nothing is freed now."""
    name, _timeseries = await _target(ctx, cmd, "compact")
    log.info("COMMAND", 20284, "Compact begin", ctx=f"conn{ctx.conn.id}", namespace=C.ns_of(ctx.db, name))
    await _flush(ctx)
    log.info("COMMAND", 20286, "Compact end", ctx=f"conn{ctx.conn.id}", namespace=C.ns_of(ctx.db, name),
             freedBytes=0)
    return {"bytesFreed": 0}


async def re_index(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """Rebuild every secondary index from the documents (one write transaction); ``_id`` is the
    record order of a clustered collection, or rebuilt with the others' entries otherwise."""
    db = ctx.db
    name = C.collection_arg(cmd, "reIndex")
    ns = C.ns_of(db, name)

    def inspect():
        with ctx.server.engine.read() as r:
            return r.get_collection(ns), C.get_view(r, db, name)

    log.warning("COMMAND", 6508600, "The reIndex command is deprecated. For more information, see "
                "https://mongodb.com/docs/manual/reference/command/reIndex/", ctx=f"conn{ctx.conn.id}")
    log.info("COMMAND", 20457, "CMD reIndex", ctx=f"conn{ctx.conn.id}", namespace=ns)
    info, view = await ctx.run_blocking(inspect)
    # a time-series collection is a view in 7.0's catalog (its buckets hold open buckets in memory)
    if view is not None or (info is not None and C.is_buckets_collection(name, info)):
        raise MongoError(ErrorCode.CommandNotSupportedOnView, "can't re-index a view")
    if info is None:
        raise MongoError(ErrorCode.NamespaceNotFound, "collection does not exist")

    def fn(w):
        coll = w.get_collection(ns)
        if coll is None:
            raise MongoError(ErrorCode.NamespaceNotFound, "collection does not exist")
        was = len(coll.indexes)
        for spec in [dict(s) for s in coll.indexes]:
            if spec["name"] == "_id_":
                continue
            spec.pop(MULTIKEY_FLAG, None)
            coll = w.drop_index(coll, spec["name"])
            coll = w.create_index(coll, spec, C.build_index_entries(w, coll, spec))
        return was, [C.public_index_spec(s) for s in coll.indexes]

    was, specs = await asyncio.wrap_future(ctx.server.engine.write(fn))
    return {"nIndexesWas": was, "nIndexes": len(specs), "indexes": specs}


# System collections dbHash includes (mongod: the replicated ones); others (system.profile, ...) are
# skipped, as are ``tmp.mr.*`` collections.
_HASHED_SYSTEM = ("system.views", "system.js")
_HASHED_ADMIN_SYSTEM = ("system.users", "system.roles", "system.version")


def _hashed(db: str, name: str) -> bool:
    if db == "local" or name.startswith("tmp.mr."):
        return False
    if not name.startswith("system."):
        return True
    return (name.startswith(C.BUCKETS_PREFIX) or name in _HASHED_SYSTEM
            or (db == "admin" and name in _HASHED_ADMIN_SYSTEM))


def _collection_md5(r, info) -> str:
    """md5 over the documents' BSON in ``_id`` order."""
    digest = hashlib.md5()  # noqa: S324 - mongod's dbHash is md5
    if info.clustered or "_id_" not in info.index_idents:
        for _rid, raw in r.scan(info):
            digest.update(bytes(raw))
    else:
        for _key, rid in r.index_scan(info, "_id_"):
            raw = r.get(info, bytes(rid))
            if raw is not None:
                digest.update(bytes(raw))
    return digest.hexdigest()


async def db_hash(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    db = ctx.db
    # mongod reads ``collections`` only when it is an array (anything else hashes every collection)
    wanted = cmd.get("collections") if isinstance(cmd.get("collections"), list) else None
    if wanted is not None and not all(type(n) is str for n in wanted):
        raise MongoError(ErrorCode.BadValue, "collections entries have to be strings")
    first = next(iter(cmd.values()))
    if type(first) is str:
        # mongod checks the namespace Command::parseNs makes of a string first value, "<db>.<value>",
        # as a database name: the dot never passes (dbhash.cpp; jstests/core/diagnostics/dbhash.js)
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid db name: {db}.{first}")

    def work():
        with ctx.server.engine.read() as r:
            infos = sorted(r.list_collections(db), key=lambda i: i.name)
            hashes, capped, uuids = {}, [], {}
            for info in infos:
                if not _hashed(db, info.name) or (wanted is not None and info.name not in wanted):
                    continue
                ctx.check_deadline()
                hashes[info.name] = _collection_md5(r, info)
                uuids[info.name] = info.uuid
                if (info.options or {}).get("capped"):
                    capped.append(info.name)
            return hashes, capped, uuids

    hashes, capped, uuids = await ctx.run_blocking(work)
    total = hashlib.md5()  # noqa: S324
    for name in sorted(hashes):
        total.update(hashes[name].encode())
    return {"host": ctx.server.host, "collections": hashes, "capped": capped, "uuids": uuids,
            "md5": total.hexdigest(), "timeMillis": int((time.monotonic() - started) * 1000)}


COMMANDS = [
    CommandSpec("compact", compact, help="defragment a collection (standalone: answers bytesFreed)"),
    CommandSpec("dbHash", db_hash, help="md5 of every collection of the database, documents in _id order",
                aliases=("dbhash",)),
    CommandSpec("fsync", fsync, help=FSYNC_URL + " (flush; lock: true blocks writes until fsyncUnlock)",
                admin_only=True),
    CommandSpec("fsyncUnlock", fsync_unlock, help="release one fsync lock request", admin_only=True),
    CommandSpec("reIndex", re_index, help="rebuild every index of a collection (standalone only)"),
    CommandSpec("shutdown", shutdown, help="shut the server down cleanly (exits 0)", admin_only=True),
]
