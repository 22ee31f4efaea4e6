"""Lifecycle hook (``server.app.LIFECYCLE_HOOKS``): sets up ``state.auth``, the AuthManager."""

from __future__ import annotations

from server.auth.manager import AuthManager
from server.context import ServerState


async def on_startup(state: ServerState) -> None:
    state.auth = AuthManager(state.engine, state.params, enabled=state.options.auth)


async def on_shutdown(state: ServerState) -> None:
    return None
