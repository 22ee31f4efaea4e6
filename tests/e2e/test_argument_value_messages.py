"""Refusals that show the value a client sent show it as mongod does (BSONElement's rendering: null,
true, NumberDecimal("NaN"), new Date(...), BinData(0, ...)), never Python's (None, True, Decimal128('NaN'),
datetime.datetime(...), b''); and a value of the wrong BSON type gets the type's refusal first. Found by
tests/reliability/test_operator_argument_values.py's check for Python renderings."""

from __future__ import annotations

import datetime

import pymongo.errors
import pytest
from bson import Binary
from bson.decimal128 import Decimal128


def _refused(call) -> tuple[int, str]:
    with pytest.raises(pymongo.errors.OperationFailure) as refused:
        call()
    return refused.value.code, refused.value.details["errmsg"]


@pytest.mark.commands("find")
@pytest.mark.parametrize("value, shown", [
    (None, "null"), (True, "true"), (Decimal128("NaN"), 'NumberDecimal("NaN")'),
    (datetime.datetime(1970, 1, 1, 0, 0, 1), "new Date(1000)"), (Binary(b"\x01", 128), "BinData(128, 01)"),
    ([1, "a", None], '[ 1, "a", null ]'),
])
def test_query_operator_arguments_are_shown_as_bson(db, value, shown):
    db.c.insert_one({"a": 1})
    if not isinstance(value, (bytes, list)):  # (a BinData or an array of positions is a bit mask)
        code, message = _refused(lambda: db.c.find_one({"a": {"$bitsAllSet": value}}))
        assert message.endswith(f"$bitsAllSet: {shown}") and code in (2, 9)
    code, message = _refused(lambda: db.c.find_one({"$alwaysFalse": value}))
    assert code == 9 and message.endswith(f"$alwaysFalse: {shown}")
    code, message = _refused(lambda: list(db.c.aggregate([{"$collStats": value}])))
    assert code == 5447000 and message == f"$collStats must take a nested object but found: $collStats: {shown}"


@pytest.mark.commands("find", "aggregate")
def test_meta_takes_a_string(db):
    db.c.insert_one({"a": 1})
    assert _refused(lambda: list(db.c.aggregate([{"$project": {"x": {"$meta": None}}}]))) == (
        17307, "Invalid $project :: caused by :: $meta only supports string arguments")
    assert _refused(lambda: list(db.c.aggregate([{"$project": {"x": {"$meta": "nope"}}}])))[0] == 17308


@pytest.mark.commands("create", "collMod")
@pytest.mark.parametrize("field", ["validationLevel", "validationAction"])
def test_validation_enums_are_strings_first(db, field):
    code, message = _refused(lambda: db.create_collection("v", **{field: True}))
    assert (code, message) == (14, f"BSON field '{field}' is the wrong type 'bool', expected type 'string'")
    db.create_collection("v")
    assert _refused(lambda: db.command("collMod", "v", **{field: 1}))[0] == 14
    assert _refused(lambda: db.command("collMod", "v", **{field: "nope"}))[0] == 2
