"""DBRef field names where a filter operator goes: mongod's pathless parser maps ``$id``, ``$ref`` and
``$db`` to ``parseDBRef`` (expression_parser.cpp), an equality on that field name with the value taken
literally, at the top level, inside ``$and``/``$or``/``$nor`` clauses and in an object-form
``$elemMatch`` (jstests elemMatch projection: ``{x: {$elemMatch: {$id: 'id0'}}}``)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.match import Cmp, ElemMatch, compile_filter, parse_filter

DBREF_FIELDS = ("$id", "$ref", "$db")


@pytest.mark.parametrize("field", DBREF_FIELDS)
def test_dbref_field_parses_as_equality_at_any_level(field):
    assert parse_filter({field: "v"}) == Cmp(field, "$eq", "v")
    node = parse_filter({"x": {"$elemMatch": {field: "v"}}})
    assert node == ElemMatch("x", Cmp(field, "$eq", "v"), False)  # object form: the element's field
    assert compile_filter({"$or": [{field: "v"}, {"a": 1}]})({field: "v"})


def test_dbref_field_value_is_taken_literally():
    # parseDBRef builds an EqualityMatchExpression from the element as is: no operator parsing
    match = compile_filter({"x": {"$elemMatch": {"$id": {"$gt": 1}}}})
    assert match({"x": [{"$id": {"$gt": 1}}]})
    assert not match({"x": [{"$id": 5}]})


def test_other_dollar_names_still_refused_next_to_a_dbref_field():
    # a DBRef field makes the $elemMatch object form; $gt is then an unknown top-level operator (2)
    with pytest.raises(MongoError) as e:
        parse_filter({"x": {"$elemMatch": {"$id": 1, "$gt": 0}}})
    assert e.value.code == 2
    assert "unknown top level operator: $gt" in str(e.value)


_VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b"]))
_ELEMENTS = st.lists(st.one_of(_VALUES, st.dictionaries(st.sampled_from(DBREF_FIELDS), _VALUES, max_size=3)),
                     max_size=5)


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(DBREF_FIELDS), value=_VALUES, elements=_ELEMENTS)
def test_elem_match_on_a_dbref_field_selects_documents_with_that_field_equal(field, value, elements):
    match = compile_filter({"x": {"$elemMatch": {field: value}}})
    expected = any(isinstance(e, dict) and field in e and e[field] == value and type(e[field]) is type(value)
                   for e in elements)
    assert match({"x": elements}) == expected
