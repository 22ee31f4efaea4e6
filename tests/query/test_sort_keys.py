"""Sort keys as mongod's index key generator builds them (``query.sort``): positional components keep
an array whole, a path stopping at an empty array (or a non-document element) mid-path gives null, a
compound sort over one array takes its key tuples element by element, parallel arrays fail."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.paths import get_path
from tidemark.query.sort import make_sort_key, sort_documents
from tidemark.query.values import MISSING, sort_key


def ids(docs) -> list:
    return [d["_id"] for d in docs]


@pytest.mark.parametrize("docs,spec,expected", [
    # sort_dotted_paths.js: 'a.0' keeps [[1]]'s element [1] whole (an array sorts above numbers)
    ([{"_id": 1, "a": [[1.0]]}, {"_id": 2, "a": [5.0]}, {"_id": 3, "a": 9.0}], {"a.0": -1}, [1, 2, 3]),
    ([{"_id": 1, "a": [[1.0]]}, {"_id": 2, "a": [5.0]}, {"_id": 3, "a": 9.0}], {"a.0": 1}, [3, 2, 1]),
    # ... but an empty array found there is undefined, as any empty array (lowest)
    ([{"_id": 1, "a": [[]]}, {"_id": 2, "a": [5.0]}, {"_id": 3, "a": [None]}], {"a.0": -1}, [2, 3, 1]),
    # a positional component through nested arrays: a.0.1 reads position 1 of a[0]
    ([{"_id": 1, "a": [[1.0, 7.0]]}, {"_id": 2, "a": [[1.0, 3.0]]}], {"a.0.1": 1}, [2, 1]),
    # an empty array mid-path gives null, a leaf empty array undefined (below null)
    ([{"_id": 1, "a": [{"b": []}, {"b": {"c": []}}]}, {"_id": 2, "a": []}, {"_id": 3, "a": {"b": {"c": []}}}],
     {"a.b.c": -1}, [1, 2, 3]),
    # a scalar element on a path that continues gives null (below 3)
    ([{"_id": 1, "a": [5.0, {"b": 3.0}]}, {"_id": 2, "a": {"b": 1.0}}], {"a.b": 1}, [1, 2]),
    # sort_dotted_paths.js: 'a.c' with 'a.b' pairs each element's c with its own b
    ([{"_id": 1, "a": [{"b": 4.0, "c": 1.0}, {"b": 1.0, "c": 2.0}]}, {"_id": 2, "a": [{"b": 2.0, "c": 1.0}, {"b": 4.0, "c": 2.0}]}],
     {"a.c": 1, "a.b": -1}, [1, 2]),
    ([{"_id": 1, "a": [{"b": 4.0, "c": 1.0}, {"b": 1.0, "c": 2.0}]}, {"_id": 2, "a": [{"b": 2.0, "c": 1.0}, {"b": 4.0, "c": 2.0}]}],
     {"a.c": -1, "a.b": -1}, [2, 1]),
    # 'a.c' with its prefix 'a': the second component is the element holding the smallest c
    ([{"_id": 1, "a": [{"c": 1.0, "z": 9.0}, {"c": 2.0, "z": 0.0}]}, {"_id": 2, "a": [{"c": 1.0, "z": 5.0}]}],
     {"a.c": 1, "a": 1}, [2, 1]),
])
def test_sort_key_follows_the_index_key_generator(docs, spec, expected):
    assert ids(sort_documents(docs, spec)) == expected
    assert ids(sort_documents(docs, spec, limit=10)) == expected
    assert ids(sorted(docs, key=make_sort_key(spec))) == expected


@pytest.mark.parametrize("doc,spec", [
    ({"a": [1, 2], "b": [3]}, {"a": 1, "b": 1}),
    ({"a": {"b": [1, 2], "c": [3, 4]}}, {"a.b": 1, "a.c": 1}),
    ({"a": [{"b": [1], "c": [2]}]}, {"a.b": 1, "a.c": 1}),  # two arrays inside one element
])
def test_parallel_arrays_fail_bad_value(doc, spec):
    with pytest.raises(MongoError) as info:
        list(sort_documents([doc, {"a": 1}], spec))
    assert info.value.code == 2
    assert info.value.message == "cannot sort with keys that are parallel arrays"


def test_numeric_field_beside_positional_element_is_ambiguous():
    """``a.0`` over ``[{'0': 5}, 3]``: position 0 and an element's field '0' both qualify (16746)."""
    with pytest.raises(MongoError) as info:
        make_sort_key({"a.0": 1})({"a": [{"0": 5}, 3]})
    assert info.value.code == 16746


