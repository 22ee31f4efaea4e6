"""``ServerState`` declares every field; the ones a lifecycle hook creates are set before any command runs.

Handlers read the state's fields plainly (no ``getattr(server, ..., None)``), so what they rely on is: once
``tidemark.app``'s lifecycle hooks have started, no declared field is missing — and the in-process state
the tests hand to handlers (tests/harness/server_state.py) is just as complete.
"""

from __future__ import annotations

import dataclasses

from harness.server_state import InProcessServer

from tidemark.app import LIFECYCLE_HOOKS
from tidemark.context import ServerOptions, ServerState, WorkerPool
from tidemark.cursors import CursorRegistry
from tidemark.params import ServerParams
from tidemark.storage.engine import open_engine


def _unset(state: ServerState) -> list[str]:
    return [f.name for f in dataclasses.fields(ServerState) if not hasattr(state, f.name)]


async def test_every_field_is_set_once_the_lifecycle_hooks_started(tmp_path):
    options = ServerOptions()
    options.dbpath = str(tmp_path)
    engine = open_engine(str(tmp_path))
    executor = WorkerPool(2)
    state = ServerState(options=options, params=ServerParams(), engine=engine, cursors=CursorRegistry(),
                        executor=executor)
    assert set(_unset(state)) == {"auth", "bucket_catalog", "ts_committer"}  # what the hooks create
    started = []
    try:
        for hook in LIFECYCLE_HOOKS:
            await hook.on_startup(state)
            started.append(hook)
        assert _unset(state) == []
    finally:
        for hook in reversed(started):
            await hook.on_shutdown(state)
        engine.close()
        executor.shutdown()


def test_the_in_process_server_of_the_tests_sets_every_field(tmp_path):
    state = InProcessServer(tmp_path / "data")
    try:
        assert _unset(state) == []
    finally:
        state.engine.close()
