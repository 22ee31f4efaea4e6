"""A projection's sub-object whose first field is one of a DBRef's own fields ($ref, $id, $db, which
FieldPath allows) is a sub-projection, not an expression, in find and $project alike
(aggregation/exec/dbref.js): ``{link: {$ref: 0}}`` answered 31325 "Unknown expression $ref" and
``{link: {$ref: 1, $id: 1, $db: "x"}}`` 15983."""

from __future__ import annotations

import pytest
from bson import DBRef
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "aggregate")

CASES = [
    ({"link": {"$ref": 0}, "linkArray": 0}, [{"_id": 0, "link": {"$id": "id0", "$db": "d"}}]),
    ({"link": 0, "linkArray": {"$id": 0}}, [{"_id": 0, "linkArray": [{"$ref": "o", "$db": "d"}, {"$ref": "o", "$db": "d"}]}]),
    ({"link": {"$ref": 1, "$id": 1, "$db": "someOtherDB"}}, [{"_id": 0, "link": DBRef("o", "id0", "someOtherDB")}]),
    ({"_id": 0, "linkArray": {"$ref": 1}}, [{"linkArray": [{"$ref": "o"}, {"$ref": "o"}]}]),
]


@pytest.mark.parametrize("how", ["find", "aggregate"])
@pytest.mark.parametrize("projection, expected", CASES)
def test_dbref_fields_in_a_projection(db, how, projection, expected):
    db.c.insert_one({"_id": 0, "link": DBRef("o", "id0", "d"), "linkArray": [DBRef("o", "id0", "d"), DBRef("o", "id1", "d")]})
    got = list(db.c.find({}, projection)) if how == "find" else list(db.c.aggregate([{"$project": projection}]))
    assert got == expected


@pytest.mark.parametrize("how", ["find", "aggregate"])
def test_other_dollar_fields_are_still_expressions(db, how):
    db.c.insert_one({"_id": 0, "a": 1})
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({}, {"a": {"$nope": 1}})) if how == "find" else list(db.c.aggregate([{"$project": {"a": {"$nope": 1}}}]))
    assert info.value.code == 31325
