"""Users and roles as documents: parsing role names and privileges, deriving credentials, building
the stored documents and the ``usersInfo`` / ``rolesInfo`` views of them (the one place for each).

Stored shapes are mongod's (see :mod:`tidemark.auth.store`). Views hide ``credentials`` unless
``showCredentials``; ``mechanisms`` is derived from the stored credentials.
"""

from __future__ import annotations

import uuid
from typing import Any

from tidemark.arguments import wrong_type
from tidemark.auth import builtin_roles as B
from tidemark.auth import resources as R
from tidemark.auth import scram, store
from tidemark.auth.manager import RoleGraph, RoleName, role_list
from tidemark.protocol.errors import ErrorCode, MongoError


def role_names(value: Any, default_db: str, command: str, field: str = "roles") -> list[RoleName]:
    """``["r", {role, db}]`` -> [(role, db)]; a bare name means a role of ``default_db``."""
    if not isinstance(value, list):
        raise wrong_type(f"{command}.{field}", value, "array")
    out: list[RoleName] = []
    for entry in value:
        if type(entry) is str:
            role, db = entry, default_db
        elif isinstance(entry, dict) and type(entry.get("role")) is str and type(entry.get("db")) is str:
            if set(entry) - {"role", "db"}:
                raise MongoError(ErrorCode.BadValue, f"Unknown field in role document: {sorted(set(entry) - {'role', 'db'})}")
            role, db = entry["role"], entry["db"]
        else:
            raise MongoError(
                ErrorCode.BadValue,
                "Role names must be either strings or objects of the form {role: \"<role>\", db: \"<db>\"}",
            )
        if not role:
            raise MongoError(ErrorCode.BadValue, "Role name must not be empty")
        if (role, db) not in out:
            out.append((role, db))
    return out


def role_documents(roles: list[RoleName]) -> list[dict[str, str]]:
    return [{"role": role, "db": db} for role, db in roles]


def with_roles(current: list[RoleName], roles: list[RoleName], *, grant: bool) -> list[RoleName]:
    """``current`` with ``roles`` granted (appended when missing) or revoked (removed)."""
    if grant:
        return current + [r for r in roles if r not in current]
    return [r for r in current if r not in roles]


def require_some(values: Any, command: str, field: str) -> None:
    """mongod's grant/revoke commands refuse an empty ``roles`` / ``privileges`` array (BadValue)."""
    if not values:
        raise MongoError(ErrorCode.BadValue, f'{command} command requires a non-empty "{field}" array')


def check_roles_exist(graph: RoleGraph, roles: list[RoleName]) -> None:
    for role, db in roles:
        if not graph.exists((role, db)):
            raise MongoError(ErrorCode.RoleNotFound, f"Could not find role: {role}@{db}")


def mechanisms_arg(value: Any, enabled: list[str], command: str) -> list[str]:
    """The ``mechanisms`` to create credentials for (default: every enabled SCRAM mechanism)."""
    if value is None:
        return [m for m in scram.MECHANISMS if m in enabled]
    if not isinstance(value, list) or not all(type(m) is str for m in value):
        raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{command}.mechanisms' must be an array of strings")
    if not value:
        raise MongoError(ErrorCode.BadValue, "mechanisms field must not be empty")
    for mechanism in value:
        if mechanism not in scram.MECHANISMS or mechanism not in enabled:
            raise MongoError(ErrorCode.BadValue, f"Unknown auth mechanism '{mechanism}'")
    return [m for m in scram.MECHANISMS if m in value]


def credentials(user: str, password: str, mechanisms: list[str], digest_password: bool, params: Any) -> dict:
    """New salted credentials for every mechanism (PBKDF2: run it in the thread pool)."""
    if not password:
        raise MongoError(ErrorCode.BadValue, "Password cannot be empty")
    if not digest_password and scram.SHA256 in mechanisms:
        raise MongoError(ErrorCode.BadValue, "Use of SCRAM-SHA-256 requires undigested passwords")
    out = {}
    for mechanism in mechanisms:
        if mechanism == scram.SHA1:
            digest = password.encode() if not digest_password else scram.password_input(mechanism, user, password)
            iterations = params["scramIterationCount"]
        else:
            try:
                digest = scram.password_input(mechanism, user, password)
            except ValueError:
                raise MongoError(ErrorCode.BadValue, "Could not SASLprep the password") from None
            iterations = params["scramSHA256IterationCount"]
        out[mechanism] = scram.derive_credential(mechanism, digest, iterations)
    return out


