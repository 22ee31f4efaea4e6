"""The logical session cache (mongod's LogicalSessionCacheImpl, standalone): the sessions used since
the last refresh, what ``$listLocalSessions`` lists, and the sessions ended since.

Mongod's model, followed here:

- A command carrying an ``lsid`` (dispatch), ``startSession`` and ``refreshSessions`` *vivify* the
  session: it enters the cache with the time of its last use (or its last use moves). A cache holding
  ``maxSessions`` sessions refuses a new one: 261 TooManyLogicalSessions, and the command fails
  (``_addToCacheIfNotFull``).
- ``endSessions`` only notes the session as ending; nothing else happens until the refresh.
- The refresh (``tidemark.session_refresh``: every ``logicalSessionRefreshMillis``, and
  ``refreshLogicalSessionCacheNow``) takes the cache's content out (:meth:`SessionCache.take`): the
  sessions used since the last one are written to ``config.system.sessions``, the ending ones removed
  from it, and the cursors of ending sessions and of sessions whose record is gone (expired: the
  collection's TTL index, ``localLogicalSessionTimeoutMinutes``) killed. So the cache holds only what
  was used since the last refresh: that is what bounds it, and what ``$listLocalSessions`` lists.
- A refresh whose write failed puts what it took back (:meth:`SessionCache.put_back`), as mongod's
  back-swap, so nothing is lost for the next one.

A session is keyed by (session id, owner) — the owner being the :class:`~tidemark.auth.names.Principal`
that used it (None without authentication) — as mongod keys it by (id, uid): two users using the same id
have two sessions, and one user's commands never refresh, end or kill the other's. The record is mongod's
``{_id: {id, uid}, lastUse}`` where ``uid`` is the SHA-256 digest of the authenticated user (of the empty
string without one), plus ``user: {name}`` for an authenticated user; ``uid`` and ``user.name`` are display
values only (mongod's digest of ``"user@db"`` is ambiguous when names contain '@'). Event-loop thread only.

:class:`RefreshStats` is serverStatus ``logicalSessionRecordCache`` (mongod's LogicalSessionCacheStats):
the cache's size and what the last refresh did (set by the refresh as mongod's ``_refresh`` sets them).
A standalone Tidemark keeps no transaction state, so the transaction reaper's counters stay 0 and the
session catalog is empty.
"""

from __future__ import annotations

import base64
import datetime
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bson.binary import Binary

from tidemark.auth.names import ANYONE, session_digest, visible_to
from tidemark.protocol.errors import ErrorCode, MongoError

SESSIONS_NS = "config.system.sessions"
MAX_SESSIONS = 1_000_000  # mongod's maxSessions (the parameter's default)

# (session id, owner Principal or None)
SessionKey = tuple[Any, Any]
# Commands whose ``lsid`` names no session they use (mongod's attachLogicalSessionsToOpCtx false: a kill
# must not vivify the session it kills).
SESSIONLESS_COMMANDS = frozenset({"killSessions", "killAllSessions", "killAllSessionsByPattern"})


def attaches_session(command_name: str, conn: Any, auth: Any) -> bool:
    """Whether the ``lsid`` of a command ``conn`` runs names a session it uses (mongod's
    initializeOperationSessionInfo): not for the kill commands; under access control (``auth``: the
    AuthManager), not for a connection without a user (no uid to give the session; the localhost
    exception too)."""
    return _attaches(command_name, conn.principal, auth)


def _attaches(command_name: str, principal: Any, auth: Any) -> bool:
    """:func:`attaches_session` for a connection authenticated as ``principal`` (None: nobody)."""
    return command_name not in SESSIONLESS_COMMANDS and (principal is not None or auth is None or not auth.enabled)


NOT_A_REPLICA_SET = "Transaction numbers are only allowed on a replica set member or mongos"


