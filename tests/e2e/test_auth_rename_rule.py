"""renameCollection's authorization, as mongod 7.0 decides it.

mongod (rename_collection_common.cpp, checkAuthForRenameCollectionCommand): a rename between two
normal collections of one database is allowed by ``renameCollectionSameDB`` on the database, plus
``dropCollection`` on the target when ``dropTarget`` is set, provided the caller does not move data it
cannot read to a name it can read: ``canRename && canDropTargetIfNeeded && (canReadSrc || !canReadDest)``.
Otherwise (and always across databases) it needs ``find`` + ``dropCollection`` on the source and
``insert`` + ``createIndex`` (+ ``dropCollection`` with ``dropTarget``) on the target.

Tidemark had the last clause backwards (``canReadDest || !canReadSrc``): a user with
``renameCollectionSameDB`` and ``find`` on ``db.pub`` only could rename ``db.secret`` to ``db.pub`` and
read it (privilege escalation), and was refused the harmless rename of a readable collection to an
unreadable name.
"""

from __future__ import annotations

import pytest
from harness.role_user import one_role_user
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("renameCollection")

NS_ACTIONS = ("find", "insert", "createIndex", "dropCollection")
SRC_DB, OTHER_DB = "rename_rule_a", "rename_rule_b"


@pytest.fixture(scope="module")
def renamer(auth_server, root_client):
    """A user holding one role whose privileges each example replaces."""
    with one_role_user(auth_server, root_client, "renamer") as (role, conn):
        yield role, conn
    root_client.drop_database(SRC_DB)
    root_client.drop_database(OTHER_DB)


def _mongod_allows(grants: dict, src: tuple[str, str], dst: tuple[str, str], rename_same_db: bool,
                   drop_target: bool) -> bool:
    """checkAuthForRenameCollectionCommand, written as mongod's source states it. ``grants`` maps a
    namespace ``(db, coll)`` or a database ``(db, "")`` to the actions granted on it."""

    def authorized(ns: tuple[str, str], *actions: str) -> bool:
        held = grants.get(ns, set()) | grants.get((ns[0], ""), set())
        return all(action in held for action in actions)

    if src[0] == dst[0]:  # both are normal collections here
        can_rename = rename_same_db
        can_drop_target_if_needed = not drop_target or authorized(dst, "dropCollection")
        can_read_src, can_read_dest = authorized(src, "find"), authorized(dst, "find")
        if can_rename and can_drop_target_if_needed and (can_read_src or not can_read_dest):
            return True
    if not authorized(src, "find", "dropCollection"):
        return False
    return authorized(dst, "insert", "createIndex", *(("dropCollection",) if drop_target else ()))


_actions = st.sets(st.sampled_from(NS_ACTIONS))
# where a set of actions is granted: on the exact namespace, or on its whole database
_scope = st.sampled_from(["ns", "db"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(src_actions=_actions, src_scope=_scope, dst_actions=_actions, dst_scope=_scope,
       rename_same_db=st.booleans(), cross_db=st.booleans(), drop_target=st.booleans())
# the escalation: renameCollectionSameDB and find on the target only -> refused
@example(src_actions=set(), src_scope="ns", dst_actions={"find"}, dst_scope="ns", rename_same_db=True,
         cross_db=False, drop_target=False)
# the harmless direction: a readable source to an unreadable name -> allowed
@example(src_actions={"find"}, src_scope="ns", dst_actions=set(), dst_scope="ns", rename_same_db=True,
         cross_db=False, drop_target=False)
# neither readable -> allowed
@example(src_actions=set(), src_scope="ns", dst_actions=set(), dst_scope="ns", rename_same_db=True,
         cross_db=False, drop_target=False)
def test_rename_is_authorized_exactly_as_mongod_rule_says(root_client, renamer, src_actions, src_scope,
                                                          dst_actions, dst_scope, rename_same_db, cross_db,
                                                          drop_target):
    role, conn = renamer
    src = (SRC_DB, "secret")
    dst = (OTHER_DB if cross_db else SRC_DB, "pub")
    grants: dict[tuple[str, str], set[str]] = {}
    for (db, coll), actions, scope in ((src, src_actions, src_scope), (dst, dst_actions, dst_scope)):
        if actions:
            key = (db, coll if scope == "ns" else "")
            grants[key] = grants.get(key, set()) | set(actions)
    if rename_same_db:
        grants[(SRC_DB, "")] = grants.get((SRC_DB, ""), set()) | {"renameCollectionSameDB"}
    privileges = [{"resource": {"db": db, "collection": coll}, "actions": sorted(actions)}
                  for (db, coll), actions in grants.items()]
    root_client.admin.command("updateRole", role, privileges=privileges)

    root_client[src[0]].drop_collection(src[1])
    root_client[dst[0]].drop_collection(dst[1])
    root_client[src[0]][src[1]].insert_one({"secret": 1})
    expected = _mongod_allows(grants, src, dst, rename_same_db, drop_target)
    try:
        conn.admin.command("renameCollection", f"{src[0]}.{src[1]}", to=f"{dst[0]}.{dst[1]}",
                           dropTarget=drop_target)
        allowed = True
    except OperationFailure as failure:
        assert failure.code == 13, failure.details
        assert failure.details["errmsg"].startswith("not authorized on admin to execute command "), failure.details
        allowed = False
    assert allowed == expected, (grants, drop_target)
    # what was allowed happened; what was refused changed nothing
    moved = root_client[dst[0]][dst[1]].count_documents({}) == 1
    assert moved == allowed and root_client[src[0]][src[1]].count_documents({}) == (0 if allowed else 1)
