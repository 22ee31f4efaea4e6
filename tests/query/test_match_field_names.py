"""Filters on fields of any name: the empty name and names of spaces, unicode or punctuation are fields
like any other (``{"": 1}`` matches ``{"": 1}``, as in mongod), distinct from the conditions on a value
itself (value-form ``$elemMatch``, ``$in``/``$all`` regexes) the parser also builds. ``{"": 1}`` used
to compare the whole document with 1 and match nothing."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match import compile_filter

# top-level names: no dot (a path separator), not starting with $ (an operator), no NUL (not in BSON)
NAMES = st.one_of(st.sampled_from(["", " ", "a", "é", "-", "_id"]),
                  st.text(st.characters(blacklist_characters=".\x00"), max_size=4).filter(lambda s: not s.startswith("$")))
SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from(["", "x", "xy"]), st.none(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(name=NAMES, other=NAMES, value=SCALARS, stored=SCALARS, missing=st.booleans())
def test_conditions_on_a_field_of_any_name(name, other, value, stored, missing):
    doc = {} if missing else {name: stored}
    if other != name:
        doc[other] = value  # (another field holding the value must not make it match)
    present = name in doc
    same = present and doc[name] == value and type(doc[name]) is type(value)
    assert compile_filter({name: value})(doc) == (same if value is not None else (not present or doc[name] is None))
    assert compile_filter({name: {"$exists": True}})(doc) == present
    assert compile_filter({name: {"$in": [value, "zz"]}})(doc) == compile_filter({name: value})(doc) or (
        value is None)
    assert compile_filter({"$or": [{name: value}, {"never": 1}]})(doc) == compile_filter({name: value})(doc)
    assert compile_filter({"$nor": [{name: value}]})(doc) != compile_filter({name: value})(doc)


def test_the_empty_name_beside_conditions_on_values():
    doc = {"": [1, 5, "ab"], "a": [3, 7]}
    assert compile_filter({"": {"$elemMatch": {"$gt": 4}}})(doc)
    assert not compile_filter({"": {"$elemMatch": {"$gt": 5}}})(doc)
    assert compile_filter({"": {"$in": [re.compile("^a")]}})(doc)
    assert compile_filter({"": {"$all": [re.compile("b$"), 1]}})(doc)
    assert compile_filter({"a": {"$elemMatch": {"$gt": 6, "$lt": 8}}})(doc)
    assert not compile_filter({"": 3})(doc) and compile_filter({"": 5})(doc)
    assert compile_filter({"": {"$exists": True}})(doc) and not compile_filter({"": {"$exists": False}})(doc)
    assert compile_filter({"b": {"$exists": False}})(doc)
