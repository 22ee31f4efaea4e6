"""The logical session cache's refresh (mongod's LogicalSessionCacheImpl::_refresh, standalone): every
``logicalSessionRefreshMillis`` (a lifecycle hook; none with ``disableLogicalSessionCacheRefresh``) and
on ``refreshLogicalSessionCacheNow`` — one function, :func:`refresh`, for both.

A refresh, as mongod's:

1. takes the cache's content (``SessionCache.take``): the sessions used since the last refresh and those
   ended since (endSessions);
2. in one write transaction: creates ``config.system.sessions`` with mongod's TTL index ``lsidTTLIndex``
   (``{lastUse: 1}``, ``expireAfterSeconds`` = ``localLogicalSessionTimeoutMinutes`` * 60, set again when
   it differs: setupSessionsCollection's collMod), upserts the record of every session used (and of every
   running operation's session) with its last use (never moved back), deletes the records of the ended
   ones, and sees which sessions with open cursors have no record left (findRemovedSessions): the TTL
   monitor removed it — the session expired — or someone deleted it;
3. kills the cursors of the ended sessions and of the removed ones (killCursorsWithMatchingSessions),
   sparing a session used again since step 1.

A failed write gives what it took back to the cache (mongod's back-swap) and kills nothing. Only this
refresh kills a session's cursors for ending or expiring; killSessions/killAllSessions kill theirs at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tidemark import log
from tidemark.auth.names import ANYONE, session_digest
from tidemark.context import ServerState, stop_task
from tidemark.core import collection as C
from tidemark.protocol.codec import decode, encode
from tidemark.session_cache import (
    SESSIONS_NS,
    attaches_session,
    ending_matcher,
    record,
    record_id,
)

# mongod's index of the sessions collection (SessionsCollection::generateCreateIndexesCmd)
TTL_INDEX_NAME = "lsidTTLIndex"


def ttl_index(params: Any) -> dict[str, Any]:
    return {"v": 2, "key": {"lastUse": 1}, "name": TTL_INDEX_NAME,
            "expireAfterSeconds": params["localLogicalSessionTimeoutMinutes"] * 60}


async def refresh(state: ServerState) -> int:
    """One refresh of the session cache (see the module's docstring); returns how many cursors it
    killed. Raises what the write raised (the cache then holds what it took, for the next refresh)."""
    cache = state.sessions
    stats = cache.stats
    started = stats.begin()
    try:
        return await _refresh(state, cache)
    finally:
        stats.last_duration_ms = int((time.monotonic() - started) * 1000)


async def _refresh(state: ServerState, cache: Any) -> int:
    active, ending = cache.take()
    ended = ending_matcher(ending)
    now = time.time()
    for op in state.operations.operations():  # mongod refreshes the sessions of running operations too
        lsid = op.command.get("lsid")
        if isinstance(lsid, dict) and attaches_session(op.command_name, op.conn, state.auth):
            try:
                key = (lsid.get("id"), op.conn.principal)
                if key[0] is not None and not ended(*key):
                    active[key] = now
            except TypeError:  # an odd lsid id names no session
                pass
    # sessions with open cursors whose record may be gone (the ended ones' cursors die anyway)
    candidates = {encode(record_id(key)): key for key in state.cursors.session_keys()
                  if key not in active and not ended(*key)}
    flush = _flush([record(key, last) for key, last in active.items()], ending, set(candidates),
                   ttl_index(state.params))
    try:
        present = await asyncio.wrap_future(state.engine.write(flush))
    except BaseException:
        cache.put_back(active, ending)
        raise
    cache.stats.last_refreshed, cache.stats.last_ended = len(active), len(ending)
    removed = {key for enc, key in candidates.items() if enc not in present and not cache.used_since_take(key)}
    if not removed and not ending:
        return 0
    closed = state.cursors.kill_sessions(lambda session_id, owner: (session_id, owner) in removed
                                         or ended(session_id, owner))
    cache.stats.last_cursors_closed = closed
    return closed


def _flush(records: list[dict[str, Any]], ending: set[tuple[Any, Any]], candidates: set[bytes],
           index: dict[str, Any]):
    """The write function of a refresh: one scan of the (small) sessions collection, then per record an
    insert, or an update where its ``lastUse`` is newer, and a delete per ended session's record. Returns
    which of ``candidates`` (encoded record ``_id``s) have a record."""
    # session id -> the uids whose record of that id ends (None: every uid, an id ended by ANYONE)
    uids: dict[Any, set[bytes] | None] = {}
    for session_id, owner in ending:
        if owner is ANYONE:
            uids[session_id] = None
            continue
        wanted = uids.setdefault(session_id, set())
        if wanted is not None:
            wanted.add(session_digest(owner.name if owner is not None else None))

    def fn(w: Any) -> set[bytes]:
        info = w.get_collection(SESSIONS_NS)
        if info is None:
            info = w.create_collection(SESSIONS_NS, {})
        spec = info.index_spec(TTL_INDEX_NAME)
        if spec is None:
            info = w.create_index(info, dict(index), C.build_index_entries(w, info, index))
        elif spec.get("expireAfterSeconds") != index["expireAfterSeconds"]:
            info = w.set_index_options(info, TTL_INDEX_NAME, {"expireAfterSeconds": index["expireAfterSeconds"]})
        stored: dict[bytes, tuple[bytes, dict[str, Any]]] = {}
        for rid, raw in w.scan(info):
            doc = decode(raw)
            _id = doc.get("_id")
            if not isinstance(_id, dict):
                continue
            wanted = uids.get(_id.get("id"), set()) if uids else set()
            if wanted is None or (wanted and isinstance(_id.get("uid"), bytes) and bytes(_id["uid"]) in wanted):
                w.delete(info, bytes(rid), C.index_keys(info, doc))
            else:
                stored[encode(_id)] = (bytes(rid), doc)
        present = {enc for enc in candidates if enc in stored}
        for rec in records:
            found = stored.get(encode(rec["_id"]))
            if found is None:
                info, keys = C.write_keys(w, info, rec)
                w.insert(info, C.encode_doc(rec), keys)
            elif not (isinstance(found[1].get("lastUse"), type(rec["lastUse"]))
                      and found[1]["lastUse"] >= rec["lastUse"]):
                old_keys = C.index_keys(info, found[1])
                info, new_keys = C.write_keys(w, info, rec)
                w.update(info, found[0], C.encode_doc(rec), old_keys, new_keys)
        return present

    return fn


# --- lifecycle hook (tidemark.app.LIFECYCLE_HOOKS): the periodic refresh ------------------------------

_TASKS: dict[int, asyncio.Task] = {}


async def _periodic(state: ServerState) -> None:
    interval = state.params["logicalSessionRefreshMillis"] / 1000
    while True:
        await asyncio.sleep(interval)
        try:
            await refresh(state)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the next interval tries again, as mongod's job
            log.info("CONTROL", 20710, "Failed to refresh session cache, will try again at the next refresh "
                     "interval", ctx="LogicalSessionCacheRefresh", error=str(exc))


async def on_startup(state: ServerState) -> None:
    state.status_sections["logicalSessionRecordCache"] = state.sessions.status
    if not state.params["disableLogicalSessionCacheRefresh"]:
        _TASKS[id(state)] = asyncio.get_running_loop().create_task(_periodic(state), name="session-refresh")


async def on_shutdown(state: ServerState) -> None:
    await stop_task(_TASKS.pop(id(state), None))
