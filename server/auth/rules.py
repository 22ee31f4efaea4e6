"""THE authorization rule of every command (one table), and the two checks ``tidemark.dispatch`` runs
before a handler, in mongod 7.0's places: :func:`authenticate` before the command's parse (a user is
needed), :func:`authorize` after it and after the database name's check (the user's privileges).

``RULES[name]`` is either :data:`OPEN` (no authentication needed: the handshake and the
authentication commands), or a function ``rule(req) -> dict | None`` that raises :class:`Denied`
(or a MongoError with its own message) when the request is not allowed, and may return a narrowed
copy of the command (``listDatabases`` / ``listCollections`` for users allowed to see only some
databases or collections, like mongod's ``authorizedDatabases`` / ``authorizedCollections``).
The actions are mongod 7.0's (``checkAuthForOperation`` of each command). Every command of the
table has a rule: tests/test_command_table.py checks it.

With access control on, a command other than an OPEN one needs an authenticated user, except on
the localhost exception (no user or role exists yet, connection from localhost): then the
request is checked against the exception's privileges (create the first user in admin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from tidemark.auth import accounts, impersonation, oplog_rules
from tidemark.auth import resources as R
from tidemark.auth.names import UserName, same_principal, session_digest
from tidemark.auth.pipelines import pipeline_privileges
from tidemark.auth.render import render_command
from tidemark.auth.session import LOCALHOST_PRIVILEGES, AuthSession, is_localhost, session_of
from tidemark.core.namespace import BUCKETS_PREFIX
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_logic import truthy  # BSON trueValue(), as mongod reads $ownOps


class Denied(Exception):
    """Not authorized: answered as 13 "not authorized on <db> to execute command { ... }"."""


class Request:
    """What a rule sees: the command, its database, the caller's privileges and session."""

    __slots__ = ("server", "conn", "session", "privileges", "db", "cmd", "name")

    def __init__(self, server: Any, conn: Any, session: AuthSession, privileges: Any, db: str, cmd: dict, name: str):
        self.server, self.conn, self.session, self.privileges = server, conn, session, privileges
        self.db, self.cmd, self.name = db, cmd, name

    @property
    def authenticated(self) -> bool:
        return self.session.authenticated

    def allowed(self, target: R.Pattern, *actions: str) -> bool:
        return R.is_authorized(self.privileges, target, actions)

    def require(self, target: R.Pattern, *actions: str) -> None:
        if not R.is_authorized(self.privileges, target, actions):
            raise Denied

    @property
    def first(self) -> Any:
        """The command's first value, whatever alias spelled its name (``collstats``, ``datasize``...)."""
        return next(iter(self.cmd.values()), None)

    def ns(self, value: Any = None) -> R.Pattern:
        """The namespace a command names by its first value (the database when that is no name)."""
        coll = self.first if value is None else value
        if type(coll) is str and coll:
            return R.ns_target(self.db, coll)
        return R.db_target(self.db)

    def full_ns(self, value: Any) -> R.Pattern:
        """A ``"db.coll"`` string (renameCollection, dataSize) as a target."""
        if type(value) is str and "." in value:
            db, _, coll = value.partition(".")
            if db and coll:
                return R.ns_target(db, coll)
        return R.db_target(self.db)


OPEN = None  # marker: no authentication required
Rule = Callable[[Request], "dict | None"]


def on_collection(*actions: str) -> Rule:
    def rule(req: Request) -> None:
        req.require(req.ns(), *actions)
    return rule


def on_database(*actions: str) -> Rule:
    def rule(req: Request) -> None:
        req.require(R.db_target(req.db), *actions)
    return rule


def on_cluster(*actions: str) -> Rule:
    def rule(req: Request) -> None:
        req.require(R.CLUSTER, *actions)
    return rule


def authenticated(req: Request) -> None:
    """No privilege needed, but a user must be authenticated (not merely on the localhost exception)."""
    if not req.authenticated:
        raise Denied


def _bypass(req: Request, cmd: dict | None = None) -> tuple[str, ...]:
    return ("bypassDocumentValidation",) if truthy((cmd or req.cmd).get("bypassDocumentValidation")) else ()


def _insert(req: Request) -> None:
    req.require(req.ns(), "insert", *_bypass(req))


def _update(req: Request) -> None:
    updates = req.cmd.get("updates")
    upsert = isinstance(updates, list) and any(isinstance(u, dict) and truthy(u.get("upsert")) for u in updates)
    req.require(req.ns(), "update", *(("insert",) if upsert else ()), *_bypass(req))


