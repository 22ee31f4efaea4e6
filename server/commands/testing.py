"""Test commands: present only when the server starts with ``--setParameter enableTestCommands=1``
(the dispatcher leaves ``test_only`` commands out of its table otherwise, so they answer 59 like an
unknown command, as on a mongod without test commands).

``configureFailPoint`` arms the fail points drivers' test runners use (``failCommand``,
``maxTimeAlwaysTimeOut``, ``failGetMoreAfterCursorCheckout``; see
server/failpoints.py): ``{configureFailPoint: "failCommand", mode, data}`` -> ``{count: <times entered>}``.
``testVersion2`` and ``testDeprecationInVersion2``: mongod's no-op test commands outside API Version 1,
which drivers' versioned-API tests run with ``apiStrict``; ``testDeprecation``: the no-op test command
in API Version 1 and deprecated there (``apiDeprecationErrors: true`` refuses it with 324 before it
runs: commands/api_version.py). ``refreshLogicalSessionCacheNow``: flush the session cache to
``config.system.sessions`` now (server/session_cache.py): every live session's record upserted (its
``lastUse`` never moved back), the records of sessions ended since the last flush removed; the
collection is created with mongod's TTL index ``lsidTTLIndex`` when missing. What ``$listSessions``
lists (server/query/stage_list_sessions.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tidemark import log
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.protocol.codec import decode, encode
from tidemark.protocol.errors import ErrorCode, MongoError

SESSIONS_NS = "config.system.sessions"
# mongod's index of the sessions collection (SessionsCollection::generateCreateIndexesCmd)
SESSIONS_TTL_INDEX = {"v": 2, "key": {"lastUse": 1}, "name": "lsidTTLIndex", "expireAfterSeconds": 1800}


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


def _flush_sessions(records: list[dict[str, Any]], ended: list[dict[str, Any]]):
    """The write function of a refresh: one scan of the (small) sessions collection, then per record an
    insert, or an update where its ``lastUse`` is newer, and a delete per ended ``_id``."""

    def fn(w: Any) -> None:
        info = w.get_collection(SESSIONS_NS)
        if info is None:
            info = w.create_collection(SESSIONS_NS, {})
        if info.index_spec(SESSIONS_TTL_INDEX["name"]) is None:
            spec = dict(SESSIONS_TTL_INDEX)
            info = w.create_index(info, spec, C.build_index_entries(w, info, spec))
        stored: dict[bytes, tuple[bytes, dict[str, Any]]] = {}
        for rid, raw in w.scan(info):
            doc = decode(raw)
            if isinstance(doc.get("_id"), dict):
                stored[encode(doc["_id"])] = (bytes(rid), doc)
        for _id in ended:
            found = stored.pop(encode(_id), None)
            if found is not None:
                w.delete(info, found[0], C.index_keys(info, found[1]))
        for record in records:
            found = stored.get(encode(record["_id"]))
            if found is None:
                info, keys = C.write_keys(w, info, record)
                w.insert(info, C.encode_doc(record), keys)
            elif not (isinstance(found[1].get("lastUse"), type(record["lastUse"]))
                      and found[1]["lastUse"] >= record["lastUse"]):
                old_keys = C.index_keys(info, found[1])
                info, new_keys = C.write_keys(w, info, record)
                w.update(info, found[0], C.encode_doc(record), old_keys, new_keys)

    return fn


async def refresh_logical_session_cache_now(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    sessions = ctx.server.sessions
    records, ended = sessions.take_flush()  # (on the loop: the cache's one thread)
    try:
        await asyncio.wrap_future(ctx.server.engine.write(_flush_sessions(records, ended)))
    except BaseException:
        sessions.restore_ended(ended)
        raise
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
]
