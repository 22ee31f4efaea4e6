"""The logical sessions this server has seen (mongod's LogicalSessionCache, local part): what
``$listLocalSessions`` lists.

A session is recorded when a command carries its ``lsid`` (dispatch) or ``startSession`` creates it,
with the time of its last use; ``endSessions``/``killSessions`` remove it; sessions unused for
``logicalSessionTimeoutMinutes`` (30) expire. The cursors opened in a session live as long as it
(:meth:`SessionCache.live`; server/cursors.py). The record is mongod's ``{_id: {id, uid}, lastUse}`` where
``uid`` is the SHA-256 digest of the authenticated user (of the empty string without one), plus
``user: {name}`` for an authenticated user. Event-loop thread only; bounded like mongod's cache.

The cache is flushed to ``config.system.sessions`` only by the test command
``refreshLogicalSessionCacheNow`` (mongod also refreshes every 5 minutes; Tidemark does not): a flush
hands out every live record and the ``_id`` of every flushed session ended since (which the flush
removes from the collection, as mongod's refresh does); the local records stay (``$listLocalSessions``
keeps listing them). ``_flushed`` holds only keys of live sessions, so it and ``_ended`` stay bounded
by the cache.

Invariant: a session is keyed by (session id, owner) — the owner being the
:class:`~tidemark.auth.names.Principal` that used it (None without authentication) — as mongod keys
it by (id, uid): two users using the same id have two sessions, and one user's commands never
refresh, end or kill the other's. ``uid`` and ``user.name`` are display values only (mongod's
digest of ``"user@db"`` is ambiguous when names contain '@'); owners are compared as principals.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable
from typing import Any

from bson.binary import Binary

from tidemark.auth.names import ANYONE, session_digest, visible_to

TIMEOUT_SECONDS = 30 * 60
MAX_SESSIONS = 1_000_000  # mongod's maxSessions


class SessionCache:
    def __init__(self) -> None:
        # (session id, owner Principal or None) -> last use in epoch seconds
        self._sessions: dict[tuple[Any, Any], float] = {}
        # keys of live sessions written to config.system.sessions, and the _ids of those ended since
        self._flushed: set[tuple[Any, Any]] = set()
        self._ended: list[dict[str, Any]] = []

    def __len__(self) -> int:
        return len(self._sessions)

    def touch(self, lsid: Any, conn: Any = None) -> None:
        session_id = lsid.get("id") if isinstance(lsid, dict) else None
        if session_id is None:
            return
        key = (session_id, getattr(conn, "principal", None))
        sessions = self._sessions
        # One hash of the key while there is room (a uuid.UUID hashes in Python: every command of a
        # driver carries an lsid); a full cache first checks whether the key is new.
        try:
            if len(sessions) < MAX_SESSIONS:
                sessions[key] = time.time()
                return
            if key not in sessions:
                self.expire()
                if len(sessions) >= MAX_SESSIONS:
                    return  # full of live sessions: mongod refuses new ones; we stop recording them
        except TypeError:  # a client's odd lsid id (a document, an array) names no session
            return
        sessions[key] = time.time()

    def end(self, session_ids: Iterable[Any] | None, owner: Any = ANYONE) -> None:
        """Forget the sessions with these ids (None: any id) that ``owner`` (a Principal, or ANYONE) used."""
        wanted = set(session_ids) if session_ids is not None else None
        for key in [k for k in self._sessions
                    if (wanted is None or k[0] in wanted) and visible_to(k[1], owner)]:
            del self._sessions[key]
            if key in self._flushed:  # the next flush removes it from config.system.sessions
                self._flushed.discard(key)
                self._ended.append(_record_id(*key))

    def clear(self, names: Any = None) -> None:
        """Forget every session (of the users named in ``names``, a set of UserName, unless None)."""
        if names is None:
            self._sessions.clear()
            self._flushed.clear()
            return
        for key in [k for k in self._sessions if k[1] is not None and k[1].name in names]:
            del self._sessions[key]
            self._flushed.discard(key)

    def expire(self, now: float | None = None) -> None:
        limit = (now or time.time()) - TIMEOUT_SECONDS
        for key in [k for k, last in self._sessions.items() if last < limit]:
            del self._sessions[key]
            self._flushed.discard(key)  # the collection's TTL index expires its record

    def live(self) -> Callable[[Any, Any], bool]:
        """After expiring idle sessions: whether the session (id, owner Principal or None) is live — what
        the cursors opened in a session live by (CursorRegistry.kill_orphans)."""
        self.expire()
        sessions = self._sessions
        return lambda session_id, owner: (session_id, owner) in sessions

    def records(self, wanted: Callable[[Any], bool] | None) -> list[dict[str, Any]]:
        """The session records whose owner (a Principal or None) ``wanted`` accepts (None: every
        session), newest use first."""
        self.expire()
        out = []
        for (session_id, owner), last in sorted(self._sessions.items(), key=lambda kv: -kv[1]):
            if wanted is not None and not wanted(owner):
                continue
            name = owner.name if owner is not None else None
            record: dict[str, Any] = {"_id": _record_id(session_id, owner),
                                      "lastUse": datetime.datetime.fromtimestamp(last, datetime.UTC)
                                      .replace(tzinfo=None, microsecond=(int(last * 1000) % 1000) * 1000)}
            if name is not None:
                record["user"] = {"name": name.display()}
            out.append(record)
        return out

    def take_flush(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(every live session record, the ``_id`` of every flushed session ended since): what a
        refresh writes to and removes from config.system.sessions. The live sessions count as flushed
        from now on; a refresh that fails hands the ended ones back (``restore_ended``)."""
        records = self.records(None)
        self._flushed = set(self._sessions)
        ended, self._ended = self._ended, []
        return records, ended

    def restore_ended(self, ended: list[dict[str, Any]]) -> None:
        self._ended = ended + self._ended


def _record_id(session_id: Any, owner: Any) -> dict[str, Any]:
    """mongod's session record ``_id``: ``{id, uid}`` (uid: the digest of the owner's name)."""
    return {"id": session_id, "uid": Binary(session_digest(owner.name if owner is not None else None), 0)}