def check_session_fields(command_name: str, cmd: dict, requires_auth: bool, conn: Any, auth: Any) -> None:
    """mongod's initializeOperationSessionInfo checks of ``txnNumber``, ``autocommit`` and
    ``startTransaction`` on a standalone (``requires_auth``: the command is not one of the open handshake
    ones; ``conn``, ``auth`` as for :func:`attaches_session`). A transaction number means a retryable
    write or a transaction, and a standalone has neither: 20 for every command that carries one with its
    ``lsid``, whatever else the command says."""
    if not requires_auth:
        if "autocommit" in cmd:
            raise MongoError(ErrorCode.OperationNotSupportedInTransaction,
                             "This command is not supported in transactions")
        if "txnNumber" in cmd:
            raise MongoError(50889, "It is illegal to provide a txnNumber for this command")
    if conn.principal is None and auth is not None and auth.enabled:
        return  # no user to own a session (the localhost exception too): mongod looks no further
    if "lsid" in cmd:
        if command_name in SESSIONLESS_COMMANDS:
            return
    elif "txnNumber" in cmd:
        raise MongoError(ErrorCode.InvalidOptions, "Transaction number requires a session ID to also be specified")
    if "txnNumber" in cmd:
        raise MongoError(ErrorCode.IllegalOperation, NOT_A_REPLICA_SET)
    if "autocommit" in cmd:
        raise MongoError(ErrorCode.InvalidOptions,
                         "'autocommit' field requires a transaction number to also be specified")
    if "startTransaction" in cmd:
        raise MongoError(ErrorCode.InvalidOptions,
                         "'startTransaction' field requires 'autocommit' field to also be specified")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


@dataclass(slots=True)
class RefreshStats:
    """What the refreshes did: their count; the last one's start, duration, sessions written, sessions
    ended, cursors closed. The times start at the cache's creation, as mongod's constructor sets them."""

    jobs: int = 0
    last_start: datetime.datetime = field(default_factory=_now)
    last_duration_ms: int = 0
    last_refreshed: int = 0
    last_ended: int = 0
    last_cursors_closed: int = 0
    created: datetime.datetime = field(default_factory=_now)

    def begin(self) -> float:
        """A refresh starts: the last one's figures are cleared (mongod clears them first)."""
        self.jobs += 1
        self.last_start = _now()
        self.last_duration_ms = self.last_refreshed = self.last_ended = self.last_cursors_closed = 0
        return time.monotonic()


class SessionCache:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self.stats = RefreshStats()
        # the sessions used since the last refresh -> last use in epoch seconds
        self._active: dict[SessionKey, float] = {}
        # (session id, owner Principal, None or ANYONE) ended since the last refresh
        self._ending: set[tuple[Any, Any]] = set()

    def __len__(self) -> int:
        return len(self._active)

    def vivify(self, lsid: Any, conn: Any = None, command_name: str = "", auth: Any = None) -> None:
        """A command of ``conn`` used the session ``lsid``: record its use, or raise 261 when it is new
        and the cache is full (mongod's LogicalSessionCacheImpl::vivify). Given the command's name
        and the AuthManager (``auth``: dispatch gives them), only when the lsid names a session the
        command uses (:func:`attaches_session`: the connection's principal read once for both)."""
        principal = getattr(conn, "principal", None)
        if not _attaches(command_name, principal, auth):
            return
        session_id = lsid.get("id") if isinstance(lsid, dict) else None
        if session_id is None:
            return
        key = (session_id, principal)
        active = self._active
        # One hash of the key while there is room (a uuid.UUID hashes in Python: every command of a
        # driver carries an lsid); a full cache first checks whether the key is new.
        try:
            if len(active) < self.max_sessions or key in active:
                active[key] = time.time()
                return
        except TypeError:  # a client's odd lsid id (a document, an array) names no session
            return
        raise _too_many(key)

    def start(self, conn: Any = None) -> dict[str, Any]:
        """``startSession``: a new session of ``conn``'s principal, in the cache (261 when full)."""
        lsid = {"id": uuid.uuid4()}
        self.vivify(lsid, conn)
        return lsid

    def end(self, session_ids: Iterable[Any], owner: Any = ANYONE) -> None:
        """``endSessions``: the sessions with these ids that ``owner`` (a Principal, or ANYONE) used end
        at the next refresh (mongod's LogicalSessionCacheImpl::endSessions)."""
        self._ending.update((session_id, owner) for session_id in session_ids)

    def take(self) -> tuple[dict[SessionKey, float], set[tuple[Any, Any]]]:
        """For a refresh: (the sessions used since the last one, less the ending ones; the ending
        ones), leaving the cache empty."""
        active, self._active = self._active, {}
        ending, self._ending = self._ending, set()
        if ending:
            matches = ending_matcher(ending)
            active = {key: last for key, last in active.items() if not matches(*key)}
        return active, ending

    def put_back(self, active: dict[SessionKey, float], ending: set[tuple[Any, Any]]) -> None:
        """A refresh failed: what it took is the cache's again (merged with what came since)."""
        for key, last in active.items():
            if self._active.get(key, 0.0) < last:
                self._active[key] = last
        self._ending |= ending

    def used_since_take(self, key: SessionKey) -> bool:
        return key in self._active

    def status(self) -> dict[str, Any]:
        """serverStatus ``logicalSessionRecordCache``, in mongod's field order."""
        stats = self.stats
        return {
            "activeSessionsCount": len(self._active),
            "sessionsCollectionJobCount": stats.jobs,
            "lastSessionsCollectionJobDurationMillis": stats.last_duration_ms,
            "lastSessionsCollectionJobTimestamp": stats.last_start,
            "lastSessionsCollectionJobEntriesRefreshed": stats.last_refreshed,
            "lastSessionsCollectionJobEntriesEnded": stats.last_ended,
            "lastSessionsCollectionJobCursorsClosed": stats.last_cursors_closed,
            "transactionReaperJobCount": 0,
            "lastTransactionReaperJobDurationMillis": 0,
            "lastTransactionReaperJobTimestamp": stats.created,
            "lastTransactionReaperJobEntriesCleanedUp": 0,
            "sessionCatalogSize": 0,
        }

    def records(self, wanted: Callable[[Any], bool] | None) -> list[dict[str, Any]]:
        """The cached session records whose owner (a Principal or None) ``wanted`` accepts (None: every
        session), newest use first: what ``$listLocalSessions`` lists."""
        return [record(key, last) for key, last in sorted(self._active.items(), key=lambda kv: -kv[1])
                if wanted is None or wanted(key[1])]


