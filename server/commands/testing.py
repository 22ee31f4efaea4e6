"""Test commands: present only when the server starts with ``--setParameter enableTestCommands=1``
(the dispatcher leaves ``test_only`` commands out of its table otherwise, so they answer 59 like an
unknown command, as on a mongod without test commands).

``configureFailPoint`` arms the fail points drivers' test runners use (``failCommand``,
``maxTimeAlwaysTimeOut``, ``failGetMoreAfterCursorCheckout``; see
server/failpoints.py): ``{configureFailPoint: "failCommand", mode, data}`` -> ``{count: <times entered>}``.
``testVersion2`` and ``testDeprecationInVersion2``: mongod's no-op test commands outside API Version 1,
which drivers' versioned-API tests run with ``apiStrict``; ``testDeprecation``: the no-op test command
in API Version 1 and deprecated there (``apiDeprecationErrors: true`` refuses it with 324 before it
runs: commands/api_version.py). ``refreshLogicalSessionCacheNow``: the session cache's refresh, now
(server/session_refresh.py, the same function the periodic refresh runs): the records of the sessions
used since the last one upserted into ``config.system.sessions``, those of the sessions ended since
removed, the cursors of ended and expired sessions killed. What ``$listSessions`` lists
(server/query/stage_list_sessions.py). ``waitForFailPoint``: until a fail point has been entered so many times in all. ``sleep``: mongod's test command, ``{sleep: 1, secs |
seconds, millis, lock | w}`` (10 s when no time is given), interruptible by killOp and maxTimeMS; its
global lock in shared or exclusive mode (``lock: "r"`` or ``"w"``, or no ``lock``) is the fsync lock's
hold, which makes writes wait (Tidemark has no lock that would hold reads back too); the intent modes
(``"ir"``, ``"iw"``) and ``"none"`` hold nothing.
"""

from __future__ import annotations

from typing import Any

from bson.decimal128 import Decimal128

from tidemark import log, session_refresh
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.values import is_number


async def configure_fail_point(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = cmd["configureFailPoint"]
    if "mode" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         "BSON field 'configureFailPoint.mode' is missing but a required field")
    entered = ctx.server.failpoints.configure(name, cmd["mode"], cmd.get("data"))
    log.info("COMMAND", 23829, "Set failpoint", ctx=f"conn{ctx.conn.id}", failPointName=name,
             obj={k: v for k, v in cmd.items() if k in ("mode", "data")})
    return {"count": entered}


async def wait_for_fail_point(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """``{waitForFailPoint: name, timesEntered: n}``: until the fail point has been entered ``n`` times in
    all (configureFailPoint answers the count so far), interruptible by maxTimeMS and killOp, as
    mongod's FailPoint::waitForTimesEntered."""
    name = cmd["waitForFailPoint"]
    if type(name) is not str:
        raise MongoError(ErrorCode.TypeMismatch, f"BSON field 'waitForFailPoint.waitForFailPoint' is the wrong type "
                                                 f"'{type_name(name)}', expected type 'string'")
    if "timesEntered" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         "BSON field 'waitForFailPoint.timesEntered' is missing but a required field")
    target = cmd["timesEntered"]
    if isinstance(target, bool) or not is_number(target):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field 'waitForFailPoint.timesEntered' is the wrong type "
                                                 f"'{type_name(target)}', expected type 'long'")
    point = ctx.server.failpoints.points.get(name)
    if point is None:
        raise MongoError(ErrorCode.FailPointSetFailed, f"{name} not found")
    wanted = int(float(target.to_decimal()) if isinstance(target, Decimal128) else target)
    while point.entered < wanted:
        await ctx.op.sleep(0.01)  # (the fail point is entered on the event loop: a short poll suffices)
    return {}


async def test_api_version_command(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {}


_SLEEP_LOCKS = {"r": True, "w": True, "ir": False, "iw": False, "none": False}  # mode -> holds writes back


def _sleep_millis(cmd: dict[str, Any]) -> int:
    """mongod's CmdSleep::run: secs or seconds (one of them) and millis add up; none: 10 s."""
    if not any(key in cmd for key in ("secs", "seconds", "millis")):
        return 10_000
    if "secs" in cmd and "seconds" in cmd:
        raise MongoError(51153, "Only one of 'secs' and 'seconds' may be specified")
    total = 0
    for key, code in (("secs", 34344), ("seconds", 51154), ("millis", 34345)):
        if key in cmd:
            value = cmd[key]
            if isinstance(value, bool) or not is_number(value):
                raise MongoError(code, f"'{key}' must be a number.")
            number = int(float(value.to_decimal()) if isinstance(value, Decimal128) else value)
            total += number if key == "millis" else number * 1000
    return total


async def sleep(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    millis = _sleep_millis(cmd)
    if "lockTarget" in cmd and type(cmd["lockTarget"]) is not str:
        raise MongoError(ErrorCode.TypeMismatch, f"wrong type for field (lockTarget) {type_name(cmd['lockTarget'])} "
                                                 "!= String")
    if "lock" in cmd:
        if "w" in cmd:
            raise MongoError(34346, "Only one of 'w' and 'lock' may be set.")
        mode = cmd["lock"] if type(cmd["lock"]) is str else ""
        if mode not in _SLEEP_LOCKS:
            raise MongoError(34347, "'lock' must be one of 'r', 'ir', 'w', 'iw', 'none'.")
        holds = _SLEEP_LOCKS[mode]
    else:
        holds = True  # a global S lock (w: true: X)
    log.info("COMMAND", 20504, "Test-only command 'sleep' invoked", ctx=f"conn{ctx.conn.id}")
    if not holds:
        await ctx.op.sleep(max(0, millis) / 1000)
        return {}
    gate = ctx.server.fsync_lock
    gate.acquire()
    try:
        await gate.drain(ctx.op)  # (the running writes finish first, as a global lock waits for them)
        await ctx.op.sleep(max(0, millis) / 1000)
    finally:
        gate.release()
    return {}


async def refresh_logical_session_cache_now(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    await session_refresh.refresh(ctx.server)  # the periodic refresh's one function
    return {}


COMMANDS = [
    # mongod's test commands of the versioned API (test_api_version_2_commands.cpp): outside API
    # Version 1, so ``apiStrict: true`` with version "1" refuses them with 323 (commands/api_version.py)
    CommandSpec("testVersion2", test_api_version_command, help="a command in API Version 2 only (test)",
                test_only=True),
    CommandSpec("testDeprecationInVersion2", test_api_version_command,
                help="a command deprecated in API Version 2 (test)", test_only=True),
    CommandSpec("testDeprecation", test_api_version_command,
                help="a command in API Version 1, deprecated there (test)", test_only=True),
    CommandSpec("refreshLogicalSessionCacheNow", refresh_logical_session_cache_now,
                help="force the logical session cache to refresh. Test command only.", test_only=True),
    CommandSpec("configureFailPoint", configure_fail_point, help="modifies the settings of a fail point",
                admin_only=True, test_only=True),
    CommandSpec("waitForFailPoint", wait_for_fail_point, help="wait for a fail point to be entered a number of times",
                admin_only=True, test_only=True),
    CommandSpec("sleep", sleep, help="internal testing command. Run a no-op command for an arbitrary amount of time.",
                admin_only=True, test_only=True),
]