def _find_and_modify(req: Request) -> None:
    cmd = req.cmd
    if truthy(cmd.get("remove")):
        actions: tuple[str, ...] = ("find", "remove")
    else:
        actions = ("find", "update", *(("insert",) if truthy(cmd.get("upsert")) else ()))
    req.require(req.ns(), *actions, *_bypass(req))


def _require_all(req: Request, needs: list) -> None:
    for target, actions in needs:
        if target is None:
            authenticated(req)
        else:
            req.require(target, *actions)


def _aggregate(req: Request) -> None:
    coll = req.cmd.get("aggregate")
    source = R.ns_target(req.db, coll) if type(coll) is str and coll else None
    _require_all(req, pipeline_privileges(req.db, source, req.cmd.get("pipeline"), _bypass(req), req.session.name))


def _map_reduce(req: Request) -> None:
    """find on the source; writing out: insert and remove (replace), insert and update (merge), find,
    insert and update (reduce) on the target, mongod's actions for each mode."""
    req.require(req.ns(), "find")
    out = req.cmd.get("out")
    if type(out) is str:
        out = {"replace": out}
    if not isinstance(out, dict) or "inline" in out:
        return
    actions = {"replace": ("insert", "remove"), "merge": ("insert", "update"), "reduce": ("find", "insert", "update")}
    for mode, needed in actions.items():
        target = out.get(mode)
        if type(target) is str and target:
            target_db = out.get("db", req.db)
            req.require(R.ns_target(target_db if type(target_db) is str else req.db, target), *needed,
                        *_bypass(req))


def _create(req: Request) -> None:
    cmd, ns = req.cmd, req.ns()
    if truthy(cmd.get("capped")):
        req.require(ns, "convertToCapped")
    if cmd.get("viewOn") is not None:
        req.require(ns, "createCollection")
        _view_pipeline(req, cmd.get("viewOn"), cmd.get("pipeline", []))
        return
    if not (req.allowed(ns, "createCollection") or req.allowed(ns, "insert")):
        raise Denied


def _view_pipeline(req: Request, view_on: Any, pipeline: Any) -> None:
    """Creating or changing a view over data the caller could not read would leak it."""
    if not req.allowed(req.ns(), "find"):
        return
    source = R.ns_target(req.db, view_on) if type(view_on) is str and view_on else None
    _require_all(req, pipeline_privileges(req.db, source, pipeline, ()))


def _coll_mod(req: Request) -> None:
    req.require(req.ns(), "collMod")
    if ("viewOn" in req.cmd) != ("pipeline" in req.cmd):
        raise MongoError(ErrorCode.InvalidOptions,
                         "Must specify both 'viewOn' and 'pipeline' when modifying a view and auth is enabled")
    if "viewOn" in req.cmd:
        _view_pipeline(req, req.cmd["viewOn"], req.cmd["pipeline"])


def _rename(req: Request) -> None:
    src, dst = req.full_ns(req.cmd.get("renameCollection")), req.full_ns(req.cmd.get("to"))
    drop_target = truthy(req.cmd.get("dropTarget"))  # (a UUID names the target: true too)
    if src[0] == "ns" and dst[0] == "ns" and src[1] == dst[1]:
        # mongod's checkAuthForRenameCollectionCommand: renaming within a database needs
        # renameCollectionSameDB (and dropCollection on a dropped target), but never moves data the
        # caller cannot read to a name it can read (canReadSrc || !canReadDest)
        same_db_ok = (
            R.is_normal_collection(src[1], src[2]) and R.is_normal_collection(dst[1], dst[2])
            and req.allowed(R.db_target(src[1]), "renameCollectionSameDB")
            and (not drop_target or req.allowed(dst, "dropCollection"))
            and (req.allowed(src, "find") or not req.allowed(dst, "find"))
        )
        if same_db_ok:
            return
    req.require(src, "find", "dropCollection")
    req.require(dst, "insert", "createIndex", *(("dropCollection",) if drop_target else ()))
    if src[0] == "ns" and src[2].startswith(BUCKETS_PREFIX) and not req.allowed(R.CLUSTER, "setUserWriteBlockMode"):
        # mongod 7.0's validateNamespacesForRenameCollection: only a client that may block user writes
        # (mongosync, restores) moves a buckets collection
        raise MongoError(ErrorCode.IllegalOperation, "Renaming system.buckets collections is not allowed")


