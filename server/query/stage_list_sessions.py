"""``$listSessions``: the session records of ``config.system.sessions`` (mongod's
DocumentSourceListSessions), the first stage of an aggregate on that collection.

The records come from the collection scan below the stage (written by the session cache's refresh:
server/session_refresh.py); the stage keeps those of the users asked for, by their ``_id.uid`` — the
SHA-256 of ``"user@db"`` — as mongod's stage matches ``{"_id.uid": {$in: [...]}}``:

- ``{allUsers: true}``: every record;
- ``{users: [{user, db}, ...]}``: those users' records;
- ``{}``: the caller's own (without an authenticated user: the sessions used without one, whose uid is
  the digest of "").

Spec errors as mongod's (ListSessionsSpec IDL): 14 for a non-object spec or a field of the wrong type,
40415 for an unknown field, 40414 for a user without ``user``/``db``, 12 UnsupportedFormat for both ``allUsers: true``
and ``users``; 73 on another namespace. Who may list others' sessions is auth/pipelines.py's
(``listSessions`` on the cluster).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query.pipeline import PipelineContext, Stage
from tidemark.query.values import bson_type_name

STAGE = "$listSessions"
SESSIONS_DB, SESSIONS_COLL = "config", "system.sessions"


def _wrong_type(path: str, value: Any, expected: str) -> MongoError:
    return MongoError(ErrorCode.TypeMismatch,
                      f"BSON field '{path}' is the wrong type '{bson_type_name(value)}', expected type '{expected}'")


def user_digest(user: str, db: str) -> bytes:
    """mongod's session ``uid`` of a user (getLogicalSessionUserDigestFor)."""
    return hashlib.sha256(f"{user}@{db}".encode()).digest()


def _parse_users(stage: str, value: Any) -> list[tuple[str, str]]:
    path = f"{stage}.users"
    if not isinstance(value, list):
        raise _wrong_type(path, value, "array")
    out = []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise _wrong_type(f"{path}.{i}", entry, "object")
        for key in entry:
            if key not in ("user", "db"):
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{path}.{key}' is an unknown field.")
        for key in ("user", "db"):
            if entry.get(key) is None:
                raise MongoError(ErrorCode.IDLFailedToParse,
                                 f"BSON field '{path}.{key}' is missing but a required field")
            if type(entry[key]) is not str:
                raise _wrong_type(f"{path}.{key}", entry[key], "string")
        out.append((entry["user"], entry["db"]))
    return out


def parse_sessions_spec(stage: str, spec: Any) -> tuple[bool, list[tuple[str, str]]]:
    """(allUsers, [(user, db)]) of a ``$listSessions`` or ``$listLocalSessions`` spec, checked as mongod's
    one ListSessionsSpec IDL for both stages (see the module doc for the codes)."""
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"{stage} options must be specified in an object, but found: {bson_type_name(spec)}")
    for key in spec:
        if key not in ("allUsers", "users"):
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{stage}.{key}' is an unknown field.")
    all_users = spec.get("allUsers")
    if all_users is not None and not isinstance(all_users, bool):
        raise _wrong_type(f"{stage}.allUsers", all_users, "bool")
    users = _parse_users(stage, spec["users"]) if spec.get("users") is not None else []
    if all_users and users:
        raise MongoError(ErrorCode.UnsupportedFormat,
                         f"{stage} may not specify {{allUsers:true}} and {{users:[...]}} at the same time")
    return bool(all_users), users


def _own_digests() -> set[bytes]:
    """The caller's uid: its authenticated user's (the running operation's connection), else that of
    the sessions used without a user."""
    conn = getattr(interrupt.current(), "conn", None)
    users = getattr(conn, "users", None) or []
    if not users:
        return {hashlib.sha256(b"").digest()}
    return {user_digest(u["user"], u["db"]) for u in users}


def parse_list_sessions(spec: Any, ctx: PipelineContext) -> Stage:
    all_users, users = parse_sessions_spec(STAGE, spec)
    if (ctx.db, ctx.coll) != (SESSIONS_DB, SESSIONS_COLL):
        raise MongoError(ErrorCode.InvalidNamespace,
                         f"{STAGE} may only be run against {SESSIONS_DB}.{SESSIONS_COLL}")
    # the uids are fixed at parse time: per document only a field read and a set lookup
    wanted = None if all_users else ({user_digest(u, d) for u, d in users} if users else _own_digests())

    def apply(docs: Iterator[dict]) -> Iterator[dict]:
        if wanted is None:
            yield from docs
            return
        for doc in docs:
            _id = doc.get("_id")
            uid = _id.get("uid") if isinstance(_id, dict) else None
            if isinstance(uid, bytes) and bytes(uid) in wanted:
                yield doc

    return Stage(STAGE, spec, apply)


STAGES = {STAGE: parse_list_sessions}
