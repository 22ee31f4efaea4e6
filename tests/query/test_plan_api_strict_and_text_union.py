"""The planner under ``apiStrict`` (indexes outside API Version 1 are not the planner's:
api_version_unstable_indexes.js) and the index union of a ``$text`` below ``$or`` (or_inexact.js,
fts6.js): pure ``plan.choose_plan`` with an operation bound as the server binds it."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from bson.regex import Regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import interrupt, plan_special
from tidemark.query.plan import choose_plan, find_hinted_index
from tidemark.query.text_index import normalize_text_spec

TEXT = {"$text": {"$search": "apple"}}
ID_INDEX = {"v": 2, "name": "_id_", "key": {"_id": 1}}
A_INDEX = {"v": 2, "name": "a_1", "key": {"a": 1}}
SPARSE = {"v": 2, "name": "s_1", "key": {"s": 1}, "sparse": True}
HASHED = {"v": 2, "name": "h_hashed", "key": {"h": "hashed"}}
TEXT_INDEX = {**normalize_text_spec({}, {"t": "text"}), "name": "t_text"}
INDEXES = [ID_INDEX, A_INDEX, SPARSE, HASHED, TEXT_INDEX]
NEED_ONE = "error processing query: planner returned error :: caused by :: need exactly one text index for $text query"


class _Op:
    """The part of the server's Operation the planner reads: the command as sent."""

    def __init__(self, command: dict):
        self.command = command
        self.ticks = interrupt.TICKS_PER_CHECK

    def check(self) -> None:
        pass


def under(command: dict | None, fn) -> Any:
    """``fn()`` as a read of ``command`` runs it; the plan kind, or (code, message) of its error."""
    try:
        return interrupt.running(_Op(command) if command is not None else None, fn)
    except MongoError as e:
        return int(e.code), e.message


STRICT = {"find": "c", "apiVersion": "1", "apiStrict": True}
NOT_STRICT = [None, {"find": "c"}, {"find": "c", "apiVersion": "1"}, {"find": "c", "apiVersion": "1", "apiStrict": False}]


@pytest.mark.parametrize("hint,stable", [("a_1", True), ({"a": 1}, True), ("h_hashed", True), ("_id_", True),
                                         ("s_1", False), ({"s": 1}, False), ("t_text", False)])
def test_api_strict_hides_sparse_and_text_indexes_from_hints(hint, stable):
    for command in NOT_STRICT:
        assert under(command, lambda: choose_plan(INDEXES, {}, None, hint).kind) == "IXSCAN"
    got = under(STRICT, lambda: choose_plan(INDEXES, {}, None, hint).kind)
    assert got == ("IXSCAN" if stable else (2, "hint provided does not correspond to an existing index"))
    found = under(STRICT, lambda: find_hinted_index(INDEXES, hint)["name"])
    assert (found == hint if isinstance(hint, str) else isinstance(found, str)) if stable else found[0] == 2


@pytest.mark.parametrize("filter", [TEXT, {**TEXT, "a": 1}, {"$and": [TEXT, {"a": 1}]}, {"$or": [TEXT]}])
def test_api_strict_text_search_has_no_plan(filter):
    for command in NOT_STRICT:
        assert under(command, lambda: choose_plan(INDEXES, filter).kind) == "TEXT"
    assert under(STRICT, lambda: choose_plan(INDEXES, filter).kind) == (291, NEED_ONE)
    # (no text index at all stays the parse's 27, with or without apiStrict)
    assert under(STRICT, lambda: choose_plan([ID_INDEX], filter).kind) == (27, "text index required for $text query")


def test_api_strict_leaves_the_stable_indexes_to_the_planner():
    for flt in ({"a": 1}, {"a": {"$gt": 1}}, {"h": 5}, {"_id": 3}):
        plan = partial(choose_plan, INDEXES, flt)
        assert under(STRICT, plan) == under(None, plan)
    # the specs are not changed in place (the catalog's are shared by every read)
    under(STRICT, lambda: choose_plan(INDEXES, {"s": 1}))
    assert "hidden" not in SPARSE and "hidden" not in TEXT_INDEX


