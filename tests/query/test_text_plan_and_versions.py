"""$text planning and text index versions against mongod 7.0: where a $text may sit in a filter
(``CanonicalQuery::isValid`` and ``QueryPlanner::plan``), array equalities on a compound text index's
prefix, the keyer cache telling a version-2 text index from a version-3 one, and code 201's name."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import ErrorCode, MongoError, code_name
from tidemark.query import index_keys
from tidemark.query.index_keys import keyer_for
from tidemark.query.plan import choose_plan
from tidemark.query.text_index import normalize_text_spec

TEXT = {"$text": {"$search": "apple"}}
ID_INDEX = {"name": "_id_", "key": {"_id": 1}}


def text_index(key: dict | None = None, **options: Any) -> dict:
    key = key or {"t": "text"}
    name = "_".join(f"{k}_{v}" for k, v in key.items())
    return {**normalize_text_spec(options, key), "name": name}


INDEXES = [ID_INDEX, text_index()]


def outcome(filter: dict, indexes: list[dict] = INDEXES) -> Any:
    """The plan kind, or (code, message) of the error."""
    try:
        return choose_plan(indexes, filter).kind
    except MongoError as e:
        return int(e.code), e.message


# --------------------------------------------------------------------------------------------------
# (1) code 201 has mongod's name
# --------------------------------------------------------------------------------------------------

def test_code_201_is_cannot_build_index_keys():
    assert ErrorCode(201).name == "CannotBuildIndexKeys"  # src/mongo/base/error_codes.yml
    assert code_name(201) == "CannotBuildIndexKeys"


def test_an_array_in_a_text_prefix_field_raises_201_by_name():
    keyer = keyer_for(text_index({"a": 1, "t": "text"}))
    with pytest.raises(MongoError) as e:
        keyer.entries({"_id": 1, "a": [1], "t": "x"})
    assert e.value.code == ErrorCode.CannotBuildIndexKeys


# --------------------------------------------------------------------------------------------------
# (2) version-2 text indexes
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [2, 2.0, 3])
def test_versions_2_and_3_can_be_created(version):
    assert normalize_text_spec({"textIndexVersion": version}, {"t": "text"})["textIndexVersion"] == int(version)


def _fresh_keys(spec: dict, doc: dict) -> list[bytes]:
    index_keys._KEYER_CACHE.clear()
    return keyer_for(spec).keys(doc)


@given(st.text(alphabet="aAéÉçÇoÔ -", min_size=1, max_size=12))
@settings(max_examples=60, deadline=None)
def test_the_keyer_cache_tells_versions_apart(text):
    """Same name, key and options but the version: whichever was keyed first, each index keys with
    its own version's tokenizer (v2 keeps diacritics and folds ASCII case only; v3 folds both)."""
    v2 = text_index(textIndexVersion=2, default_language="none")
    v3 = text_index(textIndexVersion=3, default_language="none")
    doc = {"_id": 1, "t": text}
    for first, second in ((v2, v3), (v3, v2)):
        expected = _fresh_keys(second, doc)
        _fresh_keys(first, doc)
        assert keyer_for(second).keys(doc) == expected


def test_version2_and_version3_keys_differ_on_diacritics():
    doc = {"_id": 1, "t": "Ça"}
    v2 = text_index(textIndexVersion=2, default_language="none")
    v3 = text_index(textIndexVersion=3, default_language="none")
    assert keyer_for(v2).keys(doc) != keyer_for(v3).keys(doc)


# --------------------------------------------------------------------------------------------------
# (3) $text below $or / $nor
# --------------------------------------------------------------------------------------------------

