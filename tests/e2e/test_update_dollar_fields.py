"""An update whose result has a top-level $-prefixed field is refused with mongod's storage validation
message (storage_validation.cpp scanDocument), whatever made the field ($set, $inc, a replacement); the
code was right (52), the message another (found porting jstests/core/write/updatea-style cases)."""

from __future__ import annotations

import pytest

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
