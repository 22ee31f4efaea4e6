"""Authentication family: saslStart, saslContinue, authenticate, logout.

SCRAM-SHA-1 and SCRAM-SHA-256 run through :mod:`tidemark.auth.sasl` (also used by hello's
``speculativeAuthenticate``). ``authenticate`` exists only for MONGODB-X509 in mongod 7.0, which
Tidemark does not offer: like mongod for any mechanism it cannot use, it answers 18
"Authentication failed.". ``logout`` ends the authentication of the user of its database.
"""

from __future__ import annotations

from typing import Any

from tidemark import log
from tidemark.arguments import field
from tidemark.auth import sasl
from tidemark.auth.session import session_of
from tidemark.context import CommandContext, CommandSpec

_logout_warned = False


async def sasl_start(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await sasl.start(ctx, cmd, ctx.db)


async def sasl_continue(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await sasl.proceed(ctx, cmd)


async def authenticate(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    mechanism = field(cmd, "authenticate", "mechanism", str, "string", required=True)
    user = cmd.get("user") if type(cmd.get("user")) is str else ""
    reason = ("No verified subject name available from client" if mechanism == "MONGODB-X509"
              else f"Unsupported mechanism: {mechanism}")
    raise await sasl.reject(ctx, {
        "mechanism": mechanism, "speculative": False, "principalName": user,
        "authenticationDatabase": ctx.db, "remote": ctx.conn.peer, "extraInfo": {},
        "error": f"AuthenticationFailed: {reason}",
    })


async def logout(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    global _logout_warned
    if not _logout_warned:
        _logout_warned = True
        log.warning("ACCESS", 5626600,
                    "The logout command has been deprecated, clients should end their session instead",
                    ctx=f"conn{ctx.conn.id}")
    session = session_of(ctx.conn)
    session.conversation = None
    if session.db == ctx.db:
        session.logout()
    return {}


COMMANDS = [
    CommandSpec("authenticate", authenticate, help="legacy authentication (MONGODB-X509 only in mongod; "
                "Tidemark authenticates with SCRAM through saslStart)"),
    CommandSpec("logout", logout, help="de-authenticate the user of this database on this connection"),
    CommandSpec("saslContinue", sasl_continue, help="Subsequent steps in a SASL authentication conversation."),
    CommandSpec("saslStart", sasl_start, help="First step in a SASL authentication conversation."),
]
