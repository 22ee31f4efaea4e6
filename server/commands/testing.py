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

mongod 7.0's other test commands a standalone registers with enableTestCommands: ``echo``
(generic.cpp: ``{echo: <the request's body>}``, no authentication needed; document sequences are
folded into the body here, mongod sends them back as sequences), ``cpuload`` (cpuload.cpp: 10,000 x
``cpuFactor`` multiplications, ``{durationMillis, durationSeconds}`` as longs; run in the thread pool,
interruptible), ``reapLogicalSessionCacheNow`` (reap_logical_session_cache_now.cpp: the cache's reap
of expired sessions' transaction records — a standalone without transactions has none: ``{}``) and
``_hashBSONElement`` (hashcmd.cpp: ``{key: <first value>, seed, out: <hashed index key>}``; a seed
that is no number answers errmsg "seed must be a number" with ``key`` and no code), ``godinsert``
(test_commands.cpp: ``obj`` inserted into the collection, created when missing; 10065 when ``obj`` is
no object; here through the insert command's own path, so the document gets an ``_id`` and counts in
the insert opcounter, where mongod's Helpers::insert writes it as given).
"""

from __future__ import annotations

import math
import time
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark import log, session_refresh
from tidemark.arguments import safe_number_int
from tidemark.commands import crud
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.protocol.errors import ErrmsgFailure, ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query.expr_base import type_name
from tidemark.query.hashed import hash64
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


async def echo(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's EchoCommand: ``echo`` is the request's body as sent. Its document sequences are not in
    the body (mongod sends them back as document sequences of the reply, which replies here never
    carry: drivers refuse them); the dispatcher leaves them out, as for every command that ignores them."""
    return {"echo": dict(cmd)}


_CPULOAD_UNIT = 10_000  # multiplications per unit of cpuFactor (mongod's loop)
_CPULOAD_CHUNK = 100_000  # multiplications between two interruption checks
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _cpuload_iterations(cmd: dict[str, Any]) -> int:
    """mongod's ``long long limit = 10000 * cpuFactor`` (cpuFactor 1 unless a number): a value past
    the long range (or NaN) converts to the smallest long on the x86-64 builds, so nothing runs."""
    factor: Any = cmd.get("cpuFactor")
    if isinstance(factor, bool) or not is_number(factor):
        factor = 1
    elif isinstance(factor, Decimal128):
        exact = factor.to_decimal()  # (BSONElement::number of a decimal: its double; a NaN, quiet or not)
        factor = math.nan if exact.is_nan() else float(exact)
    product = _CPULOAD_UNIT * factor
    if isinstance(product, float) and (not math.isfinite(product) or not -(2.0**63) <= product < 2.0**63):
        return INT64_MIN
    return int(product)


def _spin(iterations: int) -> int:
    x = 100
    done = 0
    while done < iterations:
        for _ in range(min(_CPULOAD_CHUNK, iterations - done)):
            x = (x * 13) & 0xFFFFFFFFFFFFFFFF
        done += _CPULOAD_CHUNK
        interrupt.check()  # (killOp, maxTimeMS, shutdown end a long load)
    return x


async def cpuload(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    iterations = _cpuload_iterations(cmd)
    started = time.monotonic()
    if iterations > 0:
        await ctx.run_blocking(_spin, iterations)
    micros = int((time.monotonic() - started) * 1_000_000)
    return {"durationMillis": Int64(micros // 1000), "durationSeconds": Int64(micros // 1_000_000)}


async def reap_logical_session_cache_now(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {}  # (no transaction records to reap: a standalone runs no transactions)


async def hash_bson_element(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    key = cmd["_hashBSONElement"]
    seed = 0
    if "seed" in cmd:
        if isinstance(cmd["seed"], bool) or not is_number(cmd["seed"]):
            raise ErrmsgFailure("seed must be a number", before={"key": key})
        seed = safe_number_int(cmd["seed"])
    return {"key": key, "seed": seed, "out": Int64(hash64(key, seed))}


async def godinsert(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """``{godinsert: <collection>, obj: <document>}``: the document inserted (the collection created when
    missing); its failure is the command's error (mongod's uassertStatusOK of Helpers::insert)."""
    name = C.collection_arg(cmd, "godinsert")
    obj = cmd.get("obj")
    if not isinstance(obj, dict):  # (embeddedObjectUserCheck; a missing field names no field)
        raise MongoError(10065, f"invalid parameter: expected an object ({'obj' if 'obj' in cmd else ''})")
    log.info("COMMAND", 20505, "Test-only command 'godinsert' invoked", ctx=f"conn{ctx.conn.id}", collection=name)
    reply = await crud.insert(ctx, {"insert": name, "documents": [obj], "$db": ctx.db})
    errors = reply.get("writeErrors")
    if errors:
        first = errors[0]
        raise MongoError(first["code"], first["errmsg"],
                         extra={k: v for k, v in first.items() if k in ("keyPattern", "keyValue", "errInfo")})
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
    CommandSpec("echo", echo, help="returns the request's body (test command)", test_only=True),
    CommandSpec("cpuload", cpuload,
                help="internal. for testing only.{ cpuload : 1, cpuFactor : 1 } Runs a straight CPU load. Length of "
                     "execution scaled by cpuFactor.", test_only=True),
    CommandSpec("reapLogicalSessionCacheNow", reap_logical_session_cache_now,
                help="force the logical session cache to reap. Test command only.", test_only=True),
    CommandSpec("godinsert", godinsert, help="internal. for testing only.", test_only=True),
    CommandSpec("_hashBSONElement", hash_bson_element,
                help="returns the hash of the first BSONElement val in a BSONObj", test_only=True),
]
