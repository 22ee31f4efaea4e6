"""Handshake family: hello / isMaster / ismaster, buildInfo / buildinfo, ping, whatsmyuri.

Tidemark answers as a standalone, writable MongoDB 7.0 (maxWireVersion 21). The hello reply has
``topologyVersion`` (``processId`` new at each start, ``counter`` 0: a standalone's topology never
changes), no ``setName``/``hosts``/``msg`` (those would make clients see a replica set or mongos) and
``compression`` only when the client asked and something is in common.

Awaitable hello (the SDAM streaming protocol): a hello carrying the server's own ``topologyVersion``
and ``maxAwaitTimeMS`` waits that long (an asyncio wait: nothing else waits with it) before it
answers; killOp, shutdown or the client leaving end the wait. With ``exhaustAllowed`` the connection
streams such replies (server/connection.py).
"""

from __future__ import annotations

import asyncio
import datetime
import platform
import ssl
import sys
import time
from typing import Any

from bson.int64 import Int64

from tidemark import log
from tidemark.arguments import wrong_type
from tidemark.auth import sasl, x509
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol import compression
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.framing import MAX_BSON_OBJECT_SIZE, MAX_MESSAGE_SIZE, MAX_WRITE_BATCH_SIZE
from tidemark.version import GIT_VERSION, MONGODB_VERSION, VERSION_ARRAY, tidemark_version

MIN_WIRE_VERSION = 0
MAX_WIRE_VERSION = 21
MAX_APP_NAME_BYTES = 128


def _record_client_metadata(ctx: CommandContext, cmd: dict[str, Any]) -> None:
    metadata = cmd.get("client")
    if metadata is None:
        return
    if ctx.conn.handshake_done:
        raise MongoError(
            ErrorCode.ClientMetadataCannotBeMutated,
            "The client metadata document may only be sent in the first hello",
        )
    if not isinstance(metadata, dict):
        raise wrong_type(f"{ctx.command_name}.client", metadata, "object")
    app = metadata.get("application")
    if isinstance(app, dict) and len(str(app.get("name", "")).encode()) > MAX_APP_NAME_BYTES:
        raise MongoError(
            ErrorCode.ClientMetadataAppNameTooLarge,
            f"The 'application.name' field must be less than or equal to {MAX_APP_NAME_BYTES} bytes",
        )
    ctx.conn.client = metadata
    log.log(
        log.INFO,
        "NETWORK",
        51800,
        "client metadata",
        ctx=f"conn{ctx.conn.id}",
        attr={"remote": ctx.conn.peer, "client": f"conn{ctx.conn.id}", "doc": metadata},
        chatter=True,
    )


def _await_time_ms(ctx: CommandContext, cmd: dict[str, Any]) -> int | None:
    """How long an awaitable hello waits (None: answer at once); mongod's checks of the pair."""
    version, max_await = cmd.get("topologyVersion"), cmd.get("maxAwaitTimeMS")
    if version is None or max_await is None:
        if version is not None or max_await is not None:
            raise MongoError(31368, "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'"
                             if version is not None else
                             "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'")
        return None
    name = ctx.command_name
    if not isinstance(version, dict):
        raise wrong_type(f"{name}.topologyVersion", version, "object")
    if isinstance(max_await, bool) or not isinstance(max_await, int | float):
        raise wrong_type(f"{name}.maxAwaitTimeMS", max_await, "long")
    counter = version.get("counter")
    if isinstance(counter, bool) or not isinstance(counter, int):
        raise wrong_type("TopologyVersion.counter", counter, "long")
    if counter < 0:
        raise MongoError(31372, "topologyVersion must have a non-negative counter")
    if max_await < 0:
        raise MongoError(51024, f"BSON field 'maxAwaitTimeMS' value must be >= 0, actual value '{int(max_await)}'")
    if version.get("processId") != ctx.server.topology_process_id:
        return None  # another process's version: the client is behind, answer now
    if counter > 0:
        raise MongoError(31382, f"Received a topology version with counter: {counter} which is greater "
                         "than the server topology version counter: 0")
    return int(max_await)


async def _await_topology_change(ctx: CommandContext, wait_ms: int) -> None:
    """Nothing changes a standalone's topology: wait the whole maxAwaitTimeMS unless the operation is
    killed (killOp, shutdown) or the client goes away; never a thread, never the event loop."""
    op, conn = ctx.op, ctx.conn
    woken = asyncio.Event()
    if op is not None:
        op.waker = woken.set
    conn.on_close = woken.set
    began = time.monotonic()
    try:
        if not conn.closed and not (op is not None and op.killed):
            try:
                await asyncio.wait_for(woken.wait(), wait_ms / 1000)
            except TimeoutError:
                pass
    finally:
        ctx.paused += time.monotonic() - began
        conn.on_close = None
        if op is not None:
            op.waker = None
    if op is not None and op.killed:
        op.check()


