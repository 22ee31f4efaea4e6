"""The keys a document contributes to an index (server/query/index_keys.py, index_kinds.py) against the
facts of mongod 7.0's key generators (btree_key_generator_test.cpp, ExpressionKeysPrivate::getHashKeys),
and the bounds a multikey compound index may take (index_bounds.py)."""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import index_bounds, index_keys
from tidemark.query.hashed import hash64
from tidemark.storage.keys import UNDEFINED


def spec(key, **opts):
    return {"v": 2, "key": key, "name": index_keys.index_name_for(key), **opts}


def key_values(key, doc, **opts):
    """The keys as sorted tuples of values (None for null), via the keyer's (encoded key, values)."""
    return sorted((values for _, values in index_keys.keyer_for(spec(key, **opts)).entries(doc)), key=repr)


def k(*values):
    return sorted([tuple(v) for v in values], key=repr)


# mongod's btree_key_generator_test.cpp cases (UNDEFINED: mongod's undefined, an empty array's key)
BTREE_CASES = [
    ({"a": 1, "b": 1}, {"a": 1, "b": []}, [(1, UNDEFINED)]),  # GetKeysFromMultiEmptyArray
    ({"a": 1, "a.b": 1}, {"a": []}, [(UNDEFINED, None)]),  # GetKeysFromUnevenNestedEmptyArray
    ({"a": 1, "a.b": 1}, {"a": [{"b": []}]}, [({"b": []}, UNDEFINED)]),
    ({"a.b": 1, "a": 1}, {"a": []}, [(None, UNDEFINED)]),  # GetKeysFromReverseUnevenNestedEmptyArray
    ({"a.b": 1}, {"a": []}, [(None,)]),  # GetKeysFromNestedEmptyArray
    ({"a.0.0": 1}, {"a": [[[]]]}, [(UNDEFINED,)]),  # GetKeysFromDoubleIndexedArrayIndex
    ({"a.0.b": 1}, {"a": [[{"b": []}]]}, [(UNDEFINED,)]),  # GetKeysFromObjectWithinArray
    ({"a.b.c": 1}, {"a": [1, 2, {"b": {"c": [3, 4]}}]}, [(None,), (3,), (4,)]),  # MultipleArraysNotParallel
    ({"a.b.c": 1, "a.b.d": 1}, {"a": [1, 2, {"b": {"c": [3, 4], "d": 5}}]},
     [(None, None), (3, 5), (4, 5)]),  # MultipleArraysNotParallelCompound
    ({"a.b.c.d": 1, "a.g": 1, "a.b.f": 1, "a.b.c": 1, "a.b.e": 1},
     {"a": [1, {"b": [2, {"c": [3, {"d": 1}], "e": 4}, 5, {"f": 6}], "g": 7}]},
     [(None,) * 5, (None, 7, None, None, None), (None, 7, None, 3, 4), (None, 7, 6, None, None),
      (1, 7, None, {"d": 1}, 4)]),  # GetKeysComplexNestedArrays
    ({"a": 1}, {"a": [[2]]}, [([2],)]),  # GetKeys2DArray
    ({"a.0": 1}, {"a": [1]}, [(1,)]),
    # (mongod keys a.0 of [[1]] as the whole [1]; Tidemark expands it, so that {"a.0": 1}, which the
    # collection scan matches, is found through the index too)
    ({"a.0": 1}, {"a": [[1, 2]]}, [(1,), (2,)]),
    ({"a.0": 1}, {"a": {"0": 1}}, [(1,)]),
    ({"a.0.0": 1}, {"a": [[1]]}, [(1,)]),
    ({"a.0.0": 1}, {"a": [[]]}, [(None,)]),
    ({"a.0.b": 1}, {"a": [{"b": [1]}]}, [(1,)]),
    ({"a.0.b": 1}, {"a": [{"b": [[1]]}]}, [([1],)]),
    ({"a.0.b": 1}, {"a": [[{"b": 1}]]}, [(1,)]),
    ({"a.2": 1}, {"a": [{"2": 5}]}, [(5,)]),  # GetKeysPositionalKeyPatternMissingElement
    ({"a.b": 1, "a.c": 1}, {"a": []}, [(None, None)]),
    ({"a": 1, "a.b": 1}, {"a": [{"b": 1}]}, [({"b": 1}, 1)]),  # GetKeysFromUnevenNestedEmptyArray
    ({"a": 1, "b": 1}, {"a": 1, "b": [1, 2]}, [(1, 1), (1, 2)]),
    ({"a.b": 1, "a.c": 1}, {"a": [{"b": 1, "c": 1}, {"b": 2, "c": 2}]}, [(1, 1), (2, 2)]),  # one element at a time
    ({"a.b": 1, "a.c": 1}, {"a": [{"b": 1}, {"c": 1}]}, [(1, None), (None, 1)]),
]


