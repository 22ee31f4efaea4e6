"""applyOps stores what its entries say, without the storage rules of a client's write.

mongod 7.0 applies applyOps entries in oplog application mode (src/mongo/db/repl/oplog.cpp,
applyOperation_inlock with OplogApplication::Mode::kApplyOpsCmd): an insert goes straight to the
collection, without insert.cpp's fixDocumentForInsert (its 180-level nesting rule, its ``_id``
``$``-name rule), and an update — a replacement, a ``$v: 2`` diff, the upsert an insert of an
existing ``_id`` becomes — is a fromOplogApplication request, which UpdateStage does not validate
for storage (update_stage.cpp: ``_isUserInitiatedWrite`` false, so no storage_validation: no
top-level ``$``-prefixed name rule, no nesting rule). Tidemark's applyOps ran its entries through the
client write path with every client rule: such entries failed with 15 or 52 (or ended the batch 8
UnknownError). Entries now carry a from-oplog flag through the write path
(``CommandContext.from_oplog`` -> ``prepare_insert`` / ``Update.from_oplog`` / ``replace_doc``),
which skips exactly those rules; the 16 MB limit and the ``_id`` type rules stay.

The family: documents nested around the limit with ``$``-prefixed names at the top level, inside
``_id`` and deeper, written by every kind of entry: applyOps stores each as given, where a client's
insert or replacement of the same document is refused.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands("applyOps", "insert", "update")

LIMIT = 180


def chain(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def apply(db, ops):
    return db.client.admin.command("applyOps", ops)


def insert_new(db, ns, doc):
    apply(db, [{"op": "i", "ns": ns, "o": doc}])


def insert_existing(db, ns, doc):  # an insert of an existing _id becomes an upsert (replacement)
    db.c.insert_one({"_id": doc["_id"], "old": 1})
    apply(db, [{"op": "i", "ns": ns, "o": doc}])


def replace(db, ns, doc):
    db.c.insert_one({"_id": doc["_id"], "old": 1})
    apply(db, [{"op": "u", "ns": ns, "o2": {"_id": doc["_id"]}, "o": doc}])


def replace_upsert(db, ns, doc):
    apply(db, [{"op": "u", "ns": ns, "o2": {"_id": doc["_id"]}, "o": doc}])


def diff(db, ns, doc):
    db.c.insert_one({"_id": doc["_id"]})
    fields = {k: v for k, v in doc.items() if k != "_id"}
    apply(db, [{"op": "u", "ns": ns, "o2": {"_id": doc["_id"]}, "o": {"$v": 2, "diff": {"i": fields}}}])


def diff_upsert(db, ns, doc):
    fields = {k: v for k, v in doc.items() if k != "_id"}
    apply(db, [{"op": "u", "ns": ns, "o2": {"_id": doc["_id"]}, "o": {"$v": 2, "diff": {"i": fields}}}])


ENTRIES = [insert_new, insert_existing, replace, replace_upsert, diff, diff_upsert]
# an insert's _id with $-prefixed names at its top level or deeper (fixDocumentForInsert's rule)
ID_KINDS = {"plain": 1, "dollar": {"$x": 1}, "nested": {"k": {"$y": 1}}}


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entry=st.sampled_from(ENTRIES),
    depth=st.integers(LIMIT - 5, LIMIT + 6),
    top_dollar=st.booleans(),
    id_kind=st.sampled_from(sorted(ID_KINDS)),
)
def test_apply_ops_stores_documents_the_client_rules_refuse(db, entry, depth, top_dollar, id_kind):
    db.c.drop()
    db.create_collection("c")
    ns = f"{db.name}.c"
    if entry is not insert_new:
        id_kind = "plain"  # (an update finds its document by o2's _id: a $-name there is an operator)
    doc = {"_id": ID_KINDS[id_kind], "x": chain(depth - 1)}  # x's leaf at level `depth`
    if top_dollar:
        doc["$f"] = {"$g": 1}
    entry(db, ns, doc)
    assert list(db.c.find({}, {"old": 0})) == [doc]


def test_one_entry_of_each_rule(db):
    db.create_collection("c")
    ns = f"{db.name}.c"
    deep = {"_id": 1, "x": chain(LIMIT + 3)}
    dollar_id = {"_id": {"$x": 1}, "y": 1}
    apply(db, [{"op": "i", "ns": ns, "o": deep}, {"op": "i", "ns": ns, "o": dollar_id},
               {"op": "i", "ns": ns, "o": {"_id": 2}},
               {"op": "u", "ns": ns, "o2": {"_id": 2}, "o": {"_id": 2, "$f": 1}}])
    assert list(db.c.find()) == [deep, dollar_id, {"_id": 2, "$f": 1}]


def test_the_client_paths_keep_their_rules(db):
    db.create_collection("c")
    with pytest.raises(WriteError) as err:
        db.c.insert_one({"_id": 1, "x": chain(LIMIT)})
    assert err.value.code == 15
    with pytest.raises(WriteError) as err:
        db.c.insert_one({"_id": {"$x": 1}})
    assert err.value.code == 52
    db.c.insert_one({"_id": 2})
    reply = db.command("update", "c", updates=[{"q": {"_id": 2}, "u": {"_id": 2, "$f": 1}}])
    assert reply["writeErrors"][0]["code"] == 52
    with pytest.raises(WriteError) as err:
        db.c.update_one({"_id": 2}, {"$set": {"x": chain(LIMIT)}})
    assert err.value.code == 15
    assert list(db.c.find()) == [{"_id": 2}]


def test_apply_ops_keeps_the_size_limit_and_id_rules(db):
    db.create_collection("c")
    ns = f"{db.name}.c"
    big = {"_id": 1, "s": "x" * (16 * 1024 * 1024)}  # past 16 MiB with its field names
    with pytest.raises(OperationFailure):
        apply(db, [{"op": "i", "ns": ns, "o": big}])
    with pytest.raises(OperationFailure) as err:
        apply(db, [{"op": "i", "ns": ns, "o": {"_id": [1]}}])
    assert err.value.code == 53
    assert db.c.count_documents({}) == 0
