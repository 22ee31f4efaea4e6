"""A read's filter plan is built once per shape and bound to each query's values (``filters.derive``'s
binders, ``rowfilter.plan``'s and ``columnar.plan``'s templates, on one ``filters.FilterShape`` per
``filters.shape_key``; the buckets index a read's bounds choose, ``view._CHOSEN``): a plan bound from a cached
shape is the plan derived from scratch with the memos empty — bucket filter (MQL, ``_id`` range,
exactness, explain's form, index filter, the predicate on real buckets), the buckets index plan, the
column filter, the columnar group's row conditions — and no value of one query of a shape reaches another of the same shape."""

import datetime as dt
import math
import random

import pytest
from bson import encode
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from harness.timeseries import Engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query.collation import parse_collation
from tidemark.query.match import parse_filter
from tidemark.timeseries import columnar, filters, rowfilter, view
from tidemark.timeseries.filters import Ineligible, derive, shape_key
from tidemark.timeseries.stored import document_bucket
from tidemark.timeseries.view import choose_index

T0 = dt.datetime(2024, 1, 1)
CI = parse_collation({"locale": "en", "strength": 2})


def _buckets():
    rng = random.Random(5)
    engine = Engine(params={"timeseriesBucketMaxCount": 20})
    docs = []
    for _ in range(600):
        doc = {"_id": ObjectId(), "t": T0 + dt.timedelta(seconds=rng.randrange(0, 6 * 3600)),
               "m": rng.choice([{"site": rng.choice("abc"), "id": rng.randrange(4)}, "x", 3, None])}
        if doc["m"] is None:
            del doc["m"]
        if rng.random() < 0.9:
            doc["v"] = rng.choice([rng.randrange(100), rng.random() * 100, "s", math.nan, T0])
        if rng.random() < 0.4:
            doc["s"] = rng.choice(["x", "Y", "z", 4])
        docs.append(doc)
    engine.put_many(docs)
    return [document_bucket(b) for b in engine.documents()]


BUCKETS = _buckets()
INDEXES = (
    {"name": "m_1_t_1", "key": {"meta": 1, "control.min.t": 1, "control.max.t": 1}},
    {"name": "site_1_t_-1", "key": {"meta.site": 1, "control.max.t": -1, "control.min.t": -1}},
    {"name": "id_1", "key": {"meta.id": 1}},
)
# a partial index: the choice reads the values (made for each read)
PARTIAL = (*INDEXES, {"name": "site_partial", "key": {"meta.site": 1, "meta.id": 1},
                      "partialFilterExpression": {"meta.id": {"$gt": 1}}})

# values of every BSON kind the derivation tells apart (dates, numbers with NaN and infinities, strings,
# null, documents, arrays, regexes, MinKey/MaxKey...)
VALUES = st.one_of(
    st.integers(0, 6 * 3600).map(lambda s: T0 + dt.timedelta(seconds=s, milliseconds=s % 7)),
    st.integers(-5, 120), st.integers(-2**63, 2**63 - 1).map(Int64),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["a", "b", "x", "Y", "s", ""]),
    st.none(), st.just({"site": "a", "id": 1}), st.just({"$x": 1}), st.just([1, 2]),
    st.just(Regex("^a")), st.sampled_from([MinKey(), MaxKey(), Decimal128("1.5"), Decimal128("NaN"), True]),
)
PATHS = ["t", "v", "s", "m", "m.site", "m.id", "v.w"]
OPS = ["$eq", "$gt", "$gte", "$lt", "$lte", "$ne"]
LEAF = st.one_of(
    st.tuples(st.just("cmp"), st.sampled_from(PATHS), st.sampled_from(OPS)),
    st.tuples(st.just("in"), st.sampled_from(PATHS), st.integers(1, 3)),
    st.tuples(st.just("not"), st.sampled_from(PATHS), st.sampled_from(["$gt", "$lt", "$eq"])),
    st.tuples(st.just("exists"), st.sampled_from(PATHS), st.just(1)),
    # a document $elemMatch: whether its parts are the meta's is read under it (a sub-path named as
    # the meta field, or not)
    st.tuples(st.just("elem"), st.sampled_from(PATHS), st.sampled_from(["m", "x", "m.site"])),
)
SHAPES = st.recursive(st.lists(LEAF, min_size=1, max_size=4).map(lambda leaves: ("$and", leaves)),
                      lambda inner: st.tuples(st.sampled_from(["$and", "$or"]),
                                              st.lists(st.one_of(LEAF, inner), min_size=1, max_size=3)),
                      max_leaves=3)


