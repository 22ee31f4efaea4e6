"""Lifecycle hook (``server.app.LIFECYCLE_HOOKS``): sets up ``state.auth``, the AuthManager."""

from __future__ import annotations

from typing import Any

from server.auth.manager import AuthManager

# ``state`` is a server.context.ServerState: not imported, because server.context pulls in modules
# above this layer (the profiler, tailable cursors) and import-linter counts even type-only imports.
ServerState = Any


async def on_startup(state: ServerState) -> None:
    state.auth = AuthManager(state.engine, state.params, enabled=state.options.auth)


async def on_shutdown(state: ServerState) -> None:
    return None
