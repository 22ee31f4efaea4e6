"""User management: createUser, updateUser, dropUser, dropAllUsersFromDatabase, usersInfo,
grantRolesToUser, revokeRolesFromUser, invalidateUserCache — mongod's arguments, replies and errors.

Users are documents of ``admin.system.users`` (:mod:`tidemark.auth.store`); passwords are turned
into salted SCRAM credentials in the thread pool (PBKDF2 is deliberately slow) and never stored,
logged or returned. Every change bumps the authorization generation, so connections see it on
their next command.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tidemark.arguments import check_fields, field
from tidemark.auth import accounts, restrictions, store
from tidemark.auth.manager import role_list
from tidemark.auth.names import UserName
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import compile_filter


def name_arg(cmd: dict, command: str, what: str = "User") -> str:
    """The user (or role) named by the command's first field."""
    value = field(cmd, command, command, str, "string")
    if not value:
        raise MongoError(ErrorCode.BadValue, f"{what} name must not be empty")
    if "\0" in value:
        raise MongoError(ErrorCode.BadValue, f"{what} name must not contain NULL characters")
    return value


async def write(ctx: CommandContext, fn: Any) -> Any:
    """Run a write function in the group commit, then invalidate cached authorization."""
    try:
        return await asyncio.wrap_future(ctx.server.engine.write(fn))
    finally:
        ctx.server.auth.changed()


def restrictions_arg(cmd: dict, command: str) -> list[dict[str, list[str]]] | None:
    """``authenticationRestrictions`` of createUser/updateUser/createRole/updateRole, as the IDL parses
    it (None when absent)."""
    value = field(cmd, command, "authenticationRestrictions", list, "array")
    return None if value is None else restrictions.parse_argument(value, command)


def _name_of(doc: dict) -> UserName | None:
    user, db = doc.get("user"), doc.get("db")
    return UserName(user, db) if type(user) is str and type(db) is str else None


def _user_db_check(db: str) -> None:
    if db == "local":
        raise MongoError(ErrorCode.BadValue, "Cannot create users in the local database")


async def _credentials(ctx: CommandContext, cmd: dict, command: str, user: str, db: str, mechanisms: list[str]):
    pwd = field(cmd, command, "pwd", str, "string")
    if db == "$external":
        if pwd is not None:
            raise MongoError(ErrorCode.BadValue, "Cannot set password for users on the $external database")
        return {"external": True}
    digest = field(cmd, command, "digestPassword", bool, "bool")
    return await ctx.run_blocking(accounts.credentials, user, pwd, mechanisms, True if digest is None else digest,
                                  ctx.params)


