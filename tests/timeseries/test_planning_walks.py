"""The per-query planning walks of a time-series read, answered as their straightforward forms would:
the spec walks (``$meta`` / ``$near`` anywhere), the column filter's completeness and whether a meta
conjunct is decided per bucket (rendered without renaming it onto ``meta``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.docmeta import mentions_meta
from tidemark.query.index_keys import key_fields
from tidemark.query.index_kinds import is_special, key_direction
from tidemark.query.match import parse_filter
from tidemark.query.match_ast import And
from tidemark.query.pipeline import has_near
from tidemark.timeseries import rowfilter
from tidemark.timeseries.filters import NoMqlForm, _rename, decided_per_bucket, meta_only, render


def _mentions(value: Any, keys: tuple[str, ...]) -> bool:
    if isinstance(value, dict):
        return any(k in keys or _mentions(v, keys) for k, v in value.items())
    if isinstance(value, list):
        return any(_mentions(v, keys) for v in value)
    return False


_KEYS = st.sampled_from(["a", "$meta", "$near", "$nearSphere", "$and", "b.c", "$in"])
_TREES = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=3), st.sampled_from(["$meta", "$near"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_TREES)
def test_spec_walks_find_the_operator_anywhere(tree):
    assert mentions_meta(tree) == _mentions(tree, ("$meta",))
    assert has_near(tree) == _mentions(tree, ("$near", "$nearSphere"))


class _Son(dict):
    """A dict subclass (bson.SON is one): walked like a dict."""


class _Seq(list):
    pass


_ODD_TREES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.datetimes(), st.binary(max_size=2),
              st.integers().map(Int64), st.sampled_from(["$meta", "x"]), st.tuples(st.just({"$meta": 1}))),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(_Seq),
                            st.dictionaries(_KEYS, inner, max_size=3),
                            st.dictionaries(_KEYS, inner, max_size=3).map(_Son)),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_ODD_TREES)
def test_meta_walk_takes_subclasses_and_skips_scalars_and_tuples(tree):
    # (a tuple is no BSON value: neither walk looks inside one)
    assert mentions_meta(tree) == _mentions(tree, ("$meta",))


def test_meta_walk_survives_deep_nesting():
    spec: Any = {"$meta": "textScore"}
    for i in range(5000):  # a loop, not recursion: no limit to hit
        spec = {"a": spec} if i % 2 else [1, spec]
    assert mentions_meta(spec)
    assert not mentions_meta([{"a": [spec, 2]}][0]["a"][1:])


_D1, _D2 = dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2)
_FILTERS = [
    {"time": {"$gte": _D1, "$lt": _D2}, "tags.hostname": {"$in": ["h1", "h2"]}},
    {"tags.hostname": "h1", "usage": {"$gt": 5}},
    {"tags": {"$exists": True}, "usage": {"$lt": 5.5}},
    {"$or": [{"tags.a": 1}, {"tags.b": 2}], "usage": {"$ne": 3}},
    {"tags.a": {"$not": {"$gt": 1}}, "tags.b": {"$nin": [1, 2]}, "time": {"$lt": _D2}},
    {"tags.loc": {"$near": [0, 0]}, "usage": {"$gte": 1}},
    {"tags.loc": {"$geoWithin": {"$center": [[0, 0], 1]}}, "tags.a": {"$all": [1, 2]}, "usage": 2},
    {"tags.a": {"$gt": 1, "$lt": 9}, "tags.b": {"$type": "string"}, "usage": {"$in": [1, 2]}},
    {"tags.a": {"$regex": "^x", "$options": "i"}, "tags.a.b": {"$size": 2}, "x.y": 1},
    {"usage": 1, "other": {"$gt": 2}},
    {"$nor": [{"tags.a": 1}], "usage": 1},
    {"$expr": {"$gt": ["$usage", 1]}, "usage": 1},
]


def _conjuncts(node):
    return [c for child in node.children for c in _conjuncts(child)] if isinstance(node, And) else [node]


def _decided_by_renaming(node, meta_field):
    if not meta_only(node, meta_field):
        return False
    try:
        render(_rename(node, meta_field))
    except NoMqlForm:
        return False
    return True


@pytest.mark.parametrize("flt", _FILTERS)
def test_meta_conjuncts_decided_as_their_renaming_onto_meta(flt):
    for part in _conjuncts(parse_filter(flt)):
        assert decided_per_bucket(part, "tags") == _decided_by_renaming(part, "tags"), part
    assert not decided_per_bucket(parse_filter(flt), None)


@pytest.mark.parametrize("flt", _FILTERS)
def test_column_filter_complete_when_every_other_conjunct_is_decided(flt):
    node = parse_filter(flt)
    parts = _conjuncts(node)
    # each conjunct's term, planned alone
    terms = [t for p in parts for t in getattr(rowfilter.plan(p, "time", "tags"), "terms", [])]
    got = rowfilter.plan(node, "time", "tags")
    if not terms:
        assert got is None
        return
    decided = sum(1 for p in parts if _decided_by_renaming(p, "tags"))
    assert got is not None and got.terms == terms
    assert got.complete == (len(terms) + decided == len(parts))


@pytest.mark.parametrize("key", [{"a": 1}, {"a": -1, "b": 1.0}, {"a": True, "b": -1.5}, {"a": "hashed"},
                                 {"a": 1, "b": "2dsphere"}, {"a": -0.0, "b": "-1"}])
def test_key_fields_and_special_patterns(key):
    assert key_fields(key) == (tuple(key), tuple(key_direction(v) for v in key.values()))
    assert is_special(key) == any(isinstance(v, str) for v in key.values())