def _explain(req: Request) -> dict | None:
    inner = req.cmd.get("explain")
    if not isinstance(inner, dict) or not inner:
        authenticated(req)
        return None
    name = next(iter(inner))
    spec = req.server.commands.get(name)
    rule = RULES.get(spec.name) if spec is not None else None
    if rule is OPEN or rule is None:
        authenticated(req)
        return None
    rule(Request(req.server, req.conn, req.session, req.privileges, req.db, inner, spec.name))
    return None


# -- listing databases and collections --------------------------------------------------------------------

_BROAD = ("any", "anyNormal", "coll", "anyBuckets", "bucketsAnyDb")


def _narrow(cmd: dict, condition: dict) -> dict:
    flt = cmd.get("filter")
    return {**cmd, "filter": {"$and": [flt, condition]} if isinstance(flt, dict) and flt else condition}


def _list_databases(req: Request) -> dict | None:
    authorized = req.cmd.get("authorizedDatabases")
    if authorized is not True and req.allowed(R.CLUSTER, "listDatabases"):
        return None
    if authorized is False:
        raise Denied
    if not req.authenticated:  # the localhost exception: mongod runs it (it checks nothing) and lists
        return _narrow(req.cmd, {"name": {"$in": []}})  # the databases of no privilege: none
    if any(p[0] in _BROAD and a for p, a in req.privileges.items()):
        return None
    names = sorted({db for p, a in req.privileges.items() if a and (db := R.pattern_db(p))})
    return _narrow(req.cmd, {"name": {"$in": names}})


def _any_resource_in_db(privileges: R.Privileges, db: str) -> bool:
    """mongod's isAuthorizedForAnyActionOnAnyResourceInDB: some privilege of the user could name a
    resource of ``db`` (cluster privileges do not; ``anyNormal`` does not reach ``local``/``config``)."""
    for pattern, actions in privileges.items():
        if not actions:
            continue
        kind = pattern[0]
        if kind in ("any", "anyBuckets", "coll", "bucketsAnyDb"):
            return True
        if kind == "anyNormal" and db not in ("local", "config"):
            return True
        if kind in ("db", "ns", "bucketsInDb", "buckets") and pattern[1] == db:
            return True
    return False


def _authorized_collections(privileges: R.Privileges, db: str) -> dict | None:
    """The condition on ``name`` keeping the collections of ``db`` some privilege matches (mongod's
    isAuthorizedForAnyActionOnResource of each namespace: the patterns of R.search_list), or None for
    all of them."""
    names: set[str] = set()
    regexes: set[str] = set()
    for pattern, actions in privileges.items():
        if not actions:
            continue
        kind = pattern[0]
        if kind == "any":
            return None  # every collection, system ones too
        if (kind == "anyNormal" and db not in ("local", "config")) or (kind == "db" and pattern[1] == db):
            # the database's normal collections (R.is_normal_collection)
            regexes.add("^(?!system\\.)" if db != "local" else "^(?!system\\.|replset\\.)")
        elif kind == "coll":
            names.add(pattern[1])
        elif kind == "ns" and pattern[1] == db:
            names.add(pattern[2])
        elif kind == "anyBuckets" or (kind == "bucketsInDb" and pattern[1] == db):
            regexes.add("^system\\.buckets\\..")
        elif kind == "bucketsAnyDb" or (kind == "buckets" and pattern[1] == db):
            names.add(BUCKETS_PREFIX + pattern[-1])
    alternatives: list[dict] = [{"name": {"$in": sorted(names)}}]
    alternatives += [{"name": {"$regex": regex}} for regex in sorted(regexes)]
    return alternatives[0] if len(alternatives) == 1 else {"$or": alternatives}


def _list_collections(req: Request) -> dict | None:
    """mongod's checkAuthorizedToListCollections: ``{nameOnly: true, authorizedCollections: true}``
    from a user with any privilege that could name a resource of the database, else
    ``listCollections`` on the database. With ``authorizedCollections: true`` the listing keeps only
    the collections some privilege matches, whatever allowed the command (list_collections.cpp)."""
    cmd, db = req.cmd, req.db
    own_only = cmd.get("authorizedCollections") is True
    if not (own_only and cmd.get("nameOnly") is True and req.authenticated
            and _any_resource_in_db(req.privileges, db)):
        req.require(R.db_target(db), "listCollections")
    if not own_only:
        return None
    condition = _authorized_collections(req.privileges, db)
    return None if condition is None else _narrow(cmd, condition)


# -- cursors and sessions -------------------------------------------------------------------------------


