"""A user holding exactly one (initially empty) role, for auth tests that vary the role's privileges per
example: updateRole replaces them, so each example states the privileges it needs and nothing else."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymongo


@contextmanager
def one_role_user(auth_server: Any, root_client: Any, prefix: str) -> Iterator[tuple[str, pymongo.MongoClient]]:
    """Yield (role name, a client logged in as the role's only user); drop both afterwards."""
    role, user = f"{prefix}_{uuid.uuid4().hex[:6]}", f"{prefix}_{uuid.uuid4().hex[:6]}"
    root_client.admin.command("createRole", role, roles=[], privileges=[])
    root_client.admin.command("createUser", user, pwd="pw", roles=[role])
    conn: pymongo.MongoClient = pymongo.MongoClient(
        f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true")
    try:
        yield role, conn
    finally:
        conn.close()
        root_client.admin.command("dropUser", user)
        root_client.admin.command("dropRole", role)
