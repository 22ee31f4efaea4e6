"""Run mongosh and Node driver scripts against a server (npm packages live in <repo>/.node)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

from harness.server import ROOT

NODE_MODULES = ROOT / ".node" / "node_modules"
MONGOSH = NODE_MODULES / ".bin" / "mongosh"
NODE = shutil.which("node") or "node"


class ClientError(AssertionError):
    """A client process failed; carries its output."""


def have_mongosh() -> bool:
    return MONGOSH.exists()


def have_node_driver() -> bool:
    return (NODE_MODULES / "mongodb").is_dir() and shutil.which("node") is not None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # Keep mongosh from writing history/telemetry into the user's home and from phoning home.
    env.setdefault("MONGOSH_NO_TELEMETRY", "1")
    env["DO_NOT_TRACK"] = "1"
    return env


def run_mongosh(uri: str, script: str, *, timeout: float = 60.0, raw: bool = False,
                args: tuple[str, ...] = ()) -> Any:
    """Evaluate ``script`` with ``mongosh --quiet --json=relaxed --eval`` and return the value of its
    last expression, parsed from relaxed Extended JSON (``raw=True`` returns stdout instead);
    ``args``: more mongosh options (``-u``, ``-p``, ``--tls``...)."""
    argv = [str(MONGOSH), "--quiet", "--norc", *args, uri, "--eval", script]
    if not raw:
        argv.insert(3, "--json=relaxed")
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT)
    if result.returncode != 0:
        raise ClientError(
            f"mongosh exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    if raw:
        return result.stdout + result.stderr
    text = result.stdout.strip()
    return json.loads(text) if text else None


_NODE_WRAPPER = """
const {{ MongoClient, BSON }} = require({module});
(async () => {{
  const client = new MongoClient({uri}, {{ serverSelectionTimeoutMS: 10000 }});
  await client.connect();
  try {{
    const db = client.db('test');
    const result = await (async (client, db) => {{
{body}
    }})(client, db);
    process.stdout.write(BSON.EJSON.stringify(result === undefined ? null : result, {{ relaxed: true }}));
  }} finally {{
    await client.close();
  }}
}})().catch((err) => {{ console.error(err); process.exit(1); }});
"""


def run_node(uri: str, script_js: str, *, timeout: float = 60.0) -> Any:
    """Run ``script_js`` as the body of ``async (client, db) => {...}`` with a connected Node driver
    client (``db`` is ``client.db('test')``); returns its return value parsed from relaxed EJSON."""
    program = _NODE_WRAPPER.format(
        module=json.dumps(str(NODE_MODULES / "mongodb")), uri=json.dumps(uri), body=script_js
    )
    result = subprocess.run(
        [NODE, "-e", program], capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT
    )
    if result.returncode != 0:
        raise ClientError(
            f"node exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    text = result.stdout.strip()
    return json.loads(text) if text else None