def _get_more(req: Request) -> None:
    authenticated(req)
    cursor_id = req.cmd.get("getMore")
    if isinstance(cursor_id, int) and not isinstance(cursor_id, bool):
        cursor = req.server.cursors.get(int(cursor_id))
        if cursor is not None and not same_principal(getattr(cursor, "owner", None), req.session.principal):
            raise MongoError(ErrorCode.Unauthorized, f"cursor id {int(cursor_id)} was not created by the authenticated user")
        if cursor is not None and isinstance(cursor.origin, dict) and cursor.origin:
            _originating_rule(req, int(cursor_id), cursor.origin)


def _originating_rule(req: Request, cursor_id: int, origin: dict) -> None:
    """mongod's getMore validateAuthorization: the caller must still hold the privileges of the
    command that opened the cursor (its rule, run again on that command), else 13 "not authorized for
    getMore with cursor id N"."""
    name = next(iter(origin))
    rule = RULES.get(name, _no_rule)
    if rule is OPEN:
        return
    db = origin["$db"] if type(origin.get("$db")) is str else req.db
    try:
        rule(Request(req.server, req.conn, req.session, req.privileges, db, origin, name))
    except (Denied, MongoError) as exc:
        if isinstance(exc, MongoError) and exc.code != ErrorCode.Unauthorized:
            raise
        raise MongoError(ErrorCode.Unauthorized, f"not authorized for getMore with cursor id {cursor_id}") from None


def _kill_sessions(req: Request) -> None:
    """mongod's KillSessionsCommand: any authenticated user may kill its own sessions (an ``id``
    alone names the caller's session of that id: others' are left alone, the answer is still ok);
    naming another user's session by its ``uid`` needs ``killAnySession`` (or ``impersonate``)."""
    authenticated(req)
    items = req.cmd.get("killSessions")
    own = session_digest(req.session.name)
    for item in items if isinstance(items, list) else []:
        uid = item.get("uid") if isinstance(item, dict) else None
        if uid is None or (isinstance(uid, bytes) and bytes(uid) == own):
            continue  # the caller's own sessions: the handler kills only those it owns
        if not (req.allowed(R.CLUSTER, "killAnySession") or req.allowed(R.CLUSTER, "impersonate")):
            raise MongoError(ErrorCode.Unauthorized, "Unauthorized to set user digest in LogicalSessionId")


def _kill_all_sessions_by_pattern(req: Request) -> None:
    """mongod's KillAllSessionsByPatternCommand: ``killAnySession``; a pattern naming ``users`` or
    ``roles`` (impersonation data) also ``impersonate``."""
    req.require(R.CLUSTER, "killAnySession")
    patterns = req.cmd.get("killAllSessionsByPattern")
    impersonates = isinstance(patterns, list) and any(
        isinstance(p, dict) and ("users" in p or "roles" in p) for p in patterns)
    if impersonates and not req.allowed(R.CLUSTER, "impersonate"):
        raise MongoError(ErrorCode.Unauthorized, "Not authorized to impersonate in killAllSessionsByPattern")


def _kill_cursors(req: Request) -> None:
    authenticated(req)
    ns = req.ns()
    ids = req.cmd.get("cursors")
    for value in ids if isinstance(ids, list) else []:
        cursor = req.server.cursors.get(int(value)) if isinstance(value, int) and not isinstance(value, bool) else None
        if cursor is None or same_principal(getattr(cursor, "owner", None), req.session.principal):
            continue
        if not (req.allowed(R.CLUSTER, "killAnyCursor") or req.allowed(ns, "killAnyCursor")):
            raise Denied


# -- users and roles ------------------------------------------------------------------------------------


def _role_dbs(value: Any, db: str) -> list[str]:
    """Databases of the roles named in a roles array (malformed entries are the handler's to refuse)."""
    out = []
    for entry in value if isinstance(value, list) else []:
        if type(entry) is str:
            out.append(db)
        elif isinstance(entry, dict) and type(entry.get("db")) is str:
            out.append(entry["db"])
    return out


def _grant_roles(req: Request, field: str = "roles", action: str = "grantRole") -> None:
    for role_db in _role_dbs(req.cmd.get(field), req.db):
        req.require(R.db_target(role_db), action)


def _privilege_dbs(value: Any) -> list[str]:
    """The database whose grantRole / revokeRole a privilege needs: its own for a database or an exact
    namespace, ``admin`` for any other pattern (mongod's checkAuthorizedToGrantPrivilege)."""
    out = []
    for doc in value if isinstance(value, list) else []:
        try:
            pattern = R.parse_pattern(doc.get("resource") if isinstance(doc, dict) else None)
        except MongoError:
            continue
        out.append(pattern[1] if pattern[0] in ("db", "ns") else "admin")
    return out


