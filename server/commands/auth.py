"""Authentication family: saslStart, saslContinue, authenticate, logout.

SCRAM-SHA-1 and SCRAM-SHA-256 run through :mod:`tidemark.auth.sasl`, MONGODB-X509 (``authenticate``, the
only mechanism it serves in mongod 7.0) through :mod:`tidemark.auth.x509`; both are also hello's
``speculativeAuthenticate``. ``logout`` ends the authentication of the user of its database.
"""

from __future__ import annotations

from typing import Any

from tidemark import log
from tidemark.auth import sasl, x509
from tidemark.auth.session import session_of
from tidemark.context import CommandContext, CommandSpec

_logout_warned = False


async def sasl_start(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await sasl.start(ctx, cmd, ctx.db)


async def sasl_continue(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await sasl.proceed(ctx, cmd)


async def authenticate(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await x509.authenticate(ctx, cmd, ctx.db)


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
    CommandSpec("authenticate", authenticate, help="MONGODB-X509 authentication with the verified TLS client "
                "certificate's subject (SCRAM goes through saslStart)"),
    CommandSpec("logout", logout, help="de-authenticate the user of this database on this connection"),
    CommandSpec("saslContinue", sasl_continue, help="Subsequent steps in a SASL authentication conversation."),
    CommandSpec("saslStart", sasl_start, help="First step in a SASL authentication conversation."),
]