def _count(shape):
    """How many values a filter of ``shape`` takes."""
    if shape[0] in ("$and", "$or"):
        return sum(_count(part) for part in shape[1])
    return shape[2] if shape[0] == "in" else 0 if shape[0] == "exists" else 1


def _filter(shape, values):
    """The filter document of ``shape`` with ``values`` (an iterator, taken in order)."""
    if shape[0] in ("$and", "$or"):
        return {shape[0]: [_filter(part, values) for part in shape[1]]}
    kind, path, arg = shape
    if kind == "cmp":
        return {path: {arg: next(values)}}
    if kind == "in":
        return {path: {"$in": [next(values) for _ in range(arg)]}}
    if kind == "not":
        return {path: {"$not": {arg: next(values)}}}
    if kind == "elem":
        return {path: {"$elemMatch": {arg: next(values)}}}
    return {path: {"$exists": True}}


def _parsed(shape, values):
    try:
        return parse_filter(_filter(shape, iter(values)))
    except Exception:  # a value the parse refuses ($not of a regex operand...): no query
        return None


def _derived(node, indexes=INDEXES, **kwargs):
    """Everything a read plans of ``node``, comparable (BSON bytes for documents: NaN equal to NaN)."""
    try:
        bfilter = derive(node, "t", "m", 3600, **kwargs)
    except Ineligible as refused:
        return ("refused", refused.reason, encode({"p": refused.predicate}))
    plan = view._choose_index(indexes, bfilter, bfilter.index_filter(), None, "t", "m")
    assert (plan is None) == (choose_index(list(indexes), bfilter, None, "t", "m") is None)
    predicate = bfilter.predicate
    column = rowfilter.plan(node, "t", "m")
    group = columnar.plan(node, GROUP, "t", "m", dates=None if column is None else column.dates)
    alone = columnar.plan(node, GROUP, "t", "m")  # its time operands converted by itself
    assert (None if group is None else (repr(group.conditions), group.conditions_exact)) == (
        None if alone is None else (repr(alone.conditions), alone.conditions_exact))
    return (encode({"mql": bfilter.mql}), bfilter.lo_s, bfilter.hi_s, bfilter.exact, bfilter.collation,
            encode({"shown": bfilter.shown}), encode({"ix": bfilter.index_filter() or {}}),
            None if predicate is None else [predicate(b) for b in BUCKETS],
            None if predicate is None else [b.id for b in filters.kept(predicate, BUCKETS)],
            None if plan is None else (plan.index["name"], [(i.lo, i.hi, i.lo_incl, i.hi_incl)
                                                            for i in plan.intervals], dict(plan.bounds_desc)),
            None if column is None else (column.terms, column.complete, column.explain()),
            None if group is None else (repr(group.conditions), group.conditions_exact))


GROUP = [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "v": {"$max": "$v"}}}]


def _clear():
    filters._SHAPES.clear()
    view._CHOSEN.clear()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=SHAPES, data=st.data(),
       options=st.sampled_from([{}, {"collation": CI}, {"refuse_ineligible": True},
                                {"assume_no_mixed_schema": True}, {"control_collation": CI},
                                {"indexes": PARTIAL}]))
def test_a_plan_bound_from_a_cached_shape_is_the_plan_derived_from_scratch(shape, data, options):
    n = _count(shape)
    first = _parsed(shape, data.draw(st.lists(VALUES, min_size=n, max_size=n), "first"))
    second = _parsed(shape, data.draw(st.lists(VALUES, min_size=n, max_size=n), "second"))
    if first is None or second is None:
        return
    _clear()
    _derived(first, **options)  # the shape built from the first query's node
    bound = _derived(second, **options)  # the second query's values bound to it
    _clear()
    fresh = _derived(second, **options)
    assert bound == fresh
    if shape_key(first) == shape_key(second):
        assert len(filters._SHAPES) == 1  # (the second query did bind the first's shape)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(SHAPES, min_size=1, max_size=3), data=st.data(),
       indexes=st.sampled_from([INDEXES, PARTIAL]))