# -- invariants and a reference model over generated documents ------------------------------------

_scalar = st.one_of(st.integers(0, 3).map(float), st.none(), st.text("ab", max_size=1))
_leaf = st.one_of(_scalar, st.lists(_scalar, max_size=3))
_elem = st.one_of(_scalar, st.fixed_dictionaries({}, optional={"b": _leaf, "c": _leaf}))
_a = st.one_of(_leaf, st.fixed_dictionaries({}, optional={"b": _leaf, "c": _leaf}), st.lists(_elem, max_size=3))
_docs = st.lists(_a, max_size=8).map(lambda vals: [{"_id": i, "a": v} for i, v in enumerate(vals)])
_specs = st.sampled_from([{"a": 1}, {"a.b": -1}, {"a.0": 1}, {"a.1.b": -1}, {"a.c": 1, "a.b": -1}, {"a.b": -1, "a": 1},
                          {"a.c": -1, "a.b": -1, "_id": 1}, {"_id": -1, "a.b": 1}])


def _try(fn):
    try:
        return ids(fn())
    except MongoError as exc:
        return exc.code


@settings(max_examples=300, deadline=None)
@given(docs=_docs, spec=_specs, limit=st.integers(1, 4))
def test_every_sort_path_agrees(docs, spec, limit):
    """The field-by-field stable sort, the key-function sort, the top-k and the spilling external sort
    (tiny memory limit) give one order, or the same error."""
    full = _try(lambda: sort_documents(docs, spec))
    assert _try(lambda: sorted(docs, key=make_sort_key(spec))) == full
    top = _try(lambda: sort_documents(docs, spec, limit=limit))
    assert top == (full[:limit] if isinstance(full, list) else full)
    assert _try(lambda: list(sort_documents(docs, spec, allow_disk_use=True, memory_limit=40))) == full


_flat_elem = st.fixed_dictionaries({}, optional={"b": _scalar, "c": _scalar})


@settings(max_examples=300, deadline=None)
@given(elems=st.lists(st.lists(_flat_elem, min_size=1, max_size=4), min_size=1, max_size=6),
       dirs=st.tuples(st.sampled_from([1, -1]), st.sampled_from([1, -1])))
def test_shared_array_compound_key_matches_reference(elems, dirs):
    """Reference model for ``{a.c, a.b}`` over ``a: [documents with scalar b, c]``: a document's key is
    the smallest (c, b) pair of one element in the sort's order (missing as null); ties by _id."""
    docs = [{"_id": i, "a": e} for i, e in enumerate(elems)]
    spec = {"a.c": dirs[0], "a.b": dirs[1], "_id": 1}

    def comp(v, d):
        k = sort_key(None if v is MISSING else v)
        return k if d == 1 else _Rev(k)

    def ref(doc):
        return min((comp(get_path(e, "c"), dirs[0]), comp(get_path(e, "b"), dirs[1])) for e in doc["a"]) + (doc["_id"],)

    assert ids(sort_documents(docs, spec)) == ids(sorted(docs, key=ref))


class _Rev:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __lt__(self, other):
        return other.k < self.k

    def __eq__(self, other):
        return self.k == other.k
