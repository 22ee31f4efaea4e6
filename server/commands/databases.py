"""Database-level commands: listDatabases and dbStats.

A database exists while it holds at least one collection (mongod never lists empty databases); ``admin``,
``config`` and ``local`` are always listed, as a standalone mongod shows them.
Sizes come from storage counters: ``sizeOnDisk``/``storageSize`` are the stored (compressed) record
bytes plus index bytes; ``dataSize`` is the same stored record size (Tidemark keeps no separate
uncompressed tally), so the figures are consistent with each other rather than with WiredTiger.
"""

from __future__ import annotations

import shutil
from typing import Any

from bson.int64 import Int64

from tidemark.commands import timeseries as ts
from tidemark.context import CommandContext, CommandSpec
from tidemark.core.collection import SYSTEM_VIEWS, check_db_name, int_arg, is_buckets_collection
from tidemark.protocol.errors import ErrorCode, MongoError

# A standalone mongod always lists these (admin.system.version, config.system.sessions,
# local.startup_log); tools such as mongodump and Compass expect them. Sizes are a fresh mongod 7.0's.
SYSTEM_DATABASES = {"admin": 40960, "config": 12288, "local": 40960}

# dbStats' largest scale: a petabyte (2 ** 50), as mongod
MAX_SCALE = 2 ** 50


def _db_sizes(r, db: str) -> dict:
    """Counters of one database inside a read transaction."""
    collections = views = objects = data = indexes = index_size = 0
    for info in r.list_collections(db):
        if info.name == SYSTEM_VIEWS:
            views += r.count(info)
        collections += 1
        objects += r.count(info)
        data += r.data_size(info)
        indexes += len(info.indexes)
        index_size += sum(r.index_size(info, spec["name"]) for spec in info.indexes)
    return {"collections": collections, "views": views, "objects": objects, "dataSize": data,
            "indexes": indexes, "indexSize": index_size}


async def list_databases(ctx: CommandContext, cmd: dict) -> dict:
    name_only = bool(cmd.get("nameOnly", False))
    flt = cmd.get("filter")
    if flt is not None and not isinstance(flt, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         "BSON field 'listDatabases.filter' is the wrong type, expected type 'object'")
    match = None
    if flt:
        from tidemark.commands.ddl import check_catalog_filter
        from tidemark.query.match import compile_filter

        check_catalog_filter(flt)  # $text, $where and the near operators: 2, as mongod
        match = compile_filter(flt)

    def work():
        out: list[dict[str, Any]] = []
        with ctx.server.engine.read() as r:
            names = set(r.list_databases())
            for db in sorted(names | set(SYSTEM_DATABASES)):
                if name_only:
                    out.append({"name": db})
                    continue
                if db not in names:
                    out.append({"name": db, "sizeOnDisk": Int64(SYSTEM_DATABASES[db]), "empty": False})
                    continue
                s = _db_sizes(r, db)
                size = s["dataSize"] + s["indexSize"]
                # mongod's "empty" means "holds no collection", which a listed database never is
                # (an emptied admin.system.users still leaves admin non-empty).
                out.append({"name": db, "sizeOnDisk": Int64(max(size, 4096)), "empty": False})
        return out

    dbs = await ctx.run_blocking(work)
    if match is not None:
        dbs = [d for d in dbs if match(d)]
    reply: dict = {"databases": dbs}
    if not name_only:
        total = sum(int(d["sizeOnDisk"]) for d in dbs)
        reply["totalSize"] = Int64(total)
        reply["totalSizeMb"] = Int64(total // (1024 * 1024))
    return reply


async def db_stats(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    check_db_name(db, dollar=True)
    scale = int_arg(cmd, "scale", "dbStats", 1)  # a fractional scale truncates (1.5 is 1)
    if scale is None or scale < 1:
        raise MongoError(ErrorCode.BadValue, "Scale factor must be greater than zero")
    if scale > MAX_SCALE:
        raise MongoError(ErrorCode.BadValue, "Scale factor must be less than or equal to a petabyte")
    free_storage = bool(cmd.get("freeStorage"))

    def work():
        with ctx.server.engine.read() as r:
            sizes = _db_sizes(r, db)
            buckets = [info.ns for info in r.list_collections(db) if is_buckets_collection(info.name, info)]
        for ns in buckets:  # in-memory time-series buckets not stored yet count too
            count, size = ts.unstored_buckets(ctx.server, ns)
            sizes["objects"] += count
            sizes["dataSize"] += size
        return sizes

    s = await ctx.run_blocking(work)
    dbpath = ctx.server.options.dbpath or "."
    try:
        usage = shutil.disk_usage(dbpath)
        fs_used, fs_total = usage.used, usage.total
    except OSError:
        fs_used = fs_total = 0
    data = s["dataSize"]
    reply = {
        "db": db,
        "collections": Int64(s["collections"]),
        "views": Int64(s["views"]),
        "objects": Int64(s["objects"]),
        "avgObjSize": (data / s["objects"]) if s["objects"] else 0.0,
        "dataSize": float(data) / scale,
        "storageSize": float(data) / scale,
        "indexes": Int64(s["indexes"]),
        "indexSize": float(s["indexSize"]) / scale,
        "totalSize": float(data + s["indexSize"]) / scale,
        "scaleFactor": Int64(scale),
        "fsUsedSize": float(fs_used) / scale,
        "fsTotalSize": float(fs_total) / scale,
    }
    if free_storage:
        # space the store could reuse: LMDB reuses freed pages without reporting them per database,
        # so none is claimed (mongod's fields, present only when asked for, summing as it sums them)
        reply.update({"freeStorageSize": 0.0, "indexFreeStorageSize": 0.0, "totalFreeStorageSize": 0.0})
    return reply


COMMANDS = [
    CommandSpec("listDatabases", list_databases,
                help="list databases with their sizes (filter, nameOnly)", admin_only=True),
    CommandSpec("dbStats", db_stats, help="storage statistics of one database (scale)",
                aliases=("dbstats",)),
]
