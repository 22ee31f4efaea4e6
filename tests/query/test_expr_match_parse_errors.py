"""A ``$expr`` in a filter naming a user variable the command does not define fails 17276 when the
filter is compiled (mongod's ``VariablesParseState`` at parse), not when a document first reaches the
reference: also on an empty collection or in a branch no document takes. Found porting expr.js."""

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.match import compile_filter


def code_of(call) -> int:
    with pytest.raises(MongoError) as info:
        call()
    return info.value.code


@pytest.mark.parametrize("flt", [
    {"$expr": {"$eq": ["$a", "$$unbound"]}},
    {"$or": [{"a": 1}, {"$expr": "$$unbound"}]},
    {"$expr": {"$map": {"input": "$xs", "as": "x", "in": "$$y"}}},
    {"$expr": {"$let": {"vars": {"v": 1}, "in": "$$w"}}},
])
def test_undefined_variable_fails_at_compile(flt):
    """17276 before any document is read (an empty collection fails too)."""
    assert code_of(lambda: compile_filter(flt)) == 17276


@pytest.mark.parametrize("flt,variables", [
    ({"$expr": {"$eq": ["$a", "$$x"]}}, {"x": 1}),
    ({"$expr": {"$lt": ["$a", "$$NOW"]}}, {}),
    ({"$expr": {"$eq": ["$$ROOT", "$$CURRENT"]}}, {}),
    ({"$expr": {"$map": {"input": "$xs", "as": "x", "in": "$$x"}}}, {}),
    ({"$expr": {"$let": {"vars": {"v": 1}, "in": "$$v"}}}, {}),
    ({"$expr": {"$filter": {"input": "$xs", "cond": "$$this"}}}, {}),
])
def test_defined_variables_compile(flt, variables):
    compile_filter(flt, variables=variables)
