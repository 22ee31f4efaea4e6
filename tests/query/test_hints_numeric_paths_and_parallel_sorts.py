"""mongod 7.0 answers for inputs the jstest ports found different (pure units):

- ``$type`` arguments of other BSON types (javascript Code included) are 14 TypeMismatch (match_parse.py);
- a key-pattern hint matching several visible indexes is 27 IndexNotFound (QueryPlanner::plan), a
  hidden-only text index is 291 for ``$text`` (plan.py, plan_special.py);
- the legacy ``$geoNear`` query operator is ``$near`` (match_parse.py);
- a numeric path component reaches the document elements lacking that field as missing (paths.py,
  mongod's BSONElementIterator) while sort keys keep the key generator's reading (sort.py);
- index keys refuse a numeric component naming both a position and an element's field with 16746
  (index_keys.py, BtreeKeyGenerator);
- a sort whose fields expand parallel arrays fails 2 BadValue (sort.py, SortKeyGenerator).
"""

from __future__ import annotations

import pytest
from bson.code import Code
from bson.objectid import ObjectId
from bson.regex import Regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import index_keys, plan
from tidemark.query.match import compile_filter, parse_filter
from tidemark.query.match_ast import GeoNear
from tidemark.query.paths import MISSING, get_path_values
from tidemark.query.sort import sort_documents

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


def code_of(fn) -> int:
    with pytest.raises(MongoError) as info:
        fn()
    return info.value.code


# -- $type arguments ---------------------------------------------------------------------------------

_NOT_NUMBER_OR_STRING = st.sampled_from([Code("x"), Code("x", {"a": 1}), Code(""), None, True, {}, {"a": 1},
                                         ObjectId("0" * 24), Regex("a"), b"\x00"])


@SETTINGS
@given(bad=_NOT_NUMBER_OR_STRING, good=st.lists(st.sampled_from(["int", 2, "string", 16]), max_size=2),
       where=st.sampled_from(["find", "elemMatch", "not"]))
def test_type_argument_of_another_bson_type_is_a_type_mismatch(bad, good, where):
    """Any $type argument that is neither a number nor a string (a javascript Code, a str subclass,
    included), alone or inside the list, is 14 TypeMismatch wherever the filter holds it."""
    for arg in (bad, [*good, bad]):
        cond = {"$type": arg}
        flt = {"a": cond} if where == "find" else (
            {"a": {"$elemMatch": cond}} if where == "elemMatch" else {"a": {"$not": cond}})
        assert code_of(lambda flt=flt: parse_filter(flt)) == 14


# -- hints -----------------------------------------------------------------------------------------


def _index(key, name, **opts):
    return {"v": 2, "key": key, "name": name, **opts}


@SETTINGS
@given(flags=st.lists(st.tuples(st.booleans(), st.sampled_from([{"a": 1}, {"a": -1}, {"b": 1}, {"a": 1, "b": 1}])),
                      min_size=1, max_size=5))
def test_key_pattern_hint_names_exactly_one_visible_index(flags):
    """A key-pattern hint: no visible index with that pattern is 2 BadValue, several are 27
    IndexNotFound (only a name tells them apart), one is that index; hidden indexes do not count."""
    indexes = [_index(key, f"i{n}", **({"hidden": True} if hidden else {})) for n, (hidden, key) in enumerate(flags)]
    matching = [s for s in indexes if list(s["key"].items()) == [("a", 1)] and not s.get("hidden")]
    if not matching:
        assert code_of(lambda: plan.find_hinted_index(indexes, {"a": 1})) == 2
    elif len(matching) > 1:
        with pytest.raises(MongoError) as info:
            plan.find_hinted_index(indexes, {"a": 1})
        assert info.value.code == 27
        assert str(info.value).startswith("Hint matched multiple indexes, must hint by index name. Matched: "
                                          "kp: { a: 1 } name: ")
        # a name still tells them apart
        assert plan.find_hinted_index(indexes, matching[1]["name"]) is matching[1]
    else:
        assert plan.find_hinted_index(indexes, {"a": 1}) is matching[0]


def test_text_with_only_a_hidden_text_index_has_no_plan():
    text = _index({"_fts": "text", "_ftsx": 1}, "a_text", weights={"a": 1}, default_language="english",
                  language_override="language", textIndexVersion=3)
    flt = {"$text": {"$search": "java"}}
    assert plan.choose_plan([text], flt).kind == "TEXT"
    assert code_of(lambda: plan.choose_plan([{**text, "hidden": True}], flt)) == 291
    assert code_of(lambda: plan.choose_plan([], flt)) == 27  # no text index at all: the parse's 27


# -- $geoNear query operator --------------------------------------------------------------------------

@pytest.mark.parametrize("arg", [[0, 0], [1.5, -2, 3], {"$geometry": {"type": "Point", "coordinates": [1, 2]}}])
def test_geo_near_query_operator_is_near(arg):
    """{field: {$geoNear: ...}} is mongod's legacy synonym of $near: the same GeoNear node."""
    node, near = parse_filter({"p": {"$geoNear": arg}}), parse_filter({"p": {"$near": arg}})
    assert isinstance(node, GeoNear) and isinstance(near, GeoNear) and node.path == near.path

    def fields(q):
        return q.op, q.xy, q.spherical, q.geojson, q.min_distance, q.max_distance

    assert fields(node.near) == fields(near.near)


# -- numeric path components ---------------------------------------------------------------------------

_ELEMENT = st.one_of(st.integers(0, 2), st.none(),
                     st.fixed_dictionaries({}, optional={"0": st.integers(0, 2) | st.none(),
                                                         "x": st.integers(0, 2) | st.none(), "y": st.just(1)}))


