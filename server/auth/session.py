"""Per-connection authentication state (``ConnectionInfo.auth``), never global.

An :class:`AuthSession` holds who is authenticated on this connection (at most one user, as in
mongod 7.0) as a :class:`~tidemark.auth.names.Principal` (name and ``userId``), the SASL conversation in
progress, and the user's resolved privileges for the manager generation they were computed at.
``privileges()`` re-resolves when users or roles changed since; privileges are only ever those of
the same user id: when the user was dropped (or dropped and re-created, a new ``userId``), the
session is logged out, as mongod's AuthorizationSession drops a deleted or changed user; so it is
when the re-read user's authentication restrictions (its own or its roles') are no longer met by the
connection's addresses (mongod's ``_refreshUserInfoAsNeeded``: log 20242).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tidemark import log
from tidemark.auth import resources as R
from tidemark.auth.manager import REFRESH_SECONDS, AuthManager, ResolvedUser
from tidemark.auth.names import Principal, UserName
from tidemark.auth.restrictions import RESTRICTIONS_UNMET

# What an unauthenticated localhost connection may do while no user or role exists (mongod's
# localhost exception): create the first user (or role) in admin, and nothing else.
LOCALHOST_PRIVILEGES: dict[R.Pattern, frozenset] = {
    ("db", "admin"): frozenset({"createUser", "grantRole", "createRole"}),
    ("db", "$external"): frozenset({"createUser"}),
}


@dataclass
class Conversation:
    """A SASL conversation in progress (the mechanism object does the work)."""

    mechanism: str
    db: str
    speculative: bool
    scram: Any  # tidemark.auth.scram.ServerConversation
    reason: str = ""  # why the stored credential could not be used (logged if the conversation fails)
    user_id: Any = None  # userId of the document whose credential the conversation uses


class AuthSession:
    __slots__ = ("principal", "conversation", "_resolved", "_generation", "_at")

    def __init__(self) -> None:
        self.principal: Principal | None = None
        self.conversation: Conversation | None = None
        self._resolved: ResolvedUser | None = None
        self._generation = -1
        self._at = 0.0

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    @property
    def name(self) -> UserName | None:
        """The authenticated user's name, or None."""
        return self.principal.name if self.principal is not None else None

    @property
    def user(self) -> str | None:
        return self.principal.name.user if self.principal is not None else None

    @property
    def db(self) -> str | None:
        return self.principal.name.db if self.principal is not None else None

    def role_names(self) -> list[tuple[str, str]]:
        """The (role, db) pairs granted directly to the authenticated user as last resolved (every
        authorized command resolves it again first), or [] when nobody is authenticated."""
        resolved = self._resolved if self.principal is not None else None
        return list(resolved.roles) if resolved is not None else []

    def login(self, resolved: ResolvedUser, generation: int) -> None:
        self.principal = resolved.principal
        self._resolved, self._generation, self._at = resolved, generation, time.monotonic()

    def logout(self) -> None:
        self.principal = None
        self.conversation = None
        self._resolved = None
        self._generation = -1

    def resolved(self, manager: AuthManager, conn: Any) -> ResolvedUser | None:
        """The authenticated user as it is now; None if not authenticated. A user that no longer
        exists under this user id (dropped, or dropped and re-created), or whose authentication
        restrictions ``conn`` no longer meets, logs the session out."""
        principal = self.principal
        if principal is None:
            return None
        now = time.monotonic()
        manager.sync()  # a write to admin.system.users / roles by any route counts at once
        if self._generation != manager.generation or now - self._at >= REFRESH_SECONDS:
            generation = manager.generation
            resolved = manager.resolve(principal.name)
            if resolved is None or resolved.principal != principal:
                self.logout()
                log.log(log.INFO, "ACCESS", 20245, "Removed deleted user from session cache of user information",
                        ctx=f"conn{getattr(conn, 'id', 0)}", attr={"user": principal.name.document()})
                return None
            if not resolved.restrictions.met_by(getattr(conn, "peer", ""), getattr(conn, "local", "")):
                self.logout()
                log.log(log.INFO, "ACCESS", 20242, "Removed user with unmet authentication restrictions from "
                        "session cache of user information", ctx=f"conn{getattr(conn, 'id', 0)}",
                        attr={"user": principal.name.document(), "reason": RESTRICTIONS_UNMET})
                return None
            self._resolved, self._generation, self._at = resolved, generation, now
        return self._resolved

    def privileges(self, manager: AuthManager, conn: Any) -> dict[R.Pattern, frozenset] | None:
        """The user's privileges; None when nobody is authenticated (or the user was dropped)."""
        resolved = self.resolved(manager, conn)
        return resolved.privileges if resolved is not None else None


def session_of(conn: Any) -> AuthSession:
    """The connection's session, created on first use."""
    session = conn.auth
    if session is None:
        session = conn.auth = AuthSession()
    return session


# The peer of a client on the Unix domain socket, as mongod names it ("anonymous unix socket:27017", the
# server's port): such a client is on this machine.
UNIX_SOCKET_PEER = "anonymous unix socket"


def is_localhost(conn: Any) -> bool:
    peer = conn.peer or ""
    return (peer.startswith("127.") or peer.startswith("[::1]:") or peer.startswith("localhost:")
            or peer.startswith(f"{UNIX_SOCKET_PEER}:"))


def auth_info(manager: AuthManager, conn: Any, show_privileges: bool) -> dict[str, Any]:
    """``connectionStatus.authInfo``: the user, the roles granted to it and, on request, every
    privilege those roles give (inherited roles included) as ``[{resource, actions}]``."""
    session = conn.auth
    resolved = session.resolved(manager, conn) if session is not None else None
    info: dict[str, Any] = {
        "authenticatedUsers": [{"user": resolved.user, "db": resolved.db}] if resolved else [],
        "authenticatedUserRoles": [{"role": r, "db": d} for r, d in resolved.roles] if resolved else [],
    }
    if show_privileges:
        info["authenticatedUserPrivileges"] = R.privilege_documents(resolved.privileges) if resolved else []
    return info
