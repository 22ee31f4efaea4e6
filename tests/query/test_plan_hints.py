"""plan.find_hinted_index: mongod's parseHint and planner answers for hints."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query import plan

A = {"v": 2, "key": {"a": 1}, "name": "a_1"}


@pytest.mark.parametrize("hint", [5, 1.5, [1], True, b"x"])
def test_a_hint_of_another_type_is_failed_to_parse(hint):
    with pytest.raises(MongoError) as info:
        plan.find_hinted_index([A], hint)
    assert (info.value.code, info.value.message) == (9, "Hint must be a string or an object")


@pytest.mark.parametrize("hint", ["a_1", {"a": 1}])
def test_a_hint_by_name_or_key_pattern(hint):
    assert plan.find_hinted_index([A], hint) is A


@pytest.mark.parametrize("hint", ["b_1", {"a": -1}, {"b": 1}])
def test_a_hint_naming_no_index_is_bad_value(hint):
    with pytest.raises(MongoError) as info:
        plan.find_hinted_index([A], hint)
    assert info.value.code == 2