def _grant_privileges(req: Request, action: str = "grantRole") -> None:
    for db in _privilege_dbs(req.cmd.get("privileges")):
        req.require(R.db_target(db), action)


def _set_restrictions(req: Request) -> None:
    """mongod's checkAuthorizedToSetRestrictions: a command that carries ``authenticationRestrictions``
    (createUser, updateUser, createRole, updateRole; an empty array too) needs
    ``setAuthenticationRestriction`` on its database."""
    if "authenticationRestrictions" in req.cmd:
        req.require(R.db_target(req.db), "setAuthenticationRestriction")


def _revoke_any_role(req: Request) -> None:
    """updateUser's ``roles`` and updateRole replace what was granted, whatever it was: mongod asks the
    ability to revoke any role (``revokeRole`` on every normal resource), not only the database's."""
    req.require(R.ANY_NORMAL, "revokeRole")


def _create_user(req: Request) -> None:
    req.require(R.db_target(req.db), "createUser")
    _grant_roles(req)
    _set_restrictions(req)


def _is_self(req: Request, user: Any, db: str) -> bool:
    name = req.session.name
    return name is not None and type(user) is str and name == UserName(user, db)


def _update_user(req: Request) -> None:
    authenticated(req)
    cmd, db = req.cmd, R.db_target(req.db)
    own = _is_self(req, cmd.get("updateUser"), req.db)
    if "pwd" in cmd or "mechanisms" in cmd:
        if not (req.allowed(db, "changePassword") or (own and req.allowed(db, "changeOwnPassword"))):
            raise Denied
    if "customData" in cmd:
        if not (req.allowed(db, "changeCustomData") or (own and req.allowed(db, "changeOwnCustomData"))):
            raise Denied
    if "roles" in cmd:
        _revoke_any_role(req)
        _grant_roles(req)
    _set_restrictions(req)


def _users_info(req: Request) -> None:
    targets = accounts.users_info_targets(req.cmd.get("usersInfo"), req.db)
    if targets == "all":
        req.require(R.CLUSTER, "viewUser")
    elif targets == "db":
        req.require(R.db_target(req.db), "viewUser")
    else:
        for user, db in cast("list[tuple[str, str]]", targets):  # neither "all" nor "db": the pairs
            if not _is_self(req, user, db):
                req.require(R.db_target(db), "viewUser")


def _roles_info(req: Request) -> None:
    targets = accounts.roles_info_targets(req.cmd.get("rolesInfo"), req.db)
    if targets == "db":
        req.require(R.db_target(req.db), "viewRole")
        return
    resolved = req.session.resolved(req.server.auth, req.conn) if req.authenticated else None
    held = set(resolved.inherited) if resolved is not None else set()
    for role in targets:
        if role not in held:
            req.require(R.db_target(role[1]), "viewRole")


def _create_role(req: Request) -> None:
    req.require(R.db_target(req.db), "createRole")
    _grant_roles(req)
    _grant_privileges(req)
    _set_restrictions(req)


def _update_role(req: Request) -> None:
    _revoke_any_role(req)
    _grant_roles(req)
    _grant_privileges(req)
    _set_restrictions(req)


def _current_op(req: Request) -> None:
    """mongod: ``inprog`` on the cluster, or an authenticated user asking for its own operations
    (``$ownOps``; the handler then lists only the operations of connections authenticated as it)."""
    if req.allowed(R.CLUSTER, "inprog"):
        return
    if not (req.authenticated and truthy(req.cmd.get("$ownOps"))):
        raise Denied


def _kill_op(req: Request) -> None:
    """mongod's ``KillOpCmdBase``: ``killop`` on the cluster kills anything; without it, an
    authenticated user may kill a running operation of a connection authenticated as the same user
    (any other opid, running or not, is refused like an unauthorized command)."""
    if req.allowed(R.CLUSTER, "killop"):
        return
    opid = req.cmd.get("op")
    if req.authenticated and isinstance(opid, int | float) and not isinstance(opid, bool):
        op = req.server.operations.get(int(opid) & 0xFFFFFFFF) if float(opid).is_integer() else None
        if op is not None and op.conn is not None and same_principal(op.conn.principal, req.session.principal):
            return
    raise Denied


def _filemd5(req: Request) -> None:
    """mongod's CmdFileMD5: find on ``<root>.chunks`` (a non-string root is 73 already here, as
    mongod's parseNs answers), refused with its own message."""
    root = req.cmd.get("root")
    if "root" in req.cmd and type(root) is not str:
        raise MongoError(ErrorCode.InvalidNamespace, "'root' must be of type String")
    if not req.allowed(R.ns_target(req.db, (root or "fs") + ".chunks"), "find"):
        raise MongoError(ErrorCode.Unauthorized, "unauthorized")


