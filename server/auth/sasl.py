"""SASL conversations on a connection: ``saslStart`` / ``saslContinue`` and hello's
``speculativeAuthenticate``, as mongod runs them.

- The mechanism must be listed in ``authenticationMechanisms``, else 334 MechanismUnavailable, and be
  SCRAM-SHA-1 or SCRAM-SHA-256, else 2 BadValue "Unsupported mechanism" (MONGODB-X509 is mongod 7.0's
  ``authenticate`` command, :mod:`tidemark.auth.x509`). Payloads are BinData, or base64 strings (answered the same way).
- Every failure inside a mechanism step — malformed message, wrong nonce, replayed or wrong proof,
  unknown user, missing credentials — answers 18 "Authentication failed." and is logged with
  mongod's id 20249 and attributes (mechanism, speculative, principalName, authenticationDatabase,
  remote, extraInfo, error); never the password or the payload. Success is logged as 20250.
  Failures go through :func:`reject`: the 20249 lines are rate-limited and a client address that
  keeps failing waits before each answer (server/auth/throttle.py); a success resets its address.
- An unknown user is not refused at saslStart: it gets a decoy server-first message and fails at
  the proof, exactly like a wrong password. (A user that exists but has no credential for the
  mechanism fails at saslStart, as in mongod, so drivers can fall back to the other mechanism.)
- The user lookups are single-document point reads (tens of microseconds) done on the event loop,
  like the authorization check's: a thread-pool hop would cost more than the read
  (``python -m bench.auth_handshake``: 0.35 vs 0.43 ms of server CPU per authenticated connection).
- A connection authenticates at most one user: re-authenticating as the same user is allowed,
  as another one answers 5626701. ``saslContinue`` without a conversation answers 17 ProtocolError.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Any

from bson.binary import Binary

from tidemark import log
from tidemark.arguments import field, wrong_type
from tidemark.auth import scram
from tidemark.auth.names import UserName
from tidemark.auth.restrictions import RESTRICTIONS_UNMET
from tidemark.auth.session import Conversation, session_of
from tidemark.auth.throttle import LOG_LINES_PER_SECOND, SUPPRESSED_ID, source_address
from tidemark.protocol.errors import ErrorCode, MongoError

# ``ctx`` is a tidemark.context.CommandContext (server, conn, params): not imported, because
# tidemark.context pulls in modules above this layer and import-linter counts even type-only imports.
CommandContext = Any

AUTH_FAILED = "Authentication failed."


def _payload(cmd: dict, command: str) -> tuple[bytes, bool]:
    """(payload bytes, answer as base64 string?)."""
    value = field(cmd, command, "payload", (bytes, str), ("string", "binData"), required=True)
    if type(value) is str:
        try:
            return base64.b64decode(value, validate=True), True
        except (binascii.Error, ValueError):
            raise MongoError(ErrorCode.BadValue, "Invalid base64 encoding of the SASL payload") from None
    return bytes(value), False


def _reply(payload: bytes, done: bool, as_text: bool) -> dict[str, Any]:
    body: Any = base64.b64encode(payload).decode() if as_text else Binary(payload)
    return {"conversationId": 1, "done": done, "payload": body}


def _log_attrs(ctx: CommandContext, conv: Conversation, principal: str) -> dict[str, Any]:
    return {
        "mechanism": conv.mechanism,
        "speculative": conv.speculative,
        "principalName": principal,
        "authenticationDatabase": conv.db,
        "remote": ctx.conn.peer,
        "extraInfo": {},
    }


async def _fail(ctx: CommandContext, conv: Conversation, principal: str, reason: str) -> MongoError:
    session = session_of(ctx.conn)
    session.conversation = None
    attrs = _log_attrs(ctx, conv, principal)
    attrs["error"] = reason if reason.startswith(("UserNotFound", RESTRICTIONS_UNMET)) else f"AuthenticationFailed: {reason}"
    return await reject(ctx, attrs, speculative=conv.speculative)


async def reject(ctx: CommandContext, attrs: dict[str, Any], *, speculative: bool = False) -> MongoError:
    """Every failed authentication ends here: its 20249 log line (rate-limited) and, unless it was
    speculative, the per-address back-off (an asyncio sleep before the answer; tidemark.auth.throttle).
    Returns the 18 "Authentication failed." error to raise."""
    manager = ctx.server.auth
    throttle = getattr(manager, "throttle", None)
    if throttle is None:
        log.log(log.INFO, "ACCESS", 20249, "Authentication failed", ctx=f"conn{ctx.conn.id}", attr=attrs)
        return MongoError(ErrorCode.AuthenticationFailed, AUTH_FAILED)

    def summary(count: int) -> None:
        log.log(log.INFO, "ACCESS", SUPPRESSED_ID, "Authentication failure log lines suppressed", ctx="conn",
                attr={"suppressed": count, "limitPerSecond": LOG_LINES_PER_SECOND})

    if throttle.should_log(summary, asyncio.get_running_loop().call_later):
        log.log(log.INFO, "ACCESS", 20249, "Authentication failed", ctx=f"conn{ctx.conn.id}", attr=attrs)
    if not speculative:
        delay = throttle.failed(source_address(ctx.conn.peer))
        if delay:
            await asyncio.sleep(delay)
    return MongoError(ErrorCode.AuthenticationFailed, AUTH_FAILED)


async def start(ctx: CommandContext, cmd: dict, db: str, *, speculative: bool = False) -> dict[str, Any]:
    """Run a saslStart (``cmd`` is the command, or hello's ``speculativeAuthenticate`` document)."""
    command = "saslStart"
    mechanism = field(cmd, command, "mechanism", str, "string", required=True)
    payload, as_text = _payload(cmd, command)
    options = cmd.get("options") or {}
    if not isinstance(options, dict):
        raise wrong_type(f"{command}.options", options, "object")
    if mechanism not in ctx.params["authenticationMechanisms"]:
        raise MongoError(
            ErrorCode.MechanismUnavailable, f"Received authentication for mechanism {mechanism} which is not enabled"
        )
    if mechanism not in scram.MECHANISMS:  # MONGODB-X509 is not a SASL mechanism in mongod 7.0: `authenticate`
        raise MongoError(ErrorCode.BadValue,
                         f"Unsupported mechanism '{mechanism}' on authentication database '{db}'")
    session = session_of(ctx.conn)
    conv = Conversation(mechanism, db, speculative, None)
    session.conversation = None
    try:
        _, _, user, _ = scram.parse_client_first(payload)
    except scram.ScramError as exc:
        raise await _fail(ctx, conv, "", str(exc)) from None
    manager = ctx.server.auth
    credential, reason, exists, user_id = manager.credential(db, user, mechanism)
    if exists and credential is None:
        # Like mongod: a user without credentials for this mechanism fails at once, so a driver whose
        # speculative SCRAM-SHA-256 attempt gets no answer falls back to the mechanism it has.
        raise await _fail(ctx, conv, user, reason)
    conv.scram = scram.ServerConversation(
        mechanism,
        credential,
        manager.decoy(db, user, mechanism),
        skip_empty_exchange=bool(options.get("skipEmptyExchange", False)),
    )
    conv.reason = reason
    conv.user_id = user_id
    session.conversation = conv
    return await _step(ctx, conv, payload, as_text)


async def proceed(ctx: CommandContext, cmd: dict) -> dict[str, Any]:
    """Run a saslContinue."""
    conversation_id = field(cmd, "saslContinue", "conversationId", int, "int", required=True)
    payload, as_text = _payload(cmd, "saslContinue")
    session = session_of(ctx.conn)
    conv = session.conversation
    if conv is None:
        raise MongoError(ErrorCode.ProtocolError, "No SASL session state found")
    if conversation_id != 1:
        raise MongoError(ErrorCode.ProtocolError, "sasl: Mismatched conversation id")
    return await _step(ctx, conv, payload, as_text)


async def _step(ctx: CommandContext, conv: Conversation, payload: bytes, as_text: bool) -> dict[str, Any]:
    mech = conv.scram
    try:
        answer, done = mech.step(payload)
    except scram.ScramError as exc:
        reason = conv.reason if str(exc).startswith("UserNotFound") else str(exc)
        raise await _fail(ctx, conv, mech.user, reason or str(exc)) from None
    if done:
        session = session_of(ctx.conn)
        session.conversation = None
        manager = ctx.server.auth
        generation = manager.generation
        resolved = manager.resolve(UserName(mech.user, conv.db))
        if resolved is None:
            raise await _fail(ctx, conv, mech.user, f"UserNotFound: Could not find user \"{mech.user}\" for db \"{conv.db}\"")
        if resolved.document.get("userId") != conv.user_id:  # dropped (and re-created) mid-conversation
            raise await _fail(ctx, conv, mech.user, "UserNotFound: the user changed during the conversation")
        if not resolved.restrictions.met_by(ctx.conn.peer, ctx.conn.local):
            raise await _fail(ctx, conv, mech.user, RESTRICTIONS_UNMET)
        if session.name is not None and session.name != resolved.name:
            raise MongoError(
                5626701,
                "Each client connection may only be authenticated once. "
                f"Previously authenticated as: {session.name.display()}",
            )
        session.login(resolved, generation)
        admitted(ctx, _log_attrs(ctx, conv, mech.user))
    return _reply(answer, done, as_text)


def admitted(ctx: CommandContext, attrs: dict[str, Any]) -> None:
    """Every successful authentication (SCRAM and MONGODB-X509) ends here: its address's back-off is
    reset and it is logged (20250)."""
    throttle = getattr(ctx.server.auth, "throttle", None)
    if throttle is not None:
        throttle.succeeded(source_address(ctx.conn.peer))
    if not log.is_quiet():
        log.log(log.INFO, "ACCESS", 20250, "Authentication succeeded", ctx=f"conn{ctx.conn.id}", attr=attrs)


async def supported_mechanisms(ctx: CommandContext, value: Any) -> list[str]:
    """hello's ``saslSupportedMechs: "<db>.<user>"``: the SCRAM mechanisms that user can use. An
    unknown user gets every enabled mechanism, so the answer does not tell whether it exists."""
    if type(value) is not str:
        raise MongoError(ErrorCode.TypeMismatch, "saslSupportedMechs must be a string")
    db, dot, user = value.partition(".")
    if not dot or not db or not user:
        raise MongoError(ErrorCode.BadValue, "UserName must contain a '.' separated database.user pair")
    enabled = [m for m in scram.MECHANISMS if m in ctx.params["authenticationMechanisms"]]
    doc = ctx.server.auth.user_document(db, user)
    if doc is None:
        return enabled
    credentials = doc.get("credentials") or {}
    return [m for m in enabled if m in credentials]


async def speculative(ctx: CommandContext, doc: dict) -> dict[str, Any] | None:
    """hello's ``speculativeAuthenticate: {saslStart: ...}``: the first SASL step, answered inside hello.
    Any failure means "no speculative reply" (the client then runs saslStart itself), as in mongod."""
    if type(doc.get("db")) is not str:
        return None
    try:
        return await start(ctx, doc, doc["db"], speculative=True)
    except MongoError:
        return None
