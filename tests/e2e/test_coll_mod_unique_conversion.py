"""collMod's conversion of an index to unique and back (MongoDB 6.0+), as mongod 7.0 does it: the index
is first prepared (``prepareUnique: true``: new duplicate keys are refused, existing ones stay), then
converted (``unique: true``, refused with 359 CannotConvertIndexToUnique and the duplicates' _ids while
any remain; a ``dryRun`` only reports them), and can go back (``forceNonUnique: true``). createIndexes
takes ``prepareUnique`` too. All of it answered 115 before (collmod_convert_to_unique.js,
collmod_convert_to_unique_violations.js, index_prepareUnique.js; coll_mod.cpp, coll_mod_index.cpp).
"""

from __future__ import annotations

import pytest
from bson import Int64
from harness.jstests import command_fails
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import DuplicateKeyError, OperationFailure

pytestmark = pytest.mark.commands("collMod", "createIndexes")

CONFLICTS = "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again."


def coll_mod(db, name, index, **options):
    return db.command({"collMod": name, "index": index, **options})


def fails(db, cmd, code, message=None):
    """The command's error details (harness.jstests.command_fails), its message checked when given."""
    details = command_fails(db, cmd, code).details
    assert message is None or details["errmsg"] == message
    return details


def unique_indexes(coll, key):
    return [spec for spec in coll.list_indexes() if spec.get("unique") and dict(spec["key"]) == key]


def prepared(coll, key):
    return [spec for spec in coll.list_indexes() if spec.get("prepareUnique") is True and dict(spec["key"]) == key]


def sorted_violations(violations):
    """``violations`` in a canonical order (mongod's is the index's; the jstest sorts too)."""
    return sorted((sorted(v["ids"], key=repr) for v in violations), key=repr)


def groups(*ids):
    return sorted_violations([{"ids": list(each)} for each in ids])


def test_convert_to_unique(db):
    """collmod_convert_to_unique.js, step by step."""
    db.create_collection("c")
    db.c.create_index([("a", 1)])
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}}, 72,
          "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.")
    assert coll_mod(db, "c", {"keyPattern": {"a": 1}, "prepareUnique": True}) == {
        "prepareUnique_old": False, "prepareUnique_new": True, "ok": 1.0}
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": "100"}}, 14)
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": False}}, 2, "Cannot make index non-unique")
    fails(db, {"collMod": "c_missing", "index": {"keyPattern": {"a": 1}, "unique": True}}, 26,
          f"ns does not exist for unique index conversion: {db.name}.c_missing")

    # conversion fails while duplicates exist
    coll_mod(db, "c", {"keyPattern": {"a": 1}, "prepareUnique": False})
    assert prepared(db.c, {"a": 1}) == []  # (false removes the field)
    db.c.insert_many([{"_id": 1, "a": 100}, {"_id": 2, "a": 100}])
    coll_mod(db, "c", {"keyPattern": {"a": 1}, "prepareUnique": True})
    details = fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}}, 359, CONFLICTS)
    assert details["violations"] == [{"ids": [1, 2]}]
    assert unique_indexes(db.c, {"a": 1}) == [] and len(prepared(db.c, {"a": 1})) == 1
    db.c.delete_one({"_id": 2})

    # dry run: only a conversion to unique, alone
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "hidden": True}, "dryRun": True}, 72)
    fails(db, {"collMod": "c", "validationLevel": "off", "dryRun": True}, 72)
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "hidden": True, "unique": True}, "dryRun": True}, 72,
          "unique: true cannot be combined with any other modification in dry run mode.")
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}, "validationLevel": "off",
               "dryRun": True}, 72, "unique: true cannot be combined with any other modification in dry run mode.")
    assert coll_mod(db, "c", {"keyPattern": {"a": 1}, "unique": True}, dryRun=True) == {"ok": 1.0}
    assert unique_indexes(db.c, {"a": 1}) == []
    coll_mod(db, "c", {"keyPattern": {"a": 1}, "prepareUnique": False})
    db.c.insert_one({"_id": 3, "a": 100})
    coll_mod(db, "c", {"keyPattern": {"a": 1}, "prepareUnique": True})
    details = fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}, "dryRun": True}, 359)
    assert details["violations"] == [{"ids": [1, 3]}]
    db.c.delete_one({"_id": 3})

    # the conversion
    assert coll_mod(db, "c", {"keyPattern": {"a": 1}, "unique": True}) == {"unique_new": True, "ok": 1.0}
    assert len(unique_indexes(db.c, {"a": 1})) == 1 and prepared(db.c, {"a": 1}) == []
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 100, "a": 100})
    assert coll_mod(db, "c", {"keyPattern": {"a": 1}, "unique": True}) == {"ok": 1.0}  # (already unique: no-op)

    # and back
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "forceNonUnique": False}}, 2,
          "'forceNonUnique: false' is not supported")
    assert coll_mod(db, "c", {"keyPattern": {"a": 1}, "forceNonUnique": True}) == {"forceNonUnique_new": True, "ok": 1.0}
    assert unique_indexes(db.c, {"a": 1}) == []
    db.c.insert_one({"_id": 100, "a": 100})
    assert sorted(d["_id"] for d in db.c.find({"a": 100}).hint([("a", 1)])) == [1, 100]
    assert coll_mod(db, "c", {"keyPattern": {"a": 1}, "forceNonUnique": True}) == {"ok": 1.0}  # (no-op)


