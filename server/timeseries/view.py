"""Read glue of time-series views (placeholder; filled in by the next commit)."""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode, MongoError


def read_source(ctx: Any, db: str, view_doc: dict, user_pipeline: list[dict]):
    raise MongoError(ErrorCode.NotImplemented, "time-series reads are not implemented yet")


def bucket_source(ctx: Any, db: str, coll: str):
    raise MongoError(ErrorCode.NotImplemented, "time-series bucket reads are not implemented yet")
