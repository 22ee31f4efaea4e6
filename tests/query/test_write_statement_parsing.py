"""Pure parts of the write-command parser (server/commands/write_statements.py): a delete's ``limit``
read as mongod's ``numberDouble`` and the filling of empty timestamps (jstests/core/empty_ts.js)."""

from __future__ import annotations

import pytest
from bson import Decimal128, Int64, Timestamp
from hypothesis import given
from hypothesis import strategies as st

from tidemark.arguments import check_command
from tidemark.commands import write_statements as ws
from tidemark.protocol.errors import MongoError

EMPTY = Timestamp(0, 0)


@pytest.mark.parametrize("value, limit", [(0, 0), (1, 1), (0.0, 0), (1.0, 1), (Int64(1), 1), (Decimal128("1"), 1),
                                          (Decimal128("0.0"), 0), (True, 0), (False, 0), ("1", 0), (None, 0),
                                          ({"a": 1}, 0), ([1], 0)])
def test_delete_limit_reads_a_number_and_anything_else_as_zero(value, limit):
    assert ws.delete_limit(value) == limit


@pytest.mark.parametrize("value, shown", [(2, "2"), (-1, "-1"), (0.5, "0.5"), (Int64(7), "7"), (1e20, "1e+20"),
                                          (Decimal128("-0.25"), "-0.25"), (123456789, "1.23457e+08"),
                                          (float("nan"), "nan"), (Decimal128("sNaN"), "nan"),
                                          (Decimal128("-Infinity"), "-inf")])
def test_delete_limit_other_than_0_or_1_is_failed_to_parse(value, shown):
    with pytest.raises(MongoError) as info:
        ws.delete_limit(value)
    assert info.value.code == 9
    assert info.value.message == f"The limit field in delete objects must be 0 or 1. Got {shown}"


def test_fill_keeps_a_document_without_empty_timestamps():
    doc = {"_id": 1, "a": Timestamp(1, 2), "b": {"c": EMPTY}, "d": [EMPTY]}
    assert ws.fill_empty_timestamps(doc) is doc


def test_fill_replaces_top_level_empty_timestamps_but_not_id():
    doc = {"_id": EMPTY, "a": EMPTY, "b": 1, "c": EMPTY, "n": {"x": EMPTY}}
    out = ws.fill_empty_timestamps(doc)
    assert list(out) == list(doc)
    assert out["_id"] == EMPTY and out["b"] == 1 and out["n"] == {"x": EMPTY}
    assert EMPTY < out["a"] < out["c"]
    assert doc["a"] == EMPTY  # the input is left as it was


@given(st.lists(st.sampled_from(["ts", "other"]), max_size=8))
def test_filled_timestamps_strictly_increase(kinds):
    values = [ws.next_timestamp() for _ in kinds]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))
    assert all(v.time > 0 and v.inc >= 1 for v in values)


@pytest.mark.parametrize("update, filled", [({"a": EMPTY}, True), ({}, False), ({"$set": {"a": EMPTY}}, False),
                                            ([{"$addFields": {"a": EMPTY}}], False)])
def test_only_a_replacement_is_filled(update, filled):
    out = ws.fill_replacement_timestamps(update)
    assert (out is not update) == filled
    if filled:
        assert out["a"] != EMPTY


@pytest.mark.parametrize("cmd, flags", [({}, (True, False)), ({"ordered": None, "bypassDocumentValidation": None},
                                                              (True, False)),
                                        ({"ordered": False, "bypassDocumentValidation": 1}, (False, True)),
                                        ({"bypassDocumentValidation": Decimal128("0")}, (True, False)),
                                        ({"bypassDocumentValidation": 0.5}, (True, True))])
def test_write_flags_read_as_mongods_idl(cmd, flags):
    check_command({"insert": "c", **cmd}, "insert")
    assert ws.write_flags(cmd) == flags


@pytest.mark.parametrize("cmd, message", [
    ({"ordered": 1}, "BSON field 'update.ordered' is the wrong type 'int', expected type 'bool'"),
    ({"ordered": "x"}, "BSON field 'update.ordered' is the wrong type 'string', expected type 'bool'"),
    ({"bypassDocumentValidation": {}}, "BSON field 'update.bypassDocumentValidation' is the wrong type 'object', "
                                       "expected types '[bool, long, int, decimal, double]'"),
])
def test_write_flags_of_a_wrong_type(cmd, message):
    with pytest.raises(MongoError) as info:
        check_command({"update": "c", **cmd}, "update")
    assert (info.value.code, info.value.message) == (14, message)