def _validate_db_metadata(req: Request) -> None:
    """mongod's assertUserCanRunValidate: ``validate`` on the database named by ``db``, or on every
    normal resource without one; refused with its own message. A ``db`` of another type is the
    handler's 14 (mongod parses the request first)."""
    db = req.cmd.get("db")
    if db is not None and type(db) is not str:
        return
    if db is not None:
        if not req.allowed(R.db_target(db), "validate"):
            raise MongoError(ErrorCode.Unauthorized, "Not authorized to run validateDBMetadata command on "
                                                     f"resource: '<database {db}>'")
        return
    if not req.allowed(R.ANY_NORMAL, "validate"):
        raise MongoError(ErrorCode.Unauthorized, "Not authorized to run validateDBMetadata command on "
                                                 "resource: '<all normal resources>'")


def _features(req: Request) -> None:
    """mongod's FeaturesCmd: no privilege, but ``oidReset`` (a truthy safeBool) needs the cluster's
    oidReset action, refused with mongod's own message."""
    authenticated(req)
    reset = req.cmd.get("oidReset")
    # a value of another type is the handler's 14 (mongod parses the request before authorizing it)
    numeric = isinstance(reset, bool | int | float) or hasattr(reset, "to_decimal")
    if numeric and truthy(reset) and not req.allowed(R.CLUSTER, "oidReset"):
        raise MongoError(ErrorCode.Unauthorized, "Not authorized to reset machine identifier")


def _clone_as_capped(req: Request) -> None:
    """mongod's CmdCloneCollectionAsCapped::checkAuthForOperation: find on the source, then (a target
    that is no string is 14 here already) insert, createIndex and convertToCapped on the target."""
    req.require(req.ns(), "find")
    target = req.cmd.get("toCollection")
    if type(target) is not str:
        raise MongoError(ErrorCode.TypeMismatch, "'toCollection' must be of type String")
    req.require(req.ns(target), "insert", "createIndex", "convertToCapped")


def _profile(req: Request) -> None:
    """mongod's ProfileCmdBase::checkAuthForOperation: reading the settings (a negative level, neither
    ``slowms`` nor ``sampleRate``) needs only find on ``<db>.system.profile``; anything else
    ``enableProfiler`` on the database."""
    cmd, level = req.cmd, req.first
    read_only = (isinstance(level, int | float) and not isinstance(level, bool) and level < 0
                 and "slowms" not in cmd and "sampleRate" not in cmd)
    if read_only and req.allowed(R.ns_target(req.db, "system.profile"), "find"):
        return
    req.require(R.db_target(req.db), "enableProfiler")


def _get_diagnostic_data(req: Request) -> None:
    """mongod's GetDiagnosticDataCommand::checkAuthForOperation: serverStatus and replSetGetStatus on the
    cluster, and collStats on local.oplog.rs (its replica-set collectors' data)."""
    req.require(R.CLUSTER, "serverStatus", "replSetGetStatus")
    req.require(R.ns_target("local", "oplog.rs"), "collStats")


