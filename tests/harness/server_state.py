"""A real ``ServerState`` in the test process, for tests that call command handlers or the engine's
server-facing functions directly (no listener, no network).

:class:`InProcessServer` is a ``tidemark.context.ServerState`` with every field set — the storage engine
(opened and recovered at ``path``), the cursor registry, the auth manager, the time-series bucket catalog
and its group committer — as ``tidemark.app`` and its lifecycle hooks set them, without the background
tasks (no TTL monitor, no committer maintenance: a test drives checkpoints itself). Handlers read the
state's fields plainly, so a stand-in object missing one would fail where the server cannot.

:meth:`InProcessServer.ctx` gives an :class:`InlineContext`: a ``CommandContext`` whose blocking work
runs inline on the caller's thread, so a test's steps happen in the order it wrote them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidemark.auth.manager import AuthManager
from tidemark.context import CommandContext, ConnectionInfo, ServerOptions, ServerState, WorkerPool
from tidemark.cursors import CursorRegistry
from tidemark.params import ServerParams
from tidemark.storage.engine import open_engine
from tidemark.timeseries.catalog import BucketCatalog
from tidemark.timeseries.commit import Committer
from tidemark.timeseries.recovery import recover

# One small pool for every in-process server of the test session (threads start only when used).
_EXECUTOR = WorkerPool(4, thread_name_prefix="test-server-state")


class InProcessServer(ServerState):
    """A complete server state over a real storage engine at ``path`` (see the module docstring)."""

    def __init__(self, path: str | Path, checkpoint_interval: float = 60.0,
                 memory_threshold: int = 1 << 40):
        engine = open_engine(str(path))
        recover(engine)
        options = ServerOptions()
        options.dbpath = str(path)
        super().__init__(options=options, params=ServerParams(), engine=engine, cursors=CursorRegistry(),
                         executor=_EXECUTOR)
        self.auth = AuthManager(engine, self.params, enabled=False)
        self.bucket_catalog = BucketCatalog(memory_threshold=memory_threshold)
        self.ts_committer = Committer(engine, self.bucket_catalog, checkpoint_interval=lambda: checkpoint_interval)

    def ctx(self, db: str = "db", command: str = "test") -> InlineContext:
        return InlineContext(self, ConnectionInfo(id=1, peer="127.0.0.1:1"), db, command)


class InlineContext(CommandContext):
    """A ``CommandContext`` whose blocking work runs inline (still checking the deadline first)."""

    __slots__ = ()

    async def run_blocking(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.check_deadline()
        return fn(*args, **kwargs)
