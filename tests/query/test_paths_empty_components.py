"""Paths with empty components (jstests/core/query/field_name_empty.js): mongod carries the rest of a
path through an array as one dotted string, so a lone empty last component at an array ("x." at
x: [...]) is an empty rest and the path ends at the array; any longer rest continues as usual."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match import compile_filter
from tidemark.query.paths import MISSING, get_path_values

DOCS = [
    {"_id": 0, "": 1}, {"_id": 1, "": {"": 1}}, {"_id": 2, "": {"": {"": 1}}}, {"_id": 3, "": {"": {"": {"": 1}}}},
    {"_id": 4, "": 1, "a": 1}, {"_id": 5, "x": 3}, {"_id": 6, "x": [3]}, {"_id": 7, "x": {"": 3}},
    {"_id": 8, "x": {"": [3]}}, {"_id": 9, "x": [{"": 3}]}, {"_id": 10, "x": [{"": [3]}]},
    {"_id": 11, "x": {"": [{"": 3}]}}, {"_id": 12, "x": {"": {"y": 3}}}, {"_id": 13, "": [1]},
]


@pytest.mark.parametrize("query, expected", [
    ({".": 1}, [1, 13]), ({"..": 1}, [2]), ({"...": 1}, [3]), ({"": 1}, [0, 4, 13]),
    ({"x.": 3}, [6, 7, 8]), ({"x..y": 3}, [12]), ({"x..": 3}, [8, 10]),
    ({"x.": {"$exists": False}}, [0, 1, 2, 3, 4, 5, 13]), ({"x.": {"$exists": True}}, [6, 7, 8, 9, 10, 11, 12]),
    ({"x.": {"$elemMatch": {"": 3}}}, [9, 10, 11]), ({"x.": {"$size": 1}}, [6, 8, 9, 10, 11]),
    ({"x.": {"$ne": 3}}, [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13]), ({"x.": {"$type": "array"}}, [6, 8, 9, 10, 11]),
], ids=repr)
def test_filters_over_empty_components(query, expected):
    predicate = compile_filter(query)
    assert [d["_id"] for d in DOCS if predicate(d)] == expected


@pytest.mark.parametrize("doc, path, values", [
    ({"a": [3]}, "a.", [[3]]),
    ({"a": [{"": 3}]}, "a.", [[{"": 3}]]),
    ({"a": []}, "a.", [[]]),
    ({"a": [{"": [3]}]}, "a..", [[3]]),
    ({"a": [{"": 3}, {"b": 1}]}, "a..b", [MISSING, MISSING]),
    ({"a": {"b": [1, 2]}}, "a.b.", [[1, 2]]),
    ({"a": [{"b": [1, 2]}, {"b": 3}]}, "a.b.", [[1, 2], MISSING]),
])
def test_path_values_end_at_an_array_before_a_last_empty_component(doc, path, values):
    assert get_path_values(doc, path) == values


def _reference(doc: dict, path: str) -> list:
    """mongod's ElementIterator (no numeric components): a document continues by name; an array
    continues with the rest of the path as a dotted string — empty: the array is the value; else
    each document element continues it; a scalar before the end, or a lacking field, is missing."""
    out: list = []

    def walk(obj: dict, rest: str) -> None:
        head, dot, tail = rest.partition(".")
        value = obj.get(head, MISSING)
        if value is MISSING or not dot:
            out.append(value)
        elif isinstance(value, dict):
            walk(value, tail)
        elif isinstance(value, list):
            if tail == "":
                out.append(value)
            for element in value if tail else ():
                if isinstance(element, dict):
                    walk(element, tail)
        else:
            out.append(MISSING)

    walk(doc, path)
    return out


_names = st.sampled_from(["", "a"])
_values = st.recursive(
    st.sampled_from([1, 2]),
    lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(_names, inner, max_size=2)),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(doc=st.dictionaries(_names, _values, max_size=2), parts=st.lists(_names, min_size=1, max_size=4))
def test_path_values_follow_mongods_dotted_rest(doc, parts):
    path = ".".join(parts)
    assert get_path_values(doc, path) == _reference(doc, path)
