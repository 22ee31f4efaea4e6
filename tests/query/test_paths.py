"""Dotted paths: implicit array traversal for matching, plain lookup, set/unset for updates."""

import pytest

from tidemark.query.paths import (
    MISSING,
    PathNotViable,
    get_path,
    get_path_values,
    set_path,
    split_path,
    unset_path,
)


def test_split_path():
    assert split_path("a.b.0") == ("a", "b", "0")


@pytest.mark.parametrize(
    "doc,path,expected",
    [
        ({"a": {"b": 1}}, "a.b", [1]),
        ({"a": [{"b": 1}, {"b": [2, 3]}]}, "a.b", [1, [2, 3]]),
        ({"a": [{}, 5]}, "a.b", [MISSING]),  # only documents continue the path
        ({"a": []}, "a.b", []),
        ({"a": 5}, "a.b", [MISSING]),
        ({}, "a.b", [MISSING]),
        ({"a": [[{"b": 1}]]}, "a.b", []),  # nested arrays are not traversed implicitly
        ({"a": [10, 20]}, "a.1", [20]),
        ({"a": [{"0": "f"}, 7]}, "a.0", [{"0": "f"}, "f"]),  # position and field named "0"
        ({"a": [1, 2]}, "a", [[1, 2]]),  # leaf arrays are not expanded by default
    ],
)
def test_get_path_values_follows_match_traversal(doc, path, expected):
    assert get_path_values(doc, path) == expected


def test_get_path_values_can_expand_leaf_arrays():
    assert get_path_values({"a": [{"b": [1, 2]}, {"b": 3}]}, "a.b", expand_arrays=True) == [1, 2, 3]


def test_get_path_plain_lookup():
    doc = {"a": {"b": [5, {"c": 1}]}}
    assert get_path(doc, "a.b.1.c") == 1
    assert get_path(doc, "a.b.c") is MISSING
    assert get_path(doc, "a.x", default=None) is None


def test_set_path_creates_documents_and_pads_arrays():
    doc = {"a": [1]}
    set_path(doc, "a.3", 9)
    set_path(doc, "x.y", 1)
    assert doc == {"a": [1, None, None, 9], "x": {"y": 1}}


def test_set_path_through_scalar_is_not_viable():
    with pytest.raises(PathNotViable):
        set_path({"a": 5}, "a.b", 1)
    with pytest.raises(PathNotViable):
        set_path({"a": [1]}, "a.b", 1)


def test_unset_path_nulls_array_elements_and_removes_fields():
    doc = {"a": [1, 2], "b": {"c": 1}}
    assert unset_path(doc, "a.0")
    assert unset_path(doc, "b.c")
    assert not unset_path(doc, "zz")
    assert doc == {"a": [None, 2], "b": {}}
