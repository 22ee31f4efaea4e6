"""User-defined roles: createRole, updateRole, dropRole, dropAllRolesFromDatabase, rolesInfo,
grantRolesToRole, revokeRolesFromRole, grantPrivilegesToRole, revokePrivilegesFromRole.

Roles are documents of ``admin.system.roles``. mongod's rules: a role outside ``admin`` may only
hold privileges on its own database and inherit roles of its own database; built-in role names
are taken; the inheritance graph stays acyclic (5 GraphContainsCycle); dropping a role removes it
from every user and role that held it.
"""

from __future__ import annotations

from typing import Any, Literal, cast, overload

from tidemark.arguments import check_fields, field
from tidemark.auth import accounts, store
from tidemark.auth import builtin_roles as B
from tidemark.auth import resources as R
from tidemark.auth.manager import RoleGraph, RoleName, role_list
from tidemark.commands.users import name_arg, restrictions_arg, write
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError


@overload
def _privileges(cmd: dict, command: str, db: str, *, required: Literal[True]) -> dict: ...
@overload
def _privileges(cmd: dict, command: str, db: str, *, required: bool) -> dict | None: ...
def _privileges(cmd: dict, command: str, db: str, *, required: bool) -> dict | None:
    docs = field(cmd, command, "privileges", list, "array", required=required)
    if docs is None:
        return None
    privileges = R.parse_privileges(docs, "privileges")
    if db != "admin":  # mongod's checkOkayToGrantPrivilegesToRole: a database or namespace of its own
        for pattern in privileges:
            if pattern[0] not in ("db", "ns") or pattern[1] != db:
                raise MongoError(ErrorCode.InvalidRoleModification,
                                 f"Roles on the '{db}' database cannot be granted privileges that target other "
                                 "databases or the cluster")
    return privileges


@overload
def _roles(cmd: dict, command: str, db: str, *, required: Literal[True]) -> list[RoleName]: ...
@overload
def _roles(cmd: dict, command: str, db: str, *, required: bool) -> list[RoleName] | None: ...
def _roles(cmd: dict, command: str, db: str, *, required: bool) -> list[RoleName] | None:
    value = field(cmd, command, "roles", list, "array", required=required)
    if value is None:
        return None
    roles = accounts.role_names(value, db, command)
    if db != "admin":  # mongod's checkOkayToGrantRolesToRole
        for _, role_db in roles:
            if role_db != db:
                raise MongoError(ErrorCode.InvalidRoleModification,
                                 f"Roles on the '{db}' database cannot be granted roles from other databases")
    return roles


def _check_acyclic(graph: RoleGraph, role: RoleName, inherits: list[RoleName]) -> None:
    """Refuse ``role`` inheriting ``inherits`` when one of them already reaches ``role``."""
    for start in inherits:
        path = _path(graph, start, role, [start])
        if path is not None:
            chain = " -> ".join(f"{r}@{d}" for r, d in [role, *path])
            raise MongoError(ErrorCode.GraphContainsCycle, f"Cycle in dependency graph: {chain}")


def _path(graph: RoleGraph, frm: RoleName, to: RoleName, seen: list[RoleName]) -> list[RoleName] | None:
    if frm == to:
        return seen
    for nxt in graph.direct(frm):
        if nxt not in seen:
            found = _path(graph, nxt, to, [*seen, nxt])
            if found is not None:
                return found
    return None


def _role_doc(db: str, role: str, privileges: dict, roles: list[RoleName], restrictions: list | None) -> dict:
    doc: dict[str, Any] = {"_id": store.user_id(db, role), "role": role, "db": db,
                           "privileges": R.privilege_documents(privileges),
                           "roles": accounts.role_documents(roles)}
    if restrictions:
        doc["authenticationRestrictions"] = restrictions
    return doc


def _not_found(role: str, db: str) -> MongoError:
    return MongoError(ErrorCode.RoleNotFound, f"Role '{role}@{db}' not found")


