"""Pure parts of findAndModify's parsing the jstest port (tests/e2e/test_jstests_update_ops.py) found
differing from MongoDB 7.0: the IDL safeBool flags (``remove``, ``upsert``, ``new``,
``bypassDocumentValidation``: a bool or any number, read by its truth) and the refusal of a positional
projection of the new document (find_and_modify_server6865.js)."""

from __future__ import annotations

import pytest
from bson import Decimal128, Int64
from hypothesis import given
from hypothesis import strategies as st

from tidemark.arguments import check_command
from tidemark.commands import crud
from tidemark.commands import write_statements as ws
from tidemark.protocol.errors import MongoError


@pytest.mark.parametrize("value, truth", [
    (None, False), (True, True), (False, False), (0, False), (1, True), (-3, True), (Int64(0), False),
    (Int64(2**62), True), (0.0, False), (-0.0, False), (0.25, True), (float("nan"), True), (float("inf"), True),
    (Decimal128("0"), False), (Decimal128("-0E+5"), False), (Decimal128("0.001"), True), (Decimal128("NaN"), True),
    (Decimal128("-Infinity"), True),
], ids=repr)
def test_safe_bool_value_is_mongods_true_value(value, truth):
    assert ws.safe_bool_value(value) is truth


@given(st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True), st.booleans()))
def test_safe_bool_value_of_a_plain_number_is_nonzero(value):
    assert ws.safe_bool_value(value) is (value != 0)


@pytest.mark.parametrize("field", ["remove", "upsert", "new", "bypassDocumentValidation"])
@pytest.mark.parametrize("value, kind", [("1", "string"), ([], "array"), ({}, "object")])
def test_find_and_modify_flags_refuse_other_types(field, value, kind):
    cmd = {"findAndModify": "c", "update": {"$set": {"a": 1}}, field: value}
    with pytest.raises(MongoError) as info:
        check_command(cmd, "findAndModify")  # (the IDL-typed fields: the one table's check)
    assert info.value.code == 14
    assert info.value.message == (f"BSON field 'findAndModify.{field}' is the wrong type '{kind}', expected types "
                                  "'[bool, long, int, decimal, double]'")


@pytest.mark.parametrize("cmd, message", [
    ({"remove": Decimal128("1"), "upsert": 1.0}, "Cannot specify both upsert=true and remove=true "),
    ({"remove": 2, "new": Int64(1)},
     "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document"),
    ({"remove": Decimal128("0")}, "Either an update or remove=true must be specified"),
])
def test_combinations_read_numeric_flags_by_their_truth(cmd, message):
    with pytest.raises(MongoError) as info:
        ws.check_find_and_modify({"findAndModify": "c", **cmd}, "findAndModify")
    assert (info.value.code, info.value.message) == (9, message)


def test_numeric_false_flags_combine_freely():
    ws.check_find_and_modify({"findAndModify": "c", "remove": 1, "upsert": 0.0, "new": Decimal128("0")},
                             "findAndModify")


@pytest.mark.parametrize("fields, positional", [
    ({"a.$": 1}, True), ({"_id": 0, "b.c.$": 1}, True), ({"a": {"b.$": 1}}, True), ({"a": 1, "b": 0}, False),
    ({"a": {"$elemMatch": {"x": 1}}}, False), ({"a": {"$slice": 1}}, False), ({"a$": 1}, False),
    ({"a": {"b": 1}}, False),
], ids=str)
def test_positional_projection_detection(fields, positional):
    assert crud._has_positional_projection(fields) is positional


def test_an_update_that_is_not_an_object_or_a_pipeline_is_refused():
    with pytest.raises(MongoError) as info:
        ws.update_statements({"update": "c", "updates": [{"q": {}, "u": 5}]})
    assert (info.value.code, info.value.message) == (9, "Update argument must be either an object or an array")
