"""listCollections under access control, as mongod 7.0 authorizes and narrows it.

mongod (AuthorizationSessionImpl::checkAuthorizedToListCollections): ``{nameOnly: true,
authorizedCollections: true}`` is allowed to a user with any privilege that could name a resource of the
database (isAuthorizedForAnyActionOnAnyResourceInDB: a privilege on the database, anyResource, any
system_buckets pattern of any database or of this one, anyNormal outside local/config, a collection-name
pattern, an exact namespace of this database), otherwise it needs ``listCollections`` on the database
(13 "not authorized on <db> to execute command ..."). With ``authorizedCollections: true`` the listing
keeps only the collections whose namespace some privilege matches (list_collections.cpp,
isAuthorizedForAnyActionOnResource), whatever allowed the command.

Tidemark answered ok with an empty listing to a user with no privilege on the database (a cluster
privilege, or one on another database only), and did not narrow the listing of a user holding
``listCollections``.
"""

from __future__ import annotations

import pytest
from harness.role_user import one_role_user
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("listCollections")

DB = "lc_auth"
NAMES = ["a", "b", "ts", "v", "system.buckets.ts", "system.views"]

RESOURCES = [
    {"db": DB, "collection": ""}, {"db": DB, "collection": "a"}, {"db": DB, "collection": "system.views"},
    {"db": DB, "collection": "system.buckets.ts"}, {"db": "lc_other", "collection": ""},
    {"db": "lc_other", "collection": "a"}, {"db": "", "collection": "b"}, {"db": "", "collection": "system.views"},
    {"db": "", "collection": ""}, {"cluster": True}, {"anyResource": True}, {"db": DB, "system_buckets": "ts"},
    {"db": DB, "system_buckets": ""}, {"db": "", "system_buckets": "ts"}, {"db": "", "system_buckets": "x"},
    {"db": "", "system_buckets": ""}, {"db": "lc_other", "system_buckets": ""},
    {"db": "lc_other", "system_buckets": "ts"},
]


@pytest.fixture(scope="module")
def lister(auth_server, root_client):
    db = root_client[DB]
    db.a.insert_one({})
    db.b.insert_one({})
    db.create_collection("ts", timeseries={"timeField": "t"})
    db.command("create", "v", viewOn="a", pipeline=[])
    with one_role_user(auth_server, root_client, "lister") as (role, conn):
        yield role, conn
    root_client.drop_database(DB)


def _search_list(db: str, coll: str) -> list[dict]:
    """mongod's ResourcePatternSearchList for an exact namespace, as resource documents."""
    out: list[dict] = [{"anyResource": True}]
    if not coll.startswith("system."):
        if db not in ("local", "config"):
            out.append({"db": "", "collection": ""})
        out.append({"db": db, "collection": ""})
    elif coll.startswith("system.buckets.") and len(coll) > len("system.buckets."):
        name = coll[len("system.buckets."):]
        out += [{"db": db, "system_buckets": name}, {"db": "", "system_buckets": ""},
                {"db": db, "system_buckets": ""}, {"db": "", "system_buckets": name}]
    return [*out, {"db": "", "collection": coll}, {"db": db, "collection": coll}]


def _any_resource_in_db(resources: list[dict], db: str) -> bool:
    """mongod's isAuthorizedForAnyActionOnAnyResourceInDB, over the resources the user holds."""
    for r in resources:
        if r == {"db": db, "collection": ""} or "anyResource" in r:
            return True
        if r in ({"db": "", "system_buckets": ""}, {"db": db, "system_buckets": ""}):
            return True
        if r == {"db": "", "collection": ""} and db not in ("local", "config"):
            return True
        if r.get("db") == "" and r.get("collection"):  # a collection-name pattern
            return True
        if r.get("db") == "" and r.get("system_buckets"):  # isAnySystemBucketsCollectionInAnyDB
            return True
        if r.get("db") == db and (r.get("collection") or r.get("system_buckets")):  # exact namespaces
            return True
    return False


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(resources=st.lists(st.sampled_from(RESOURCES), max_size=3, unique_by=repr),
       list_collections=st.booleans(), name_only=st.booleans(), authorized_collections=st.booleans())
@example(resources=[{"cluster": True}], list_collections=False, name_only=True, authorized_collections=True)
@example(resources=[{"db": "lc_other", "collection": "a"}], list_collections=False, name_only=True,
         authorized_collections=True)
@example(resources=[], list_collections=False, name_only=True, authorized_collections=True)
@example(resources=[{"db": DB, "collection": ""}], list_collections=True, name_only=True, authorized_collections=True)
def test_list_collections_is_authorized_and_narrowed_as_mongod(root_client, lister, resources, list_collections,
                                                               name_only, authorized_collections):
    role, conn = lister
    privileges = [{"resource": r, "actions": ["find"]} for r in resources]
    if list_collections:
        privileges.append({"resource": {"db": DB, "collection": ""}, "actions": ["listCollections"]})
    root_client.admin.command("updateRole", role, privileges=privileges)
    held = [p["resource"] for p in privileges]
    database_patterns = ({"anyResource": True}, {"db": "", "collection": ""}, {"db": DB, "collection": ""})
    allowed = (name_only and authorized_collections and _any_resource_in_db(held, DB)) or any(
        "listCollections" in p["actions"] and p["resource"] in database_patterns for p in privileges)
    try:
        reply = conn[DB].command("listCollections", nameOnly=name_only, authorizedCollections=authorized_collections)
    except OperationFailure as failure:
        assert failure.code == 13, failure.details
        assert failure.details["errmsg"].startswith(f"not authorized on {DB} to execute command "), failure.details
        assert not allowed, privileges
        return
    assert allowed, privileges
    listed = sorted(c["name"] for c in reply["cursor"]["firstBatch"])
    if authorized_collections:
        expected = sorted(n for n in NAMES if any(r in held for r in _search_list(DB, n)))
    else:
        expected = sorted(NAMES)
    assert listed == expected, privileges
