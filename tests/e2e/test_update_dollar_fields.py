"""An update whose result has a top-level $-prefixed field is refused with mongod's storage validation
message (storage_validation.cpp scanDocument), whatever made the field ($set, $inc, a replacement); the
code was right (52), the message another (found porting jstests/core/write/updatea-style cases)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo import UpdateOne

pytestmark = pytest.mark.commands("update")


@pytest.mark.parametrize("update, field", [
    ({"$set": {"$x": 1}}, "$x"), ({"$inc": {"$z": 1}}, "$z"), ({"$set": {"$secret.agent.x": 1}}, "$secret"),
    ({"_id": 1, "$r": 2}, "$r"), ({"$set": {"$set": {"a": 1}}}, "$set"),
])
def test_a_top_level_dollar_field_in_an_update_result(db, update, field):
    db.c.insert_one({"_id": 1})
    reply = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": update}]})
    error = reply["writeErrors"][0]
    assert error["code"] == 52
    assert error["errmsg"] == (f"The dollar ($) prefixed field '{field}' in '{field}' is not allowed in the context of "
                               "an update's replacement document. Consider using an aggregation pipeline with "
                               "$replaceWith.")
    assert db.c.find_one() == {"_id": 1}
    db.c.update_one({"_id": 1}, {"$set": {"a.$b": 1}})  # (nested: stored, as mongod 5.0+)
    assert db.c.find_one() == {"_id": 1, "a": {"$b": 1}}


# A document may hold top-level $-prefixed fields: mongod 5.0+ stores them on insert (and an upsert, a
# pipeline's $setField). An operator update validates only the elements it writes (each modifier node's
# validateUpdate: storage_validation of the changed element), so an update of its other fields updates it;
# Tidemark checked every top-level name of the result and refused every operator update of such a
# document (52), through update, findAndModify and bulk writes alike.
DOLLAR_NAMES = st.sampled_from(["$y", "$set", "$inc", "$x1", "$Y_2", "$é"])
OTHER_UPDATES = st.sampled_from([
    {"$set": {"a": 1}}, {"$inc": {"n": 2}}, {"$unset": {"n": 1}}, {"$push": {"l": 3}}, {"$set": {"sub.$x": 1}},
    {"$rename": {"n": "m"}}, {"$currentDate": {"d": True}}, {"$max": {"n": 9}},
])


@settings(max_examples=25, deadline=None)
@given(names=st.lists(DOLLAR_NAMES, min_size=1, max_size=3, unique=True), other=OTHER_UPDATES,
       how=st.sampled_from(["update", "findAndModify", "bulk"]))
def test_operator_updates_of_other_fields_update_a_document_holding_top_level_dollar_fields(
        client, names, other, how):
    db = client.test_update_dollar_family
    db.c.drop()
    doc = {"_id": 1, **{name: {"v": name} for name in names}, "n": 1, "l": []}
    db.c.insert_one(doc)
    if how == "update":
        reply = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": other}]})
        assert "writeErrors" not in reply and reply["nModified"] == 1
    elif how == "findAndModify":
        db.command({"findAndModify": "c", "query": {"_id": 1}, "update": other})
    else:
        db.c.bulk_write([UpdateOne({"_id": 1}, other)])
    stored = db.c.find_one()
    assert {name: stored[name] for name in names} == {name: {"v": name} for name in names}
    # writing one of them is still refused, with mongod's message, and changes nothing
    name = names[0]
    for update in ({"$set": {name: 2}}, {"$inc": {f"{name}.v2": 1}}):
        reply = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": update}]})
        assert reply["writeErrors"][0]["code"] == 52, update
        assert f"'{name}' in '{name}'" in reply["writeErrors"][0]["errmsg"]
    assert db.c.find_one() == stored
    # a replacement keeping it is refused; unsetting it is an update like any other
    reply = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {**stored, "n": 7}}]})
    assert reply["writeErrors"][0]["code"] == 52
    db.c.update_one({"_id": 1}, {"$unset": {name: 1}})
    assert name not in db.c.find_one()