async def create_user(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "createUser", ctx.db
    check_fields(cmd, command, {"pwd", "customData", "roles", "digestPassword", "authenticationRestrictions",
                                "mechanisms"})
    user = name_arg(cmd, command)
    _user_db_check(db)
    roles = accounts.role_names(field(cmd, command, "roles", list, "array", required=True), db, command)
    custom = field(cmd, command, "customData", dict, "object")
    ranges = restrictions_arg(cmd, command)
    if db != "$external" and "pwd" not in cmd:
        raise MongoError(ErrorCode.BadValue,
                         "Must provide a 'pwd' field for all user documents, except those with '$external' as "
                         "the user's source db")
    mechanisms = accounts.mechanisms_arg(cmd.get("mechanisms"), ctx.params["authenticationMechanisms"], command)
    manager = ctx.server.auth
    graph = await ctx.run_blocking(manager.graph)
    accounts.check_roles_exist(graph, roles)
    creds = await _credentials(ctx, cmd, command, user, db, mechanisms)
    if ranges:
        restrictions.check_user_document(ranges)  # mongod's checkValidUserDocument, at createUser only
    doc = accounts.user_document(db, user, creds, roles, custom, ranges)
    try:
        await write(ctx, store.insert(store.USERS, doc))
    except store.AlreadyExists:
        raise MongoError(51003, f'User "{user}@{db}" already exists') from None
    return {}


async def update_user(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "updateUser", ctx.db
    check_fields(cmd, command, {"pwd", "customData", "roles", "digestPassword", "authenticationRestrictions",
                                "mechanisms"})
    user = name_arg(cmd, command)
    if not any(k in cmd for k in ("pwd", "customData", "roles", "authenticationRestrictions", "mechanisms")):
        raise MongoError(ErrorCode.BadValue, "Must specify at least one field to update in updateUser")
    manager = ctx.server.auth
    graph = await ctx.run_blocking(manager.graph)
    roles = None
    if "roles" in cmd:
        roles = accounts.role_names(field(cmd, command, "roles", list, "array"), db, command)
        accounts.check_roles_exist(graph, roles)
    custom = field(cmd, command, "customData", dict, "object")
    ranges = restrictions_arg(cmd, command)
    enabled = ctx.params["authenticationMechanisms"]
    creds = None
    if "pwd" in cmd:
        mechanisms = accounts.mechanisms_arg(cmd.get("mechanisms"), enabled, command)
        creds = await _credentials(ctx, cmd, command, user, db, mechanisms)
    elif "mechanisms" in cmd:
        mechanisms = accounts.mechanisms_arg(cmd["mechanisms"], enabled, command)

    def change(old: dict) -> dict:
        new = dict(old)
        if creds is not None:
            new["credentials"] = creds
        elif "mechanisms" in cmd:
            current = old.get("credentials") or {}
            if not set(mechanisms) <= set(current):
                raise MongoError(ErrorCode.BadValue,
                                 "mechanisms field must be a subset of previously set mechanisms")
            new["credentials"] = {m: v for m, v in current.items() if m in mechanisms}
        if roles is not None:
            new["roles"] = accounts.role_documents(roles)
        if custom is not None:
            new["customData"] = custom
        if ranges:
            new["authenticationRestrictions"] = ranges
        elif ranges is not None:  # [] removes them (mongod's $unset)
            new.pop("authenticationRestrictions", None)
        return new

    if await write(ctx, store.update(store.USERS, store.user_id(db, user), change)) is None:
        raise MongoError(ErrorCode.UserNotFound, f"User {user}@{db} not found")
    return {}


async def drop_user(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "dropUser", ctx.db
    check_fields(cmd, command, set())
    user = name_arg(cmd, command)
    if not await write(ctx, store.delete(store.USERS, lambda doc: doc.get("user") == user and doc.get("db") == db)):
        raise MongoError(ErrorCode.UserNotFound, f"User '{user}@{db}' not found")
    return {}


async def drop_all_users(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    db = ctx.db
    check_fields(cmd, "dropAllUsersFromDatabase", set())
    removed = await write(ctx, store.delete(store.USERS, lambda doc: doc.get("db") == db))
    return {"n": len(removed)}


async def _change_roles(ctx: CommandContext, cmd: dict, command: str, grant: bool) -> dict[str, Any]:
    db = ctx.db
    check_fields(cmd, command, {"roles"})
    user = name_arg(cmd, command)
    roles = accounts.role_names(field(cmd, command, "roles", list, "array", required=True), db, command)
    accounts.require_some(roles, command, "roles")
    # mongod's rolesExist, for a revoke too (RoleNotFound rather than revoking nothing)
    accounts.check_roles_exist(await ctx.run_blocking(ctx.server.auth.graph), roles)

    def change(old: dict) -> dict:
        current = accounts.with_roles(role_list(old.get("roles")), roles, grant=grant)
        return {**old, "roles": accounts.role_documents(current)}

    if await write(ctx, store.update(store.USERS, store.user_id(db, user), change)) is None:
        raise MongoError(ErrorCode.UserNotFound, f"User {user}@{db} not found")
    return {}


async def grant_roles_to_user(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _change_roles(ctx, cmd, "grantRolesToUser", True)


async def revoke_roles_from_user(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return await _change_roles(ctx, cmd, "revokeRolesFromUser", False)


async def users_info(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    command, db = "usersInfo", ctx.db
    check_fields(cmd, command, {"showCredentials", "showCustomData", "showPrivileges",
                                "showAuthenticationRestrictions", "filter", "authenticatedMechanism"})
    targets = accounts.users_info_targets(cmd[command], db)
    flags = {k: bool(cmd.get(k, d)) for k, d in (("showCredentials", False), ("showCustomData", True),
                                                 ("showPrivileges", False), ("showAuthenticationRestrictions", False))}
    flt = field(cmd, command, "filter", dict, "object")
    if type(targets) is str and (flags["showPrivileges"] or flags["showAuthenticationRestrictions"]):
        raise MongoError(ErrorCode.BadValue, "Privilege or restriction details require exact-match usersInfo queries")
    if flt is not None and type(targets) is not str:
        raise MongoError(ErrorCode.BadValue, "Filter is only allowed when requesting all users")
    manager = ctx.server.auth

    def work() -> list[dict]:
        docs = store.read_all(ctx.server.engine, store.USERS)
        if targets == "db":
            docs = [d for d in docs if d.get("db") == db]
        elif targets != "all":
            # by (user, db) pair: "<db>.<user>" _ids of a '.'-bearing db argument could name another user
            wanted: dict[UserName | None, int] = {UserName(u, d): i for i, (u, d) in enumerate(targets)}
            docs = sorted((d for d in docs if _name_of(d) in wanted), key=lambda d: wanted[_name_of(d)])
        if type(targets) is str or not (flags["showPrivileges"] or flags["showAuthenticationRestrictions"]):
            # mongod reads these with a pipeline sorted {user: 1, db: 1} (the names as UserNames order
            # them); only the exact-match details path (one user at a time) keeps the order asked
            docs.sort(key=lambda d: (str(d.get("user")), str(d.get("db"))))
        graph = manager.graph()
        views = [accounts.user_view(d, graph, show_credentials=flags["showCredentials"],
                                    show_custom_data=flags["showCustomData"],
                                    show_privileges=flags["showPrivileges"],
                                    show_restrictions=flags["showAuthenticationRestrictions"]) for d in docs]
        if flt is not None:
            match = compile_filter(flt)
            views = [v for v in views if match(v)]
        return views

    return {"users": await ctx.run_blocking(work)}


async def invalidate_user_cache(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's CmdInvalidateUserCache: drop every cached user and role resolution (the next command
    of each connection resolves its user again from admin.system.users and admin.system.roles)."""
    check_fields(cmd, "invalidateUserCache", set())
    ctx.server.auth.changed()
    return {}


COMMANDS = [
    CommandSpec("createUser", create_user, help="Adds a user to the system"),
    CommandSpec("dropAllUsersFromDatabase", drop_all_users, help="Drops all users for a single database."),
    CommandSpec("dropUser", drop_user, help="Drops a single user."),
    CommandSpec("grantRolesToUser", grant_roles_to_user, help="Grants roles to a user."),
    CommandSpec("invalidateUserCache", invalidate_user_cache, admin_only=True,
                help="Invalidates the in-memory cache of user information"),
    CommandSpec("revokeRolesFromUser", revoke_roles_from_user, help="Revokes roles from a user."),
    CommandSpec("updateUser", update_user, help="Used to update a user, for example to change its password"),
    CommandSpec("usersInfo", users_info, help="Returns information about users."),
]