@pytest.mark.parametrize(("key", "doc", "expected"), BTREE_CASES, ids=[str(i) for i in range(len(BTREE_CASES))])
def test_btree_keys_follow_mongod(key, doc, expected):
    assert key_values(key, doc) == k(*expected)


SPARSE_CASES = [
    ({"a.b": 1}, {"a": 1}, []), ({"a.b": 1}, {"a": []}, []), ({"a.b": 1}, {"a": [{"c": 1}]}, []),
    ({"z": 1, "a.b": 1}, {"a": [{"c": 1}]}, []),  # GetKeysFromSparseEmptyArraySecond
    ({"a.b": 1}, {"a": [1]}, []), ({"a.b": 1}, {"a": [1, {"b": 1}]}, [(1,)]),  # SparseNonObjectMissingNestedField
    ({"a.b": 1, "a": 1}, {"a": []}, [(None, UNDEFINED)]),  # SparseReverseUnevenNestedEmptyArray
]


@pytest.mark.parametrize(("key", "doc", "expected"), SPARSE_CASES, ids=[str(i) for i in range(len(SPARSE_CASES))])
def test_sparse_keys_leave_out_keys_whose_fields_are_all_missing(key, doc, expected):
    assert key_values(key, doc, sparse=True) == k(*expected)


@pytest.mark.parametrize(("key", "doc"), [
    ({"a": 1, "b": 1}, {"a": [1], "b": [1, 2]}),
    ({"a": 1, "b": 1}, {"a": [], "b": []}),  # GetKeysParallelEmptyArrays
    ({"a.b.c": 1, "a.b.d": 1}, {"a": [{"b": [{"c": [1, 2, 3], "d": []}]}]}),  # ...OneArrayEmptyNested
    ({"b.a": 1, "a": 1}, {"b": {"a": [1]}, "a": [1, 2]}),  # ParallelArraysUneven
])
def test_parallel_arrays_are_refused(key, doc):
    with pytest.raises(MongoError) as info:
        index_keys.keyer_for(spec(key)).entries(doc)
    assert info.value.code == 171


def test_arrays_in_different_elements_are_not_parallel():
    """index13.js: ``a.b.c`` and ``a.e.f`` meet arrays inside different elements of ``a``."""
    doc = {"a": [{"b": [{"c": 1}, {"c": 2}]}, {"e": [{"f": 1}, {"f": 2}]}]}
    assert key_values({"a.b.c": 1, "a.e.f": 1}, doc) == k((1, None), (2, None), (None, 1), (None, 2))


def test_ambiguous_numeric_component_is_16746():
    with pytest.raises(MongoError) as info:
        index_keys.keyer_for(spec({"a.0": 1})).entries({"a": [{"0": 1}]})
    assert info.value.code == 16746


@pytest.mark.parametrize(("key", "doc", "path"), [
    ({"a": "hashed"}, {"a": [1]}, "a"), ({"a": 1, "b": "hashed"}, {"a": [1], "b": 1}, "a"),
    ({"f.g.0.h": "hashed"}, {"f": {"g": {"0": []}}}, "f.g.0"), ({"f.g.0.h": "hashed"}, {"f": [{"g": 1}]}, "f"),
    ({"x.0.y": 1, "z": "hashed"}, {"x": {"0": [0]}}, "x.0"),
])
def test_hashed_indexes_refuse_arrays_along_any_path(key, doc, path):
    """mongod's getHashKeys: an array anywhere along any field of an index with a hashed field is 16766."""
    with pytest.raises(MongoError) as info:
        index_keys.keyer_for(spec(key)).entries(doc)
    assert info.value.code == 16766
    assert info.value.message.endswith(f"Found array at path: {path}")


