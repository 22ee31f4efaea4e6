"""Lifecycle hook (``tidemark.app.LIFECYCLE_HOOKS``): sets up ``state.auth``, the AuthManager, and gives a
data directory whose users predate it the auth schema document mongod always has with users
(``admin.system.version`` ``{_id: "authSchema", currentVersion: 5}``: mongodump/mongorestore need it),
and gives ``admin.system.users`` / ``admin.system.roles`` back the unique index they lost (mongod's
verifySystemIndexes at start-up, log 22488)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tidemark import log
from tidemark.auth import store
from tidemark.auth.manager import AuthManager

if TYPE_CHECKING:  # annotations only: tidemark.context sits above this layer (server/README.md, "Layers")
    from tidemark.context import ServerState


async def on_startup(state: ServerState) -> None:
    state.auth = AuthManager(state.engine, state.params, enabled=state.options.auth)
    engine = state.engine
    if store.exists_any(engine) and store.read_one(engine, store.VERSION, store.AUTH_SCHEMA_ID) is None:
        await asyncio.wrap_future(engine.write(store.ensure_auth_schema))
    missing = store.missing_indexes(engine)
    if missing:
        for ns in missing:
            log.info("INDEX", 22488, "No authorization index detected. Attempting to recover by creating an index",
                     namespace=ns, indexSpec=store.index_spec(ns))
        for ns in await asyncio.wrap_future(engine.write(store.restore_indexes(missing))):
            log.error("INDEX", 22490, "Failed to regenerate index", namespace=ns,
                      error="E11000 duplicate key error")


async def on_shutdown(state: ServerState) -> None:
    return None
