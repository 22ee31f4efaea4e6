"""Two families of update inputs checked against models of mongod 7.0's path_support.cpp:

- the document an upsert starts from (``upsert_seed``): an operator upsert takes every query equality
  (extractEqualityMatches), a replacement upsert only ``_id`` (extractFullEqualityMatches over the
  immutable ``_id``): other fields are ignored even when they conflict, a path under ``_id`` is 111
  and ``_id`` matched twice is 54;
- a ``$rename`` source looked up by findLongestPrefix: entering an array by a field name or going
  through a scalar is 28 PathNotViable, a missing source a no-op, a source under an array element
  (reached by position) 2 BadValue.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.update import apply_update, parse_update, upsert_seed

NOT_SINGLE_VALUE_FIELD = 54
NOT_EXACT_VALUE_FIELD = 111
PATH_NOT_VIABLE = 28
BAD_VALUE = 2

# ----------------------------------------------------------------------------------------------
# upsert seeds
# ----------------------------------------------------------------------------------------------

_PATHS = ["_id", "_id.x", "_id.y", "x", "x.x", "y"]
_equality = st.tuples(st.sampled_from(_PATHS), st.integers(0, 2))


def _query(pairs: list[tuple[str, int]], nest: list[bool]) -> dict:
    """The equalities as one ``$and`` (so a path may repeat), each as a plain value or ``$eq``."""
    return {"$and": [{p: {"$eq": v} if wrap else v} for (p, v), wrap in zip(pairs, nest, strict=True)]}


def _replacement_model(pairs: list[tuple[str, int]]) -> tuple[int | None, dict]:
    """mongod's extractFullEqualityMatches({_id}) then addEqualitiesToDoc, per equality in order."""
    seen: list[str] = []
    for path, _ in pairs:
        if path.split(".")[0] != "_id":
            continue
        if path != "_id":
            return NOT_EXACT_VALUE_FIELD, {}
        if seen:
            return NOT_SINGLE_VALUE_FIELD, {}
        seen.append(path)
    return None, ({"_id": next(v for p, v in pairs if p == "_id")} if seen else {})


@settings(max_examples=300, deadline=None)
@given(st.lists(_equality, max_size=5).flatmap(
    lambda pairs: st.tuples(st.just(pairs), st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))))
def test_replacement_upsert_seed_takes_only_a_whole_id(case):
    pairs, nest = case
    code, expected = _replacement_model(pairs)
    if code is None:
        assert upsert_seed(_query(pairs, nest), only_id=True) == expected
    else:
        with pytest.raises(MongoError) as info:
            upsert_seed(_query(pairs, nest), only_id=True)
        assert info.value.code == code


@pytest.mark.parametrize("query", [{"x": 1, "x.x": 1}, {"x": {"$all": [1, 2]}}, {"$and": [{"x": 1}, {"x": 2}]}],
                         ids=str)
def test_operator_upsert_seed_still_refuses_conflicts_a_replacement_ignores(query):
    with pytest.raises(MongoError) as info:
        upsert_seed(query)
    assert info.value.code == NOT_SINGLE_VALUE_FIELD
    assert upsert_seed({**query, "_id": 7}, only_id=True) == {"_id": 7}


def test_replacement_seed_messages():
    with pytest.raises(MongoError) as info:
        upsert_seed({"_id.x": 1, "_id.y": 2}, only_id=True)
    assert info.value.message == "field at '_id' must be exactly specified, field at sub-path '_id.x'found"
    with pytest.raises(MongoError) as info:
        upsert_seed({"$and": [{"_id": 1}, {"_id": 2}]}, only_id=True)
    assert info.value.message == "cannot infer query fields to set, path '_id' is matched twice"


# ----------------------------------------------------------------------------------------------
# $rename sources
# ----------------------------------------------------------------------------------------------

_leaf = st.sampled_from([1, "s", None])
_tree: st.SearchStrategy[Any] = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    max_leaves=6,
)
_source = st.lists(st.sampled_from(["a", "b", "0", "1"]), min_size=1, max_size=4)


def _rename_model(doc: dict, parts: list[str]) -> int | str:
    """findLongestPrefix over the source (28 when not viable), then no-op / source-array check."""
    node: Any = doc
    through_array = False
    for i, part in enumerate(parts):
        if isinstance(node, dict):
            if part not in node:
                return "noop"
            node = node[part]
        elif isinstance(node, list) and part.isdigit():
            if int(part) >= len(node):
                return "noop"
            node = node[int(part)]
        else:
            return PATH_NOT_VIABLE
        if isinstance(node, list) and i < len(parts) - 1:
            through_array = True
    return BAD_VALUE if through_array else "renamed"


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b"]), _tree, max_size=2), _source)
def test_rename_source_follows_find_longest_prefix(body, parts):
    doc = {"_id": 1, **body}
    source = ".".join(parts)
    expected = _rename_model(doc, parts)
    update = parse_update({"$rename": {source: "zz"}})
    if isinstance(expected, int):
        with pytest.raises(MongoError) as info:
            apply_update(doc, update)
        assert info.value.code == expected
        if expected == PATH_NOT_VIABLE:
            assert info.value.message.startswith("cannot use the part (")
    else:
        new, modified = apply_update(doc, update)
        assert modified == (expected == "renamed")
        assert ("zz" in new) == (expected == "renamed")


def test_rename_through_an_array_by_name_message():
    with pytest.raises(MongoError) as info:
        apply_update({"_id": 1, "d": [{"e": 3}]}, parse_update({"$rename": {"d.e": "f"}}))
    assert (info.value.code, info.value.message) == (
        PATH_NOT_VIABLE, "cannot use the part (d of d.e) to traverse the element ({d: [ { e: 3 } ]})")