def test_hashed_compound_key_values():
    entries = index_keys.keyer_for(spec({"a": 1, "b": "hashed"})).entries({"a": {"c": 1}})
    assert [values for _, values in entries] == [({"c": 1}, Int64(hash64(None)))]
    assert index_keys.keyer_for(spec({"a": "hashed"}, sparse=True)).entries({"b": 1}) == []


def test_multikey_paths_sharing_an_array_bound_only_the_first():
    """``{"a.b": 1, "a.c": 1}`` may meet each in another element of ``a``: on a multikey index only
    ``a.b`` bounds the scan; ``a.b`` and ``c`` (no shared prefix) compound."""
    bounds = index_bounds.extract_bounds({"a.b": 1, "a.c": 1})
    shared = spec({"a.b": 1, "a.c": 1}, multikey=True)
    _, desc = index_bounds.build_intervals(shared, bounds)
    assert desc["a.c"] == ["[MinKey, MaxKey]"]
    _, desc = index_bounds.build_intervals({**shared, "multikey": False}, bounds)
    assert desc["a.c"] == ["[1, 1]"]
    other = spec({"a.b": 1, "c": 1}, multikey=True)
    _, desc = index_bounds.build_intervals(other, index_bounds.extract_bounds({"a.b": 1, "c": 1}))
    assert desc["c"] == ["[1, 1]"]


_leaf = st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["x"]))
_element = st.one_of(_leaf, st.fixed_dictionaries({}, optional={"b": _leaf, "c": _leaf}))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(_element, max_size=4))
def test_compound_keys_over_one_array_pair_values_of_one_element(elements):
    """For ``{a.b, a.c}`` over an array, the keys are exactly each element's (b, c): a document element
    lacking a field, or a scalar element, gives null there."""
    expected = set()
    for element in elements:
        if isinstance(element, dict):
            expected.add((repr(element.get("b")), repr(element.get("c"))))
        else:
            expected.add(("None", "None"))
    if not elements:
        expected = {("None", "None")}
    got = {tuple(repr(v) for v in values) for _, values in index_keys.keyer_for(spec({"a.b": 1, "a.c": 1})).entries(
        {"a": elements})}
    assert got == expected


def test_geo_indexes_take_the_cross_product_of_array_fields():
    """mongod's 2d / 2dsphere key generators have no parallel-array check (geo_s2nongeoarray.js)."""
    doc = {"geo": [40, 5], "nonGeo": [123, 456], "other": [{"b": [1, 2]}, {"b": [3, 4]}]}
    for kind in ("2d", "2dsphere"):
        entries = index_keys.keyer_for(spec({"geo": kind, "nonGeo": 1, "other.b": 1})).entries(doc)
        assert {values[1:] for _, values in entries} == {(n, b) for n in (123, 456) for b in (1, 2, 3, 4)}


def test_2dsphere_version_1_holds_simple_geometries_only():
    keyer = index_keys.keyer_for(spec({"geo": "2dsphere"}, **{"2dsphereIndexVersion": 1}))
    assert keyer.entries({"geo": {"type": "Point", "coordinates": [40, 5]}})
    with pytest.raises(MongoError) as info:
        keyer.entries({"geo": {"type": "MultiPoint", "coordinates": [[40, 5], [41, 6]]}})
    assert info.value.code == 16755
    assert info.value.message.endswith("given geometry can't be indexed in the old index format")
    assert index_keys.keyer_for(spec({"geo": "2dsphere"})).entries(
        {"geo": {"type": "MultiPoint", "coordinates": [[40, 5], [41, 6]]}})


def test_an_empty_array_in_a_btree_field_of_a_special_index_keys_as_undefined():
    # mongod keys the non-geo fields of a 2dsphere / 2d / text index with the btree key generator
    keyer = index_keys.keyer_for(spec({"loc": "2dsphere", "b": 1}))
    entries = keyer.entries({"loc": {"type": "Point", "coordinates": [1, 2]}, "b": []})
    assert entries and all(values[-1] is UNDEFINED for _, values in entries)
