"""What an update stores may nest at most 180 levels, as an insert's document.

mongod validates an update's result for storage (src/mongo/db/update/storage_validation.cpp,
scanDocument): a top-level field is an element at level 1 (an ``_id`` document's fields too), each
element inside another one level below it, and an element past level 180 answers 15 Overflow
"Document exceeds maximum nesting depth of 180": operator updates check the elements they modified
(ModifierNode::validateUpdate), replacements and pipelines the whole result, upserts the whole
document to insert — through update, findAndModify and a time-series meta update alike. Tidemark
checked only inserts (15 "cannot insert document because it exceeds 180 levels of nesting"), so an
update stored documents no insert could write.

The family: chains of documents and arrays around the limit, ending in a scalar or an empty
container, written through each kind of update; the expected outcome comes from the deepest
element's level, computed here.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "update", "findAndModify", "create")

LIMIT = 180
MESSAGE = "Document exceeds maximum nesting depth of 180"


def chain(kinds: list[str], leaf):
    """Containers nested as ``kinds`` says, outermost first ("d": a document, "l": an array)."""
    value = leaf
    for kind in reversed(kinds):
        value = {"a": value} if kind == "d" else [value]
    return value


def deepest(value, level: int) -> int:
    """The level of the deepest element when ``value`` is an element at ``level``."""
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    return max((deepest(c, level + 1) for c in children), default=level)


# (name, level of the element the value becomes, how to write it) per kind of update
def write_set(db, value):
    db.c.update_one({"_id": 1}, {"$set": {"x": value}})


def write_set_dotted(db, value):
    db.c.update_one({"_id": 1}, {"$set": {"p.q": value}})


def write_push(db, value):
    db.c.update_one({"_id": 1}, {"$push": {"arr": value}})


def write_replace(db, value):
    db.c.replace_one({"_id": 1}, {"x": value})


def write_pipeline(db, value):
    db.c.update_one({"_id": 1}, [{"$set": {"x": {"$literal": value}}}])


def write_upsert(db, value):
    db.c.update_one({"_id": 2}, {"$set": {"x": value}}, upsert=True)


def write_upsert_seed(db, value):  # the value comes from the query's equality, not the update
    db.c.update_one({"_id": 2, "x": value}, {"$set": {"y": 1}}, upsert=True)


def write_find_and_modify(db, value):
    db.c.find_one_and_update({"_id": 1}, {"$set": {"x": value}}, return_document=ReturnDocument.AFTER)


def write_ts_meta(db, value):
    db.ts.update_many({"m.k": 1}, {"$set": {"m.v": value}})


WRITES = [(write_set, 1), (write_set_dotted, 2), (write_push, 2), (write_replace, 1), (write_pipeline, 1),
          (write_upsert, 1), (write_upsert_seed, 1), (write_find_and_modify, 1), (write_ts_meta, 2)]


def stored(db):
    return list(db.c.find({}, {"_id": 1, "x": 1, "arr": 1, "p": 1})) + list(db.ts.find({}, {"m": 1, "_id": 0}))


def setup(db):
    db.c.drop()
    db.ts.drop()
    db.c.insert_one({"_id": 1, "arr": []})
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": dt.datetime(2024, 1, 1), "m": {"k": 1}})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    write=st.sampled_from(WRITES),
    kinds=st.integers(LIMIT - 6, LIMIT + 4).flatmap(lambda n: st.lists(st.sampled_from("dl"), min_size=n,
                                                                         max_size=n)),
    leaf=st.sampled_from([1, "s", {}, []]),
)
def test_an_update_stores_at_most_180_levels(db, write, kinds, leaf):
    fn, level = write
    setup(db)
    value = chain(kinds, leaf)
    before = stored(db)
    if deepest(value, level) <= LIMIT:
        fn(db, value)
        return
    with pytest.raises(OperationFailure) as err:
        fn(db, value)
    assert (err.value.code, err.value.details["errmsg"]) == (15, MESSAGE)
    assert stored(db) == before  # nothing written


def test_dotted_paths_count_their_levels(db):
    setup(db)
    db.c.update_one({"_id": 1}, {"$set": {".".join(["a"] * LIMIT): 1}})  # the leaf at level 180
    with pytest.raises(OperationFailure) as err:
        db.c.update_one({"_id": 1}, {"$set": {".".join(["b"] * (LIMIT + 1)): 1}})
    assert (err.value.code, err.value.details["errmsg"]) == (15, MESSAGE)
    with pytest.raises(OperationFailure) as err:
        db.c.update_one({"_id": 1}, {"$set": {".".join(["c"] * 190): 1}})
    assert err.value.code == 15


def test_an_id_document_starts_a_level_higher(db):
    """scanDocument validates an ``_id`` document's fields at level 1 (the ``_id`` element at 0)."""
    setup(db)
    inner = chain(["d"] * (LIMIT - 1), 1)  # in _id: its leaf at level 180; in x: at level 181
    db.c.replace_one({"_id": 3}, {"_id": 3}, upsert=True)
    with pytest.raises(OperationFailure) as err:
        db.c.replace_one({"_id": 3}, {"x": {"a": inner}})
    assert err.value.code == 15
    db.c.update_one({"_id": {"a": inner}}, {"$set": {"y": 1}}, upsert=True)
    assert db.c.count_documents({"y": 1}) == 1


def test_an_untouched_field_is_not_checked_by_an_operator_update(db):
    """Only what an operator update modified is validated: a document nested past the limit in a field
    the update leaves alone (here a bucket's data, deeper than its measurement's field) still updates."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": dt.datetime(2024, 1, 1), "m": {"k": 1}, "x": chain(["d"] * (LIMIT - 2), 1)})
    db.ts.update_many({"m.k": 1}, {"$set": {"m.k": 2}})
    assert db.ts.count_documents({"m.k": 2}) == 1