RULES: dict[str, Rule | None] = {
    # handshake and authentication: open to everyone, as in mongod
    "authenticate": OPEN, "buildInfo": OPEN, "connectionStatus": OPEN, "hello": OPEN, "isMaster": OPEN,
    "_isSelf": OPEN,
    "listCommands": OPEN, "logout": OPEN, "ping": OPEN, "saslContinue": OPEN, "saslStart": OPEN,
    # authenticated, no privilege
    "endSessions": authenticated, "killSessions": _kill_sessions, "refreshSessions": authenticated,
    "startSession": authenticated, "whatsmyuri": authenticated,
    "getMore": _get_more, "killCursors": _kill_cursors,
    # reads
    "count": on_collection("find"), "distinct": on_collection("find"), "find": on_collection("find"),
    "filemd5": _filemd5,
    "dataSize": lambda req: req.require(req.full_ns(req.first), "find"),
    "aggregate": _aggregate, "explain": _explain, "mapReduce": _map_reduce,
    # writes
    "insert": _insert, "update": _update, "delete": on_collection("remove"),
    "findAndModify": _find_and_modify,
    # DDL and indexes
    "create": _create, "drop": on_collection("dropCollection"), "collMod": _coll_mod,
    "renameCollection": _rename, "dropDatabase": on_database("dropDatabase"),
    "createIndexes": on_collection("createIndex"), "dropIndexes": on_collection("dropIndex"),
    "listIndexes": on_collection("listIndexes"), "listCollections": _list_collections,
    "listDatabases": _list_databases,
    # statistics
    "collStats": on_collection("collStats"), "dbStats": on_database("dbStats"),
    "validate": on_collection("validate"), "validateDBMetadata": _validate_db_metadata,
    # server administration
    "getCmdLineOpts": on_cluster("getCmdLineOpts"), "getLog": on_cluster("getLog"),
    "getParameter": on_cluster("getParameter"), "setParameter": on_cluster("setParameter"),
    "hostInfo": on_cluster("hostInfo"), "features": _features, "serverStatus": on_cluster("serverStatus"),
    "killAllSessions": on_cluster("killAnySession"), "killAllSessionsByPattern": _kill_all_sessions_by_pattern,
    # commands other families add (mongod's actions), so they arrive with their rule
    "currentOp": _current_op,
    "killOp": _kill_op, "top": on_cluster("top"), "profile": _profile,
    "configureFailPoint": authenticated,  # a test command: mongod asks for nothing more
    "waitForFailPoint": authenticated,  # a test command: no privilege either
    "sleep": authenticated,  # a test command: no privilege (CmdSleep::addRequiredPrivileges adds none)
    "testVersion2": authenticated,  # test commands of the versioned API: no privilege
    "testDeprecationInVersion2": authenticated, "testDeprecation": authenticated,
    # a test command mongod runs even unauthenticated; here, like configureFailPoint, it needs a user
    # (only the handshake and authentication commands are open)
    "refreshLogicalSessionCacheNow": authenticated,
    "clearLog": authenticated,  # a test command: mongod performs no authorization (ClearLogCmd)
    "echo": OPEN,  # a test command mongod runs unauthenticated (EchoCommand::requiresAuth false)
    # test commands without a privilege (checkAuthForOperation OK) that still need a user
    "cpuload": authenticated, "reapLogicalSessionCacheNow": authenticated, "_hashBSONElement": authenticated,
    "godinsert": authenticated,
    "captrunc": authenticated,  # a test command: no privilege (CapTrunc::checkAuthForOperation)
    "emptycapped": authenticated,  # a test command: no privilege (EmptyCapped::checkAuthForOperation)
    "dropConnections": on_cluster("dropConnections"),
    "rotateCertificates": on_cluster("rotateCertificates"),
    "getDiagnosticData": _get_diagnostic_data,
    "splitVector": lambda req: req.require(req.full_ns(req.first), "splitVector"),
    "checkShardingIndex": lambda req: req.require(req.full_ns(req.first), "find"),
    "setProfilingFilterGlobally": lambda req: req.require(R.ANY_NORMAL, "enableProfiler"),
    "setUserWriteBlockMode": on_cluster("setUserWriteBlockMode"),
    "appendOplogNote": on_cluster("appendOplogNote"),
    "setIndexCommitQuorum": on_collection("createIndex"),  # (mongod asks createIndex on the collection)
    "convertToCapped": on_collection("convertToCapped"), "compact": on_collection("compact"),
    "cloneCollectionAsCapped": _clone_as_capped,
    "dbHash": on_database("dbHash"), "fsync": on_cluster("fsync"), "fsyncUnlock": on_cluster("unlock"),
    "reIndex": on_collection("reIndex"), "logRotate": on_cluster("logRotate"),
    "shutdown": on_cluster("shutdown"), "replSetGetStatus": on_cluster("replSetGetStatus"),
    "getDefaultRWConcern": on_cluster("getDefaultRWConcern"), "lockInfo": on_cluster("serverStatus"),
    "setDefaultRWConcern": on_cluster("setDefaultRWConcern"),
    "getClusterParameter": on_cluster("getClusterParameter"), "setClusterParameter": on_cluster("setClusterParameter"),
    "setFeatureCompatibilityVersion": on_cluster("setFeatureCompatibilityVersion"),
    "connPoolStats": on_cluster("connPoolStats"), "connPoolSync": on_cluster("connPoolSync"),
    "shardingState": on_cluster("shardingState"),
    "planCacheClear": on_collection("planCacheWrite"), "planCacheListFilters": on_collection("planCacheRead"),
    "planCacheClearFilters": on_collection("planCacheIndexFilter"),
    "planCacheSetFilter": on_collection("planCacheIndexFilter"), "invalidateUserCache": on_cluster("invalidateUserCache"),
    "replSetGetConfig": on_cluster("replSetGetConfig"), "replSetInitiate": on_cluster("replSetConfigure"),
    "replSetReconfig": on_cluster("replSetConfigure"),
    **dict.fromkeys(("replSetFreeze", "replSetStepDown", "replSetStepUp", "replSetMaintenance", "replSetSyncFrom",
                     "replSetAbortPrimaryCatchUp"), on_cluster("replSetStateChange")),
    # ReplSetCommand's default action: internal (the __system role's)
    **dict.fromkeys(("replSetGetRBID", "replSetUpdatePosition", "replSetRequestVotes", "replSetHeartbeat"),
                    on_cluster("internal")),
    "abortTransaction": authenticated, "commitTransaction": authenticated,
    # users and roles
    "createUser": _create_user, "updateUser": _update_user,
    "dropUser": on_database("dropUser"), "dropAllUsersFromDatabase": on_database("dropUser"),
    "grantRolesToUser": _grant_roles, "revokeRolesFromUser": lambda req: _grant_roles(req, action="revokeRole"),
    "usersInfo": _users_info,
    "createRole": _create_role, "updateRole": _update_role,
    "dropRole": on_database("dropRole"), "dropAllRolesFromDatabase": on_database("dropRole"),
    "grantRolesToRole": _grant_roles, "revokeRolesFromRole": lambda req: _grant_roles(req, action="revokeRole"),
    "grantPrivilegesToRole": _grant_privileges,
    "revokePrivilegesFromRole": lambda req: _grant_privileges(req, "revokeRole"),
    "rolesInfo": _roles_info,
    # restore (mongorestore): their own checks and messages, as in mongod
    "applyOps": oplog_rules.apply_ops, "_mergeAuthzCollections": oplog_rules.merge_authz_collections,
}


