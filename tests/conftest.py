"""Shared fixtures: a real Tidemark server process and clients connected to it.

- ``server`` (session): one ``python -m tidemark`` on a free port with a temporary dbpath and
  ``ttlMonitorSleepSecs=1``; stopped with SIGTERM at the end, asserting a clean exit (status 0).
- ``start_server`` (function): factory for dedicated servers, ``start_server(dbpath=None,
  params=None, args=())`` -> ``harness.ServerProcess`` (.port, .uri, .kill(), .terminate(),
  .restart(), .client()); every server it started is stopped after the test.
- ``client`` (session): a pymongo MongoClient on ``server``.
- ``db`` (function): a fresh, uniquely named database for the test, dropped afterwards.
- ``mongosh`` / ``node`` (function): ``mongosh(script)`` and ``node(script_js)`` bound to ``server``;
  skipped when ``make test`` has not installed the npm packages.
- ``auth_server`` (session): a second server started with ``--auth`` (and test commands) whose first user, ``root`` /
  ``rootpw`` (role root), was created through the localhost exception; ``root_client`` (session) is
  pymongo authenticated as that user.

Marker ``@pytest.mark.commands("find", "getMore")`` declares which commands an end-to-end test
covers; ``tests/test_command_table.py`` requires every command in the table to be covered.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ServerProcess, have_mongosh, have_node_driver, run_mongosh, run_node  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "commands(*names): the server commands an end-to-end test covers")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("tidemark-session")
    proc = ServerProcess(base / "db", params={"ttlMonitorSleepSecs": 1}, log_path=base / "tidemark.log")
    proc.start()
    yield proc
    code = proc.terminate()
    assert code == 0, f"server exited with {code}; log tail:\n{proc.log_text()[-4000:]}"


@pytest.fixture
def start_server(tmp_path: Path):
    started: list[ServerProcess] = []

    def start(
        dbpath: str | Path | None = None,
        params: dict | None = None,
        args: tuple[str, ...] = (),
        port: int | None = None,
        ssl_context=None,
    ) -> ServerProcess:
        path = Path(dbpath) if dbpath is not None else tmp_path / f"db{len(started)}"
        proc = ServerProcess(
            path, params=params, args=args, port=port, log_path=tmp_path / f"server{len(started)}.log",
            ssl_context=ssl_context,
        )
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.kill()


ROOT_USER, ROOT_PASSWORD = "root", "rootpw"


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("tidemark-auth")
    # enableTestCommands: every command of the table exists there (the auth tests try each one).
    proc = ServerProcess(base / "db", args=("--auth",), params={"enableTestCommands": 1}, log_path=base / "tidemark.log")
    proc.start()
    with proc.client() as bootstrap:  # the localhost exception lets this connection create the first user
        bootstrap.admin.command("createUser", ROOT_USER, pwd=ROOT_PASSWORD, roles=["root"])
    yield proc
    code = proc.terminate()
    assert code == 0, f"server exited with {code}; log tail:\n{proc.log_text()[-4000:]}"


@pytest.fixture(scope="session")
def root_client(auth_server: ServerProcess):
    mongo = auth_server.client(username=ROOT_USER, password=ROOT_PASSWORD)
    yield mongo
    mongo.close()


@pytest.fixture(scope="session")
def client(server: ServerProcess):
    mongo = server.client()
    yield mongo
    mongo.close()


@pytest.fixture
def db(client, request: pytest.FixtureRequest):
    name = "t_" + re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:40] + f"_{id(request) % 100000}"
    database = client[name]
    yield database
    try:
        client.drop_database(name)
    except Exception:  # dropDatabase may not exist yet on this build; the dbpath is temporary anyway
        pass


@pytest.fixture
def mongosh(server: ServerProcess):
    if not have_mongosh():
        pytest.skip("mongosh is not installed (run `make test`, which installs it into .node/)")
    return lambda script, **kw: run_mongosh(server.uri, script, **kw)


@pytest.fixture
def node(server: ServerProcess):
    if not have_node_driver():
        pytest.skip("the Node driver is not installed (run `make test`, which installs it into .node/)")
    return lambda script_js, **kw: run_node(server.uri, script_js, **kw)