def test_violations_of_single_and_compound_indexes(db):
    """collmod_convert_to_unique_violations.js: one ``ids`` group per duplicated key."""
    db.create_collection("c")
    db.c.create_index([("a", 1)])
    db.c.create_index([("a", 1), ("b", 1)])

    def violations(key):
        coll_mod(db, "c", {"keyPattern": key, "prepareUnique": True})
        details = fails(db, {"collMod": "c", "index": {"keyPattern": key, "unique": True}}, 359, CONFLICTS)
        coll_mod(db, "c", {"keyPattern": key, "prepareUnique": False})
        return sorted_violations(details["violations"])

    db.c.insert_many([{"_id": 1, "a": 100, "b": 1}, {"_id": 2, "a": 100, "b": 2}])
    assert violations({"a": 1}) == groups([1, 2])
    db.c.insert_one({"_id": 3, "a": 100, "b": 3})
    assert violations({"a": 1}) == groups([1, 2, 3])
    db.c.insert_one({"_id": 4, "a": 101, "b": 4})
    assert violations({"a": 1}) == groups([1, 2, 3])
    db.c.insert_many([{"_id": 5, "a": 105, "b": 5}, {"_id": 6, "a": 105, "b": 6}])
    assert violations({"a": 1}) == groups([1, 2, 3], [5, 6])
    db.c.insert_one({"_id": 7, "a": 105, "b": 6})
    assert violations({"a": 1, "b": 1}) == groups([6, 7])
    db.c.insert_many([{"_id": 8, "a": 105, "b": 6}, {"_id": 9, "a": 101, "b": 4}])
    assert violations({"a": 1, "b": 1}) == groups([4, 9], [6, 7, 8])
    db.c.insert_one({"_id": "10", "a": 101, "b": 4})
    assert violations({"a": 1, "b": 1}) == groups([4, 9, "10"], [6, 7, 8])


def test_create_index_with_prepare_unique(db):
    """index_prepareUnique.js: existing duplicates stay, new ones are refused (insert and update)."""
    db.c.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "a": 1}])
    db.c.create_index([("a", 1)], prepareUnique=True)
    with pytest.raises(OperationFailure) as info:
        db.c.create_index([("a", 1)], prepareUnique=False)
    assert info.value.code == 85
    with pytest.raises(DuplicateKeyError) as dup:
        db.c.insert_one({"_id": 2, "a": 1})
    assert dup.value.details["keyPattern"] == {"a": 1} and dup.value.details["keyValue"] == {"a": 1}
    db.c.insert_one({"_id": 3, "a": 2})
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"_id": 3}, {"$set": {"a": 1}})
    db.c.update_one({"_id": 0}, {"$set": {"b": 1}})  # (its own key: no duplicate)
    assert sorted(d["_id"] for d in db.c.find()) == [0, 1, 3] and db.c.find_one({"_id": 3})["a"] == 2
    assert len(prepared(db.c, {"a": 1})) == 1
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "prepareUnique": False}, "validationLevel": "off"},
          72, "prepareUnique cannot be combined with any other modification.")
    coll_mod(db, "c", {"keyPattern": {"a": 1}, "prepareUnique": False})
    db.c.insert_one({"_id": 2, "a": 1})
    assert prepared(db.c, {"a": 1}) == []

    # on a unique index prepareUnique is a no-op; both at once cannot be created
    db.d.create_index([("a", 1)], unique=True)
    assert coll_mod(db, "d", {"keyPattern": {"a": 1}, "prepareUnique": True}) == {"ok": 1.0}
    assert prepared(db.d, {"a": 1}) == []
    with pytest.raises(OperationFailure) as info:
        db.e.create_index([("a", 1)], unique=True, prepareUnique=True)
    assert info.value.code == 67
    db.f.create_index([("a", 1)], unique=True, prepareUnique=False)
    assert [s.get("prepareUnique") for s in db.f.list_indexes()] == [None, None]


