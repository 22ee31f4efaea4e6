"""Cases of mongod's jstests/auth/lib/commands_lib.js, run the way commands_builtin_roles.js and
commands_user_defined_roles.js run them, against Tidemark with --auth.

mongod 7.0 grants each command below to exactly the built-in roles the case lists, and to a
user-defined role holding exactly the case's privileges (each privilege alone, when there are several,
is refused with 13; the same privileges on ``{collection: ""}`` or ``{db: ""}`` still pass).
Tidemark differed (each case says how): it let renameCollectionSameDB move an unreadable collection to a
readable name, and let users and roles carry ``authenticationRestrictions`` without
``setAuthenticationRestriction``, and asked grantRole/revokeRole on the database instead of
``revokeRole`` on every normal resource for updateRole, and answered ``{listCollections, nameOnly,
authorizedCollections}`` from a user without any privilege on the database, listDatabases on any
database; it asked enableProfiler of ``profile: -1``, update of ``$merge`` with ``whenMatched: fail``,
createCollection instead of createIndex + convertToCapped of cloneCollectionAsCapped.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymongo
import pytest
from bson.son import SON
from pymongo.errors import OperationFailure

F, S, A = "roles_commands_1", "roles_commands_2", "admin"

# lib/commands_builtin_roles.js: (key, role, role's db, user's db). commands_lib.js lists __system in
# every role set that is not empty: the cases below leave it out and _authorized adds it.
BUILTIN = [
    ("read", "read", F, F), ("readLocal", "read", "local", A), ("readAnyDatabase", "readAnyDatabase", A, A),
    ("readWrite", "readWrite", F, F), ("readWriteLocal", "readWrite", "local", A),
    ("readWriteAnyDatabase", "readWriteAnyDatabase", A, A), ("userAdmin", "userAdmin", F, F),
    ("userAdminAnyDatabase", "userAdminAnyDatabase", A, A), ("dbAdmin", "dbAdmin", F, F),
    ("dbAdminAnyDatabase", "dbAdminAnyDatabase", A, A), ("clusterAdmin", "clusterAdmin", A, A),
    ("dbOwner", "dbOwner", F, F), ("enableSharding", "enableSharding", F, F),
    ("clusterMonitor", "clusterMonitor", A, A), ("hostManager", "hostManager", A, A),
    ("clusterManager", "clusterManager", A, A), ("backup", "backup", A, A), ("restore", "restore", A, A),
    ("root", "root", A, A), ("__system", "__system", A, A),
]
ROLES_USER_ADMIN = {"userAdmin", "dbOwner", "userAdminAnyDatabase", "restore", "root"}
ROLES_USER_ADMIN_ANY = {"userAdminAnyDatabase", "restore", "root"}
ROLES_READ_DB_ADMIN = {"read", "readAnyDatabase", "readWrite", "readWriteAnyDatabase", "dbAdmin", "dbAdminAnyDatabase",
                       "dbOwner", "root"}
ROLES_MONITORING = {"clusterMonitor", "clusterAdmin", "root"}
ROLES_HOST_MANAGER = {"hostManager", "clusterAdmin", "root"}
ROLES_CLUSTER_MANAGER = {"clusterManager", "clusterAdmin", "root"}
ROLES_WRITE_DB_ADMIN = {"readWrite", "readWriteAnyDatabase", "dbAdmin", "dbAdminAnyDatabase", "dbOwner", "root"}


def P(db: str, coll: str, *actions: str) -> dict:
    return {"resource": {"db": db, "collection": coll}, "actions": list(actions)}


@dataclass
class Case:
    db: str
    roles: set[str] | None = None  # the built-in roles that are authorized (None: not run with them)
    privileges: list[dict] | None = None  # the privileges that authorize it (None: not run with them)
    expect_authz_failure: bool = False  # the privileges are not enough: 13
    expect_fail: bool = False  # authorized, but the command may fail (not with 13)


@dataclass
class Entry:
    name: str
    command: Callable[[], SON]
    cases: list[Case]
    setup: Callable[[Any], Any] = lambda db: None  # given the root client's database of the case
    teardown: Callable[[Any], Any] = lambda db: None
    covers: tuple[str, ...] = field(default=())


def _drop_role_if_any(db) -> None:
    if db.client.admin["system.roles"].find_one({"_id": f"{db.name}.testRole"}):
        db.command("dropRole", "testRole")


def _drop_user_if_any(db) -> None:
    if db.client.admin["system.users"].find_one({"_id": f"{db.name}.testUser"}):
        db.command("dropUser", "testUser")


ENTRIES = [
    Entry("renameCollection_sameDb",
          lambda: SON([("renameCollection", F + ".x"), ("to", F + ".y"), ("dropTarget", True)]),
          [Case(A, ROLES_WRITE_DB_ADMIN, [P(F, "", "renameCollectionSameDB"), P(F, "y", "dropCollection")]),
           Case(F, set()), Case(S, set())],
          setup=lambda db: db.client[F].x.insert_one({}),
          teardown=lambda db: (db.client[F].x.drop(), db.client[F].y.drop()), covers=("renameCollection",)),
    # renameCollectionSameDB and find on the target only: moving an unreadable collection to a readable
    # name is refused (Tidemark allowed it)
    Entry("renameCollection_sameDb_failure", lambda: SON([("renameCollection", F + ".x"), ("to", F + ".y")]),
          [Case(A, None, [P(F, "", "renameCollectionSameDB"), P(F, "y", "find")], expect_authz_failure=True)],
          setup=lambda db: db.client[F].x.insert_one({}),
          teardown=lambda db: (db.client[F].x.drop(), db.client[F].y.drop()), covers=("renameCollection",)),
    # authenticationRestrictions need setAuthenticationRestriction (Tidemark: only on updateUser)
    Entry("createRole_authenticationRestrictions",
          lambda: SON([("createRole", "testRole"), ("roles", []), ("privileges", []),
                       ("authenticationRestrictions", [{"clientSource": ["127.0.0.1"]}])]),
          [Case(F, ROLES_USER_ADMIN, [P(F, "", "createRole", "setAuthenticationRestriction")]),
           Case(S, ROLES_USER_ADMIN_ANY, [P(S, "", "createRole", "setAuthenticationRestriction")])],
          teardown=_drop_role_if_any, covers=("createRole",)),
    Entry("createUser_authenticationRestrictions",
          lambda: SON([("createUser", "testUser"), ("pwd", "test"), ("roles", []),
                       ("authenticationRestrictions", [{"clientSource": ["127.0.0.1"]}])]),
          [Case(F, ROLES_USER_ADMIN, [P(F, "", "createUser", "setAuthenticationRestriction")]),
           Case(S, ROLES_USER_ADMIN_ANY, [P(S, "", "createUser", "setAuthenticationRestriction")])],
          teardown=_drop_user_if_any, covers=("createUser",)),
    Entry("updateUser_authenticationRestrictions",
          lambda: SON([("updateUser", "testUser"), ("authenticationRestrictions", [])]),
          [Case(F, ROLES_USER_ADMIN, [P(F, "", "setAuthenticationRestriction")]),
           Case(S, ROLES_USER_ADMIN_ANY, [P(S, "", "setAuthenticationRestriction")])],
          setup=lambda db: db.command("createUser", "testUser", pwd="test", roles=[],
                                      authenticationRestrictions=[{"clientSource": ["127.0.0.1"]}]),
          teardown=_drop_user_if_any, covers=("updateUser",)),
    # updateRole needs revokeRole on every normal resource (Tidemark: grantRole + revokeRole on the
    # database, so userAdmin and dbOwner could and the privileges below could not)
    Entry("updateRole_authenticationRestrictions",
          lambda: SON([("updateRole", "testRole"), ("authenticationRestrictions", [])]),
          [Case(F, ROLES_USER_ADMIN_ANY, [P("", "", "revokeRole"), P(F, "", "setAuthenticationRestriction")]),
           Case(S, ROLES_USER_ADMIN_ANY, [P("", "", "revokeRole"), P(S, "", "setAuthenticationRestriction")])],
          setup=lambda db: db.command("createRole", "testRole", roles=[], privileges=[],
                                      authenticationRestrictions=[{"clientSource": ["127.0.0.1"]}]),
          teardown=_drop_role_if_any, covers=("updateRole",)),
    # {nameOnly, authorizedCollections} needs a privilege that could name a resource of the database
    # (Tidemark answered ok, with nothing listed, to a user without any)
    Entry("listOwnCollections",
          lambda: SON([("listCollections", 1), ("nameOnly", True), ("authorizedCollections", True)]),
          [Case(F, {key for key, *_ in BUILTIN} - {"readLocal", "readWriteLocal"}),
           Case(F, None, [P(F, "x", "find")]), Case(F, None, [P("", "x", "find")]),
           Case(F, None, [P("", "", "find")]), Case(F, None, [P(F, "", "find")]),
           Case(F, None, [{"resource": {"cluster": True}, "actions": ["find"]}], expect_authz_failure=True),
           Case(F, None, [P(S, "x", "find")], expect_authz_failure=True),
           Case(F, None, [], expect_authz_failure=True)],
          setup=lambda db: (db.x.insert_one({"_id": 5}), db.y.insert_one({"_id": 6})),
          teardown=lambda db: (db.x.drop(), db.y.drop()), covers=("listCollections",)),
    Entry("listCollections", lambda: SON([("listCollections", 1)]),
          [Case(F, {"read", "readAnyDatabase", "readWrite", "readWriteAnyDatabase", "dbAdmin", "dbAdminAnyDatabase",
                    "dbOwner", "backup", "restore", "root"}, [P(F, "", "listCollections")])],
          setup=lambda db: (db.x.insert_one({"_id": 5}), db.y.insert_one({"_id": 6})),
          teardown=lambda db: (db.x.drop(), db.y.drop()), covers=("listCollections",)),
    # adminOnly: 13 on any other database, whatever the role (Tidemark listed them)
    Entry("listDatabases", lambda: SON([("listDatabases", 1)]),
          [Case(A, {key for key, *_ in BUILTIN}, [{"resource": {"cluster": True}, "actions": ["listDatabases"]}]),
           Case(F, set()), Case(S, set())], covers=("listDatabases",)),
    # profile: -1 only reads the settings: find on <db>.system.profile is enough (Tidemark asked
    # enableProfiler)
    Entry("profileGetLevel", lambda: SON([("profile", -1)]),
          [Case(F, {"backup", "dbAdmin", "dbAdminAnyDatabase", "dbOwner", "clusterMonitor", "clusterAdmin", "root"},
                [P(F, "system.profile", "find")]),
           Case(S, {"backup", "dbAdminAnyDatabase", "clusterMonitor", "clusterAdmin", "root"},
                [P(S, "system.profile", "find")])], covers=("profile",)),
    Entry("profile", lambda: SON([("profile", 0)]),
          [Case(F, {"dbAdmin", "dbAdminAnyDatabase", "dbOwner", "root"}, [P(F, "", "enableProfiler")]),
           Case(S, {"dbAdminAnyDatabase", "root"}, [P(S, "", "enableProfiler")])], covers=("profile",)),
    Entry("profileSetSampleRate", lambda: SON([("profile", -1), ("sampleRate", 0.5)]),
          [Case(F, {"dbAdmin", "dbAdminAnyDatabase", "dbOwner", "root"}, [P(F, "", "enableProfiler")]),
           Case(S, {"dbAdminAnyDatabase", "root"}, [P(S, "", "enableProfiler")])],
          teardown=lambda db: db.command("profile", -1, sampleRate=1.0), covers=("profile",)),
    # insert + createIndex + convertToCapped on the target (Tidemark: insert + createCollection)
    Entry("cloneCollectionAsCapped",
          lambda: SON([("cloneCollectionAsCapped", "x"), ("toCollection", "y"), ("size", 1000)]),
          [Case(F, {"readWrite", "readWriteAnyDatabase", "dbOwner", "root"},
                [P(F, "y", "insert", "createIndex", "convertToCapped"), P(F, "x", "find")]),
           Case(S, {"readWriteAnyDatabase", "root"},
                [P(S, "y", "insert", "createIndex", "convertToCapped"), P(S, "x", "find")])],
          setup=lambda db: (db.x.insert_one({}), db.y.drop()), teardown=lambda db: (db.x.drop(), db.y.drop()),
          covers=("cloneCollectionAsCapped",)),
    # whenMatched: fail + whenNotMatched: insert needs insert only (Tidemark: insert + update)
    *(Entry(f"aggregate_merge_{mode}_documents",
            lambda target=target, bypass=bypass, mode=mode: SON([
                ("aggregate", "foo"),
                ("pipeline", [{"$merge": {"into": {"db": target, "coll": "foo_out"},
                                          "whenMatched": "fail" if mode == "insert" else "replace",
                                          "whenNotMatched": "insert"}}]),
                ("cursor", {}), ("bypassDocumentValidation", bypass)]),
            [Case(db, roles, [P(db, "foo", "find"),
                              P(target, "foo_out", *actions, *(("bypassDocumentValidation",) if bypass else ()))])],
            covers=("aggregate",))
      for mode, actions in (("insert", ("insert",)), ("replace", ("insert", "update")))
      for db, target, bypass, roles in (
          (F, F, False, {"readWrite", "readWriteAnyDatabase", "dbOwner", "root"}),
          (S, S, False, {"readWriteAnyDatabase", "root"}), (F, S, False, {"readWriteAnyDatabase", "root"}),
          (F, F, True, {"dbOwner", "root"}), (F, S, True, {"root"}))),
    # commands a standalone answers for the cluster (Tidemark had none of them: 59 CommandNotFound)
    Entry("connPoolStats", lambda: SON([("connPoolStats", 1)]),
          [Case(db, ROLES_MONITORING, [{"resource": {"cluster": True}, "actions": ["connPoolStats"]}])
           for db in (F, S)], covers=("connPoolStats",)),
    Entry("connPoolSync", lambda: SON([("connPoolSync", 1)]),
          [Case(db, ROLES_HOST_MANAGER, [{"resource": {"cluster": True}, "actions": ["connPoolSync"]}])
           for db in (F, S)], covers=("connPoolSync",)),
    Entry("shardingState", lambda: SON([("shardingState", 1)]),
          [Case(A, ROLES_MONITORING, [{"resource": {"cluster": True}, "actions": ["shardingState"]}]),
           Case(F, set()), Case(S, set())], covers=("shardingState",)),
    # serverStatus on the cluster; admin only (Tidemark: 59)
    Entry("lockInfo", lambda: SON([("lockInfo", 1)]),
          [Case(A, ROLES_MONITORING | {"backup"}, [{"resource": {"cluster": True}, "actions": ["serverStatus"]}]),
           Case(F, set()), Case(S, set())], covers=("lockInfo",)),
    # serverStatus and replSetGetStatus on the cluster, collStats on local.oplog.rs; admin only (Tidemark: 59)
    Entry("getDiagnosticData", lambda: SON([("getDiagnosticData", 1)]),
          [Case(A, ROLES_MONITORING, [{"resource": {"cluster": True}, "actions": ["serverStatus"]},
                                      {"resource": {"cluster": True}, "actions": ["replSetGetStatus"]},
                                      P("local", "oplog.rs", "collStats")]),
           Case(F, set()), Case(S, set())], covers=("getDiagnosticData",)),
    Entry("invalidateUserCache", lambda: SON([("invalidateUserCache", 1)]),
          [Case(A, ROLES_HOST_MANAGER | {"userAdminAnyDatabase"},
                [{"resource": {"cluster": True}, "actions": ["invalidateUserCache"]}]),
           Case(F, set()), Case(S, set())], covers=("invalidateUserCache",)),
    # the plan cache commands (commands_lib.js planCacheWrite / planCacheIndexFilter; Tidemark: 59)
    *(Entry(name, lambda name=name: SON([(name, "x")]),
            [Case(F, {"dbAdmin", "dbAdminAnyDatabase", "dbOwner", "root"}, [P(F, "x", action)]),
             Case(S, {"dbAdminAnyDatabase", "root"}, [P(S, "x", action)])],
            setup=lambda db: db.x.insert_one({}), teardown=lambda db: db.x.drop(), covers=(name,))
      for name, action in (("planCacheClear", "planCacheWrite"), ("planCacheClearFilters", "planCacheIndexFilter"))),
    Entry("planCacheListFilters", lambda: SON([("planCacheListFilters", "x")]),
          [Case(F, ROLES_READ_DB_ADMIN, [P(F, "x", "planCacheRead")]),
           Case(S, {"readAnyDatabase", "readWriteAnyDatabase", "dbAdminAnyDatabase", "root"},
                [P(S, "x", "planCacheRead")])],
          setup=lambda db: db.x.insert_one({}), teardown=lambda db: db.x.drop(), covers=("planCacheListFilters",)),
    # refused on a standalone (51300) once authorized
    Entry("getDefaultRWConcern", lambda: SON([("getDefaultRWConcern", 1)]),
          [Case(A, ROLES_MONITORING | ROLES_CLUSTER_MANAGER,
                [{"resource": {"cluster": True}, "actions": ["getDefaultRWConcern"]}], expect_fail=True),
           Case(F, set()), Case(S, set())], covers=("getDefaultRWConcern",)),
    Entry("setDefaultRWConcern",
          lambda: SON([("setDefaultRWConcern", 1), ("defaultReadConcern", {"level": "local"})]),
          [Case(A, ROLES_CLUSTER_MANAGER, [{"resource": {"cluster": True}, "actions": ["setDefaultRWConcern"]}],
                expect_fail=True),
           Case(F, set()), Case(S, set())], covers=("setDefaultRWConcern",)),
    # refused on a standalone (20) once authorized
    *(Entry(name, lambda name=name, arg=arg: SON([(name, arg)]),
            [Case(A, ROLES_CLUSTER_MANAGER, [{"resource": {"cluster": True}, "actions": [name]}], expect_fail=True),
             Case(F, set()), Case(S, set())], covers=(name,))
      for name, arg in (("getClusterParameter", "changeStreamOptions"), ("setClusterParameter", {}))),
    # an invalid version: authorized, then 4926900 (nothing changes)
    Entry("setFeatureCompatibilityVersion", lambda: SON([("setFeatureCompatibilityVersion", "x")]),
          [Case(A, ROLES_CLUSTER_MANAGER,
                [{"resource": {"cluster": True}, "actions": ["setFeatureCompatibilityVersion"]}], expect_fail=True),
           Case(F, set()), Case(S, set())], covers=("setFeatureCompatibilityVersion",)),
]


def _special(resource: dict) -> bool:
    """commands_user_defined_roles.js: resources it does not widen to ``""``."""
    return ("db" not in resource or not resource.get("collection") or not resource.get("db")
            or resource["collection"].startswith("system.") or resource["db"] == "local")


@pytest.fixture(scope="module")
def lib(auth_server, root_client):
    """One user per built-in role, and ``libUser`` holding ``libRole`` (its privileges set per run)."""
    tag = uuid.uuid4().hex[:6]
    users = {}
    for key, role, role_db, user_db in BUILTIN:
        name = f"lib_{tag}_{key}"
        root_client[user_db].command("createUser", name, pwd="pwd", roles=[{"role": role, "db": role_db}])
        users[key] = (name, user_db)
    root_client.admin.command("createRole", f"libRole_{tag}", roles=[], privileges=[])
    root_client.admin.command("createUser", f"libUser_{tag}", pwd="pwd", roles=[f"libRole_{tag}"])
    users["udr"] = (f"libUser_{tag}", A)
    clients: dict[str, pymongo.MongoClient] = {}

    def client(key: str) -> pymongo.MongoClient:
        if key not in clients:
            name, source = users[key]
            clients[key] = pymongo.MongoClient(
                f"mongodb://{name}:pwd@127.0.0.1:{auth_server.port}/?directConnection=true&authSource={source}")
        return clients[key]

    def set_privileges(privileges: list[dict]) -> None:
        root_client.admin.command("updateRole", f"libRole_{tag}", privileges=privileges)

    yield client, set_privileges
    for conn in clients.values():
        conn.close()
    for name, source in users.values():
        root_client[source].command("dropUser", name)
    root_client.admin.command("dropRole", f"libRole_{tag}")
    root_client.drop_database(F)
    root_client.drop_database(S)


def _run(entry: Entry, case: Case, conn: pymongo.MongoClient, root: pymongo.MongoClient) -> tuple[bool, Any]:
    entry.setup(root[case.db])
    try:
        return True, conn[case.db].command(entry.command())
    except OperationFailure as failure:
        return False, failure
    finally:
        entry.teardown(root[case.db])


def _params(kind: str):
    for entry in ENTRIES:
        for i, case in enumerate(entry.cases):
            if (case.roles if kind == "builtin" else case.privileges) is None:
                continue
            yield pytest.param(entry, case, id=f"{entry.name}[{i}]@{case.db}",
                               marks=pytest.mark.commands(*entry.covers))


@pytest.mark.parametrize(("entry", "case"), list(_params("builtin")))
def test_builtin_roles_are_authorized_as_mongod(lib, root_client, entry, case):
    client, _ = lib
    wrong = []
    for key, *_ in BUILTIN:
        ok, answer = _run(entry, case, client(key), root_client)
        if key in (case.roles or set()) or (key == "__system" and case.roles):
            if not ok and (answer.code == 13 or not case.expect_fail):
                wrong.append((key, "authorized", answer.details))
        elif ok or answer.code != 13:
            wrong.append((key, "13", answer if ok else answer.details))
    assert not wrong


@pytest.mark.parametrize(("entry", "case"), list(_params("udr")))
def test_user_defined_role_privileges_are_authorized_as_mongod(lib, root_client, entry, case):
    client, set_privileges = lib
    conn = client("udr")
    privileges = case.privileges or []
    wrong = []

    def expect(privs: list[dict], authorized: bool, label: str) -> None:
        set_privileges(privs)
        ok, answer = _run(entry, case, conn, root_client)
        if not authorized:
            if ok or answer.code != 13:
                wrong.append((label, privs, "13", answer if ok else answer.details))
        elif not ok and (answer.code == 13 or not case.expect_fail):
            wrong.append((label, privs, "authorized", answer.details))

    if case.expect_authz_failure:
        expect(privileges, False, "insufficient")
    else:
        if len(privileges) > 1 or (privileges and len(privileges[0]["actions"]) > 1):
            for privilege in privileges:
                for action in privilege["actions"]:
                    expect([{"resource": privilege["resource"], "actions": [action]}], False, "single action")
        expect(privileges, True, "full")
        expect([{**p, "resource": {**p["resource"], "collection": ""}} if not _special(p["resource"]) else p
                for p in privileges], True, "collection ''")
        expect([{**p, "resource": {**p["resource"], "db": ""}} if not _special(p["resource"]) else p
                for p in privileges], True, "db ''")
    assert not wrong