def user_document(
    db: str,
    user: str,
    creds: dict,
    roles: list[RoleName],
    custom_data: dict | None = None,
    restrictions: list | None = None,
) -> dict:
    doc: dict[str, Any] = {
        "_id": store.user_id(db, user),
        "userId": uuid.uuid4(),
        "user": user,
        "db": db,
        "credentials": creds,
        "roles": role_documents(roles),
    }
    if custom_data is not None:
        doc["customData"] = custom_data
    if restrictions:
        doc["authenticationRestrictions"] = restrictions
    return doc


def user_view(
    doc: dict,
    graph: RoleGraph,
    *,
    show_credentials: bool = False,
    show_custom_data: bool = True,
    show_privileges: bool = False,
    show_restrictions: bool = False,
) -> dict:
    """One entry of ``usersInfo.users`` (mongod's User::reportForUsersInfo): the inherited roles,
    privileges and restrictions with either ``showPrivileges`` or ``showAuthenticationRestrictions``, the
    user's own ``authenticationRestrictions`` only with the latter."""
    creds = doc.get("credentials") or {}
    view: dict[str, Any] = {"_id": doc.get("_id"), "userId": doc.get("userId"), "user": doc.get("user"),
                            "db": doc.get("db")}
    if show_credentials:
        view["credentials"] = creds
    view["roles"] = doc.get("roles", [])
    if show_custom_data and "customData" in doc:
        view["customData"] = doc["customData"]
    # mongod's CredentialData::toMechanismsVector: an $external user's {external: true} lists as "external"
    view["mechanisms"] = [m for m in (*scram.MECHANISMS, "external") if creds.get(m)]
    if show_privileges or show_restrictions:
        roles = role_list(doc.get("roles"))
        view["inheritedRoles"] = role_documents(graph.closure(roles))
        view["inheritedPrivileges"] = R.privilege_documents(graph.privileges(roles))
        view["inheritedAuthenticationRestrictions"] = graph.restriction_documents(roles)
    if show_restrictions:
        view["authenticationRestrictions"] = doc.get("authenticationRestrictions", [])
    return view


def roles_fragment(roles: list[RoleName], graph: RoleGraph) -> dict:
    """rolesInfo's ``showPrivileges: "asUserFragment"`` (mongod's getRolesAsUserFragment): the roles as a
    user holding them would show them."""
    return {"roles": role_documents(roles), "inheritedRoles": role_documents(graph.closure(roles)),
            "inheritedPrivileges": R.privilege_documents(graph.privileges(roles))}


def role_view(role: RoleName, graph: RoleGraph, *, show_privileges: bool = False) -> dict:
    """One entry of ``rolesInfo.roles``."""
    name, db = role
    builtin = B.is_builtin(name, db)
    view: dict[str, Any] = {}
    if not builtin:
        view["_id"] = store.user_id(db, name)
    view.update({"role": name, "db": db, "isBuiltin": builtin})
    direct = graph.direct(role)
    view["roles"] = role_documents(direct)
    inherited = [r for r in graph.closure(direct)]
    view["inheritedRoles"] = role_documents(inherited)
    if show_privileges:
        view["privileges"] = R.privilege_documents(graph.own_privileges(role))
        view["inheritedPrivileges"] = R.privilege_documents(graph.privileges([role]))
    return view


def users_info_targets(value: Any, db: str) -> list[tuple[str, str]] | str:
    """What ``usersInfo`` asks for: "db" (every user of the database), "all" (forAllDBs) or a list
    of (user, db)."""
    if isinstance(value, dict) and "forAllDBs" in value:
        if value.get("forAllDBs") is not True or len(value) != 1:
            raise MongoError(ErrorCode.BadValue, "\"forAllDBs\" must be true")
        return "all"
    return _info_targets(value, db, "user")


def roles_info_targets(value: Any, db: str) -> list[RoleName] | str:
    """"db" (every role of the database) or a list of (role, db)."""
    return _info_targets(value, db, "role")


def _info_targets(value: Any, db: str, kind: str) -> list[tuple[str, str]] | str:
    """``1`` -> "db"; a name, ``{<kind>: name, db: db}`` or a list of them -> [(name, db)]."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 1:
        return "db"
    entries = value if isinstance(value, list) else [value]
    out = []
    for entry in entries:
        if type(entry) is str:
            out.append((entry, db))
        elif isinstance(entry, dict) and type(entry.get(kind)) is str and type(entry.get("db")) is str:
            out.append((entry[kind], entry["db"]))
        else:
            raise MongoError(ErrorCode.BadValue,
                             f"{kind.capitalize()} name must be either a string or an object of the form "
                             f"{{{kind}: \"<{kind}>\", db: \"<db>\"}}")
    return out