def test_a_sequence_of_reads_plans_each_as_from_scratch(shapes, data, indexes):
    # reads of several shapes, each shape several times, planned one after the other with the memos
    # warm: each plan is the one made with the memos empty
    nodes = []
    for shape in shapes * 2:
        n = _count(shape)
        node = _parsed(shape, data.draw(st.lists(VALUES, min_size=n, max_size=n)))
        if node is not None:
            nodes.append(node)
    data.draw(st.randoms()).shuffle(nodes)
    fresh = []
    for node in nodes:
        _clear()
        fresh.append(_derived(node, indexes))
    _clear()
    assert [_derived(node, indexes) for node in nodes] == fresh


def test_queries_of_one_shape_share_a_binder_and_keep_their_own_values():
    _clear()
    plans = []
    for start in (1, 3):
        lo = T0 + dt.timedelta(hours=start)
        node = parse_filter({"t": {"$gte": lo, "$lt": lo + dt.timedelta(hours=1)}, "m.site": {"$in": [f"s{start}"]},
                             "v": {"$gt": start}})
        plans.append((derive(node, "t", "m", 3600), rowfilter.plan(node, "t", "m")))
    assert len(filters._SHAPES) == 1
    (first, first_columns), (second, second_columns) = plans
    assert first.lo_s == date_ms_s(T0 + dt.timedelta(hours=0)) and second.lo_s == date_ms_s(T0 + dt.timedelta(hours=2))
    assert {"meta.site": {"$in": ["s1"]}} in first.mql["$and"]
    assert {"meta.site": {"$in": ["s3"]}} in second.mql["$and"]
    assert [t.operands[0].value for t in first_columns.terms][-1] == 1
    assert [t.operands[0].value for t in second_columns.terms][-1] == 3


def date_ms_s(value):
    return int((value - dt.datetime(1970, 1, 1)).total_seconds())


@pytest.mark.parametrize("flt", [{"t": {"$gte": "x"}}, {"v": None}, {"m.site": {"$in": [Regex("^a"), "b"]}}])
def test_a_value_that_changes_the_derivation_is_read_at_each_bind(flt):
    _clear()
    first = derive(parse_filter({k: v for k, v in {"t": {"$gte": T0}, "v": 1, "m.site": {"$in": ["a", "b"]}}.items()
                                 if k in flt}), "t", "m", 3600)
    second = derive(parse_filter(flt), "t", "m", 3600)
    _clear()
    assert encode({"a": second.mql}) == encode({"a": derive(parse_filter(flt), "t", "m", 3600).mql})
    assert first.mql != second.mql


def test_the_index_chosen_follows_which_bounds_are_points():
    # the same paths bounded, points on one or the other: each read its own index (the memo of the
    # choice keys on whether each bound is points)
    _clear()
    site = {"m.site": "a", "m.id": {"$gt": 1}}
    ident = {"m.site": {"$gt": "a"}, "m.id": 1}
    chosen = [view._choose_index(INDEXES, bf, bf.index_filter(), None, "t", "m").index["name"]
              for bf in (derive(parse_filter(f), "t", "m", 3600) for f in (site, ident, site))]
    assert chosen == ["site_1_t_-1", "id_1", "site_1_t_-1"]


@pytest.mark.parametrize(("first", "second"), [
    ({"v": {"$elemMatch": {"m": 1}}}, {"v": {"$elemMatch": {"x": 1}}}),
    ({"m.a": {"$elemMatch": {"$gt": 1}}}, {"m.a": {"$elemMatch": {"x": 1}}}),
    ({"m.a": {"$geoWithin": {"$center": [[0, 0], 1]}}}, {"m.a": {"$geoIntersects": {"$geometry": {
        "type": "Point", "coordinates": [0, 0]}}}}),
])
def test_filters_whose_parts_differ_under_one_path_are_shapes_of_their_own(first, second):
    # what sits under an $elemMatch (its sub-paths: the meta's or not) and a geo operator are part
    # of the shape: planned after the first, the second is planned as from scratch
    _clear()
    fresh = _derived(parse_filter(second))
    _clear()
    _derived(parse_filter(first))
    assert _derived(parse_filter(second)) == fresh


def test_a_partial_index_is_chosen_by_each_reads_values():
    # whether the filter implies the partial index's filter reads the values: the choice is not
    # remembered by the bounds' shape for such indexes
    _clear()
    chosen = []
    for ident in (5, 0, 5):
        bf = derive(parse_filter({"m.site": "a", "m.id": ident}), "t", "m", 3600)
        chosen.append(view._choose_index(PARTIAL, bf, bf.index_filter(), None, "t", "m").index["name"])
    assert chosen[0] == chosen[2] == "site_partial" and chosen[1] != "site_partial"
