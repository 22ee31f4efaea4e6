"""Test commands: present only when the server starts with ``--setParameter enableTestCommands=1``
(the dispatcher leaves ``test_only`` commands out of its table otherwise, so they answer 59 like an
unknown command, as on a mongod without test commands).

``configureFailPoint`` arms the fail points drivers' test runners use (``failCommand``,
``maxTimeAlwaysTimeOut``, ``failGetMoreAfterCursorCheckout``; see
server/failpoints.py): ``{configureFailPoint: "failCommand", mode, data}`` -> ``{count: <times entered>}``.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode, MongoError
from server import log
from server.context import CommandContext, CommandSpec


async def configure_fail_point(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = cmd["configureFailPoint"]
    if "mode" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         "BSON field 'configureFailPoint.mode' is missing but a required field")
    entered = ctx.server.failpoints.configure(name, cmd["mode"], cmd.get("data"))
    log.info("COMMAND", 23829, "Set failpoint", ctx=f"conn{ctx.conn.id}", failPointName=name,
             obj={k: v for k, v in cmd.items() if k in ("mode", "data")})
    return {"count": entered}


COMMANDS = [
    CommandSpec("configureFailPoint", configure_fail_point, help="modifies the settings of a fail point",
                admin_only=True, test_only=True),
]
