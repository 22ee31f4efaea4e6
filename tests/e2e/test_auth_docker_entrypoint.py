"""The container entrypoint (docker/entrypoint.sh) run directly against a temporary dbpath: with
MONGO_INITDB_ROOT_USERNAME / MONGO_INITDB_ROOT_PASSWORD (or the *_FILE variants) the root user is
created on the first start only and the server runs with --auth; without them nothing changes. The
same image is exercised in a real container when a container engine is available."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pymongo
import pytest
from harness import PYTHON, ROOT, ServerProcess
from pymongo.errors import OperationFailure

ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


class EntrypointServer(ServerProcess):
    """The server as the container starts it: ``docker-entrypoint.sh tidemark <flags>``."""

    def command_line(self) -> list[str]:
        return ["sh", str(ENTRYPOINT), "tidemark", "--port", str(self.port), "--dbpath", self.dbpath]


@pytest.fixture
def container_env(monkeypatch):
    monkeypatch.setenv("PATH", f"{os.path.dirname(PYTHON)}{os.pathsep}{os.environ['PATH']}")
    for name in ("MONGO_INITDB_ROOT_USERNAME", "MONGO_INITDB_ROOT_PASSWORD",
                 "MONGO_INITDB_ROOT_USERNAME_FILE", "MONGO_INITDB_ROOT_PASSWORD_FILE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def entrypoint_server(tmp_path):
    started: list[EntrypointServer] = []

    def start(dbpath) -> EntrypointServer:
        proc = EntrypointServer(dbpath, log_path=tmp_path / f"entry{len(started)}.log")
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.kill()


def _client(proc, user=None, password=None):
    return pymongo.MongoClient(proc.uri, username=user, password=password, serverSelectionTimeoutMS=10000)


@pytest.mark.slow
def test_root_user_is_created_on_first_start_and_auth_is_on(container_env, entrypoint_server, tmp_path):
    dbpath = tmp_path / "data"
    container_env.setenv("MONGO_INITDB_ROOT_USERNAME", "admin")
    container_env.setenv("MONGO_INITDB_ROOT_PASSWORD", "first-secret")
    proc = entrypoint_server(dbpath)
    with _client(proc) as anonymous:
        with pytest.raises(OperationFailure) as failure:
            anonymous.test.c.find_one()
        assert failure.value.code == 13
    with _client(proc, "admin", "first-secret") as root:
        assert root.admin.command("connectionStatus")["authInfo"]["authenticatedUserRoles"] == [
            {"role": "root", "db": "admin"}]
        assert root.admin.command("getCmdLineOpts")["parsed"]["security"] == {"authorization": "enabled"}
        root.test.c.insert_one({"kept": True})
    environ = open(f"/proc/{proc.process.pid}/environ", "rb").read()
    assert b"first-secret" not in environ and b"MONGO_INITDB_ROOT_PASSWORD" not in environ
    assert "first-secret" not in proc.log_text()
    assert proc.terminate() == 0

    # A second start with other credentials changes nothing: the user exists, auth stays on.
    container_env.setenv("MONGO_INITDB_ROOT_PASSWORD", "second-secret")
    proc = entrypoint_server(dbpath)
    with _client(proc, "admin", "second-secret") as wrong:
        with pytest.raises(OperationFailure) as failure:
            wrong.admin.command("ping")
        assert failure.value.code == 18
    with _client(proc, "admin", "first-secret") as root:
        assert root.test.c.find_one({}, {"_id": 0}) == {"kept": True}
    assert proc.terminate() == 0


@pytest.mark.slow
def test_file_variants_read_the_secrets(container_env, entrypoint_server, tmp_path):
    (tmp_path / "user").write_text("fileroot\n")
    (tmp_path / "password").write_text("from-a-file\n")
    container_env.setenv("MONGO_INITDB_ROOT_USERNAME_FILE", str(tmp_path / "user"))
    container_env.setenv("MONGO_INITDB_ROOT_PASSWORD_FILE", str(tmp_path / "password"))
    proc = entrypoint_server(tmp_path / "data")
    with _client(proc, "fileroot", "from-a-file") as root:
        assert root.admin.command("usersInfo", "fileroot")["users"][0]["roles"] == [{"role": "root", "db": "admin"}]


@pytest.mark.slow
def test_without_the_variables_the_server_runs_as_before(container_env, entrypoint_server, tmp_path):
    proc = entrypoint_server(tmp_path / "data")
    with _client(proc) as client:
        client.test.c.insert_one({"open": True})
        assert "security" not in client.admin.command("getCmdLineOpts")["parsed"]


@pytest.mark.parametrize("env", [
    {"MONGO_INITDB_ROOT_USERNAME": "only-a-name"},
    {"MONGO_INITDB_ROOT_PASSWORD": "x", "MONGO_INITDB_ROOT_PASSWORD_FILE": "/dev/null",
     "MONGO_INITDB_ROOT_USERNAME": "u"},
])
def test_incomplete_or_conflicting_variables_stop_the_container(container_env, tmp_path, env):
    for name, value in env.items():
        container_env.setenv(name, value)
    result = subprocess.run(["sh", str(ENTRYPOINT), "tidemark", "--dbpath", str(tmp_path / "d"), "--port", "1"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and result.stderr.startswith("error:")


def _docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _docker_available(), reason="no container engine on this machine")
def test_a_real_container_starts_with_auth(tmp_path):  # pragma: no cover - needs a container engine
    tag = f"tidemark-test-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "build", "-f", "docker/Dockerfile", "-t", tag, "."], cwd=ROOT, check=True,
                   timeout=1200)
    name = f"{tag}-run"
    subprocess.run(["docker", "run", "-d", "--name", name, "-p", "127.0.0.1::27017",
                    "-e", "MONGO_INITDB_ROOT_USERNAME=root", "-e", "MONGO_INITDB_ROOT_PASSWORD=example", tag],
                   check=True, timeout=120)
    try:
        port = subprocess.run(["docker", "port", name, "27017"], capture_output=True, text=True,
                              check=True).stdout.strip().rsplit(":", 1)[1]
        uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"
        with pymongo.MongoClient(uri, serverSelectionTimeoutMS=30000) as anonymous:
            with pytest.raises(OperationFailure):
                anonymous.test.c.find_one()
        with pymongo.MongoClient(uri, username="root", password="example", serverSelectionTimeoutMS=30000) as root:
            assert root.admin.command("ping")["ok"] == 1
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