@pytest.mark.slow
def test_conversion_survives_a_kill(start_server):
    """The index's new layout is durable: after kill -9 and a restart the index is unique and finds
    every document (compound keys, some long)."""
    server = start_server()
    db = server.client().t
    db.c.insert_many([{"_id": i, "a": i % 50, "s": "x" * (i % 7) * 200} for i in range(200)])
    db.c.create_index([("a", 1), ("s", 1)], name="as")
    coll_mod(db, "c", {"name": "as", "prepareUnique": True})
    coll_mod(db, "c", {"name": "as", "unique": True})
    server.kill()
    server.start()
    coll = server.client().t.c
    assert [s.get("unique") for s in coll.list_indexes()] == [None, True]
    assert sorted(d["_id"] for d in coll.find({"a": {"$gte": 0}}).hint("as")) == list(range(200))
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": 1000, "a": 3, "s": "x" * 600})


# -- the family: generated documents, prepared, converted ----------------------------------------------

SCALARS = st.sampled_from([1, 1.0, Int64(1), 2, 2.5, "x", "y", None, True])
VALUES = st.one_of(SCALARS, st.lists(SCALARS, min_size=1, max_size=3))
DOCS = st.lists(st.one_of(st.just({}), st.fixed_dictionaries({"a": VALUES})), max_size=8)


def _keys(doc):
    """The {a: 1} index keys of ``doc`` as mongod compares them (numbers by value, missing is null)."""
    value = doc.get("a")
    values = value if isinstance(value, list) else [value]
    return {("n", float(v)) if isinstance(v, int | float) and not isinstance(v, bool) else (type(v).__name__, v)
            for v in values}


def _model_violations(docs):
    holders: dict = {}
    for doc in docs:
        for key in _keys(doc):
            holders.setdefault(key, []).append(doc["_id"])
    return groups(*(ids for ids in holders.values() if len(ids) > 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS, extra=st.one_of(st.just({}), st.fixed_dictionaries({"a": VALUES})))
def test_conversion_family(db, docs, extra):
    """Any documents: the prepared index refuses exactly the inserts whose keys another document holds;
    the conversion reports exactly the keys more than one document holds, and succeeds when none."""
    db.drop_collection("c")
    docs = [{"_id": i, **doc} for i, doc in enumerate(docs)]
    if docs:
        db.c.insert_many(docs)
    db.c.create_index([("a", 1)])
    coll_mod(db, "c", {"keyPattern": {"a": 1}, "prepareUnique": True})
    extra = {"_id": "extra", **extra}
    held = set().union(*(_keys(d) for d in docs)) if docs else set()
    try:
        db.c.insert_one(extra)
    except DuplicateKeyError:
        assert _keys(extra) & held, extra
        assert db.c.find_one({"_id": "extra"}) is None
    else:
        assert not _keys(extra) & held, extra
        docs.append(extra)
    expected = _model_violations(docs)
    try:
        reply = coll_mod(db, "c", {"keyPattern": {"a": 1}, "unique": True})
    except OperationFailure as exc:
        assert exc.code == 359 and expected, (docs, exc.details)
        assert sorted_violations(exc.details["violations"]) == expected
        assert unique_indexes(db.c, {"a": 1}) == []
    else:
        assert not expected and reply == {"unique_new": True, "ok": 1.0}, docs
        assert len(unique_indexes(db.c, {"a": 1})) == 1
    assert sorted((d["_id"] for d in db.c.find({}).hint([("a", 1)])), key=repr) == sorted((d["_id"] for d in docs), key=repr)
