"""Resource matching and built-in role expansion (pure): mongod's search-list rules."""

from __future__ import annotations

import pytest

from tidemark.auth import builtin_roles as B
from tidemark.auth import resources as R
from tidemark.protocol.errors import MongoError


def _allowed(role: str, role_db: str, target, *actions) -> bool:
    return R.is_authorized(B.privileges(role, role_db), target, actions)


def test_database_roles_stay_in_their_database_and_out_of_system_collections():
    assert _allowed("read", "app", R.ns_target("app", "c"), "find")
    assert not _allowed("read", "app", R.ns_target("other", "c"), "find")
    assert not _allowed("read", "app", R.ns_target("app", "system.users"), "find")
    assert _allowed("read", "app", R.ns_target("app", "system.js"), "find")
    assert not _allowed("read", "app", R.ns_target("app", "system.buckets.cpu"), "find")
    assert not _allowed("readWrite", "app", R.db_target("app"), "dropDatabase")
    assert _allowed("dbAdmin", "app", R.db_target("app"), "dropDatabase")
    assert _allowed("dbOwner", "app", R.db_target("app"), "createUser")


def test_any_database_roles_skip_local_and_config_but_see_buckets():
    assert _allowed("readAnyDatabase", "admin", R.ns_target("x", "c"), "find")
    assert not _allowed("readAnyDatabase", "admin", R.ns_target("local", "c"), "find")
    assert _allowed("readAnyDatabase", "admin", R.ns_target("x", "system.buckets.cpu"), "find")
    assert _allowed("readAnyDatabase", "admin", R.CLUSTER, "listDatabases")
    assert not _allowed("readAnyDatabase", "admin", R.ns_target("x", "c"), "insert")
    assert _allowed("readWriteAnyDatabase", "admin", R.ns_target("x", "c"), "insert", "find")


def test_root_inherits_everything_it_should():
    for target, action in ((R.CLUSTER, "setParameter"), (R.ns_target("admin", "system.users"), "insert"),
                           (R.ns_target("x", "system.buckets.c"), "insert"), (R.CLUSTER, "killAnyCursor"),
                           (R.ns_target("x", "c"), "validate")):
        assert _allowed("root", "admin", target, action), (target, action)
    assert not B.is_builtin("root", "app") and B.is_builtin("read", "app") and not B.is_builtin("read", "$external")


def test_privilege_documents_round_trip():
    docs = [{"resource": {"db": "a", "collection": "b"}, "actions": ["find", "insert"]},
            {"resource": {"db": "a", "collection": ""}, "actions": ["listCollections"]},
            {"resource": {"db": "", "collection": "c"}, "actions": ["find"]},
            {"resource": {"db": "", "collection": ""}, "actions": ["find"]},
            {"resource": {"cluster": True}, "actions": ["serverStatus"]},
            {"resource": {"anyResource": True}, "actions": ["find"]},
            {"resource": {"db": "a", "system_buckets": "cpu"}, "actions": ["find"]}]
    assert R.privilege_documents(R.parse_privileges(docs, "privileges")) == docs


@pytest.mark.parametrize("bad", [
    [{"resource": {"db": "a"}, "actions": []}],
    [{"resource": {"cluster": False}, "actions": []}],
    [{"resource": {"db": "a", "collection": "b"}}],
    [{"resource": {"db": "a", "collection": "b"}, "actions": ["fly"]}],
    "not a list",
])
def test_bad_privilege_documents_are_refused(bad):
    with pytest.raises(MongoError):
        R.parse_privileges(bad, "privileges")


def test_pipeline_privileges_follow_every_namespace_a_pipeline_touches():
    from tidemark.auth.pipelines import pipeline_privileges

    src = R.ns_target("d", "c")
    needs = pipeline_privileges("d", src, [
        {"$lookup": {"from": "other", "localField": "a", "foreignField": "b", "as": "x"}},
        {"$unionWith": {"coll": "third", "pipeline": [{"$lookup": {"from": "fourth", "pipeline": [], "as": "y"}}]}},
        {"$facet": {"f": [{"$graphLookup": {"from": "fifth"}}]}},
        {"$out": {"db": "elsewhere", "coll": "dst"}},
    ], ("bypassDocumentValidation",))
    assert needs == [
        (src, ("find",)), (R.ns_target("d", "other"), ("find",)), (R.ns_target("d", "third"), ("find",)),
        (R.ns_target("d", "fourth"), ("find",)), (R.ns_target("d", "fifth"), ("find",)),
        (R.ns_target("elsewhere", "dst"), ("insert", "remove", "bypassDocumentValidation")),
    ]
    assert pipeline_privileges("d", src, [{"$collStats": {}}], ()) == [(src, ("collStats",))]
    assert pipeline_privileges("d", None, [{"$documents": [{}]}], ()) == []
    assert pipeline_privileges("admin", None, [{"$currentOp": {"allUsers": True}}], ()) == [(R.CLUSTER, ("inprog",))]