def _reference_values(arr: list) -> list:
    """What mongod's BSONElementIterator yields for "a.0.x" over {a: arr} (a leaf scalar or null; a
    document element continues "0.x" and yields missing when it lacks a field; the element at
    position 0 continues "x")."""
    out = []
    for j, elem in enumerate(arr):
        if isinstance(elem, dict):
            inner = elem.get("0", MISSING)
            out.append(MISSING if not isinstance(inner, dict) else inner.get("x", MISSING))
        if j == 0 and isinstance(elem, dict):
            out.append(elem.get("x", MISSING))
    return out


@SETTINGS
@given(arr=st.lists(_ELEMENT, max_size=4).filter(lambda a: not a or isinstance(a[0], dict)))
def test_numeric_component_reaches_elements_lacking_the_field(arr):
    """{"a.0.x": null} matches exactly when one of the values mongod's iterator reaches is null or
    missing; the values are those of the reference (any order)."""
    doc = {"a": arr}
    got = get_path_values(doc, "a.0.x")
    want = _reference_values(arr)
    assert sorted(map(repr, got)) == sorted(map(repr, want))
    assert compile_filter({"a.0.x": None})(doc) == any(v is None or v is MISSING for v in want)


def test_sort_keys_keep_the_key_generators_numeric_reading():
    """A sort on "a.0.b" reads the element at position 0 (and elements having a field "0"), never a
    missing field "0" of the other elements as null."""
    docs = [{"_id": 1, "a": [{"b": 5}, {"c": 1}]}, {"_id": 2, "a": [{"b": 3}]}]
    assert [d["_id"] for d in sort_documents(docs, {"a.0.b": 1})] == [2, 1]
    assert get_path_values(docs[0], "a.0.b", sort_keys=True) == [5]


# -- index keys: ambiguous numeric field names ------------------------------------------------------------

_KEY_ELEMENT = st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=2),
                         st.fixed_dictionaries({}, optional={"0": st.integers(0, 3), "1": st.integers(0, 3),
                                                             "b": st.integers(0, 3)}))


@SETTINGS
@given(arr=st.lists(_KEY_ELEMENT, max_size=4), path=st.sampled_from(["a.0", "a.1", "a.0.b", "a.1.0", "a.b"]))
def test_ambiguous_numeric_field_is_16746(arr, path):
    """A numeric key component within the array's bounds that is also a field of one of its document
    elements is 16746 (mongod's BtreeKeyGenerator); a path without a numeric component never is."""
    keyer = index_keys.keyer_for({"v": 2, "key": {path: 1}, "name": path})
    part = path.split(".")[1]
    ambiguous = part.isdigit() and int(part) < len(arr) and any(isinstance(e, dict) and part in e for e in arr)
    if ambiguous:
        with pytest.raises(MongoError) as info:
            keyer.entries({"a": arr})
        assert info.value.code == 16746
        assert f"field: '{part}' for array: {{ 0: " in str(info.value)
    else:
        assert keyer.entries({"a": arr})


def test_ambiguity_needs_the_canonical_position():
    """'00' names no array position (mongod looks the component up as the array's field name)."""
    keyer = index_keys.keyer_for({"v": 2, "key": {"a.00": 1}, "name": "a.00_1"})
    assert keyer.entries({"a": [{"00": 1}]})


# -- parallel arrays in a sort ---------------------------------------------------------------------------

_SORT_VALUE = st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=2),
                        st.fixed_dictionaries({}, optional={"b": st.integers(0, 3) | st.lists(st.integers(0, 3),
                                                                                                max_size=2),
                                                            "c": st.lists(st.integers(0, 3), max_size=2)}))


@SETTINGS
@given(a=_SORT_VALUE, b=_SORT_VALUE, spec=st.sampled_from([{"a": 1, "b": 1}, {"_id": 1, "a": -1, "b": 1},
                                                           {"a.b": 1, "a.c": 1}, {"a.b": 1, "b": -1}, {"a": 1}]),
       limit=st.sampled_from([None, 1]))
def test_sort_on_parallel_arrays_is_bad_value(a, b, spec, limit):
    """Two sort paths that each expand an array the other does not fail 2 BadValue 'cannot sort with
    keys that are parallel arrays' (mongod's SortKeyGenerator); one sort path never does."""
    doc = {"_id": 0, "a": a, "b": b}

    def arrays(path):
        parts, value, prefix, out = path.split("."), doc, (), set()
        for part in parts:
            value = value.get(part) if isinstance(value, dict) else None
            prefix += (part,)
            if isinstance(value, list):
                out.add(prefix)
                break  # (the generated documents hold no documents inside arrays)
        return out

    found = [arrays(p) for p in spec]
    parallel = any(x - y and y - x for i, x in enumerate(found) for y in found[i + 1:])
    if parallel:
        with pytest.raises(MongoError) as info:
            list(sort_documents([doc], spec, limit=limit))
        assert (info.value.code, str(info.value)) == (2, "cannot sort with keys that are parallel arrays")
    else:
        assert list(sort_documents([doc], spec, limit=limit)) == [doc]


def test_paths_through_one_array_are_not_parallel():
    docs = [{"_id": 1, "a": [{"b": 2, "c": 1}, {"b": 1, "c": 3}]}, {"_id": 2, "a": [{"b": 0, "c": 9}]}]
    assert [d["_id"] for d in sort_documents(docs, {"a.b": 1, "a.c": 1})] == [2, 1]
