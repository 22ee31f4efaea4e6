"""{$meta: "sortKey"} (``sort.sort_key_array``) and its noting by ``sort_documents``: the values are those
mongod's sort key generator chooses (a model of it below), and they order the documents as the sort did."""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import parse_collation
from tidemark.query.docmeta import DocMeta, comparison_key_value
from tidemark.query.sort import sort_documents, sort_key_array
from tidemark.query.values import compare

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_UNDEF = object()  # the model's key of an empty leaf array (mongod's undefined, below null)

NAMES = ["a", "b", "c"]
scalars = st.one_of(st.none(), st.integers(-3, 3), st.floats(-3, 3, allow_nan=False), st.sampled_from(["x", "Y", "y", ""]),
                    st.booleans())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)),
                      max_leaves=8)
docs = st.lists(st.dictionaries(st.sampled_from(NAMES), values, max_size=3), min_size=1, max_size=8)
paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(".".join)


def model_keys(value, parts: list[str]) -> list:
    """The values mongod's key generator gives ``value`` for the path ``parts`` (no numeric components):
    arrays on the way expanded (their non-document elements give null where the path goes on), a missing
    field null, a leaf array its elements (an empty one undefined)."""
    if not parts:
        if isinstance(value, list):
            return list(value) if value else [_UNDEF]
        return [value]
    if isinstance(value, dict):
        return model_keys(value[parts[0]], parts[1:]) if parts[0] in value else [None]
    if isinstance(value, list):
        if not value:
            return [None]
        out: list = []
        for element in value:
            out += model_keys(element, parts) if isinstance(element, dict) else [None]
        return out
    return [None]


def model_compare(a, b) -> int:
    if a is _UNDEF or b is _UNDEF:
        return (b is _UNDEF) - (a is _UNDEF)
    return compare(a, b)


def model_key(doc: dict, path: str, direction: int):
    """One field of the sort key: the first smallest (ascending) / largest (descending) key."""
    keys = model_keys(doc, path.split("."))
    pick = min if direction == 1 else max
    return pick(keys, key=functools.cmp_to_key(model_compare))


def model_value(doc: dict, path: str, direction: int):
    """``model_key`` as a reply shows it: an empty array's undefined as null (the codec has no undefined)."""
    chosen = model_key(doc, path, direction)
    return None if chosen is _UNDEF else chosen


def ordered_by_keys(arrays: list[list], directions: list[int], strict_nulls: bool = True) -> bool:
    """Whether the key arrays are in the sort's order (ties allowed). Without ``strict_nulls`` two
    nulls may stand for undefined < null (as a reply shows them): they decide the pair's order as far
    as the arrays can tell (the comparison stops there)."""
    for left, right in zip(arrays, arrays[1:], strict=False):
        for lv, rv, d in zip(left, right, directions, strict=True):
            if not strict_nulls and lv is None and rv is None:
                break
            c = model_compare(lv, rv) * d
            if c < 0:
                break
            if c > 0:
                return False
    return True


def noted_sort(documents: list[dict], spec: dict, **kw) -> tuple[list[dict], list[list]]:
    """The sorted documents and the sort keys noted for them; ([], []) when the sort refuses parallel
    arrays (2 BadValue, as without the sort key)."""
    meta = DocMeta()
    meta.want("sortKey")
    try:
        out = list(sort_documents(documents, spec, meta=meta, **kw))
    except MongoError as e:
        assert e.code == 2 and "parallel arrays" in str(e)
        return [], []
    return out, [meta.get(d, "sortKey") for d in out]


@SETTINGS
@given(docs, paths, st.sampled_from([1, -1]), st.integers(0, 3))
def test_single_field_sort_key_is_the_generators_choice(documents, path, direction, limit):
    out, keys = noted_sort(documents, {path: direction}, limit=limit or None)  # (a top-k, or a full sort)
    assert keys == [[model_value(d, path, direction)] for d in out]
    assert ordered_by_keys([[model_key(d, path, direction)] for d in out], [direction])


@SETTINGS
@given(docs, st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from([1, -1])), min_size=2, max_size=3,
                      unique_by=lambda t: t[0]))
def test_compound_sort_key_on_distinct_fields(documents, fields):
    spec = dict(fields)
    out, keys = noted_sort(documents, spec)
    assert keys == [[model_value(d, p, di) for p, di in fields] for d in out]
    assert ordered_by_keys([[model_key(d, p, di) for p, di in fields] for d in out], [di for _, di in fields])


@SETTINGS
@given(docs, st.lists(st.tuples(paths, st.sampled_from([1, -1])), min_size=2, max_size=3, unique_by=lambda t: t[0]),
       st.integers(0, 4))
def test_compound_sort_key_orders_the_documents(documents, fields, limit):
    # paths sharing their first field are keyed jointly (one element of a shared array): whatever the
    # generator chose, the arrays shown order the documents as returned (top-k too)
    out, keys = noted_sort(documents, dict(fields), limit=limit or None)
    assert all(len(k) == len(fields) for k in keys)
    assert ordered_by_keys(keys, [di for _, di in fields], strict_nulls=False)


def test_sort_key_shapes():
    out, keys = noted_sort([{"_id": 1, "a": [3, 1, 2]}, {"_id": 2}, {"_id": 3, "a": []}, {"_id": 4, "a": {"b": 1}}],
                           {"a": 1})
    assert [d["_id"] for d in out] == [3, 2, 1, 4]
    assert keys == [[None], [None], [1], [{"b": 1}]]
    _, keys = noted_sort([{"a": [{"b": 5, "c": 1}, {"b": 2, "c": 9}]}], {"a.b": 1, "a.c": 1})
    assert keys == [[2, 9]]  # the same element's b and c (mongod's joint key), not min(b), min(c)
    _, keys = noted_sort([{"a": [{"b": 5, "c": 1}, {"b": 2, "c": 9}]}], {"a.b": -1, "a.c": 1})
    assert keys == [[5, 1]]


def test_sort_key_with_text_score_and_collation():
    docs_ = [{"_id": 1, "s": "B"}, {"_id": 2, "s": "a"}]
    meta = DocMeta()
    meta.want("sortKey")
    for d, score in zip(docs_, [0.5, 1.5], strict=True):
        meta.set(d, "textScore", score)
    out = list(sort_documents(docs_, {"t": {"$meta": "textScore"}, "s": 1}, meta=meta))
    assert [meta.get(d, "sortKey") for d in out] == [[1.5, "a"], [0.5, "B"]]
    ci = parse_collation({"locale": "en", "strength": 2})
    meta = DocMeta()
    meta.want("sortKey")
    out = list(sort_documents(docs_, {"s": 1}, meta=meta, collation=ci))
    assert [d["_id"] for d in out] == [2, 1]
    # strings are shown as the collator's comparison keys (as mongod's sort key holds them)
    assert [meta.get(d, "sortKey") for d in out] == [[comparison_key_value("a", ci)], [comparison_key_value("B", ci)]]
    assert comparison_key_value("A", ci) == comparison_key_value("a", ci) != "a"


def test_sort_key_is_made_only_on_request():
    meta = DocMeta()
    doc = {"a": 1}
    list(sort_documents([doc, {"a": 0}], {"a": 1}, meta=meta))
    assert meta.get(doc, "sortKey") is None
    assert sort_key_array({"a": -1})({"a": [1, 4]}) == [4]
