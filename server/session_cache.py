"""The logical sessions this server has seen (mongod's LogicalSessionCache, local part): what
``$listLocalSessions`` lists.

A session is recorded when a command carries its ``lsid`` (dispatch) or ``startSession`` creates it,
with the time of its last use; ``endSessions``/``killSessions`` remove it; sessions unused for
``logicalSessionTimeoutMinutes`` (30) expire. The record is mongod's ``{_id: {id, uid}, lastUse}`` where
``uid`` is the SHA-256 digest of the authenticated user (of the empty string without one), plus
``user: {name}`` for an authenticated user. Event-loop thread only; bounded like mongod's cache.
"""

from __future__ import annotations

import datetime
import hashlib
import time
from typing import Any

from bson.binary import Binary

TIMEOUT_SECONDS = 30 * 60
MAX_SESSIONS = 1_000_000  # mongod's maxSessions
NO_AUTH_DIGEST = hashlib.sha256(b"").digest()


def user_digest(user: str, db: str) -> bytes:
    """mongod's getLogicalSessionUserDigestFor: sha256("user@db"), of "" without a user."""
    return NO_AUTH_DIGEST if not user and not db else hashlib.sha256(f"{user}@{db}".encode()).digest()


class SessionCache:
    def __init__(self) -> None:
        # session id -> [uid digest, user name or None, last use in epoch seconds] (a list: one
        # lookup refreshes a known session)
        self._sessions: dict[Any, list] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def touch(self, lsid: Any, conn: Any = None) -> None:
        session_id = lsid.get("id") if isinstance(lsid, dict) else None
        if session_id is None:
            return
        known = self._sessions.get(session_id)
        if known is not None:  # a session belongs to the user who created it: only its last use moves
            known[2] = time.time()
            return
        users = getattr(conn, "users", None) or ()
        if users:
            first = users[0]
            digest, name = user_digest(first["user"], first["db"]), f"{first['user']}@{first['db']}"
        else:
            digest, name = NO_AUTH_DIGEST, None
        sessions = self._sessions
        if session_id not in sessions and len(sessions) >= MAX_SESSIONS:
            self.expire()
            if len(sessions) >= MAX_SESSIONS:
                return  # full of live sessions: mongod refuses new ones; we stop recording them
        sessions[session_id] = [digest, name, time.time()]

    def end(self, session_ids) -> None:
        for session_id in session_ids:
            self._sessions.pop(session_id, None)

    def clear(self) -> None:
        self._sessions.clear()

    def expire(self, now: float | None = None) -> None:
        limit = (now or time.time()) - TIMEOUT_SECONDS
        for session_id in [s for s, (_d, _n, last) in self._sessions.items() if last < limit]:
            del self._sessions[session_id]

    def records(self, digests: set[bytes] | None) -> list[dict[str, Any]]:
        """The session records of the given users (None: every user), newest use first."""
        self.expire()
        out = []
        for session_id, (digest, name, last) in sorted(self._sessions.items(), key=lambda kv: -kv[1][2]):
            if digests is not None and digest not in digests:
                continue
            record: dict[str, Any] = {"_id": {"id": session_id, "uid": Binary(digest, 0)},
                                      "lastUse": datetime.datetime.fromtimestamp(last, datetime.UTC)
                                      .replace(tzinfo=None, microsecond=(int(last * 1000) % 1000) * 1000)}
            if name is not None:
                record["user"] = {"name": name}
            out.append(record)
        return out