def ending_matcher(ending: set[tuple[Any, Any]]) -> Callable[[Any, Any], bool]:
    """Whether the session (id, owner Principal or None) is one of ``ending`` (ids ended by an owner, or
    by ANYONE: every owner's session of that id)."""
    owners: dict[Any, list[Any]] = {}
    for session_id, owner in ending:
        owners.setdefault(session_id, []).append(owner)
    return lambda session_id, owner: any(visible_to(owner, o) for o in owners.get(session_id, ()))


def record_id(key: SessionKey) -> dict[str, Any]:
    """mongod's session record ``_id``: ``{id, uid}`` (uid: the digest of the owner's name)."""
    session_id, owner = key
    return {"id": session_id, "uid": Binary(session_digest(owner.name if owner is not None else None), 0)}


def record(key: SessionKey, last: float) -> dict[str, Any]:
    """mongod's LogicalSessionRecord of a session last used at ``last`` (epoch seconds)."""
    out: dict[str, Any] = {"_id": record_id(key),
                           "lastUse": datetime.datetime.fromtimestamp(last, datetime.UTC)
                           .replace(tzinfo=None, microsecond=(int(last * 1000) % 1000) * 1000)}
    if key[1] is not None:
        out["user"] = {"name": key[1].name.display()}
    return out


def lsid_text(session_id: Any, owner: Any) -> str:
    """A LogicalSessionId as mongod's operator<< prints it: ``id - uid - txnNumber - txnUUID`` (the uid in
    base64; the last two empty for a client's session)."""
    if isinstance(session_id, bytes) and len(session_id) == 16:  # a Binary id: shown as the UUID it holds
        session_id = uuid.UUID(bytes=bytes(session_id))
    uid = session_digest(owner.name if owner is not None else None)
    return f"{session_id} - {base64.b64encode(uid).decode()} -  - "


def _too_many(key: SessionKey) -> MongoError:
    """mongod's refusal (_addToCacheIfNotFull)."""
    return MongoError(ErrorCode.TooManyLogicalSessions,
                      f"Unable to add session ID {lsid_text(*key)} into the cache because the number of "
                      "active sessions is too high")
