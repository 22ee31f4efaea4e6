"""Launchers that start a throwaway mongod start Tidemark instead: mongodb-memory-server (Node) with a
system-binary override, and pymongo-inmemory (Python) with its use-local-mongod override. Neither may
download anything: the tests run offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import free_port
from harness.clients import NODE, NODE_MODULES, _env

pytestmark = [pytest.mark.clients, pytest.mark.commands("insert", "find", "serverStatus")]

TIDEMARK = Path(sys.executable).parent / "tidemark"  # the console script of this environment


def _node_package(name: str) -> Path | None:
    for base in [NODE_MODULES, *(Path(p) for p in os.environ.get("NODE_PATH", "").split(os.pathsep) if p)]:
        if (base / name / "package.json").exists():
            return base / name
    return None


def test_version_output_is_what_launchers_parse():
    import re

    result = subprocess.run([str(TIDEMARK), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    first = result.stdout.splitlines()[0]
    # mongodb-memory-server's own pattern for the first line of `mongod --version`
    assert re.match(r"^\s*db\s+version\s+v?(\d+\.\d+\.\d+)(-\d*)?(-[a-zA-Z0-9].*)?\s*$", first).group(1) == "7.0.0"
    assert "Build Info: {" in result.stdout and "tidemark" in result.stdout.splitlines()[-1]


@pytest.mark.slow
def test_mongodb_memory_server_starts_tidemark_as_its_system_binary():
    mms = _node_package("mongodb-memory-server-core")
    if mms is None or not TIDEMARK.exists():
        pytest.skip("mongodb-memory-server-core is not installed (run `make npm`)")
    driver = mms.parent / "mongodb"
    script = f"""
    const {{ MongoMemoryServer }} = require({json.dumps(str(mms))});
    const {{ MongoClient }} = require({json.dumps(str(driver))});
    (async () => {{
      const server = await MongoMemoryServer.create({{
        binary: {{ systemBinary: {json.dumps(str(TIDEMARK))}, version: '7.0.0' }},
      }});
      const client = await MongoClient.connect(server.getUri());
      await client.db('mms').collection('c').insertMany([{{ a: 1 }}, {{ a: 2 }}]);
      const docs = await client.db('mms').collection('c').find({{}}, {{ projection: {{ _id: 0 }} }}).toArray();
      const version = (await client.db('admin').command({{ buildInfo: 1 }})).version;
      await client.close();
      const stopped = await server.stop();  // SIGINT, then waits for a clean exit
      process.stdout.write(JSON.stringify({{ docs, version, stopped }}));
    }})().catch((err) => {{ console.error(err); process.exit(1); }});
    """
    env = {**_env(), "MONGOMS_RUNTIME_DOWNLOAD": "false", "MONGOMS_DISABLE_POSTINSTALL": "1"}
    result = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Possible version conflict" not in result.stderr
    assert json.loads(result.stdout) == {"docs": [{"a": 1}, {"a": 2}], "version": "7.0.0", "stopped": True}


@pytest.mark.slow
def test_pymongo_inmemory_starts_tidemark_as_its_local_mongod(tmp_path):
    pytest.importorskip("pymongo_inmemory")
    if not TIDEMARK.exists():
        pytest.skip("the tidemark console script is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mongod").symlink_to(TIDEMARK)  # pymongo-inmemory runs `mongod` from PATH
    code = """
import pymongo_inmemory
client = pymongo_inmemory.MongoClient()
client.pim.c.insert_one({"a": 1})
print(client.pim.c.find_one({}, {"_id": 0}), client.admin.command("buildInfo")["version"])
client.close()
"""
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYMONGOIM__USE_LOCAL_MONGOD": "True", "PYMONGOIM__MONGO_VERSION": "7.0",
           "PYMONGOIM__MONGOD_PORT": str(free_port()),
           # its version table maps a generic "linux" to 4.0 and would pass ephemeralForTest, which
           # mongod 7.0 (and Tidemark) refuse
           "PYMONGOIM__STORAGE_ENGINE": "wiredTiger"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "{'a': 1} 7.0.0"
