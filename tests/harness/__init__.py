"""Test harness: real server processes and real clients (mongosh, the Node driver).

Import from tests as ``from harness import ...`` (tests/ is on sys.path via tests/conftest.py).
"""

from harness.clients import (
    MONGOSH,
    NODE_MODULES,
    ClientError,
    have_mongosh,
    have_node_driver,
    run_mongosh,
    run_node,
)
from harness.server import PYTHON, ROOT, ServerProcess, free_port, raw_command
from harness.ttl import ttl_passes, wait_ttl_passes

__all__ = [
    "MONGOSH",
    "NODE_MODULES",
    "PYTHON",
    "ROOT",
    "ClientError",
    "ServerProcess",
    "free_port",
    "have_mongosh",
    "have_node_driver",
    "raw_command",
    "run_mongosh",
    "run_node",
    "ttl_passes",
    "wait_ttl_passes",
]
