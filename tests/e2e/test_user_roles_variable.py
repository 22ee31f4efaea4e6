"""``$$USER_ROLES`` (MongoDB 7.0): the roles granted to the user the command's connection is authenticated as,
``[{_id: "<db>.<role>", role, db}]`` (Variables::defineUserRoles), usable wherever an expression is — a find
projection, an aggregate's ``$match``/``$expr``, a view's pipeline (jstests/auth/user_roles_find_agg.js);
``[]`` for an unauthenticated connection; 51144 "Builtin variable '$$USER_ROLES' is not available" while the
``enableAccessToUserRoles`` parameter is false, set at startup or at runtime
(jstests/auth/user_roles_disable_parameter.js). The family: users granted random sets of built-in and
user-defined roles on several databases see exactly their direct roles, in the order connectionStatus
lists them, and a role-filtered view shows each of them the documents its roles allow."""

from __future__ import annotations

import uuid

import pymongo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _client(server, user: str, password: str, source: str = "admin") -> pymongo.MongoClient:
    return pymongo.MongoClient(f"mongodb://{user}:{password}@127.0.0.1:{server.port}/?directConnection=true"
                               f"&authSource={source}", serverSelectionTimeoutMS=10_000)


@pytest.mark.commands("find", "aggregate", "createUser")
def test_user_roles_in_a_find_and_an_aggregate(auth_server, root_client):
    # jstests/auth/user_roles_find_agg.js, standalone part
    db_name = _name("ur")
    root_client[db_name].command("createUser", "user", pwd="pwd", roles=[
        {"role": "readWriteAnyDatabase", "db": "admin"}, {"role": "read", "db": db_name}])
    with _client(auth_server, "user", "pwd", db_name) as client:
        db = client[db_name]
        db.find_coll.insert_one({"a": 1})
        result = db.find_coll.find_one({}, {"myRoles": "$$USER_ROLES"})
        assert result["myRoles"] == [
            {"_id": "admin.readWriteAnyDatabase", "role": "readWriteAnyDatabase", "db": "admin"},
            {"_id": f"{db_name}.read", "role": "read", "db": db_name},
        ]
        eng = {"_id": 0, "allowedRoles": ["eng-app-prod", "eng-app-stg", "read"], "comment": "only for engineering team",
               "teamMembers": ["John", "Ashley", "Gina"], "yearlyEduBudget": 15000, "yearlyTnEBudget": 2000}
        sales = {"_id": 1, "allowedRoles": ["sales-person"], "comment": "only for sales team", "salesWins": 1000}
        db.team_budget.insert_many([dict(eng), dict(sales)])
        pipeline = [{"$match": {"$expr": {"$not": {"$eq": [
            {"$setIntersection": ["$allowedRoles", "$$USER_ROLES.role"]}, []]}}}}]
        assert list(db.team_budget.aggregate(pipeline)) == [eng]


@pytest.mark.commands("find", "aggregate")
def test_user_roles_is_empty_without_a_user(server):
    with server.client() as client:
        coll = client[_name("ur")].c
        coll.insert_one({"_id": 1})
        assert coll.find_one({}, {"r": "$$USER_ROLES"}) == {"_id": 1, "r": []}
        assert list(coll.aggregate([{"$project": {"n": {"$size": "$$USER_ROLES"}}}])) == [{"_id": 1, "n": 0}]


def _view_reads_fail_when_disabled(server, disable_at_runtime: bool):
    # jstests/auth/user_roles_disable_parameter.js
    with server.client() as bootstrap:
        bootstrap.admin.command("createUser", "admin", pwd="admin", roles=["root"])
    with _client(server, "admin", "admin") as admin:
        if disable_at_runtime:
            admin.admin.command("setParameter", 1, enableAccessToUserRoles=False)
        db = admin.test
        db.command("createUser", "user", pwd="pwd", roles=[{"role": "read", "db": "test"}])
        db.command("create", "coll_view", viewOn="coll", pipeline=[{"$set": {"a": {"$cond": {
            "if": {"$in": ["read", "$$USER_ROLES.role"]}, "then": "$a", "else": "$$REMOVE"}}}}])
        db.coll.insert_one({"_id": 0, "a": 1})
    with _client(server, "user", "pwd", "test") as user:
        with pytest.raises(OperationFailure) as failure:
            user.test.command("find", "coll_view", filter={})
        assert failure.value.code == 51144
        assert failure.value.details["errmsg"] == "Builtin variable '$$USER_ROLES' is not available"


