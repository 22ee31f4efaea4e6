"""Tidemark itself, started as a user would (``python -m tidemark --port P --dbpath D``) on a fresh data dir.

Two systems share this module: ``tidemark`` (the ``cpu`` time-series collection, timeField "time",
metaField "tags", granularity seconds) and ``tidemark-regular`` (the same documents in a plain collection).
Both get the index {"tags.hostname": 1, time: -1}. Bytes on disk are measured after a clean SIGTERM
shutdown. The pymongo load runs against a second fresh server so it does not disturb the storage figure.
With ``--tidemark-auth`` every server runs with ``--auth``: the benchmark user (role root) is created
through the localhost exception, and the loaders and the queries authenticate as it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.connections import check_connections
from bench.harness import (
    Context,
    SystemResult,
    check_and_time,
    disk_bytes,
    free_port,
    ingest_stats,
    pymongo_args,
    replay_args,
    run_loader,
    settle,
    start_process,
    stop_process,
    wait_port,
)
from bench.messages import COLLECTION, DB
from bench.queries import ResultMismatch, normalize_mongo, pipeline

INDEX = [("tags.hostname", 1), ("time", -1)]


def run_timeseries(ctx: Context) -> SystemResult:
    return _run(ctx, "tidemark", timeseries=True)


def run_regular(ctx: Context) -> SystemResult:
    return _run(ctx, "tidemark-regular", timeseries=False)


def _run(ctx: Context, name: str, timeseries: bool) -> SystemResult:
    kind = "time-series collection" if timeseries else "regular collection"
    access = ", access control on (SCRAM-SHA-256)" if ctx.auth else ""
    result = SystemResult(name, f"Tidemark, {kind}, durable acknowledged writes{access}")
    rows = ctx.dataset.rows
    server = TidemarkServer(ctx, ctx.workdir / name)
    loaded = False
    try:
        server.start()
        client = server.client()
        try:
            setup_collection(client, timeseries)
            loaded_result = run_loader(ctx, replay_args(ctx, server.port, auth=True), server.pid)
            loaded_result.update(settle(server.pid))  # queries are timed once the load's work is done
            stats = ingest_stats(loaded_result, rows, ctx.pin)
            result.ingest["replay"] = stats
            if stats["error"]:
                result.errors.append(f"replay load: {stats['error']}")
            else:
                loaded = True
                held = client[DB].command("count", COLLECTION)["n"]
                if held != rows:
                    raise RuntimeError(f"count reports {held} rows after loading {rows}")
                if timeseries:
                    stats["buckets"] = bucket_count(client)
                    result.notes.append(f"replay ({ctx.loader} batches) left {stats['buckets']:,} buckets")
                coll = client[DB][COLLECTION]
                check_and_time(
                    ctx,
                    name,
                    lambda q, p: list(coll.aggregate(pipeline(q, p))),
                    normalize_mongo,
                    result,
                    server.pid,
                )
            if timeseries and ctx.connections:
                held = check_connections(server.port, ctx.connections)
                result.checks["connections"] = held
                if held["errors"] or held["ok"] != held["connections"]:
                    result.errors.append(
                        f"{held['ok']} of {held['connections']} connections answered: {held['errors']}"
                    )
        finally:
            client.close()
    except ResultMismatch:
        server.stop()
        raise
    except Exception as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
    clean = server.stop()
    if loaded:
        size = disk_bytes(server.dbpath)
        note = "after a clean shutdown" if clean else "server had to be killed: not a clean shutdown"
        result.storage = {"bytes": size, "bytes_per_row": size / rows, "note": note}
    if ctx.pymongo and timeseries:
        _pymongo_load(ctx, result, ctx.workdir / f"{name}-pymongo", timeseries)
    return result


def _pymongo_load(ctx: Context, result: SystemResult, workdir: Path, timeseries: bool) -> None:
    server = TidemarkServer(ctx, workdir)
    try:
        server.start()
        client = server.client()
        try:
            setup_collection(client, timeseries)
        finally:
            client.close()
        stats = ingest_stats(
            run_loader(ctx, pymongo_args(ctx, server.port, auth=True), server.pid), ctx.dataset.rows, ctx.pin
        )
        result.ingest["pymongo"] = stats
        if stats["error"]:
            result.errors.append(f"pymongo load: {stats['error']}")
    except Exception as exc:
        result.errors.append(f"pymongo load: {type(exc).__name__}: {exc}")
    finally:
        server.stop()
        shutil.rmtree(server.dbpath, ignore_errors=True)


def bucket_count(client) -> int:
    """Buckets of the loaded collection, open ones included (count on the buckets namespace sees them)."""
    return client[DB].command("count", f"system.buckets.{COLLECTION}")["n"]


def setup_collection(client, timeseries: bool) -> None:
    db = client[DB]
    db.drop_collection(COLLECTION)
    if timeseries:
        ts = {"timeField": "time", "metaField": "tags", "granularity": "seconds"}
        db.create_collection(COLLECTION, timeseries=ts)
    else:
        db.create_collection(COLLECTION)
    db[COLLECTION].create_index(INDEX)


class TidemarkServer:
    """``python -m tidemark`` on a fresh data directory under ``workdir`` (pinned like the benchmark)."""

    def __init__(self, ctx: Context, workdir: Path):
        self.ctx = ctx
        self.workdir = workdir
        self.dbpath = workdir / "db"
        self.port = 0
        self.proc = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self) -> None:
        self.dbpath.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        cmd = (
            self.ctx.server_prefix()
            + self.ctx.tidemark_cmd
            + ["--port", str(self.port), "--dbpath", str(self.dbpath)]
            + (["--auth"] if self.ctx.auth else [])
        )
        self.proc = start_process(cmd, self.workdir / "tidemark.log")
        wait_port(self.port, self.proc, what="tidemark (" + " ".join(cmd) + ")")
        if self.ctx.auth:
            from pymongo import MongoClient

            with MongoClient("127.0.0.1", self.port, directConnection=True) as bootstrap:  # localhost exception
                bootstrap.admin.command("createUser", self.ctx.auth[0], pwd=self.ctx.auth[1], roles=["root"])

    def client(self):
        from pymongo import MongoClient

        credentials = {"username": self.ctx.auth[0], "password": self.ctx.auth[1]} if self.ctx.auth else {}
        client = MongoClient("127.0.0.1", self.port, directConnection=True, serverSelectionTimeoutMS=10_000,
                             **credentials)
        client.admin.command("ping")
        return client

    def stop(self) -> bool:
        if self.proc is None:
            return True
        proc, self.proc = self.proc, None
        return stop_process(proc)