def _no_rule(req: Request) -> None:
    """A command nobody gave a rule to fails closed (tests/test_command_table.py prevents it)."""
    raise Denied


def requires_auth(name: str) -> bool:
    """Whether the command needs an authenticated user (mongod's Command::requiresAuth)."""
    return RULES.get(name, _no_rule) is not OPEN


def authenticate(server: Any, conn: Any, name: str) -> None:
    """mongod's pre-parse check (CommandHelpers::uassertShouldAttemptParse): a command that needs a user
    is refused (13 "Command <name> requires authentication") to a client that has none, before the
    command's parse; on the localhost exception the decision waits for :func:`authorize`. Call only
    while access control is on."""
    if RULES.get(name, _no_rule) is OPEN:
        return
    manager = server.auth
    if session_of(conn).privileges(manager, conn) is None and not _localhost_exception(manager, conn):
        raise MongoError(ErrorCode.Unauthorized, f"Command {name} requires authentication")


def check_session_claim(server: Any, conn: Any, name: str, cmd: dict) -> None:
    """The ``lsid.uid`` a command claims (impersonation.check_uid), checked where mongod's
    initializeOperationSessionInfo makes the session id: after the command's parse, before the session
    is used (vivified) and before the database name's and the privileges' checks. Call only while access
    control is on, for a command with an ``lsid``."""
    if RULES.get(name, _no_rule) is OPEN:
        return
    session = session_of(conn)
    impersonation.check_uid(cmd, session.privileges(server.auth, conn), session.name)


def _localhost_exception(manager: Any, conn: Any) -> bool:
    return bool(manager.localhost_bypass and is_localhost(conn) and not manager.has_users())


def authorize(server: Any, conn: Any, name: str, db: str, cmd: dict) -> dict:
    """Check one command against the caller's privileges (mongod's checkAuthorization, after the
    command's parse and the database name's check; :func:`authenticate` ran before the parse). Returns
    the command to run (possibly narrowed); raises 13 Unauthorized. Call only while access control is
    on."""
    manager = server.auth
    rule = RULES.get(name, _no_rule)
    if rule is OPEN and "$audit" not in cmd:
        return cmd
    session = session_of(conn)
    privileges = session.privileges(manager, conn)
    if "$audit" in cmd:
        impersonation.check_audit(cmd, privileges)
    if rule is OPEN:
        return cmd
    if privileges is None:
        if not _localhost_exception(manager, conn):
            raise MongoError(ErrorCode.Unauthorized, f"Command {name} requires authentication")
        privileges = LOCALHOST_PRIVILEGES
    try:
        narrowed = rule(Request(server, conn, session, privileges, db, cmd, name))
    except Denied:
        raise MongoError(
            ErrorCode.Unauthorized, f"not authorized on {db} to execute command {render_command(cmd)}"
        ) from None
    return cmd if narrowed is None else narrowed