async def create_role(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "createRole", ctx.db
    check_fields(cmd, command, {"privileges", "roles", "authenticationRestrictions"})
    role = name_arg(cmd, command, "Role")
    if db in ("local", "$external"):
        raise MongoError(ErrorCode.BadValue, f"Cannot create roles in the {db} database")
    if B.is_builtin(role, db) or role in B.ROLES:
        raise MongoError(ErrorCode.BadValue, "Cannot create roles with the same name as a built-in role")
    privileges = _privileges(cmd, command, db, required=True)
    roles = _roles(cmd, command, db, required=True)
    restrictions = restrictions_arg(cmd, command)
    accounts.check_roles_exist(await ctx.run_blocking(ctx.server.auth.graph), roles)
    try:
        await write(ctx, store.insert(store.ROLES, _role_doc(db, role, privileges, roles, restrictions)))
    except store.AlreadyExists:
        raise MongoError(51002, f'Role "{role}@{db}" already exists') from None
    return {}


async def _update(ctx: CommandContext, command: str, role: str, change, restrictions: list | None = None) -> None:
    """Rewrite the role with ``change(privileges, roles)``; ``restrictions`` replace its
    authenticationRestrictions (``[]`` removes them, None keeps them)."""
    db = ctx.db
    if B.is_builtin(role, db):
        raise MongoError(ErrorCode.InvalidRoleModification, f"Cannot update built-in role: {role}@{db}")
    graph = await ctx.run_blocking(ctx.server.auth.graph)

    def apply(old: dict) -> dict:
        privileges, roles = change(R.parse_privileges(old.get("privileges", []), "privileges"),
                                   role_list(old.get("roles")))
        accounts.check_roles_exist(graph, roles)
        _check_acyclic(graph, (role, db), roles)
        kept = old.get("authenticationRestrictions") if restrictions is None else restrictions
        return {**_role_doc(db, role, privileges, roles, kept),
                "_id": old["_id"]}

    if await write(ctx, store.update(store.ROLES, store.user_id(db, role), apply)) is None:
        raise _not_found(role, db)


async def update_role(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "updateRole", ctx.db
    check_fields(cmd, command, {"privileges", "roles", "authenticationRestrictions"})
    role = name_arg(cmd, command, "Role")
    privileges = _privileges(cmd, command, db, required=False)
    roles = _roles(cmd, command, db, required=False)
    restrictions = restrictions_arg(cmd, command)
    if privileges is None and roles is None and restrictions is None:
        raise MongoError(ErrorCode.BadValue, "Must specify at least one field to update in updateRole")
    await _update(ctx, command, role, lambda p, r: (p if privileges is None else privileges,
                                                    r if roles is None else roles), restrictions)
    return {}


async def _grant_revoke_roles(ctx: CommandContext, cmd: dict, command: str, grant: bool) -> dict[str, Any]:
    check_fields(cmd, command, {"roles"})
    role = name_arg(cmd, command, "Role")
    roles = _roles(cmd, command, ctx.db, required=True)
    accounts.require_some(roles, command, "roles")

    def change(privileges: dict, current: list[RoleName]):
        return privileges, accounts.with_roles(current, roles, grant=grant)

    await _update(ctx, command, role, change)
    return {}


async def _grant_revoke_privileges(ctx: CommandContext, cmd: dict, command: str, grant: bool) -> dict[str, Any]:
    check_fields(cmd, command, {"privileges"})
    role = name_arg(cmd, command, "Role")
    privileges = _privileges(cmd, command, ctx.db, required=True)
    accounts.require_some(privileges, command, "privileges")

    def change(current: dict, roles: list[RoleName]):
        out = dict(current)
        for pattern, actions in privileges.items():
            if grant:
                out[pattern] = out.get(pattern, frozenset()) | actions
            elif pattern in out:
                out[pattern] = out[pattern] - actions
        return {p: a for p, a in out.items() if a}, roles

    await _update(ctx, command, role, change)
    return {}


async def grant_roles_to_role(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _grant_revoke_roles(ctx, cmd, "grantRolesToRole", True)


async def revoke_roles_from_role(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _grant_revoke_roles(ctx, cmd, "revokeRolesFromRole", False)


async def grant_privileges_to_role(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _grant_revoke_privileges(ctx, cmd, "grantPrivilegesToRole", True)


async def revoke_privileges_from_role(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _grant_revoke_privileges(ctx, cmd, "revokePrivilegesFromRole", False)


def _drop_roles(doomed) -> Any:
    """One write function: delete the roles ``doomed(doc)`` accepts and every grant of them."""

    def fn(w: Any) -> int:
        removed = {(d["role"], d["db"]) for d in store.delete(store.ROLES, doomed)(w)}
        if not removed:
            return 0

        def strip(doc: dict) -> dict | None:
            held = role_list(doc.get("roles"))
            kept = [r for r in held if r not in removed]
            return None if kept == held else {**doc, "roles": accounts.role_documents(kept)}

        for ns in (store.USERS, store.ROLES):
            for doc in store.read_all_in(w, ns):
                store.update(ns, doc["_id"], strip)(w)
        return len(removed)

    return fn


async def drop_role(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "dropRole", ctx.db
    check_fields(cmd, command, set())
    role = name_arg(cmd, command, "Role")
    if B.is_builtin(role, db):
        raise MongoError(ErrorCode.InvalidRoleModification, f"Cannot drop built-in role: {role}@{db}")
    _id = store.user_id(db, role)
    if not await write(ctx, _drop_roles(lambda doc: doc.get("_id") == _id)):
        raise _not_found(role, db)
    return {}


async def drop_all_roles(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    db = ctx.db
    check_fields(cmd, "dropAllRolesFromDatabase", set())
    return {"n": await write(ctx, _drop_roles(lambda doc: doc.get("db") == db))}


async def roles_info(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "rolesInfo", ctx.db
    check_fields(cmd, command, {"showPrivileges", "showBuiltinRoles", "showAuthenticationRestrictions"})
    targets = accounts.roles_info_targets(cmd[command], db)
    show_privileges = cmd.get("showPrivileges", False)
    if show_privileges not in (True, False, "asUserFragment"):
        raise MongoError(ErrorCode.BadValue, "showPrivileges must be a boolean or \"asUserFragment\"")
    # (with named roles mongod ignores it: built-in roles named are always described)
    show_builtin = bool(cmd.get("showBuiltinRoles", False))

    def work() -> dict[str, Any]:
        graph = ctx.server.auth.graph()
        if targets == "db":
            names = [r for r in sorted(graph.defined) if r[1] == db]
            if show_builtin:
                names = sorted(names + [(name, db) for name in B.role_names(db)])
        else:
            names = [r for r in cast("list[RoleName]", targets) if graph.exists(r)]  # not "db": the pairs
        if show_privileges == "asUserFragment":
            return {"userFragment": accounts.roles_fragment(names, graph)}
        return {"roles": [accounts.role_view(r, graph, show_privileges=bool(show_privileges)) for r in names]}

    return await ctx.run_blocking(work)


COMMANDS = [
    CommandSpec("createRole", create_role, help="Adds a role to the system"),
    CommandSpec("dropAllRolesFromDatabase", drop_all_roles, help="Drops all roles from the given database."),
    CommandSpec("dropRole", drop_role, help="Drops a single role."),
    CommandSpec("grantPrivilegesToRole", grant_privileges_to_role, help="Grants privileges to a role"),
    CommandSpec("grantRolesToRole", grant_roles_to_role, help="Grants roles to another role."),
    CommandSpec("revokePrivilegesFromRole", revoke_privileges_from_role, help="Revokes privileges from a role"),
    CommandSpec("revokeRolesFromRole", revoke_roles_from_role, help="Revokes roles from another role."),
    CommandSpec("rolesInfo", roles_info, help="Returns information about roles."),
    CommandSpec("updateRole", update_role, help="Used to update a role"),
]