NOR = (2, "text expression not allowed in nor")
TOO_MANY = (2, "Too many text expressions")
UNDER_OR = (291, "error processing query: planner returned error :: caused by :: Failed to produce a solution "
                 "for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
NO_SOLUTIONS = (291, "error processing query: planner returned error :: caused by :: No query solutions")
NOT_YET = (224, "$text below $or is not supported by Tidemark")


@pytest.mark.parametrize("filter,expected", [  # jstests/core/index/fts/fts_querylang.js, fts_projection.js
    ({"$nor": [TEXT]}, NOR),
    ({"$nor": [{"a": 1}, TEXT]}, NOR),
    ({"$and": [{"a": 2}, {"$nor": [{"$or": [{"c": 1}, TEXT]}]}]}, NOR),
    ({"$or": [TEXT, {"b": 1}]}, UNDER_OR),
    ({"$and": [{"$or": [TEXT, {"b": 1}]}]}, UNDER_OR),  # a one-child $and is dropped
    ({"$or": [{"$or": [TEXT, {"_id": 1}]}, {"b": 1}]}, UNDER_OR),  # an $or in an $or is merged
    ({"x": 1, "$or": [TEXT, {"b": 1}]}, NO_SOLUTIONS),  # the root is an AND
    ({"$or": [{**TEXT, "x": 1}, {"b": 1}]}, NO_SOLUTIONS),  # the TEXT is below an AND
    ({"$or": [TEXT, {"_id": 1}]}, NOT_YET),  # mongod: an OR of the TEXT read and an _id scan
    ({"$or": [TEXT, {"b": 1}], "$text": {"$search": "pear"}}, TOO_MANY),
    ({"$and": [TEXT, {"$and": [{"x": 1}]}]}, "TEXT"),
])
def test_text_below_logical_operators(filter, expected):
    assert outcome(filter) == expected


def test_text_below_or_needs_a_text_index_first():
    assert outcome({"$or": [TEXT, {"b": 1}]}, [ID_INDEX]) == (27, "text index required for $text query")


# A filter tree of one-key documents: $and / $or / $nor over leaves, at most two $text; a leaf is
# indexed ({_id: n}) or not ({b: n}).
LEAF = st.sampled_from([{"_id": 1}, {"b": 1}])


def _trees(max_texts: int) -> st.SearchStrategy:
    leaves = st.one_of(LEAF, st.just(TEXT)) if max_texts else LEAF
    return st.recursive(leaves, lambda kids: st.builds(
        lambda op, branches: {op: branches}, st.sampled_from(["$and", "$or", "$nor"]),
        st.lists(kids, min_size=1, max_size=3)), max_leaves=6)


def _texts(node: dict, path: tuple = ()) -> list[tuple]:
    (op, arg), = node.items()
    if op == "$text":
        return [path]
    if op in ("$and", "$or", "$nor"):
        return [p for sub in arg for p in _texts(sub, (*path, (op, arg, sub)))]
    return []


def _expected(tree: dict) -> Any:
    """mongod's answer, written from its rules (not from plan_special's code)."""
    texts = _texts(tree)
    if len(texts) > 1:
        return TOO_MANY
    if not texts:
        return None  # no $text: not this test's business
    path = texts[0]
    if any(op == "$nor" for op, _, _ in path):
        return NOR
    # (a one-branch $or is its branch: mongod's canonical query optimizes it away before isValid, so
    # {$or: [{$text: ...}]} is a top-level $text — match_expression.cpp's single-child AND/OR rule)
    ors = [(arg, sub) for op, arg, sub in path if op == "$or" and len(arg) > 1]
    if not ors:
        return "TEXT"
    unindexed = any(not _plain_indexed(b) for arg, sub in ors for b in arg if b is not sub)
    if not unindexed:
        return NOT_YET
    direct = all(op == "$or" or len(arg) == 1 for op, arg, _ in path)  # every document has one key
    return UNDER_OR if direct else NO_SOLUTIONS


def _plain_indexed(branch: dict) -> bool:
    """What choose_plan(indexes, branch) serves with an index: _id equality in the top-level conjunction."""
    (op, arg), = branch.items()
    if op == "_id":
        return True
    return op == "$and" and any(_plain_indexed(sub) for sub in arg)


@given(_trees(2))
@settings(max_examples=400, deadline=None)
def test_text_placement_family(tree):
    expected = _expected(tree)
    if expected is None:
        return
    got = outcome(tree)
    if expected == "TEXT":
        assert got == "TEXT"
    else:
        assert got == expected


# --------------------------------------------------------------------------------------------------
# (4) array equality on a compound text index's prefix field
# --------------------------------------------------------------------------------------------------

COMPOUND = [ID_INDEX, text_index({"a": 1, "t": "text"})]


@pytest.mark.parametrize("prefix", [
    [1, 2], [], [[1]], [{"x": 1}], {"$eq": [1, 2]}, {"$eq": []},
])
def test_an_array_equality_on_the_prefix_finds_nothing(prefix):
    """jstests/core/index/fts/fts_trailing_fields.js: mongod takes the array as the prefix key, which
    no entry has (201 on write), so the TEXT read is empty."""
    plan = choose_plan(COMPOUND, {"a": prefix, **TEXT})
    assert plan.kind == "TEXT" and plan.intervals == []


@given(st.one_of(st.integers(), st.text(max_size=3), st.none()))
@settings(max_examples=50, deadline=None)
def test_a_scalar_equality_on_the_prefix_reads_its_terms(value):
    plan = choose_plan(COMPOUND, {"a": value, **TEXT})
    assert plan.kind == "TEXT" and len(plan.intervals) == 1


def test_no_equality_on_the_prefix_is_still_refused():
    assert outcome({**TEXT, "a": {"$gt": 1}}, COMPOUND)[0] == 291  # NoQueryExecutionPlans, as mongod 4.4+
