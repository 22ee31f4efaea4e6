"""A throwaway Tidemark server for tests, in-process, and the pytest plugin that provides it.

Registered as a ``pytest11`` entry point, so installing Tidemark is enough::

    def test_orders(tidemark_db):                 # a fresh database, dropped afterwards
        tidemark_db.orders.insert_one({"n": 1})

    def test_uri(tidemark_uri): ...               # "mongodb://127.0.0.1:<port>/?directConnection=true"
    def test_client(tidemark_client): ...         # a pymongo MongoClient (session-wide)
    def test_alone(tidemark_server_factory): ...  # start(params=...) -> a dedicated TidemarkServer

``tidemark_server`` (session scope) starts one server on a free port with a temporary dbpath the first
time a test asks for it; the others build on it. Without pytest::

    with TidemarkServer() as server:
        MongoClient(server.uri)...

How it runs: the server's :class:`tidemark.app.App` runs on its own asyncio event loop in a daemon
thread of the test process (no subprocess, no binary, nothing downloaded), so it starts in a fraction
of a second; ``stop()`` shuts it down gracefully (storage closed, dbpath lock released). The process
log goes to ``<dbpath>/../tidemark.log``. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import pytest
except ImportError:  # TidemarkServer works without pytest; the fixtures need it
    pytest = None  # type: ignore[assignment]

START_TIMEOUT_SECONDS = 30.0


class TidemarkServer:
    """One in-process server. ``start()`` returns once it accepts connections."""

    def __init__(self, dbpath: str | os.PathLike[str] | None = None, *, port: int = 0,
                 params: dict[str, Any] | None = None, quiet: bool = True):
        self._own_dir = dbpath is None
        self.dbpath = Path(dbpath) if dbpath is not None else Path(tempfile.mkdtemp(prefix="tidemark-")) / "db"
        self.requested_port = port
        self.params = dict(params or {})
        self.quiet = quiet
        self.port: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._app: Any = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    @property
    def log_path(self) -> Path:
        return self.dbpath.parent / "tidemark.log"

    def client(self, **kwargs: Any):
        from pymongo import MongoClient

        return MongoClient(self.uri, **kwargs)

    def start(self) -> TidemarkServer:
        if self._thread is not None:
            raise RuntimeError("this TidemarkServer is already started")
        self._thread = threading.Thread(target=self._run, name=f"tidemark-{self.dbpath}", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_SECONDS):
            raise RuntimeError("Tidemark did not start in time")
        if self._error is not None:
            self._thread.join()
            self._thread = None
            raise RuntimeError(f"Tidemark did not start: {self._error}") from self._error
        return self

    def stop(self) -> None:
        """Graceful shutdown (like SIGTERM): in-flight commands finish, storage closes."""
        thread, loop, app = self._thread, self._loop, self._app
        if thread is None:
            return
        if loop is not None and app is not None and not loop.is_closed():
            loop.call_soon_threadsafe(app.stopping.set)
        thread.join(START_TIMEOUT_SECONDS)
        self._thread = None
        if self._own_dir:
            shutil.rmtree(self.dbpath.parent, ignore_errors=True)

    def __enter__(self) -> TidemarkServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- the server thread -------------------------------------------------------------------------
    def _run(self) -> None:
        # The server's modules are imported when a server starts, not when pytest loads this plugin:
        # every pytest run in an environment with Tidemark installed loads it.
        import uvloop

        loop = uvloop.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        from tidemark import log  # see _run
        from tidemark.app import App, StartupError
        from tidemark.context import ServerOptions

        self.dbpath.mkdir(parents=True, exist_ok=True)
        options = ServerOptions(port=self.requested_port, bind_ip=["127.0.0.1"], dbpath=str(self.dbpath),
                                quiet=self.quiet, argv=["tidemark", "(in-process)"],
                                set_parameters=[f"{k}={_param(v)}" for k, v in self.params.items()])
        options.parsed = {"net": {"bindIp": "127.0.0.1", "port": self.requested_port},
                          "storage": {"dbPath": str(self.dbpath)}}
        log.configure(str(self.log_path), quiet=self.quiet)
        app = App(options)
        try:
            await app.start()
        except (StartupError, Exception) as exc:  # noqa: BLE001 - reported to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._app = app
        self.port = app.port
        self._ready.set()
        await app.stopping.wait()
        await app.shutdown()


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --------------------------------------------------------------------------------------------------
# pytest fixtures
# --------------------------------------------------------------------------------------------------


if pytest is not None:

    @pytest.fixture(scope="session")
    def tidemark_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TidemarkServer]:
        """One in-process Tidemark for the test session (free port, temporary dbpath)."""
        server = TidemarkServer(tmp_path_factory.mktemp("tidemark") / "db").start()
        yield server
        server.stop()

    @pytest.fixture(scope="session")
    def tidemark_uri(tidemark_server: TidemarkServer) -> str:
        """The session server's connection string."""
        return tidemark_server.uri

    @pytest.fixture(scope="session")
    def tidemark_client(tidemark_server: TidemarkServer):
        """A pymongo MongoClient on the session server."""
        client = tidemark_server.client()
        yield client
        client.close()

    @pytest.fixture
    def tidemark_db(tidemark_client, request: pytest.FixtureRequest):
        """A fresh database on the session server, named after the test and dropped afterwards."""
        name = re.sub(r"[^A-Za-z0-9_]", "_", f"t_{request.node.name}")[:48] + f"_{os.getpid() % 10000}"
        tidemark_client.drop_database(name)
        yield tidemark_client[name]
        tidemark_client.drop_database(name)

    @pytest.fixture
    def tidemark_server_factory(tmp_path: Path) -> Iterator[Any]:
        """``start(params=None, quiet=True) -> TidemarkServer``: dedicated servers for one test (each its
        own dbpath under the test's tmp_path), stopped after the test."""
        started: list[TidemarkServer] = []

        def start(params: dict[str, Any] | None = None, quiet: bool = True) -> TidemarkServer:
            server = TidemarkServer(tmp_path / f"tidemark{len(started)}" / "db", params=params, quiet=quiet)
            started.append(server.start())
            return server

        yield start
        for server in started:
            server.stop()
