"""Test commands: present only when the server starts with ``--setParameter enableTestCommands=1``
(the dispatcher leaves ``test_only`` commands out of its table otherwise, so they answer 59 like an
unknown command, as on a mongod without test commands).

``configureFailPoint`` arms the fail points drivers' test runners use (``failCommand``,
``maxTimeAlwaysTimeOut``, ``failGetMoreAfterCursorCheckout``; see
server/failpoints.py): ``{configureFailPoint: "failCommand", mode, data}`` -> ``{count: <times entered>}``.
``testVersion2`` and ``testDeprecationInVersion2``: mongod's no-op test commands outside API Version 1,
which drivers' versioned-API tests run with ``apiStrict``.
"""

from __future__ import annotations

from typing import Any

from tidemark import log
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError


async def configure_fail_point(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = cmd["configureFailPoint"]
    if "mode" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         "BSON field 'configureFailPoint.mode' is missing but a required field")
    entered = ctx.server.failpoints.configure(name, cmd["mode"], cmd.get("data"))
    log.info("COMMAND", 23829, "Set failpoint", ctx=f"conn{ctx.conn.id}", failPointName=name,
             obj={k: v for k, v in cmd.items() if k in ("mode", "data")})
    return {"count": entered}


async def test_api_version_command(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {}


COMMANDS = [
    # mongod's test commands of the versioned API (test_api_version_2_commands.cpp): outside API
    # Version 1, so ``apiStrict: true`` with version "1" refuses them with 323 (commands/api_version.py)
    CommandSpec("testVersion2", test_api_version_command, help="a command in API Version 2 only (test)",
                test_only=True),
    CommandSpec("testDeprecationInVersion2", test_api_version_command,
                help="a command deprecated in API Version 2 (test)", test_only=True),
    CommandSpec("configureFailPoint", configure_fail_point, help="modifies the settings of a fail point",
                admin_only=True, test_only=True),
]
