"""Insert paths of time-series collections (placeholder; filled in by the next commit)."""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode, MongoError


async def insert_measurements(ctx: Any, cmd: dict) -> dict:
    raise MongoError(ErrorCode.NotImplemented, "time-series inserts are not implemented yet")


async def insert_bucket_documents(ctx: Any, cmd: dict) -> dict:
    raise MongoError(ErrorCode.NotImplemented, "time-series bucket inserts are not implemented yet")