def topology_version(ctx: CommandContext) -> dict[str, Any]:
    return {"processId": ctx.server.topology_process_id, "counter": Int64(0)}


def _handshake_reply(ctx: CommandContext, cmd: dict[str, Any], primary_field: str) -> dict[str, Any]:
    _record_client_metadata(ctx, cmd)
    reply: dict[str, Any] = {primary_field: True, "topologyVersion": topology_version(ctx)}
    if cmd.get("helloOk") is True:
        reply["helloOk"] = True
    reply.update(
        {
            "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
            "maxMessageSizeBytes": MAX_MESSAGE_SIZE,
            "maxWriteBatchSize": MAX_WRITE_BATCH_SIZE,
            "localTime": datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
            "logicalSessionTimeoutMinutes": ctx.server.params["localLogicalSessionTimeoutMinutes"],
            "connectionId": ctx.conn.id,
            "minWireVersion": MIN_WIRE_VERSION,
            "maxWireVersion": MAX_WIRE_VERSION,
            "readOnly": False,
        }
    )
    descriptor = ctx.server.params["automationServiceDescriptor"]
    if descriptor:  # (setParameter automationServiceDescriptor; "" echoes nothing)
        reply["automationServiceDescriptor"] = descriptor
    requested = cmd.get("compression")
    if requested is not None:
        if not isinstance(requested, list):
            raise wrong_type(f"{ctx.command_name}.compression", requested, "array")
        if not ctx.conn.handshake_done:
            ctx.conn.compressors = tuple(compression.negotiate(requested))
        if ctx.conn.compressors:
            reply["compression"] = list(ctx.conn.compressors)
    ctx.conn.handshake_done = True
    return reply


async def _with_auth(ctx: CommandContext, cmd: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """``saslSupportedMechs`` and ``speculativeAuthenticate`` (only when the request asks)."""
    if "saslSupportedMechs" in cmd:
        reply["saslSupportedMechs"] = await sasl.supported_mechanisms(ctx, cmd["saslSupportedMechs"])
    if "speculativeAuthenticate" in cmd:
        doc = cmd["speculativeAuthenticate"]
        first = next(iter(doc), None) if isinstance(doc, dict) else None
        # mongod's handleIsMasterSpeculativeAuth: a SCRAM first step, or a whole MONGODB-X509 authenticate
        step = sasl.speculative if first == "saslStart" else x509.speculative if first == "authenticate" else None
        answer = await step(ctx, doc) if step is not None else None
        if answer is not None:
            reply["speculativeAuthenticate"] = answer
    return reply


async def _hello(ctx: CommandContext, cmd: dict[str, Any], primary_field: str) -> dict[str, Any]:
    wait_ms = _await_time_ms(ctx, cmd)
    if wait_ms:
        await _await_topology_change(ctx, wait_ms)
    return await _with_auth(ctx, cmd, _handshake_reply(ctx, cmd, primary_field))


async def hello(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _hello(ctx, cmd, "isWritablePrimary")


async def is_master(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _hello(ctx, cmd, "ismaster")


def build_info_document() -> dict[str, Any]:
    machine = platform.machine() or "unknown"
    return {
        "version": MONGODB_VERSION,
        "gitVersion": GIT_VERSION,
        "allocator": "system",
        "javascriptEngine": "none",
        "sysInfo": "deprecated",
        "versionArray": list(VERSION_ARRAY),
        "openssl": {"running": ssl.OPENSSL_VERSION, "compiled": ssl.OPENSSL_VERSION},  # TLS: server/tls.py
        "buildEnvironment": {
            "distmod": "",
            "distarch": machine,
            "cc": f"python {platform.python_version()}",
            "ccflags": "",
            "cxx": "",
            "cxxflags": "",
            "linkflags": "",
            "target_arch": machine,
            "target_os": sys.platform,
            "cppdefines": "",
        },
        "bits": 64,
        "debug": False,
        "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
        "storageEngines": ["lmdb"],
        "modules": [],
        "tidemark": {"version": tidemark_version()},
    }


async def build_info(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return build_info_document()


async def ping(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {}


async def whatsmyuri(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {"you": ctx.conn.peer}


async def is_self(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's internal _isSelf (a replica set member asks it of an address to learn whether it is
    itself): the id of this process (the topologyVersion's processId, new at each start)."""
    return {"id": ctx.server.topology_process_id}


COMMANDS = [
    CommandSpec("_isSelf", is_self, help="internal: this server process's id"),
    CommandSpec(
        "buildInfo", build_info, help="version and build information of the server", aliases=("buildinfo",)
    ),
    CommandSpec("hello", hello, help="handshake: server role, limits and wire versions"),
    CommandSpec("isMaster", is_master, help="legacy handshake, same as hello", aliases=("ismaster",)),
    CommandSpec("ping", ping, help="a no-op to test that the server is responding"),
    CommandSpec("whatsmyuri", whatsmyuri, help="the address of this client as the server sees it"),
]
