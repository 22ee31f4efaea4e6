"""Projection path collisions (31249 / 31250) over random field lists, against the plain pairwise rule
(every earlier path compared with the new one), and a projection of many fields parses in linear time
(the pairwise check made 10,000 fields take 1.6 s; counted in comparisons here, not timed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import project
from tidemark.query.project import compile_projection

PATHS = st.lists(st.sampled_from(["a", "b", "c", ""]), min_size=1, max_size=3).map(".".join)


def pairwise(paths: list[str]) -> tuple[int, str] | None:
    """The first collision, as the projection parser reports it: the reference rule, quadratic."""
    seen: list[str] = []
    for path in paths:
        for existing in seen:
            if existing == path:
                return 31250, f"Path collision at {path}"
            if path.startswith(existing + "."):
                return 31249, f"Path collision at {path} remaining portion {path[len(existing) + 1:]}"
            if existing.startswith(path + "."):
                return 31250, f"Path collision at {path}"
        seen.append(path)
    return None


@settings(max_examples=400, deadline=None)
@given(st.lists(PATHS, min_size=1, max_size=6, unique=True))
def test_collisions_are_the_pairwise_rules(paths):
    spec = dict.fromkeys(paths, 1)
    want = pairwise(list(spec))
    try:
        project._parse(spec)
        got = None
    except MongoError as e:
        if e.code not in (31249, 31250):
            return  # another refusal first (an empty field name): not this rule
        got = (e.code, e.message)
    if want is not None and got is None:
        pytest.fail(f"{paths}: expected {want}")
    assert got == want


class _NoScan(dict):
    """Leaves that may be looked up and added to, never iterated: a collision check that walked every
    earlier leaf (quadratic over a projection's fields) would iterate them."""

    def __iter__(self):
        raise AssertionError("the collision check walked every earlier leaf")

    def keys(self):
        raise AssertionError("the collision check walked every earlier leaf")


def test_many_fields_are_checked_without_walking_earlier_ones():
    leaves, under = _NoScan(), set()
    for i in range(20_000):
        project._add_leaf(leaves, under, f"f{i}.x", project._Leaf(project._INCLUDE))
    with pytest.raises(MongoError) as err:
        project._add_leaf(leaves, under, "f7", project._Leaf(project._INCLUDE))
    assert (err.value.code, err.value.message) == (31250, "Path collision at f7")
    with pytest.raises(MongoError) as err:
        project._add_leaf(leaves, under, "f9.x.y", project._Leaf(project._INCLUDE))
    assert (err.value.code, err.value.message) == (31249, "Path collision at f9.x.y remaining portion y")
    spec = {f"f{i}.x": 1 for i in range(20_000)}
    assert compile_projection(spec)({"_id": 1, "f7": {"x": 1, "y": 2}, "g": 3}) == {"_id": 1, "f7": {"x": 1}}


@pytest.mark.parametrize("spec, code", [
    ({"$_path": 1}, 16410), ({"a": {"b": 1, "$x": 1}}, 16410), ({"$a": {"b": 1}}, 16410), ({"a.$x": 1}, 16410),
    ({"a.$x": 0}, 16410), ({"a.$x": "lit"}, 16410), ({"a\0b": 1}, 16411), ({"a..b": 1}, 15998), ({"a.": 1}, 40353),
    ({"": 1}, 40352), ({"a": {"$x": 1}}, 31325), ({"a.$x.$": 1}, 16410),
    ({"$id": 1}, None), ({"a.$ref": 1}, None), ({"a.$": 1}, None), ({"a": {"b.$db": 0}}, None),
], ids=repr)
def test_projection_field_names_are_checked_as_field_paths(spec, code):
    """Every field name of a find projection is a FieldPath (projection_parser.cpp): mongod's codes for
    a '$'-prefixed component (but DBRef fields), a NUL, an empty component or a trailing '.'
    (wildcard_index_covered_queries.js: {$_path: 1} is 16410)."""
    if code is None:
        compile_projection(spec, filter={"a": 1})
        return
    with pytest.raises(MongoError) as err:
        compile_projection(spec, filter={"a": 1})
    assert err.value.code == code