# --------------------------------------------------------------------------------------------------
# $text below $or
# --------------------------------------------------------------------------------------------------

UNION_CASES = [
    {"$or": [TEXT, {"_id": 1}]},
    {"$or": [{**TEXT, "b": 1}, {"a": {"$in": [1, 2]}}]},
    {"x": 1, "$or": [{"_id": 2}, TEXT]},
    {"$or": [{"$and": [{"y": 1}, {"$or": [TEXT, {"a": 3}]}]}, {"_id": 5}]},
    {"$or": [TEXT, {"b": Regex("x")}]},  # a regex on an index's leading field: that whole index, inexact
]


@pytest.mark.parametrize("filter", UNION_CASES)
def test_text_below_or_with_indexed_siblings_is_a_union_where_the_caller_runs_one(filter):
    indexes = [*INDEXES, {"v": 2, "name": "b_1", "key": {"b": 1}}]
    plan = choose_plan(indexes, filter, allow_or=True)
    assert plan.kind == "TEXT" and plan.index["name"] == "t_text"
    assert all(s.kind == "IXSCAN" for s in plan.special.siblings)
    assert plan.explain(filter=filter)["inputStage"]["stage"] == "OR"
    for refused in (lambda: choose_plan(indexes, filter), lambda: choose_plan(indexes, filter, None, "a_1", allow_or=True)):
        with pytest.raises(MongoError) as e:
            refused()
        assert e.value.code == 224


def test_text_below_or_with_an_unindexed_sibling_is_291_with_or_without_a_union():
    for allow_or in (False, True):
        with pytest.raises(MongoError) as e:
            choose_plan(INDEXES, {"$or": [TEXT, {"b": 1}]}, allow_or=allow_or)
        assert e.value.code == 291


def test_a_regex_sibling_needs_a_simple_collation_plain_index():
    # (a sparse index serves a regex: it is false of a missing field, mongod's nodeIsSupportedBySparseIndex)
    sparse = {"v": 2, "name": "b_1", "key": {"b": 1}, "sparse": True}
    assert choose_plan([*INDEXES, sparse], {"$or": [TEXT, {"b": Regex("x")}]}, allow_or=True).kind == "TEXT"
    for spec in ({"v": 2, "name": "b_1", "key": {"b": 1}, "collation": {"locale": "en"}},
                 {"v": 2, "name": "b_h", "key": {"b": "hashed"}}):
        with pytest.raises(MongoError) as e:
            choose_plan([*INDEXES, spec], {"$or": [TEXT, {"b": Regex("x")}]}, allow_or=True)
        assert e.value.code == 291, spec


_LEAVES = st.sampled_from([{"_id": 1}, {"a": 2}, {"b": 3}, {"a": {"$gt": 1}, "b": 1}])


@given(st.recursive(st.just(TEXT), lambda kids: st.builds(
    lambda op, sibling, kid, at: {op: [*sibling[:at], kid, *sibling[at:]]},
    st.sampled_from(["$and", "$or"]), st.lists(_LEAVES, min_size=1, max_size=2), kids, st.integers(0, 2)),
    max_leaves=4))
@settings(max_examples=200, deadline=None)
def test_the_filter_without_its_text_reads_the_text_as_false(tree):
    """``_without_text`` replaces exactly the $text (by $alwaysFalse), leaving the filter as it was."""
    before = repr(tree)
    (path,) = plan_special._text_paths(tree, ())
    rest = plan_special._without_text(tree, path)
    assert repr(tree) == before
    assert "$text" not in repr(rest) and repr(rest).count("$alwaysFalse") == 1
    assert _text_back(rest) == tree


def _text_back(node: Any) -> Any:
    if isinstance(node, list):
        return [_text_back(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _text_back(v) for k, v in node.items() if k != "$alwaysFalse"}
    return {**out, **TEXT} if "$alwaysFalse" in node else out