@pytest.mark.commands("find", "setParameter", "createUser", "create")
def test_user_roles_refused_while_disabled_at_runtime(start_server):
    _view_reads_fail_when_disabled(start_server(args=("--auth",)), disable_at_runtime=True)


@pytest.mark.commands("find", "createUser", "create")
def test_user_roles_refused_while_disabled_at_startup(start_server):
    _view_reads_fail_when_disabled(start_server(args=("--auth",), params={"enableAccessToUserRoles": "false"}),
                                   disable_at_runtime=False)


_BUILTIN = ["read", "readWrite", "dbAdmin", "userAdmin", "dbOwner"]
_ANY = ["readAnyDatabase", "readWriteAnyDatabase", "clusterMonitor", "backup"]


@pytest.mark.slow
@pytest.mark.commands("find", "aggregate", "createUser", "createRole", "create")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_each_user_sees_its_own_direct_roles(auth_server, root_client, data):
    db_name = _name("urf")
    dbs = [db_name, db_name + "_b"]
    custom = _name("custom")
    # a user-defined role that inherits read: $$USER_ROLES names it, not what it inherits
    root_client[db_name].command("createRole", custom, privileges=[], roles=[{"role": "read", "db": db_name}])
    pool = ([{"role": r, "db": d} for r in _BUILTIN for d in dbs] + [{"role": r, "db": "admin"} for r in _ANY]
            + [{"role": custom, "db": db_name}])
    roles = data.draw(st.lists(st.sampled_from(pool), max_size=4, unique_by=lambda r: (r["role"], r["db"])))
    user = _name("u")
    root_client[db_name].command("createUser", user, pwd="pw", roles=roles)
    root_client[db_name].docs.insert_many([{"_id": i, "allowed": r["role"]} for i, r in enumerate(pool)])
    root_client[db_name].command("create", "visible", viewOn="docs", pipeline=[
        {"$match": {"$expr": {"$in": ["$allowed", "$$USER_ROLES.role"]}}}])
    with _client(auth_server, user, "pw", db_name) as client:
        listed = client[db_name].command("connectionStatus")["authInfo"]["authenticatedUserRoles"]
        expected = [{"_id": f"{r['db']}.{r['role']}", "role": r["role"], "db": r["db"]} for r in listed]
        assert sorted((r["role"], r["db"]) for r in listed) == sorted((r["role"], r["db"]) for r in roles)
        can_read = any(r["role"] in ("read", "readWrite", "dbOwner", custom) and r["db"] == db_name
                       or r["role"] in ("readAnyDatabase", "readWriteAnyDatabase", "backup") for r in roles)
        pipeline = [{"$limit": 1}, {"$project": {"_id": 0, "r": "$$USER_ROLES"}}]
        if can_read:
            assert list(client[db_name].docs.aggregate(pipeline)) == [{"r": expected}]
            names = {r["role"] for r in roles}
            assert sorted(d["_id"] for d in client[db_name].visible.find()) == sorted(
                i for i, r in enumerate(pool) if r["role"] in names)
        else:
            with pytest.raises(OperationFailure) as failure:
                list(client[db_name].docs.aggregate(pipeline))
            assert failure.value.code == 13  # (authorization first: the variable never leaks to a refused read)
        # a database the user has no role on still answers with the user's roles wherever it may read
        documents = client[db_name].aggregate([{"$documents": [{}]}, {"$project": {"r": "$$USER_ROLES"}}]) \
            if can_read else None
        if documents is not None:
            assert [d["r"] for d in documents] == [expected]
