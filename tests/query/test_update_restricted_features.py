"""Pure unit tests of the update behaviours mongod 7.0 decides while it parses a write, and of the
match details '$' and returnKey read:

- a ``$pull`` condition is parsed with every special feature banned (PullNode): ``$expr`` and
  ``$jsonSchema`` 224, ``$where``, ``$text`` and the near operators 2, before any document is read;
- an upsert's query may not hold ``$expr`` (ParsedUpdate): 224 "$expr is not allowed in the query
  predicate for an upsert";
- '$' takes the position recorded by the last conjunct of the normalized query (sorted by match
  type, then path) that matched through an array (and2.js);
- find's returnKey shows the index entry the scan met, and a collated index's comparison key.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.commands.crud import _index_key_of
from tidemark.protocol.errors import MongoError
from tidemark.query.access_path import Interval, Plan
from tidemark.query.update import apply_update, check_upsert_query, parse_update
from tidemark.storage.keys import encode_key

QUERY_FEATURE_NOT_ALLOWED, BAD_VALUE = 224, 2
EXPR = {"$expr": {"$eq": ["$b", 5]}}
# feature -> (a filter clause using it, code, mongod's message at the filter's own level)
BANNED = {
    "$expr": (EXPR, QUERY_FEATURE_NOT_ALLOWED, "$expr is not allowed in this context"),
    "$jsonSchema": ({"$jsonSchema": {}}, QUERY_FEATURE_NOT_ALLOWED, "$jsonSchema is not allowed in this context"),
    "$where": ({"$where": "true"}, BAD_VALUE, "$where is not allowed in this context"),
    "$text": ({"$text": {"$search": "x"}}, BAD_VALUE, "$text is not allowed in this context"),
    "$near": ({"loc": {"$near": [0, 0]}}, BAD_VALUE, "$geoNear, $near, and $nearSphere are not allowed in this context"),
}


def refused(fn, *args, **kw) -> tuple[int, str]:
    with pytest.raises(MongoError) as info:
        fn(*args, **kw)
    return info.value.code, info.value.message


def nest(clause: dict, wrappers: list[str]) -> dict:
    """``clause`` inside the logical operators ``wrappers`` (innermost last), beside a plain clause."""
    for op in reversed(wrappers):
        clause = {op: [{"b": 1}, clause]}
    return clause


# -- $pull conditions --------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(feature=st.sampled_from(sorted(BANNED)), wrappers=st.lists(st.sampled_from(["$and", "$or", "$nor"]), max_size=3),
       plain_first=st.booleans())
def test_pull_condition_refuses_special_features_at_parse(feature, wrappers, plain_first):
    clause, code, message = BANNED[feature]
    condition = nest(clause, wrappers)
    if plain_first:
        condition = {"c": 1, **condition}
    assert refused(parse_update, {"$pull": {"a": condition}}) == (code, message)


@pytest.mark.parametrize("feature, code, message", [
    ("$expr", BAD_VALUE, "$expr can only be applied to the top-level document"),
    ("$text", BAD_VALUE, "$text can only be applied to the top-level document"),
    ("$where", BAD_VALUE, "$where is not allowed in this context"),
    ("$jsonSchema", QUERY_FEATURE_NOT_ALLOWED, "$jsonSchema is not allowed in this context"),
])
def test_pull_condition_inside_elem_match_checks_the_level_first(feature, code, message):
    clause = BANNED[feature][0]
    for condition in ({"x": {"$elemMatch": clause}}, {"$elemMatch": clause}):
        assert refused(parse_update, {"$pull": {"a": condition}}) == (code, message)


def test_pull_operator_condition_refuses_near():
    assert refused(parse_update, {"$pull": {"a": {"$near": [0, 0]}}})[0] == BAD_VALUE


@pytest.mark.parametrize("condition", [{"b": 5}, {"$gt": 1}, {"$and": [{"b": 1}]}, {"b": {"$elemMatch": {"c": 1}}}, 5])
def test_pull_condition_without_special_features_still_pulls(condition):
    doc = {"_id": 0, "a": [{"b": 5}, {"b": 1, "c": 1}, {"b": [{"c": 1}]}, 5, 2]}
    new, _ = apply_update(doc, parse_update({"$pull": {"a": condition}}))
    assert len(new["a"]) < len(doc["a"])


def test_array_filters_keep_their_prefix():
    code, message = refused(parse_update, {"$set": {"a.$[i]": 1}}, array_filters=[{"i": 1, **EXPR}])
    assert (code, message) == (QUERY_FEATURE_NOT_ALLOWED,
                               "Error parsing array filter :: caused by :: $expr is not allowed in this context")


# -- upsert queries ----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(wrappers=st.lists(st.sampled_from(["$and", "$or", "$nor"]), max_size=3))
def test_upsert_query_refuses_expr_at_the_document_level(wrappers):
    query = {"_id": 0, **nest(EXPR, wrappers)}
    assert refused(check_upsert_query, query) == (
        QUERY_FEATURE_NOT_ALLOWED, "$expr is not allowed in the query predicate for an upsert")


@pytest.mark.parametrize("query", [{}, {"a": 1}, {"$or": [{"a": 1}, {"b": {"$gt": 2}}]},
                                   {"a": {"$elemMatch": {"b": 1}}}, {"$comment": "x", "a": {"$in": [1, 2]}}])
def test_upsert_query_without_expr_is_accepted(query):
    check_upsert_query(query)


# -- '$' from the last conjunct that matched through an array ------------------------------------

def positional(doc: dict, query: dict, path: str = "a.$", value=5) -> dict:
    return apply_update(doc, parse_update({"$set": {path: value}}), query=query)[0]


@pytest.mark.parametrize("query, expected", [
    ({"a": 1, "b": 4}, [1, 5]),  # equalities sorted by path: b's position (1) wins
    ({"b": 4, "a": 1}, [1, 5]),
    ({"a": 1, "$and": [{"b": 4}]}, [1, 5]),
    ({"$and": [{"$and": [{"b": 4}]}, {"a": 1}]}, [1, 5]),
    ({"a": 1, "$or": [{"b": 4}]}, [1, 5]),  # a one-clause $or is its clause
    ({"a": 1, "b": {"$ne": 3}}, [5, 2]),  # a negation records nothing
    ({"a": 1, "$or": [{"b": 4}, {"b": 9}]}, [5, 2]),  # nor does an $or of several clauses
    ({"a": {"$gte": 1}, "b": 4}, [5, 2]),  # $gte sorts after an equality: a's position (0) wins
    ({"a": 1, "b": {"$elemMatch": {"$eq": 4}}}, [5, 2]),  # $elemMatch sorts before it
    ({"a": 1, "b": {"$exists": True}}, [5, 2]),  # b's position is its first element
])
def test_positional_takes_the_last_recorded_position(query, expected):
    doc = {"_id": 0, "a": [1, 2], "b": [3, 4]}
    assert positional(doc, query)["a"] == expected


def test_positional_without_a_recorded_position_fails():
    assert refused(positional, {"_id": 0, "a": [1, 2]}, {"a": {"$ne": 7}})[0] == BAD_VALUE
    assert refused(positional, {"_id": 0, "a": [1, 2], "b": [3]}, {"a": {"$size": 2}})[0] == BAD_VALUE


@settings(max_examples=80, deadline=None)
@given(a=st.lists(st.integers(0, 3), min_size=1, max_size=4), b=st.lists(st.integers(0, 3), min_size=1, max_size=4),
       x=st.integers(0, 3), y=st.integers(0, 3), order=st.permutations(["a", "b", "and"]))
def test_positional_ignores_conjunct_order(a, b, x, y, order):
    """The position depends on the normalized query, never on the order its clauses are written in."""
    doc = {"_id": 0, "a": a, "b": b}
    clauses = {"a": {"a": x}, "b": {"b": y}, "and": {"$and": [{"_id": 0}]}}
    if x not in a or y not in b:
        return
    results = []
    for keys in itertools.permutations(order):
        query: dict = {}
        for key in keys:
            query.update(clauses[key])
        try:
            results.append(positional(doc, query, "a.$", "set"))
        except MongoError as exc:
            results.append(exc.code)
    assert all(r == results[0] for r in results)
    expected = b.index(y)  # b sorts last among the equalities
    # past a's end the position pads with nulls, as $set of 'a.<n>' does (mongod applies the positional
    # element wherever its path leads: test_update_node_ports.py)
    padded = a + [None] * max(0, expected + 1 - len(a))
    assert results[0] == {**doc, "a": padded[:expected] + ["set"] + padded[expected + 1:]}


# -- returnKey ---------------------------------------------------------------------------------

def test_return_key_shows_the_entry_the_scan_met():
    index = {"name": "a.b_1", "key": {"a.b": 1}, "v": 2}
    doc = {"_id": 0, "a": [{"b": 0}, {"c": 0}, {"b": 7}]}  # keys 0, null, 7
    forward = Plan("IXSCAN", index=index, intervals=[Interval(encode_key([None]), None, True, False)])
    assert _index_key_of(forward)(doc) == {"a.b": None}
    from_one = Plan("IXSCAN", index=index, intervals=[Interval(encode_key([1]), None, True, False)])
    assert _index_key_of(from_one)(doc) == {"a.b": 7}
    backward = Plan("IXSCAN", index=index, intervals=[Interval(None, None)], reverse=True)
    assert _index_key_of(backward)(doc) == {"a.b": 7}
    assert _index_key_of(Plan("COLLSCAN"))(doc) == {}


def test_return_key_of_a_collated_index_is_the_comparison_key():
    index = {"name": "a_1", "key": {"a": 1}, "v": 2, "collation": {"locale": "fr_CA"}}
    key = _index_key_of(Plan("IXSCAN", index=index, intervals=[Interval(None, None)]))({"_id": 0, "a": "foo"})
    assert isinstance(key["a"], str) and key["a"] != "foo" and not key["a"].endswith("\x00")
    assert _index_key_of(Plan("IXSCAN", index=index, intervals=[Interval(None, None)]))({"a": 3}) == {"a": 3}
