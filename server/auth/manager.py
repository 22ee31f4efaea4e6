"""The process-wide authorization state: is access control on, who exists, what each user may do.

``AuthManager`` (one per server, ``state.auth``, created by :mod:`tidemark.auth.lifecycle`) owns:

- ``enabled`` — ``--auth`` / ``security.authorization: enabled``;
- ``generation`` — bumped by every change of users or roles (the user commands, and writes or drops
  that reach ``admin.system.users``/``admin.system.roles`` by other routes). Resolved users and the
  "any user exists?" answer are cached per generation, and each connection re-resolves its user when
  the generation moved, so a revoked role stops working on the next command of every connection;
- a random per-process secret that derives the decoy salts of unknown users.

Writes that reach the two collections by other routes (``root`` may insert, update, delete or drop
``admin.system.users`` / ``admin.system.roles`` like any collection, applyOps, ``$out``, dropDatabase)
take effect at once, as mongod's AuthOpObserver invalidates its user cache on every such write:
:meth:`AuthManager.sync` (run before every cached answer is used) sees whether any commit happened
since it last looked (the engine's commit counter: a dict read on the fast path) and, if so, whether
one of them changed a record of either collection (the storage ChangeLog) or replaced / dropped one
(its ident), and then bumps the generation. Cached answers also expire after
:data:`REFRESH_SECONDS` (a backstop).

Resolution (:meth:`AuthManager.resolve`) walks the role graph — built-in roles from
:mod:`tidemark.auth.builtin_roles`, user-defined ones from ``admin.system.roles`` — and returns the
user's direct roles, every inherited role and the union of their privileges. Roles that no longer
exist are skipped, as mongod does.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from tidemark.auth import builtin_roles as B
from tidemark.auth import resources as R
from tidemark.auth import scram, store
from tidemark.auth.names import Principal, UserName
from tidemark.auth.restrictions import Restrictions
from tidemark.auth.throttle import AuthThrottle

RoleName = tuple[str, str]  # (role, db)
REFRESH_SECONDS = 2.0


@dataclass
class ResolvedUser:
    user: str
    db: str
    document: dict
    roles: list[RoleName]  # granted directly
    inherited: list[RoleName]  # every role reachable, the direct ones included
    privileges: dict[R.Pattern, frozenset] = field(default_factory=dict)
    # the user's authenticationRestrictions and those of every role it has (inherited included)
    restrictions: Restrictions = Restrictions()

    @property
    def name(self) -> UserName:
        return UserName(self.user, self.db)

    @property
    def principal(self) -> Principal:
        """The name and the ``userId`` of the document resolved (mongod's User::getID())."""
        user_id = self.document.get("userId")
        try:
            hash(user_id)
        except TypeError:  # a hand-written document's odd userId still names this user only
            user_id = repr(user_id)
        return Principal(self.name, user_id)


def role_list(value: Any) -> list[RoleName]:
    """``[{role, db}]`` of a stored document as (role, db) pairs (malformed entries skipped)."""
    out = []
    for entry in value or []:
        if isinstance(entry, dict) and type(entry.get("role")) is str and type(entry.get("db")) is str:
            out.append((entry["role"], entry["db"]))
    return out


class RoleGraph:
    """Built-in and user-defined roles, for closure and privilege queries (one snapshot)."""

    def __init__(self, role_docs: list[dict]):
        self.defined: dict[RoleName, dict] = {}
        for doc in role_docs:
            if type(doc.get("role")) is str and type(doc.get("db")) is str:
                self.defined[(doc["role"], doc["db"])] = doc

    def exists(self, role: RoleName) -> bool:
        return B.is_builtin(*role) or role in self.defined

    def direct(self, role: RoleName) -> list[RoleName]:
        if B.is_builtin(*role):
            return B.direct_roles(*role)
        return role_list(self.defined.get(role, {}).get("roles"))

    def closure(self, roles: list[RoleName]) -> list[RoleName]:
        """``roles`` and every role they inherit (existing ones only), in discovery order."""
        seen: dict[RoleName, None] = {}
        stack = list(reversed(roles))
        while stack:
            role = stack.pop()
            if role in seen or not self.exists(role):
                continue
            seen[role] = None
            stack.extend(reversed(self.direct(role)))
        return list(seen)

    def own_privileges(self, role: RoleName) -> dict[R.Pattern, frozenset]:
        if B.is_builtin(*role):
            return B.own_privileges(*role)
        try:
            return R.parse_privileges(self.defined.get(role, {}).get("privileges", []), "privileges")
        except Exception:  # a hand-edited role document: grant nothing rather than fail every command
            return {}

    def restriction_documents(self, roles: list[RoleName]) -> list[Any]:
        """The ``authenticationRestrictions`` of ``roles`` and the roles they inherit, those that have
        some (mongod's ``inheritedAuthenticationRestrictions``: one array per role)."""
        out = []
        for role in self.closure(roles):
            document = self.defined.get(role, {}).get("authenticationRestrictions")
            if document is not None and document != []:
                out.append(document)
        return out

    def privileges(self, roles: list[RoleName]) -> dict[R.Pattern, frozenset]:
        out: dict[R.Pattern, frozenset] = {}
        for role in self.closure(roles):
            R.merge(out, self.own_privileges(role))
        return out


class AuthManager:
    def __init__(self, engine: Any, params: Any, *, enabled: bool):
        self.engine = engine
        self.params = params
        self.enabled = enabled
        self.localhost_bypass = bool(params["enableLocalhostAuthBypass"])
        self.generation = 0
        self.secret = os.urandom(32)
        self._has_users: tuple[int, float, bool] | None = None
        self._users_seen = False  # a user or role existed since start-up (has_users)
        # sync(): the engine's commit count last looked at, and the (snapshot, idents) seen then
        self._synced_commits = -1
        self._synced: tuple[int, tuple[Any, Any]] | None = None
        self._resolved: dict[UserName, tuple[float, ResolvedUser | None]] = {}
        self._graph: tuple[int, float, RoleGraph] | None = None
        self.throttle = AuthThrottle()  # failed authentications: bounded log, per-address back-off

    def sync(self) -> None:
        """Bump the generation when admin.system.users or admin.system.roles changed since the last
        look by any route (see the module doc). Cheap when nothing was committed since."""
        stats = getattr(self.engine, "stats", None)
        commits = stats.get("commits") if isinstance(stats, dict) else None
        if commits is None or commits == self._synced_commits:
            return
        self._synced_commits = commits  # first: a commit after the view below is looked at next time
        previous, self._synced = self._synced, store.idents_at(self.engine)
        snapshot, idents = self._synced
        if previous is None or previous[1] != idents:
            self.changed()
            return
        for ident in idents:
            if ident is not None and self.engine.changes.changed(ident, previous[0], snapshot) != set():
                self.changed()  # (None: those commits are no longer known; assume a change)
                return

    def changed(self) -> None:
        """Users or roles changed: every cached resolution is stale."""
        self.generation += 1
        self._resolved.clear()
        self._has_users = None
        self._graph = None
        self.has_users()  # a user just created closes the localhost exception for good (has_users)

    def _fresh(self, cached: tuple | None) -> bool:
        return (cached is not None and cached[0] == self.generation
                and time.monotonic() - cached[1] < REFRESH_SECONDS)

    def has_users(self) -> bool:
        """Whether any user or role exists, as the localhost exception asks it: once one was seen the
        answer stays True until the server restarts, even when every user is dropped (mongod's
        AuthorizationManagerImpl::hasAnyPrivilegeDocuments: "if we know that a user exists, don't
        re-check"), so the exception never re-opens on a running server."""
        if self._users_seen:
            return True
        self.sync()
        cached = self._has_users
        if cached is None or not self._fresh(cached):
            cached = self._has_users = (self.generation, time.monotonic(), store.exists_any(self.engine))
        self._users_seen = cached[2]
        return cached[2]

    def graph(self) -> RoleGraph:
        self.sync()
        cached = self._graph
        if cached is None or not self._fresh(cached):
            graph = RoleGraph(store.read_all(self.engine, store.ROLES))
            cached = self._graph = (self.generation, time.monotonic(), graph)
        return cached[2]

    def user_document(self, db: str, user: str) -> dict | None:
        """The user's document, found by ``_id`` ("<db>.<user>": unambiguous, a database name has no
        '.') and kept only when its ``user`` and ``db`` are that pair (a hand-written document with
        a mismatched ``_id`` names nobody)."""
        doc = store.read_one(self.engine, store.USERS, store.user_id(db, user))
        if doc is None or doc.get("user") != user or doc.get("db") != db:
            return None
        return doc

    def resolve(self, name: UserName) -> ResolvedUser | None:
        """The user with its roles and privileges, or None when it does not exist (cached)."""
        key = name
        db, user = name.db, name.user
        self.sync()
        cached = self._resolved.get(key)
        if cached is not None and time.monotonic() - cached[0] < REFRESH_SECONDS:
            return cached[1]
        generation = self.generation
        doc = self.user_document(db, user)
        resolved = None
        if doc is not None:
            graph = self.graph()
            roles = role_list(doc.get("roles"))
            restrictions = Restrictions.of([doc.get("authenticationRestrictions"), *graph.restriction_documents(roles)])
            resolved = ResolvedUser(user, db, doc, roles, graph.closure(roles), graph.privileges(roles), restrictions)
        if generation == self.generation:
            if len(self._resolved) > 10_000:
                self._resolved.clear()
            self._resolved[key] = (time.monotonic(), resolved)
        return resolved

    def credential(self, db: str, user: str, mechanism: str) -> tuple[scram.Credential | None, str, bool, Any]:
        """(stored credential, why not, whether the user exists, the document's ``userId``) for a
        SCRAM conversation: the login that follows must find the same user id (a user dropped and
        re-created while the conversation ran is not the user whose key verified the proof)."""
        doc = self.user_document(db, user)
        if doc is None:
            return None, f"UserNotFound: Could not find user \"{user}\" for db \"{db}\"", False, None
        user_id = doc.get("userId")
        stored = (doc.get("credentials") or {}).get(mechanism)
        if stored is None:
            return (None, "Unable to perform SCRAM authentication for a user with missing or invalid SCRAM "
                    "credentials", True, user_id)
        try:
            return scram.Credential.from_document(stored), "", True, user_id
        except scram.ScramError as exc:
            return None, str(exc), True, user_id

    def decoy(self, db: str, user: str, mechanism: str) -> tuple[bytes, int]:
        """Salt and iteration count shown for a user that cannot authenticate with ``mechanism``."""
        iterations = self.params["scramSHA256IterationCount" if mechanism == scram.SHA256 else "scramIterationCount"]
        return scram.decoy_salt(self.secret, mechanism, store.user_id(db, user)), iterations
