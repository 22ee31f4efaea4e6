"""A projection field whose value is a lone $-field naming no expression fails 31325 'Unknown expression $x'
(mongod 7.0 projection_parser.cpp, parseSubObject), at any depth; expression names, find's $slice /
$elemMatch and $meta keep their own parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import OPERATORS, SPECIAL_OPERATORS
from tidemark.query.project import compile_projection

KNOWN = sorted(set(OPERATORS) | SPECIAL_OPERATORS)


def _code(spec) -> int | None:
    try:
        compile_projection(spec)
    except MongoError as e:
        return e.code
    return None


@given(name=st.text(st.characters(codec="utf-8", exclude_characters="\0."), min_size=1, max_size=12),
       nested=st.booleans(), arg=st.sampled_from([1, ["bar"], {}, "$a"]))
def test_an_unknown_operator_fails_31325_at_any_depth(name, nested, arg):
    op = f"${name}"
    spec = {"a": {"b": {op: arg}}} if nested else {"a": {op: arg}}
    if op in ("$id", "$ref", "$db"):  # DBRef field names: an object holding them is a value, not an operator
        return
    if op in KNOWN or op in ("$slice", "$elemMatch"):
        assert _code(spec) != 31325
        return
    with pytest.raises(MongoError) as info:
        compile_projection(spec)
    assert (info.value.code, info.value.message) == (31325, f"Unknown expression {op}")


@pytest.mark.parametrize("spec", [
    {"foo": {"$pop": ["bar"]}},  # find_and_modify.js (SERVER-17387)
    {"a": 1, "b": {"$where": "1"}},  # not an expression in mongod either
    {"_id": 0, "x.y": {"$nope": 1}},
])
def test_unknown_operators(spec):
    assert _code(spec) == 31325


@pytest.mark.parametrize("spec", [
    {"a": {"$slice": 2}}, {"a": {"$elemMatch": {"b": 1}}}, {"a": {"$meta": "textScore"}},
    {"a": {"$add": [1, 2]}}, {"a": {"$literal": {"$nope": 1}}},
])
def test_known_forms_are_not_unknown(spec):
    assert _code(spec) is None
