"""$substrBytes (and its alias $substr) refuse a starting index below zero after truncation toward zero
(mongod's 50752), whatever the numeric type; a negative length still means "to the end"."""

from __future__ import annotations

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import evaluate


@pytest.mark.parametrize("op", ["$substrBytes", "$substr"])
@pytest.mark.parametrize("start,shown", [(-1, -1), (-10, -10), (Int64(-3), -3), (-1.5, -1), (-2.9, -2),
                                         (Decimal128("-1"), -1)])
def test_negative_start_is_50752(op, start, shown):
    with pytest.raises(MongoError) as info:
        evaluate({op: ["abcd", start, 2]}, {})
    assert info.value.code == 50752
    assert str(info.value) == f"$substrBytes:  starting index must be non-negative (got: {shown})"


@pytest.mark.parametrize("start,length,want", [(-0.5, 2, "ab"), (0, -1, "abcd"), (2, -5, "cd"), (4, -1, ""),
                                               (10, -1, "")])
def test_start_truncating_to_zero_and_negative_lengths(start, length, want):
    assert evaluate({"$substrBytes": ["abcd", start, length]}, {}) == want


def test_null_string_is_empty_before_any_index_check():
    assert evaluate({"$substrBytes": [None, 0, 4]}, {}) == ""
