"""Wildcard (``$**``) index units: the leaves a document is keyed by (mongod's WildcardKeyGenerator),
the projection rules, the key-pattern rules, and the key paths a query path may be stored under
(``wildcard_plan.key_paths``), with a property tying the last two to the matcher: a document an
equality filter matches always has a key the index scan reads."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.match import compile_filter
from tidemark.query.values import equal
from tidemark.query.wildcard import check_key_pattern, leaves, parse_index, parse_projection
from tidemark.query.wildcard_plan import key_paths
from tidemark.storage.keys import UNDEFINED


def keys(doc, key=None, projection=None):
    spec = {"key": key or {"$**": 1}, "name": "w"}
    if projection is not None:
        spec["wildcardProjection"] = projection
    return leaves(doc, parse_index(spec))


def test_every_leaf_is_keyed_with_positions_left_out():
    found, multikey = keys({"_id": 1, "a": 1, "b": {"c": [1, [2], {"d": 3}, []], "e": {}}, "f": [], "g.h": 5})
    # (an empty array is keyed undefined, as a btree index keys it; inside an array it is a value)
    assert found == [("a", 1), ("b.c", 1), ("b.c", [2]), ("b.c.d", 3), ("b.c", []), ("b.e", {}), ("f", UNDEFINED)]
    assert multikey
    assert keys({"a": {"b": 1}}) == ([("a.b", 1)], False)
    # fields holding a "." are not keyed; a document of nothing else is a leaf (its path exists)
    assert keys({"a": {"x.y": 1, "b": 2}, "c": {"x.y": 1}}) == ([("a.b", 2), ("c", {"x.y": 1})], False)


def test_subtree_and_projections():
    doc = {"_id": {"x": 1}, "a": {"b": 1, "c": [2, {"b": 3}]}, "d": 4}
    assert keys(doc, {"a.$**": 1})[0] == [("a.b", 1), ("a.c", 2), ("a.c.b", 3)]
    assert keys(doc, projection={"a.b": 1})[0] == [("a.b", 1)]
    assert keys(doc, projection={"a.b": 0})[0] == [("a.c", 2), ("a.c.b", 3), ("d", 4)]
    assert keys(doc, projection={"_id": 1, "a": 0})[0] == [("_id.x", 1), ("d", 4)]
    assert keys(doc, projection={"_id": 0, "d": 1})[0] == [("d", 4)]
    assert keys(doc, projection={"a": {"c": 1}})[0] == [("a.c", 2), ("a.c.b", 3)]


def test_coverage_of_query_paths():
    index = parse_index({"key": {"$**": 1}, "name": "w", "wildcardProjection": {"a.b": 0}})
    assert index.covers("a") and index.covers("a.c") and not index.covers("a.b") and not index.covers("a.b.c")
    assert not index.covers("a", subtree=True) and index.covers("a.c", subtree=True)
    assert not index.covers("_id")
    index = parse_index({"key": {"a.$**": 1}, "name": "w"})
    assert index.covers("a") and index.covers("a.x.y", subtree=True) and not index.covers("b")


@pytest.mark.parametrize(("projection", "code"), [
    ({"a": 1, "b": 0}, 31254), ({"a": 0, "b": 1}, 31253), ({"a": "x"}, 51271), ({"a": {"$slice": 1}}, 51271),
    ({"a": 1, "a.b": 1}, 31249), ({"a.b": 1, "a": 1}, 31250),
])
def test_projections_refused(projection, code):
    with pytest.raises(MongoError) as refused:
        parse_projection(projection)
    assert refused.value.code == code


@pytest.mark.parametrize(("key", "code"), [
    ({"a.$**": 1, "b.$**": 1}, 7246201), ({"a": "wildcard"}, 7246202), ({"a": 1, "a.$**": 1}, 7246204),
    ({"a.b.c": 1, "a.b.$**": 1}, 7246204),
])
def test_key_patterns_refused(key, code):
    with pytest.raises(MongoError) as refused:
        check_key_pattern(key)
    assert refused.value.code == code


def test_key_paths_read_numeric_components_both_ways():
    assert key_paths("a.b") == [("a.b", True)]
    assert key_paths("c.0") == [("c", False), ("c", True), ("c.0", True)]
    assert key_paths("0.a") == [("0.a", True)]  # a top-level component is a field name
    assert key_paths("a.$x") is None and key_paths("a..b") is None
    assert key_paths(".".join(["a"] + ["0"] * 9)) is None


NAMES = ["a", "b", "0", "1"]
SCALARS = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["x", "y"]), st.booleans())
def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    """Arrays and sub-documents of ``inner`` (named: Hypothesis reads a lambda's source to check that it
    uses its argument, and misreads one spanning lines inside a call)."""
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3))


VALUES = st.recursive(SCALARS, _nested, max_leaves=10)
PATHS = st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map(".".join)


def _same_key(leaf, point) -> bool:
    """Whether a leaf is the key a point reads: the undefined of an empty array is itself alone (no BSON
    order compares it: ``equal`` refuses it)."""
    if leaf is UNDEFINED or point is UNDEFINED:
        return leaf is point
    return equal(leaf, point)


@settings(max_examples=400, deadline=None)
@given(doc=st.dictionaries(st.sampled_from(NAMES[:2]), VALUES, max_size=2), path=PATHS,
       value=st.one_of(st.integers(-2, 2), st.sampled_from(["x", "y", True]), st.just({}), st.just([])))
def test_a_matching_document_has_a_key_the_scan_reads(doc, path, value):
    """Completeness of the index scan for equality: every document ``{path: value}`` matches holds a
    leaf on one of the path's key paths, equal to the value (or a nested array, on a truncated one); an
    empty array's leaf is undefined, which the scan of ``[]`` reads too (``wildcard_plan``'s points)."""
    if not compile_filter({path: value})(doc):
        return
    found, _ = leaves(doc, parse_index({"key": {"$**": 1}, "name": "w"}))
    readings = key_paths(path)
    assert readings is not None
    points = [UNDEFINED, []] if value == [] else [value]
    assert any(kp == leaf_path and (any(_same_key(leaf, p) for p in points) if exact else isinstance(leaf, list))
               for leaf_path, leaf in found for kp, exact in readings), (doc, path, value, found)


# --------------------------------------------------------------------------------------------------
# compound wildcard entries without a leaf, $elemMatch bounds, the generic scan of a compound index
# --------------------------------------------------------------------------------------------------

from bson.min_key import MinKey  # noqa: E402

from tidemark.protocol.errors import ErrorCode  # noqa: E402
from tidemark.query.index_keys import keyer_for  # noqa: E402
from tidemark.query.plan import choose_plan  # noqa: E402
from tidemark.query.wildcard_plan import _elem_match_bounds  # noqa: E402
from tidemark.storage.ranges import raw_range  # noqa: E402


def test_a_compound_index_keys_a_document_without_a_wildcard_leaf():
    keyer = keyer_for({"key": {"a": 1, "b.$**": 1, "c": -1}, "name": "cwi_leafless"})
    (entry,) = keyer.entries({"a": 1, "x": 2})
    assert entry[1][0] == 1 and isinstance(entry[1][1], MinKey) and entry[1][2:] == (None, None)
    assert keyer.key_document(entry[1]) == {"a": 1, "$_path": MinKey(), "c": None}
    assert [values for _, values in keyer.entries({"a": 1, "b": {"x": 3}})] == [(1, "b.x", 3, None)]
    plain = keyer_for({"key": {"b.$**": 1}, "name": "plain_leafless"})
    assert plain.entries({"a": 1}) == []


def test_elem_match_bounds():
    bounds = _elem_match_bounds({"x": {"$elemMatch": {"$gte": 1, "$lt": 5}}, "$and": [{"y": {"$elemMatch": {"b": 2}}}],
                                 "z": {"$elemMatch": {"$and": [{"c": 1}]}}, "w": {"$elemMatch": {"$not": {"$gt": 1}}}})
    assert (bounds["x"].lo, bounds["x"].hi) == (1, 5)
    assert bounds["y.b"].points == [2] and bounds["z.c"].points == [1]
    assert "w" not in bounds and "x.$gte" not in bounds


INDEX_DOCS = st.lists(st.fixed_dictionaries({}, optional={"c": st.one_of(SCALARS, st.lists(SCALARS, max_size=2)),
                                                          "a": VALUES, "b": VALUES}), min_size=1, max_size=6)
CONDITIONS = st.one_of(SCALARS, st.dictionaries(st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte", "$ne"]), SCALARS,
                                                min_size=1, max_size=2),
                       st.builds(lambda v: {"$in": v}, st.lists(SCALARS, max_size=3)),
                       st.builds(lambda v: {"$exists": v}, st.booleans()),
                       st.builds(lambda op, v: {"$elemMatch": {op: v}}, st.sampled_from(["$eq", "$gte", "$lt"]), SCALARS),
                       st.builds(lambda f, v: {"$elemMatch": {f: v}}, st.sampled_from(["a", "b", "0"]), SCALARS))
FILTERS = st.dictionaries(st.sampled_from(["c", "a", "b", "a.b", "a.0", "b.a"]), CONDITIONS, min_size=0, max_size=3)
SPECS = st.sampled_from([{"key": {"c": 1, "a.$**": 1}, "name": "p1"}, {"key": {"c": -1, "$**": 1, "d": 1}, "name": "p2",
                                                                          "wildcardProjection": {"c": 0, "d": 0}},
                         {"key": {"$**": 1}, "name": "p3"}, {"key": {"a.$**": -1, "c": 1}, "name": "p4"}])


def _in_plan(key: bytes, plan) -> bool:
    for iv in plan.intervals:
        bounds = raw_range(iv.lo, iv.hi, iv.lo_incl, iv.hi_incl)
        if bounds is not None and (bounds[0] is None or key >= bounds[0]) and (bounds[1] is None or key < bounds[1]):
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(docs=INDEX_DOCS, flt=FILTERS, spec=SPECS, hinted=st.booleans())
def test_every_matching_document_has_a_key_the_plan_scans(docs, flt, spec, hinted):
    """Completeness of every wildcard plan (leaf scans, $exists, $elemMatch, the generic scan of a
    compound index by its prefix; hinted or chosen): a document the filter matches has an entry inside
    the plan's intervals, so the scan (then the filter) returns exactly what a collection scan does. A
    hint the index cannot answer is 291, never a wrong answer."""
    try:
        plan = choose_plan([spec], flt, hint=spec["name"] if hinted else None)
    except MongoError as e:
        assert hinted and e.code == ErrorCode.NoQueryExecutionPlans
        return
    if plan.kind != "IXSCAN":
        return
    keyer = keyer_for(spec)
    match = compile_filter(flt)
    for doc in docs:
        if match(doc):
            assert any(_in_plan(key, plan) for key, _ in keyer.entries(doc)), (doc, flt, plan.bounds_desc)


def test_generic_scan_of_a_compound_index():
    spec = {"key": {"c": 1, "a.$**": 1, "d": 1}, "name": "g"}
    plan = choose_plan([spec], {"c": {"$gte": 2}})
    assert plan.kind == "IXSCAN"
    assert list(plan.bounds_desc) == ["c", "$_path", "d"]  # (c's range: one-sided while it may be multikey)
    assert plan.bounds_desc["$_path"] == ["[MinKey, MinKey]", '["", {})'] and plan.bounds_desc["d"] == ["[MinKey, MaxKey]"]
    assert choose_plan([spec], {"d": 1}).kind == "COLLSCAN"
    assert choose_plan([spec], {}, hint="g").kind == "IXSCAN"  # hinted: the whole index
    with pytest.raises(MongoError) as info:
        choose_plan([{"key": {"a.$**": 1, "c": 1}, "name": "h"}], {"c": 1}, hint="h")
    assert info.value.code == ErrorCode.NoQueryExecutionPlans
