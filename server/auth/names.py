"""Who a user is: the one value type for a user's name, and the authenticated principal.

``@`` and ``.`` are legal in user names and ``@`` in database names, so ``"user@db"`` is ambiguous
(``alice`` of ``corp@admin`` and ``alice@corp`` of ``admin`` print the same): a joined string is for
display only (:meth:`UserName.display`, mongod's log text and the profiler's ``user`` field), never
for a comparison nor as a dictionary key. Like mongod's ``UserName``, :class:`UserName` is the pair.

:class:`Principal` is what a connection is authenticated as: the name and the ``userId`` (UUID) of the
user document it authenticated against (mongod's ``User::getID()``), so a user dropped and re-created
under the same name is another principal: the old connection is logged out, and the new user does
not own the old one's cursors, operations or sessions.

Ownership (cursors, operations, sessions) is decided by :func:`same_principal` / :func:`visible_to`
only: ``None`` (nobody authenticated) is never the same principal as anyone, not even ``None``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class UserName:
    """A user's name: the (user, db) pair; equality and hashing are the pair's."""

    user: str
    db: str

    def display(self) -> str:
        """``user@db``, as mongod prints a user (log text, profiler ``user``). Not unique: never compare it."""
        return f"{self.user}@{self.db}"

    def document(self) -> dict[str, str]:
        """``{user, db}``, as mongod lists a user (effectiveUsers, allUsers, authenticatedUsers)."""
        return {"user": self.user, "db": self.db}


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated user: its name and the ``userId`` of its user document (None when the
    document has none, e.g. written by hand)."""

    name: UserName
    user_id: Any = None


class _Anyone:
    """The viewer that may see everything (access control off, or a privileged caller)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ANYONE"


ANYONE: Any = _Anyone()


def same_principal(a: Principal | None, b: Principal | None) -> bool:
    """True when both are the same authenticated principal (name and user id); None matches nothing."""
    return a is not None and b is not None and a == b


def visible_to(owner: Principal | None, viewer: Any) -> bool:
    """Whether something owned by ``owner`` belongs to ``viewer`` (a Principal, None, or ANYONE)."""
    return viewer is ANYONE or same_principal(owner, viewer)


def session_digest(name: UserName | None) -> bytes:
    """mongod's ``uid`` of a logical session (getLogicalSessionUserDigestFor): SHA-256 of
    ``"user@db"``, of ``""`` without a user. A wire value (``lsid.uid``, ``$listLocalSessions``) with
    mongod's own ambiguity: shown, or checked against the caller's own, never used to find an owner."""
    return hashlib.sha256(name.display().encode() if name is not None else b"").digest()
