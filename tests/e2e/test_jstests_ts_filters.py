"""MongoDB's time-series filter and projection jstests (group C), ported to pymongo against a real
Tidemark server: the documents a ``$match`` / ``find`` / ``$project`` on a time-series view returns.

Ported (7.0-era copies at the root of ``jstests/core/timeseries/`` in mongodb/mongo; newer cases are
taken from later copies where they only add result checks): ``timeseries_find.js``,
``timeseries_match.js``, ``timeseries_predicates.js``, ``timeseries_project.js``,
``timeseries_computed_field.js``, ``timeseries_id_range.js``, ``timeseries_bucket_level_filter.js``
(results only), ``timeseries_match_pushdown.js`` (results only), ``timeseries_filter_extended_range.js``
and ``query/timeseries_expr_in_split_pushdown.js``. Explain shapes, SBE/block-processing checks,
sharding and stepdown variants are left out (they do not apply to a 7.0 standalone's answers)."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import itertools

import pytest
from bson import ObjectId
from harness import jstests
from harness.jstests import UNDEFINED, ids, iso, ms, raw, unordered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

same_members = functools.partial(jstests.same_members, key=unordered)  # (field order aside, as docEq)

pytestmark = pytest.mark.commands("create", "insert", "aggregate", "find", "delete", "drop")

UTC = dt.UTC


def make_ts(db, name: str, time_field: str = "time", meta_field: str | None = None):
    options = {"timeField": time_field}
    if meta_field is not None:
        options["metaField"] = meta_field
    db.drop_collection(name)
    db.create_collection(name, timeseries=options)
    return db[name]


# --------------------------------------------------------------------------------------------------
# timeseries_find.js: values whose paths are missing or only partly present in the bucket bounds
# --------------------------------------------------------------------------------------------------

FIND_DATE = iso("2021-01-01")
FIND_CASES = [
    # 'a.b' absent from the bounds although present in events
    ([{"a": 1}, {"a": {"b": 3}}, {"a": FIND_DATE}], {"a.b": {"$gt": 2}}, [{"a": {"b": 3}}]),
    # ... the bounds it is missing in are arrays on both sides
    ([{"a": [1]}, {"a": [{"b": 3}]}, {"a": [FIND_DATE]}], {"a.b": {"$gt": 2}}, [{"a": [{"b": 3}]}]),
    # 'a.b' in array bounds but not in every pair of bounds
    ([{"a": [1]}, {"a": [{"b": 3}]}, {"a": [FIND_DATE, {"b": 1}]}], {"a.b": {"$gt": 2}},
     [{"a": [{"b": 3}]}]),
    # 'a.b' in the bounds but not on the relevant side
    ([{"a": 1}, {"a": {"b": 1}}], {"a.b": {"$lt": 2}}, [{"a": {"b": 1}}]),
    # upper bound queried, 'a.b' only in the lower bound
    ([{"a": {"b": 3}}, {"a": {"b": [1, 2]}}], {"a.b": {"$gte": 3}}, [{"a": {"b": 3}}]),
    # lower bound queried, 'a.b' only in the upper bound
    ([{"a": {"b": 4}}, {"a": {"b": [1, 2]}}], {"a.b": {"$lte": 3}}, [{"a": {"b": [1, 2]}}]),
    # matching values on neither side of the bounds
    ([{"a": {"b": 3}}, {"a": {"b": [1, 2]}}, {"a": FIND_DATE}], {"a.b": {"$eq": 2}}, [{"a": {"b": [1, 2]}}]),
    # 'a.0' absent from the bounds
    ([{"a": 1.7881393632457332e-7}, {"a": ["ya", {"b": "/lc/"}, 0.9999999701976788, 0.3044235921021081]},
      {"a": True}], {"a.0": {"$gte": ""}},
     [{"a": ["ya", {"b": "/lc/"}, 0.9999999701976788, 0.3044235921021081]}]),
    # arrays wrapping objects and objects wrapping arrays
    ([{"a": {"b": [3, 4]}}, {"a": [{"b": 1}, {"b": 2}]}], {"a.b": {"$lt": 2}}, [{"a": [{"b": 1}, {"b": 2}]}]),
    ([{"a": {"b": [3, 4]}}, {"a": [{"b": 1}, {"b": 2}]}], {"a.b": {"$gte": 3}}, [{"a": {"b": [3, 4]}}]),
]


@pytest.mark.parametrize("docs,query,expected", FIND_CASES)
def test_find_variable_type_fields(db, docs, query, expected):
    """timeseries_find.js: a ``$match`` on a dotted path (``a.b``, ``a.0``) over measurements of one
    bucket whose values differ in type (scalar, object, array, date) returns exactly the matching
    measurements, in ``_id`` order, even where the path is absent from the bucket's min/max bounds;
    the same pipeline on a regular collection answers the same."""
    ts = make_ts(db, "ts")
    plain = db["plain"]
    for doc in docs:
        full = {"time": FIND_DATE, **copy.deepcopy(doc), "_id": ObjectId()}
        ts.insert_one(dict(full))
        plain.insert_one(dict(full))
    pipeline = [{"$match": query}, {"$sort": {"_id": 1}}, {"$project": {"_id": 0, "time": 0}}]
    got = list(ts.aggregate(pipeline))
    assert got == expected
    assert list(map(unordered, got)) == list(map(unordered, plain.aggregate(pipeline)))


# Generalisation of timeseries_find.js: random mixed-type values in one bucket, random comparisons.
_scalars = st.one_of(
    st.integers(-3, 3), st.sampled_from([1.5, -0.5, "", "a", "b", True, False, None, FIND_DATE]),
)
_leaf_values = st.one_of(_scalars, st.lists(_scalars, max_size=3))
_a_values = st.recursive(
    _leaf_values,
    lambda inner: st.one_of(st.fixed_dictionaries({"b": inner}), st.lists(st.fixed_dictionaries({"b": inner}),
                                                                          max_size=2),
                            st.fixed_dictionaries({}, optional={"b": inner, "c": inner})),
    max_leaves=4,
)
_find_docs = st.lists(st.one_of(st.just({}), st.fixed_dictionaries({"a": _a_values})), min_size=1, max_size=6)
_find_preds = st.builds(
    lambda path, op, value: {path: {op: value}},
    st.sampled_from(["a", "a.b", "a.0", "a.b.0", "a.c"]),
    st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
    _leaf_values,
) | st.builds(lambda path, values: {path: {"$in": values}}, st.sampled_from(["a", "a.b", "a.0"]),
              st.lists(_scalars, max_size=3))


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(docs=_find_docs, preds=st.lists(_find_preds, min_size=1, max_size=4), spread=st.booleans())
def test_find_mixed_type_paths_answer_as_on_a_regular_collection(db, docs, preds, spread):
    """timeseries_find.js, generalised: measurements of one bucket with a field ``a`` of any shape
    (scalars of several types, arrays, objects, arrays of objects, missing) and comparisons on ``a``,
    ``a.b``, ``a.0``... return, in ``_id`` order, the same documents as on a regular collection (the
    bucket-level min/max filter never drops a matching measurement); also with the measurements
    spread over several buckets (40 minutes apart)."""
    ts = make_ts(db, "ts")
    plain = db["plain"]
    plain.drop()
    step = dt.timedelta(minutes=40 if spread else 0)
    full = [{"time": FIND_DATE + i * step, **copy.deepcopy(d), "_id": i} for i, d in enumerate(docs)]
    ts.insert_many([dict(d) for d in full])
    plain.insert_many([dict(d) for d in full])
    for pred in preds:
        pipeline = [{"$match": pred}, {"$sort": {"_id": 1}}]
        got, want = list(ts.aggregate(pipeline)), list(plain.aggregate(pipeline))
        assert list(map(unordered, got)) == list(map(unordered, want)), (pred, got, want)


# --------------------------------------------------------------------------------------------------
# timeseries_match.js
# --------------------------------------------------------------------------------------------------

DATE_PREFIX = 1680912440


def _match_docs() -> list[dict]:
    t = "time"
    return [
        {"_id": 0, t: ms(DATE_PREFIX + 100), "measurement": "cpu", "topLevelScalar": 123,
         "topLevelArray": [1, 2, 3, 4], "arrOfObj": [{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}], "emptyArray": [],
         "nestedArray": [{"subField": [1]}, {"subField": [2]}, {"subField": 3}],
         "sometimesDoublyNestedArray": [[1], [2], [3], []], "simpleObj": {"a": 1},
         "objWithOneElemArray": {"a": 1, "b": {"c": [5]}}},
        {"_id": 1, t: ms(DATE_PREFIX + 200), "measurement": "cpu", "topLevelScalar": 456,
         "topLevelArray": [101, 102, 103, 104], "arrOfObj": [{"x": 101}, {"x": 102}, {"x": 103}, {"x": 104}],
         "emptyArray": [], "nestedArray": [{"subField": [101]}, {"subField": [102]}, {"subField": 103}],
         "sometimesDoublyNestedArray": [[101], 102, [103]], "simpleObj": {"a": 100},
         "objWithOneElemArray": {"a": 100, "b": {"c": [500]}}},
        {"_id": 2, t: ms(DATE_PREFIX + 300), "measurement": "cpu"},
        {"_id": 3, t: ms(DATE_PREFIX + 400), "measurement": "cpu", "topLevelArray": [[101, 102], [103, 104], [[105]]]},
        {"_id": 4, t: ms(DATE_PREFIX + 500), "measurement": "cpu",
         "arrOfObj": [{"x": [101, 102, 103]}, {"x": [104]}], "nestedArray": [{"subField": []}, {"subField": []}],
         "sometimesDoublyNestedArray": [[]], "simpleObj": {"a": 200}, "objWithOneElemArray": {"a": 2, "b": {"c": [600]}}},
    ]


_D = ms
_OLD = iso("2019-09-27T21:14:45.654Z")
MATCH_CASES = [
    ({"$and": [{"arrOfObj.x": {"$gte": 104}}, {"arrOfObj.x": {"$lt": 102}}]}, [1, 4]),
    ({"$expr": {"$multiply": "$topLevelScalar"}}, [0, 1]),
    ({"$expr": {"$multiply": ["$topLevelScalar", 3]}}, [0, 1]),
    ({"$expr": {"$gt": [{"$multiply": ["$topLevelScalar", 2]}, 0.0]}}, [0, 1]),
    ({"topLevelScalar": {"$gt": 123}}, [1]),
    ({"topLevelScalar": {"$gte": 123}}, [0, 1]),
    ({"topLevelScalar": {"$lt": 456}}, [0]),
    ({"topLevelScalar": {"$lte": 456}}, [0, 1]),
    ({"topLevelScalar": {"$eq": 456}}, [1]),
    ({"topLevelScalar": {"$ne": 456}}, [0, 2, 3, 4]),
    ({"topLevelArray": {"$gt": 4}}, [1]),
    ({"topLevelArray": {"$gte": 4}}, [0, 1]),
    ({"topLevelArray": {"$lt": 101}}, [0]),
    ({"topLevelArray": {"$lte": 101}}, [0, 1]),
    ({"topLevelArray": {"$eq": 102}}, [1]),
    ({"arrOfObj.x": {"$gt": 4}}, [1, 4]),
    ({"arrOfObj.x": {"$gte": 4}}, [0, 1, 4]),
    ({"arrOfObj.x": {"$lt": 101}}, [0]),
    ({"arrOfObj.x": {"$lte": 101}}, [0, 1, 4]),
    ({"arrOfObj.x": {"$eq": 102}}, [1, 4]),
    ({"arrOfObj.x": {"$ne": 102}}, [0, 2, 3]),
    ({"time": {"$gt": _D(DATE_PREFIX + 100)}}, [1, 2, 3, 4]),
    ({"time": {"$gte": _D(DATE_PREFIX + 100)}}, [0, 1, 2, 3, 4]),
    ({"time": {"$lt": _D(DATE_PREFIX + 200)}}, [0]),
    ({"time": {"$lte": _D(DATE_PREFIX + 200)}}, [0, 1]),
    ({"time": {"$eq": _D(DATE_PREFIX + 300)}}, [2]),
    ({"time": {"$ne": _D(DATE_PREFIX + 200)}}, [0, 2, 3, 4]),
    ({"time": {"$gt": _D(DATE_PREFIX + 100), "$lt": _D(DATE_PREFIX + 300)}}, [1]),
    ({"time": {"$eq": {"obj": _D(DATE_PREFIX + 100)}}}, []),
    ({"topLevelArray": {"$eq": [101, 102]}}, [3]),
    ({"topLevelScalar": {"$eq": [999, 999]}}, []),
    ({"time": {"$in": [[_OLD]]}}, []),
    ({"time": {"$not": {"$in": [[_OLD, _D(DATE_PREFIX + 300)]]}}}, [0, 1, 2, 3, 4]),
    ({"$or": [{"$and": [{"time": {"$gte": _OLD}}, {"time": {"$gt": _D(DATE_PREFIX + 300)}}]},
              {"time": {"$eq": _D(DATE_PREFIX + 300)}}]}, [2]),
    ({"$nor": [{"time": {"$ne": ["arr1", "arr2"]}},
               {"$and": [{"time": {"$gte": ["arr3", "arr4"]}}, {"time": {"$gt": _D(DATE_PREFIX + 300)}}]},
               {"time": {"$eq": _D(DATE_PREFIX + 300)}}]}, []),
    ({"$or": [{"$expr": {"$regexFind": {"input": "$measurement", "regex": "^2", "options": ""}}},
              {"topLevelScalar": {"$lte": 200}}]}, [0]),
    ({"$expr": {"$lt": [101, "$topLevelScalar"]}}, [0, 1]),
    ({"$expr": {"$lt": [_D(DATE_PREFIX + 300), "$time"]}}, [3, 4]),
    ({"$expr": {"$lte": [_D(DATE_PREFIX + 300), "$time"]}}, [2, 3, 4]),
    ({"$expr": {"$gt": [_D(DATE_PREFIX + 300), "$time"]}}, [0, 1]),
    ({"$expr": {"$gte": [_D(DATE_PREFIX + 300), "$time"]}}, [0, 1, 2]),
    ({"$expr": {"$eq": [_D(DATE_PREFIX + 300), "$time"]}}, [2]),
    ({"$expr": {"$ne": [_D(DATE_PREFIX + 300), "$time"]}}, [0, 1, 3, 4]),
    ({"$expr": {"$gt": [{"$dateDiff": {"startDate": "$time", "endDate": _D(DATE_PREFIX + 150),
                                        "unit": "millisecond"}}, 0]}}, [0]),
    ({"$expr": {"$gt": [{"$dateDiff": {"startDate": _D(DATE_PREFIX + 550), "endDate": "$time",
                                        "unit": "millisecond"}}, -60]}}, [4]),
    ({"$expr": {"$eq": [{"$dateAdd": {"startDate": "$time", "unit": "millisecond", "amount": 100}},
                        _D(DATE_PREFIX + 600)]}}, [4]),
    ({"$expr": {"$eq": [{"$dateSubtract": {"startDate": "$time", "unit": "millisecond", "amount": 100}},
                        _D(DATE_PREFIX)]}}, [0]),
    ({"emptyArray": {"$exists": True}}, [0, 1]),
    ({"emptyArray": {"$exists": False}}, [2, 3, 4]),
    ({"emptyArray": None}, [2, 3, 4]),
    ({"emptyArray": []}, [0, 1]),
    ({"emptyArray": "foobar"}, []),
    ({"emptyArray": {"$type": "array"}}, [0, 1]),
    ({"emptyArray": {"$lt": float("nan")}}, []),
    ({"nestedArray": {"$exists": True}}, [0, 1, 4]),
    ({"nestedArray": {"$exists": False}}, [2, 3]),
    ({"nestedArray": None}, [2, 3]),
    ({"nestedArray": []}, []),
    ({"nestedArray": "foobar"}, []),
    ({"nestedArray": {"$type": "array"}}, [0, 1, 4]),
    ({"nestedArray.subField": {"$exists": True}}, [0, 1, 4]),
    ({"nestedArray.subField": {"$exists": False}}, [2, 3]),
    ({"nestedArray.subField": None}, [2, 3]),
    ({"nestedArray.subField": []}, [4]),
    ({"nestedArray.subField": 103}, [1]),
    ({"nestedArray.subField": 101}, [1]),
    ({"nestedArray.subField": 1}, [0]),
    ({"nestedArray.subField": {"$type": "array"}}, [0, 1, 4]),
    ({"sometimesDoublyNestedArray": {"$exists": True}}, [0, 1, 4]),
    ({"sometimesDoublyNestedArray": {"$exists": False}}, [2, 3]),
    ({"sometimesDoublyNestedArray": None}, [2, 3]),
    ({"sometimesDoublyNestedArray": []}, [0, 4]),
    ({"sometimesDoublyNestedArray": 102}, [1]),
    ({"sometimesDoublyNestedArray": 101}, []),
    ({"sometimesDoublyNestedArray": [101]}, [1]),
    ({"sometimesDoublyNestedArray": {"$type": "array"}}, [0, 1, 4]),
    ({"simpleObj.a": {"$gt": 99}}, [1, 4]),
    ({"objWithOneElemArray.b.c": {"$gt": 499}}, [1, 4]),
]


@pytest.fixture(scope="module")
def match_coll(client):
    name = "jst_ts_filters_match"
    client.drop_database(name)
    coll = make_ts(client[name], "timeseries_match", meta_field="measurement")
    for doc in _match_docs():  # one insert per measurement, as the jstest does
        coll.insert_one(doc)
    yield coll
    client.drop_database(name)


@pytest.mark.parametrize("pred,expected", MATCH_CASES, ids=[str(p)[:70] for p, _ in MATCH_CASES])
def test_match_predicates(match_coll, pred, expected):
    """timeseries_match.js: each ``$match`` predicate (comparisons on scalars, arrays, arrays of
    objects, nested and doubly nested arrays, empty arrays, the time field, ``$in`` with array
    operands, ``$not``/``$nor``/``$or``, ``$expr`` with arithmetic and date expressions, ``$exists``,
    ``$type``, ``null``, ``NaN``) followed by ``$project: {_id: 1}`` returns exactly the expected
    measurement ``_id``s."""
    got = list(match_coll.aggregate([{"$match": pred}, {"$project": {"_id": 1}}]))
    assert ids(got) == expected


def test_match_empty_event_filter_then_meta(match_coll):
    """timeseries_match.js (SERVER-84001): ``$not: {$in: []}`` on a missing field followed by a
    ``$match`` on the meta field returns every measurement."""
    pipeline = [{"$match": {"topLevelScalarField": {"$not": {"$in": []}}}}, {"$match": {"measurement": "cpu"}},
                {"$project": {"_id": 1}}]
    assert len(list(match_coll.aggregate(pipeline))) == match_coll.count_documents({}) == 5


def test_match_chained_matches_then_group(db):
    """timeseries_match.js: ``$addFields`` then two ``$match`` stages (one ``$expr`` comparing two
    fields) then ``$group`` on ``$dateTrunc`` of the time: only the measurement passing both filters
    is summed."""
    coll = make_ts(db, "ts", meta_field="measurement")
    for t, a, b in ((100, 1, 1), (200, 2, 0), (300, 1, 3)):
        coll.insert_one({"_id": 0, "time": ms(DATE_PREFIX + t), "measurement": "cpu", "a": a, "b": b})
    pipeline = [
        {"$addFields": {"ex": 3}},
        {"$match": {"a": {"$eq": 1}}},
        {"$match": {"$expr": {"$lt": ["$b", "$ex"]}}},
        {"$group": {"_id": {"time": {"$dateTrunc": {"date": "$time", "unit": "minute"}}}, "suma": {"$sum": "$a"}}},
    ]
    assert list(coll.aggregate(pipeline)) == [{"_id": {"time": iso("1970-01-20T10:55:00Z")}, "suma": 1}]


# --------------------------------------------------------------------------------------------------
# timeseries_predicates.js: the view answers as a regular collection, whatever the bucketing
# --------------------------------------------------------------------------------------------------

PRED_TIME = dt.datetime(2022, 6, 1, 12, 0)
_POLY = {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [0, 3], [3, 3], [3, 0], [0, 0]]]}}
_XY = [{"x": +1, "mt": {"y": -1}}, {"x": +1, "mt": {"y": +1}}, {"x": -1, "mt": {"y": -1}}, {"x": -1, "mt": {"y": +1}}]
_XS = [{"x": -1}, {"x": +1}, {"x": -1, "y": "asdf"}, {"x": +1, "y": "asdf"}]
_EXISTS = [{}, {"x": "qwer"}, {"y": "asdf"}, {"x": "qwer", "y": "asdf"}]
_AB = [{"mt": {"a": a, "b": -1}, **x, "time": t}
       for a in (-1, +1) for x in ({"x": -1}, {"x": +1}) for t in (iso("2020-02-01"), iso("2019-12-31"))]
_AB_MISSING = [{"mt": {"a": a, "b": -1}, **x, "time": t}
               for a in (-1, +1) for x in ({}, {"x": "asdf"}) for t in (iso("2020-02-01"), iso("2019-12-31"))]
_MT_A = [{"mt": {"a": i}, "x": i} for i in (1, 2, 3, 4)] + [{"mt": {}, "x": i} for i in (1, 2, 3, 4)]
_LOC = [{"mt": {"location": loc}, "x": i} for loc in ([1, 1], [5, 5]) for i in (1, 2, 3, 4)]
_ELEM = [[], [{"b": 2}], [{"b": 3}], [{"b": 2}, {"b": 3}]]
PREDICATE_CASES = [
    ("in_simple", {"x": {"$in": [2, 3, 4]}}, [{"x": 1}, {"x": 2}, {"x": 3}, {"x": 42}]),
    ("in_with_array", {"x": {"$in": [1, [2, 3, 4], 5]}},
     [{}, {"x": 1}, {"x": 2}, {"x": [2, 3]}, {"x": [2, 3, 4]}, {"x": 5}, {"x": 42}]),
    ("exists_true", {"x": {"$exists": True}}, [{}, {"x": 2}, {"x": PRED_TIME}, {"x": None}, {"x": UNDEFINED}]),
    ("or_metric_meta", {"$or": [{"x": {"$lt": 0}}, {"mt.y": {"$gt": 0}}]}, _XY),
    ("or_one_not_pushable", {"$or": [{"x": {"$lt": 0}}, {"y": {"$exists": False}}]}, _XS),
    ("or_none_pushable", {"$or": [{"x": {"$exists": False}}, {"y": {"$exists": False}}]}, _EXISTS),
    ("and_metric_meta", {"$and": [{"x": {"$lt": 0}}, {"mt.y": {"$gt": 0}}]}, _XY),
    ("and_one_not_pushable", {"$and": [{"x": {"$lt": 0}}, {"y": {"$exists": False}}]}, _XS),
    ("and_none_pushable", {"$and": [{"x": {"$exists": False}}, {"y": {"$exists": False}}]}, _EXISTS),
    ("nested_and_or", {"$or": [{"$and": [{"mt.a": {"$gt": 0}}, {"x": {"$lt": 0}}]},
                               {"$and": [{"mt.b": {"$gte": 0}}, {"time": {"$gt": iso("2020-01-01")}}]}]}, _AB),
    ("nested_and_or_exists", {"$or": [{"$and": [{"mt.a": {"$gt": 0}}, {"x": {"$exists": False}}]},
                                      {"$and": [{"mt.b": {"$gte": 0}}, {"time": {"$gt": iso("2020-01-01")}}]}]},
     _AB_MISSING),
    ("or_meta_exists", {"$or": [{"mt.a": {"$exists": True}}, {"x": {"$gt": 2}}]}, _MT_A),
    ("or_meta_in", {"$or": [{"mt.a": {"$in": [1, 3]}}, {"x": {"$gt": 2}}]}, _MT_A),
    ("or_meta_geowithin", {"$or": [{"mt.location": {"$geoWithin": _POLY}}, {"x": {"$gt": 2}}]}, _LOC),
    ("or_meta_geointersects", {"$or": [{"mt.location": {"$geoIntersects": _POLY}}, {"x": {"$gt": 2}}]}, _LOC),
    ("or_meta_mod", {"$or": [{"mt.a": {"$mod": [2, 0]}}, {"x": {"$gt": 4}}]},
     [{"mt": {"a": i}, "x": i} for i in range(1, 9)]),
    ("or_meta_elemmatch", {"$or": [{"mt.a": {"$elemMatch": {"b": 3}}}, {"x": {"$gt": 4}}]},
     [{"x": i + 1, "mt": {"a": _ELEM[i % 4]}} for i in range(8)]),
    ("or_meta_elemmatch_two", {"$or": [{"mt.a": {"$elemMatch": {"b": 2, "c": 3}}}, {"x": {"$gt": 3}}]},
     [{"x": i + 1, "mt": {"a": a}} for i, a in enumerate([[], [{"b": 2, "c": 3}], [{"b": 2}, {"c": 3}]] * 2)]),
    ("meta_elemmatch", {"mt.a": {"$elemMatch": {"b": 3}}}, [{"mt": {"a": _ELEM[i % 4]}} for i in range(8)]),
    ("meta_size", {"mt.a": {"$size": 1}}, [{"mt": {"a": _ELEM[i % 4]}} for i in range(8)]),
]


def _labelled(docs: list[dict], labels: list[int]) -> list[dict]:
    out = []
    for i, (doc, label) in enumerate(zip(docs, labels, strict=True)):
        doc = copy.deepcopy(doc)
        doc["_id"] = i
        doc.setdefault("time", PRED_TIME)
        # the bucket label goes into the meta field, so that the label decides the bucketing
        doc["mt"] = {**doc.get("mt", {}), "bucket": label}
        out.append(doc)
    return out


@pytest.mark.parametrize("name,predicate,docs", PREDICATE_CASES, ids=[c[0] for c in PREDICATE_CASES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(data=st.data())
def test_predicates_match_a_regular_collection_for_any_bucketing(db, name, predicate, docs, data):
    """timeseries_predicates.js: ``$in`` (with array operands), ``$exists`` (null, undefined, date
    values), ``$and``/``$or`` mixing measurement, meta and time predicates (pushable or not),
    ``$geoWithin``/``$geoIntersects``/``$mod``/``$elemMatch``/``$size`` on meta subfields: the
    ``$match`` on the view returns the same documents as on a regular collection holding the same
    documents, however the documents are spread over buckets (the label in the meta field; all in one
    bucket, all apart and random assignments)."""
    labels = data.draw(st.one_of(
        st.just([0] * len(docs)), st.just(list(range(len(docs)))),
        st.lists(st.integers(0, 1), min_size=len(docs), max_size=len(docs)),
    ), label="buckets")
    if "ts" not in db.list_collection_names():
        make_ts(db, "ts", meta_field="mt")
    ts, plain = db["ts"], db["plain"]
    plain.delete_many({})
    db["system.buckets.ts"].delete_many({})
    labelled = _labelled(docs, labels)
    plain.insert_many([raw(d) for d in labelled])
    ts.insert_many([raw(d) for d in labelled])
    expected = list(plain.aggregate([{"$match": predicate}]))
    got = list(ts.aggregate([{"$match": predicate}]))
    assert same_members(got, expected), (got, expected)


# --------------------------------------------------------------------------------------------------
# timeseries_project.js
# --------------------------------------------------------------------------------------------------

PROJECT_DATE = dt.datetime(2023, 3, 4, 5, 6, 7, 891000)
_P = PROJECT_DATE
PROJECT_CASES = [
    ([{"$project": {"a": 1, "b": "$meta", "c": {"$multiply": [2, "$meta"]}, "d": {"$multiply": [2, "$meta"]}}}],
     [{"_id": 0, "a": {"b": 1}, "b": 4, "c": 8, "d": 8}]),
    ([{"$set": {"b": "$meta"}}], [{"_id": 0, "time": _P, "meta": 4, "a": {"b": 1}, "b": 4, "c": [{}, {}]}]),
    ([{"$project": {"a.b": "$meta"}}], [{"_id": 0, "a": {"b": 4}}]),
    ([{"$project": {"c.a": "$meta"}}], [{"_id": 0, "c": [{"a": 4}, {"a": 4}]}]),
    ([{"$project": {"meta": "$b"}}], [{"_id": 0, "meta": 3}]),
    ([{"$project": {"meta": "$time"}}], [{"_id": 0, "meta": _P}]),
    ([{"$project": {"meta": {"$const": 5}}}], [{"_id": 0, "meta": 5}]),
    ([{"$set": {"time": "$meta"}}], [{"_id": 0, "time": 4, "meta": 4, "a": {"b": 1}, "b": 3, "c": [{}, {}]}]),
    ([{"$set": {"time": "$b"}}], [{"_id": 0, "time": 3, "meta": 4, "a": {"b": 1}, "b": 3, "c": [{}, {}]}]),
    ([{"$project": {"time": {"$const": 5}}}], [{"_id": 0, "time": 5}]),
    ([{"$set": {"b": "$meta"}}, {"$unset": "a"}], [{"_id": 0, "time": _P, "meta": 4, "b": 4, "c": [{}, {}]}]),
    ([{"$set": {"b": "$time"}}, {"$unset": "a"}], [{"_id": 0, "time": _P, "meta": 4, "b": _P, "c": [{}, {}]}]),
    ([{"$set": {"b": "$meta"}}, {"$unset": "meta"}], [{"_id": 0, "time": _P, "a": {"b": 1}, "b": 4, "c": [{}, {}]}]),
    ([{"$unset": "b"}, {"$set": {"b": "$meta"}}],
     [{"_id": 0, "time": _P, "meta": 4, "a": {"b": 1}, "b": 4, "c": [{}, {}]}]),
]


@pytest.mark.parametrize("pipeline,expected", PROJECT_CASES, ids=[str(p)[:60] for p, _ in PROJECT_CASES])
def test_project_meta_and_time_fields(db, pipeline, expected):
    """timeseries_project.js: ``$project`` / ``$set`` / ``$unset`` reading or overwriting the meta
    and time fields (meta copied into measurement fields, nested paths, each element of an array;
    meta replaced by a measurement, the time or a constant; time replaced by meta, a measurement or a
    constant; exclusions before and after) give the documented documents."""
    coll = make_ts(db, "ts", meta_field="meta")
    coll.insert_one({"_id": 0, "time": PROJECT_DATE, "meta": 4, "a": {"b": 1}, "b": 3, "c": [{}, {}]})
    assert list(coll.aggregate(pipeline)) == expected


@pytest.mark.parametrize("pipeline", [
    [{"$project": {"_id": 0, "a": "$x", "b": "$a"}}],
    [{"$addFields": {"a": "$x", "b": "$a"}}, {"$project": {"_id": 0}}],
])
def test_project_references_read_the_input_document(db, pipeline):
    """timeseries_project.js: a field reference in ``$project`` / ``$addFields`` reads the stage's
    input document, not a field of the same name computed by that stage (meta field ``x``): the view
    answers as a regular collection, ``{a: 5, b: 3}``."""
    ts = make_ts(db, "ts", meta_field="x")
    doc = {"time": iso("2019-10-11T14:39:18.670Z"), "x": 5, "a": 3}
    ts.insert_one(dict(doc))
    db["plain"].insert_one(dict(doc))
    got = list(ts.aggregate(pipeline))
    assert same_members(got, db["plain"].aggregate(pipeline))
    assert got[0]["a"] == 5 and got[0]["b"] == 3


# --------------------------------------------------------------------------------------------------
# timeseries_computed_field.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def computed_coll(client):
    name = "jst_ts_filters_computed"
    client.drop_database(name)
    coll = make_ts(client[name], "timeseries_computed_field", meta_field="measurement")
    coll.insert_one({"_id": 0, "time": ms(DATE_PREFIX + 100), "measurement": "cpu", "topLevelScalar": 123,
                     "topLevelScalarDouble": 123.8778645, "topLevelLargeNumber": 12345678912345.0,
                     "topLevelArray": [1, 2, 3, 4], "arrOfObj": [{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}],
                     "obj": {"a": 123}, "length": 0})
    coll.insert_one({"_id": 1, "time": ms(DATE_PREFIX + 200), "measurement": "cpu", "topLevelScalar": 456,
                     "topLevelScalarDouble": 546.76858699, "topLevelArray": [101, 102, 103, 104],
                     "arrOfObj": [{"x": 101}, {"x": 102}, {"x": 103}, {"x": 104}], "obj": {"a": 456}, "length": 23})
    coll.insert_one({"_id": 2, "time": ms(DATE_PREFIX + 300), "measurement": "gpu", "length": -2})
    yield coll
    client.drop_database(name)


def _count(n: int) -> list[dict]:
    return [{"count": n}]


MINUTE = {"$dateTrunc": {"date": "$time", "unit": "minute"}}
MINUTE_ID = iso("1970-01-20T10:55:00Z")
HOUR_DIFF = {"$addFields": {"hourDiff": {"$dateDiff": {"startDate": "$time", "endDate": iso("1970-01-21"),
                                                       "unit": "hour"}}}}
_TS = "$topLevelScalar"
_STR4 = ["test string"] * 4


def _arith(expr, value, n):
    return ([{"$addFields": {"computedA": expr}}, {"$match": {"computedA": value}}, {"$count": "count"}], _count(n))


def _computed_match(expr, n):
    return ([{"$addFields": {"computedField": expr}}, {"$match": {"computedField": True}}, {"$count": "count"}],
            _count(n))


def _rounded(expr, value):
    return ([{"$addFields": {"computedA": expr}}, {"$match": {"computedA": {"$gte": 100}}},
             {"$group": {"_id": {"time": MINUTE}, "value": {"$sum": "$computedA"}}}],
            [{"_id": {"time": MINUTE_ID}, "value": value}])


def _mod_group(first, total1, total2, match=None):
    pipeline = [{"$addFields": {"md": {"$mod": first}}}]
    if match:
        pipeline.append({"$match": match})
    pipeline.append({"$group": {"_id": MINUTE, "total1": {"$sum": "$md"}, "total2": {"$sum": _TS}}})
    return pipeline, [{"_id": MINUTE_ID, "total1": total1, "total2": total2}]


COMPUTED_CASES = {
    "array_path_trim_group": ([{"$addFields": {"arrOfObj.x": {"$trim": {"input": "test string"}}}},
                               {"$match": {"topLevelScalar": {"$gte": 0}}},
                               {"$group": {"_id": None, "max": {"$max": "$arrOfObj.x"}}}],
                              [{"_id": None, "max": _STR4}]),
    "array_path_add_group": ([{"$addFields": {"arrOfObj.x": {"$add": [_TS, 1]}}},
                              {"$match": {"topLevelScalar": {"$gte": 0}}},
                              {"$group": {"_id": None, "max": {"$max": "$arrOfObj.x"}}}],
                             [{"_id": None, "max": [457] * 4}]),
    "array_path_then_filter": ([{"$addFields": {"arrOfObj.x": {"$trim": {"input": "test string"}}}},
                                {"$match": {"arrOfObj.x": "test string"}},
                                {"$group": {"_id": None, "max": {"$max": "$arrOfObj.x"}}}],
                               [{"_id": None, "max": _STR4}]),
    "dotted_no_array": _arith({"$add": ["$obj.a", 1]}, 457, 1),
    "unneeded_computed_count": ([{"$addFields": {"a": 1}}, {"$count": "count"}], _count(3)),
    "add": _arith({"$add": [_TS, 1]}, 457, 1),
    "subtract": _arith({"$subtract": [_TS, 1]}, 455, 1),
    "multiply": _arith({"$multiply": [_TS, 10]}, 4560, 1),
    "divide": _arith({"$divide": [_TS, 2]}, 228, 1),
    "add_rev": _arith({"$add": [1, _TS]}, 457, 1),
    "subtract_rev": _arith({"$subtract": [200, _TS]}, 77, 1),
    "multiply_rev": _arith({"$multiply": [10, _TS]}, 4560, 1),
    "divide_rev": _arith({"$divide": [4560, _TS]}, 10, 1),
    "add_self": _arith({"$add": [_TS, _TS]}, 912, 1),
    "subtract_self": _arith({"$subtract": [_TS, _TS]}, 0, 2),
    "multiply_self": _arith({"$multiply": [_TS, _TS]}, 15129, 1),
    "divide_self": _arith({"$divide": [_TS, _TS]}, 1, 2),
    "datediff_group": ([HOUR_DIFF, {"$match": {"hourDiff": {"$gte": 12}}},
                        {"$group": {"_id": {"time": MINUTE}, "open": {"$first": _TS}}}],
                       [{"_id": {"time": MINUTE_ID}, "open": 123}]),
    "computed_named_mt": ([{"$addFields": {"mt": {"$multiply": [_TS, 10]}}}, {"$match": {"mt": {"$gte": 2000}}},
                           {"$group": {"_id": {"time": MINUTE}, "open": {"$first": _TS}}}],
                          [{"_id": {"time": MINUTE_ID}, "open": 456}]),
    "or_computed_and_measurement": ([HOUR_DIFF, {"$match": {"$or": [{"topLevelScalar": {"$gt": 200, "$lt": 800}},
                                                                    {"hourDiff": {"$gte": 12}}]}},
                                     {"$group": {"_id": {"time": MINUTE}, "open": {"$first": _TS}}}],
                                    [{"_id": {"time": MINUTE_ID}, "open": 123}]),
    "project_add_remove_subfields": ([{"$project": {"obj.newField": _TS}}, {"$project": {"_id": 0, "obj.a": 0}}],
                                     [{"obj": {"newField": 123}}, {"obj": {"newField": 456}}, {"obj": {}}]),
    "replace_root_empty": ([{"$match": {"time": {"$gte": ms(DATE_PREFIX + 200)}}}, {"$addFields": {}},
                            {"$project": {"measurement0": {"$floor": _TS}}}, {"$replaceRoot": {"newRoot": {}}}],
                           [{}, {}]),
    "match_unprojected_field": ([{"$project": {"obj.a": 1}},
                                 {"$match": {"$or": [{"topLevelScalar": {"$gt": 10}}, {"$expr": {"$literal": True}}]}},
                                 {"$sort": {"_id": 1}}, {"$count": "count"}], _count(3)),
    "datediff_project": ([{"$project": {"t": {"$dateDiff": {"startDate": "$time", "endDate": ms(DATE_PREFIX + 150),
                                                            "unit": "millisecond"}}}}],
                         [{"_id": 0, "t": 50}, {"_id": 1, "t": -50}, {"_id": 2, "t": -150}]),
    "datediff_project_rev": ([{"$project": {"t": {"$dateDiff": {"startDate": ms(DATE_PREFIX - 10), "endDate": "$time",
                                                                "unit": "millisecond"}}}}],
                             [{"_id": 0, "t": 110}, {"_id": 1, "t": 210}, {"_id": 2, "t": 310}]),
    "datetrunc_second": ([{"$addFields": {"computedField": {"$dateTrunc": {"date": "$time", "unit": "second"}}}},
                          {"$match": {"computedField": ms(DATE_PREFIX - 440)}}, {"$count": "count"}], _count(3)),
    "exists": ([{"$match": {"topLevelScalar": {"$exists": True}}}, {"$count": "count"}], _count(2)),
    "lt": ([{"$match": {"topLevelScalar": {"$lt": 456}}}, {"$count": "count"}], _count(1)),
    "lte": ([{"$match": {"topLevelScalar": {"$lte": 456}}}, {"$count": "count"}], _count(2)),
    "gt": ([{"$match": {"topLevelScalar": {"$gt": 123}}}, {"$count": "count"}], _count(1)),
    "gte": ([{"$match": {"topLevelScalar": {"$gte": 123}}}, {"$count": "count"}], _count(2)),
    "eq": ([{"$match": {"topLevelScalar": {"$eq": 123}}}, {"$count": "count"}], _count(1)),
    "ne": ([{"$match": {"topLevelScalar": {"$ne": 123}}}, {"$count": "count"}], _count(2)),
    "or": ([{"$match": {"$or": [{"topLevelScalar": 123}, {"topLevelScalar": 456}]}}, {"$count": "count"}],
           _count(2)),
    "and_const": _computed_match({"$and": [_TS, True]}, 2),
    "and_fields": _computed_match({"$and": [_TS, "$obj.a"]}, 2),
    "or_const": _computed_match({"$or": [_TS, False]}, 2),
    "or_fields": _computed_match({"$or": [_TS, "$obj.a"]}, 2),
    "not": _computed_match({"$not": [_TS]}, 1),
    "any_element_true": _computed_match({"$anyElementTrue": [[_TS]]}, 2),
    "ratio": ([{"$match": {"length": {"$ne": 0}}}, {"$set": {"computedA": {"$multiply": [_TS, _TS]}}},
               {"$addFields": {"ratio": {"$divide": ["$computedA", "$length"]}}}, {"$match": {"ratio": {"$gt": 0}}},
               {"$project": {"_id": 1}}], [{"_id": 1}]),
    "round_2": _rounded({"$round": ["$topLevelScalarDouble", 2]}, 670.65),
    "round_0": _rounded({"$round": ["$topLevelScalarDouble"]}, 671),
    "trunc_2": _rounded({"$trunc": ["$topLevelScalarDouble", 2]}, 670.63),
    "trunc_0": _rounded({"$trunc": ["$topLevelScalarDouble"]}, 669),
    "mod_const": _mod_group([_TS, 5], 4, 579),
    "mod_const_rev": _mod_group([500, _TS], 52, 579),
    "mod_self": _mod_group([_TS, _TS], 0, 579),
    "mod_then_match_mod": _mod_group([_TS, 5], 1, 456, match={"md": {"$mod": [4, 1]}}),
    "match_mod_large": ([{"$match": {"topLevelLargeNumber": {"$mod": [1, 0]}}}, {"$count": "count"}], _count(1)),
    "dateadd": ([{"$addFields": {"computedField": {"$dateAdd": {"startDate": "$time", "unit": "millisecond",
                                                                "amount": 100}}}},
                 {"$match": {"computedField": ms(DATE_PREFIX + 400)}}, {"$count": "count"}], _count(1)),
    "datesubtract": ([{"$addFields": {"computedField": {"$dateSubtract": {"startDate": "$time", "unit": "millisecond",
                                                                          "amount": 100}}}},
                      {"$match": {"computedField": ms(DATE_PREFIX)}}, {"$count": "count"}], _count(1)),
    "meta_computed_to_missing": ([{"$project": {"_id": 0, "measurement": "$$REMOVE"}}], [{}, {}, {}]),
    "meta_projected_out_then_in": ([{"$project": {"measurement": 0}}, {"$project": {"measurement": "$measurement"}},
                                    {"$match": {"a": 1}}], []),
    "time_out_then_computed_back": ([{"$project": {"_id": 0, "measurement": 1}},
                                     {"$project": {"_id": 0, "time": "$time"}},
                                     {"$project": {"_id": 1, "time": 1}}], [{}, {}, {}]),
    "time_out_then_included": ([{"$project": {"_id": 0, "measurement": 1}}, {"$project": {"_id": 0, "time": 1}}],
                               [{}, {}, {}]),
    "meta_excluded_included_time": ([{"$project": {"_id": 0, "measurement": 0}},
                                     {"$project": {"_id": 0, "measurement": 1}},
                                     {"$project": {"_id": 0, "time": 1}}], [{}, {}, {}]),
}


@pytest.mark.parametrize("case", COMPUTED_CASES)
def test_computed_fields(computed_coll, case):
    """timeseries_computed_field.js: fields computed by ``$addFields``/``$set``/``$project``
    (arithmetic, ``$dateDiff``/``$dateTrunc``/``$dateAdd``/``$dateSubtract``, ``$round``/``$trunc``,
    ``$mod``, boolean expressions, dotted paths through arrays, ``$$REMOVE``, fields projected out and
    back in) and the ``$match``/``$group``/``$count`` that follow give the jstest's documents (in the
    collection's natural order where the jstest checks order)."""
    pipeline, expected = COMPUTED_CASES[case]
    assert list(computed_coll.aggregate(pipeline)) == expected


@pytest.mark.parametrize("expr", [
    {"$round": [2, "$topLevelScalarDouble"]},
    {"$round": ["$topLevelScalarDouble", _TS]},
    {"$trunc": [2, "$topLevelScalarDouble"]},
    {"$trunc": ["$topLevelScalarDouble", _TS]},
], ids=["round_place_fraction", "round_place_123", "trunc_place_fraction", "trunc_place_123"])
def test_computed_round_trunc_bad_place_fails(computed_coll, expr):
    """timeseries_computed_field.js: ``$round``/``$trunc`` whose place argument is a non-integral
    number or out of range [-20, 100) fail the aggregation."""
    pipeline = [{"$addFields": {"computedA": expr}}, {"$match": {"computedA": {"$gte": 100}}},
                {"$group": {"_id": {"time": MINUTE}, "value": {"$sum": "$computedA"}}}]
    with pytest.raises(OperationFailure):
        list(computed_coll.aggregate(pipeline))


# --------------------------------------------------------------------------------------------------
# timeseries_id_range.js (results only)
# --------------------------------------------------------------------------------------------------

ID_RANGE_DATES = [iso(s) for s in (
    "2021-04-01T00:00:00.001Z", "2021-04-02T00:00:00.007Z", "2021-04-03T00:00:00.005Z", "2021-04-04T00:00:00.003Z",
    "2021-04-05T00:00:00.009Z", "2021-04-06T00:00:00.008Z", "2021-04-06T00:00:00.010Z", "2021-04-06T00:00:00.010Z",
    "2021-04-07T00:00:00.006Z", "2021-04-08T00:00:00.003Z", "2021-04-09T00:00:00.007Z", "2021-04-10T00:00:00.002Z",
)]
_R = ID_RANGE_DATES
ID_RANGE_CASES = {
    "lte_unwind": ([{"$match": {"time": {"$lte": _R[7]}}}, {"$unwind": "$x"}], list(range(8)), 16),
    "lt": ([{"$match": {"time": {"$lt": _R[7]}}}], list(range(6)), 6),
    "gte": ([{"$match": {"time": {"$gte": _R[5]}}}], list(range(5, 12)), 7),
    "gt": ([{"$match": {"time": {"$gt": _R[5]}}}], list(range(6, 12)), 6),
    "range_closed": ([{"$match": {"time": {"$gte": _R[5], "$lte": _R[7]}}}], [5, 6, 7], 3),
    "range_open": ([{"$match": {"time": {"$gt": _R[5], "$lt": _R[7]}}}], [], 0),
    "range_empty": ([{"$match": {"time": {"$lt": _R[5], "$gt": _R[7]}}}], [], 0),
    "range_three_bounds": ([{"$match": {"time": {"$gte": _R[3], "$gt": _R[5], "$lt": _R[7]}}}], [], 0),
}


@pytest.mark.parametrize("case", list(ID_RANGE_CASES))
def test_id_range_time_predicates(db, case):
    """timeseries_id_range.js (results only): time-field range predicates (``$lt``/``$lte``/``$gt``/
    ``$gte`` and their combinations, millisecond-apart bounds in buckets one day apart) return nothing
    on an empty collection and the expected measurements once twelve are inserted one by one
    (``$unwind`` after the ``$match`` doubles the ``$lte`` answer: 16 documents)."""
    pipeline, wanted, count = ID_RANGE_CASES[case]
    coll = make_ts(db, "ts")
    assert list(coll.aggregate(pipeline)) == []
    for i, date in enumerate(ID_RANGE_DATES):
        coll.insert_one({"_id": i, "time": date, "x": [1, 2]} if case == "lte_unwind" else {"_id": i, "time": date})
    got = list(coll.aggregate(pipeline))
    assert len(got) == count
    assert sorted({d["_id"] for d in got}) == wanted


# --------------------------------------------------------------------------------------------------
# timeseries_bucket_level_filter.js (results only)
# --------------------------------------------------------------------------------------------------

def test_bucket_level_filter_excludes_whole_bucket(db):
    """timeseries_bucket_level_filter.js (results only): with one measurement ``a: 42``, ``$match``
    ``a > 100`` (alone, and with ``meta: 1`` which can use the default meta/time index) followed by
    ``$count`` returns no document."""
    coll = make_ts(db, "ts", meta_field="meta")
    coll.insert_one({"time": dt.datetime(2024, 1, 1, 12), "meta": 1, "a": 42, "b": 17})
    assert list(coll.aggregate([{"$match": {"a": {"$gt": 100}}}, {"$count": "ct"}])) == []
    assert list(coll.aggregate([{"$match": {"meta": 1, "a": {"$gt": 100}}}, {"$count": "ct"}])) == []
    assert list(coll.aggregate([{"$match": {"meta": 1, "a": {"$lt": 100}}}, {"$count": "ct"}])) == [{"ct": 1}]


@pytest.mark.parametrize("match,which", [
    ({"x": None}, ["missing"]),
    ({"x": {"$lt": "aaa"}}, []),
    ({"x": {"$lte": 10}}, []),
    ({"$expr": {"$lt": ["$x", "aaa"]}}, ["missing"]),
    ({"$expr": {"$lte": ["$x", 10]}}, ["missing"]),
], ids=["eq_null", "lt_string", "lte_number", "expr_lt_string", "expr_lte_number"])
def test_bucket_level_filter_missing_field(db, match, which):
    """timeseries_bucket_level_filter.js (testWithMissingField): in a bucket where one measurement has
    ``x: "abc"`` and one lacks ``x``: ``{x: null}`` finds the one lacking it, type-bracketed
    comparisons find nothing, and ``$expr`` comparisons (missing sorts before numbers and strings)
    find the one lacking ``x``."""
    coll = make_ts(db, "ts", time_field="t", meta_field="m")
    t = dt.datetime(2024, 1, 1, 12, 0, 0, 123000)
    docs = {"full": {"_id": 0, "t": t, "m": 0, "x": "abc"}, "missing": {"_id": 0, "t": t, "m": 0}}
    coll.insert_many([dict(docs["full"]), dict(docs["missing"])])
    got = list(coll.aggregate([{"$match": match}]))
    assert same_members(got, [docs[w] for w in which]), got


# --------------------------------------------------------------------------------------------------
# timeseries_match_pushdown.js (results only)
# --------------------------------------------------------------------------------------------------

def _pd(second: int, a=UNDEFINED, meta=None) -> dict:
    doc = {"time": dt.datetime(2022, 1, 1, 0, 0, second), "meta": meta}
    if a != UNDEFINED:  # (UNDEFINED here means: no field 'a')
        doc["a"] = a
    return doc


PD_DEFAULT = [_pd(1, 1, 0), _pd(2, 2, 1), _pd(3, 3, 1), _pd(4, 4, 1), _pd(5, 5, 2), _pd(6, meta=2), _pd(7, None, 2),
              _pd(8, [1, 2, 3], 2)]
PD_SEQ = [_pd(s, s, m) for s, m in ((1, 0), (2, 1), (3, 1), (4, 1), (5, 2), (6, 3), (7, 3), (8, 3))]
A_TIME, B_TIME = dt.datetime(2022, 1, 1, 0, 0, 3), dt.datetime(2022, 1, 1, 0, 0, 7)
PUSHDOWN_CASES = {
    "gt_time": (PD_DEFAULT, [{"$match": {"time": {"$gt": A_TIME}}}], [4, 5, 6, 7, 8]),
    "gt_measure": (PD_DEFAULT, [{"$match": {"a": {"$gt": 3}}}], [4, 5]),
    "expr_gt_time": (PD_DEFAULT, [{"$match": {"$expr": {"$gt": ["$time", {"$const": A_TIME}]}}}], [4, 5, 6, 7, 8]),
    "gte_time": (PD_DEFAULT, [{"$match": {"time": {"$gte": A_TIME}}}], [3, 4, 5, 6, 7, 8]),
    "gte_measure": (PD_DEFAULT, [{"$match": {"a": {"$gte": 3}}}], [3, 4, 5, 8]),
    "expr_gte_time": (PD_DEFAULT, [{"$match": {"$expr": {"$gte": ["$time", {"$const": A_TIME}]}}}],
                      [3, 4, 5, 6, 7, 8]),
    "lt_time": (PD_DEFAULT, [{"$match": {"time": {"$lt": A_TIME}}}], [1, 2]),
    "lt_measure": (PD_DEFAULT, [{"$match": {"a": {"$lt": 3}}}], [1, 2, 8]),
    "expr_lt_time": (PD_DEFAULT, [{"$match": {"$expr": {"$lt": ["$time", {"$const": A_TIME}]}}}], [1, 2]),
    "lte_time": (PD_DEFAULT, [{"$match": {"time": {"$lte": A_TIME}}}], [1, 2, 3]),
    "expr_lte_time": (PD_DEFAULT, [{"$match": {"$expr": {"$lte": ["$time", {"$const": A_TIME}]}}}], [1, 2, 3]),
    "lte_measure": (PD_DEFAULT, [{"$match": {"a": {"$lte": 3}}}], [1, 2, 3, 8]),
    "eq_time": (PD_DEFAULT, [{"$match": {"time": {"$eq": A_TIME}}}], [3]),
    "expr_eq_time": (PD_DEFAULT, [{"$match": {"$expr": {"$eq": ["$time", {"$const": A_TIME}]}}}], [3]),
    "eq_measure": (PD_DEFAULT + [_pd(6, meta=1), _pd(6, None, 1)], [{"$match": {"a": {"$eq": 3}}}], [3, 8]),
    "and_time": ([_pd(s, s, m) for s, m in ((2, 1), (3, 1), (4, 1), (5, 2), (6, 3), (7, 3), (8, 3))],
                 [{"$match": {"$and": [{"time": {"$gt": A_TIME}}, {"time": {"$lt": B_TIME}}]}}], [4, 5, 6]),
    "or_time": (PD_SEQ[:7], [{"$match": {"$or": [{"time": {"$lte": A_TIME}}, {"time": {"$gte": B_TIME}}]}}],
                [1, 2, 3, 7]),
    "time_and_meta": (PD_SEQ, [{"$match": {"$and": [{"time": {"$gt": A_TIME}}, {"meta": {"$lte": 3}}]}}],
                      [4, 5, 6, 7, 8]),
    "expr_meta_eq_measure_and_time": (
        [_pd(3, 3, 1), _pd(4, 1, 1), _pd(5, 3, 2)],
        [{"$match": {"$expr": {"$and": [{"$eq": ["$meta", "$a"]}, {"$gt": ["$time", A_TIME]}]}}}], [4]),
    "expr_meta_const_and_time": (
        [_pd(3, meta=1), _pd(4, meta=1), _pd(5, meta=2)],
        [{"$match": {"$expr": {"$and": [{"$eq": ["$meta", 1]}, {"$gt": ["$time", A_TIME]}]}}}], [4]),
    "or_time_meta": ([_pd(s, s, m) for s, m in ((1, 0), (2, 1), (3, 1), (4, 1), (5, 3), (6, 4))],
                     [{"$match": {"$or": [{"time": {"$lte": A_TIME}}, {"meta": {"$gt": 3}}]}}], [1, 2, 3, 6]),
    "double_match": (PD_SEQ[:5] + [_pd(6, 6, 3)], [{"$match": {"time": {"$gt": A_TIME}}},
                                                   {"$match": {"time": {"$lt": B_TIME}}}], [4, 5, 6]),
    "triple_match": (PD_SEQ[:5] + [_pd(6, 6, 3)], [{"$match": {"time": {"$gt": A_TIME}}},
                                                   {"$match": {"time": {"$lt": B_TIME}}},
                                                   {"$match": {"time": {"$lt": A_TIME}}}], []),
    "expr_and_measure_meta": (
        [_pd(0, 0, 1), _pd(1, 1, 2), _pd(2, 2, 2), _pd(3, 3, 2), _pd(4, meta=2), _pd(5, 5, 3)],
        [{"$match": {"$expr": {"$and": [{"$lt": ["$a", "$meta"]}, {"$gt": ["$meta", 1]}]}}}], [1, 4]),
    "expr_and_rewritable": (
        [_pd(0, 0, 1), _pd(1, 1, 2), _pd(2, 2, 2), _pd(3, 3, 2), _pd(4, meta=2), _pd(5, None, 2), _pd(6, 6, 3)],
        [{"$match": {"$expr": {"$and": [{"$gte": ["$a", 2]}, {"$lt": ["$meta", 3]}]}}}], [2, 3]),
    "expr_or": (
        [_pd(0, 0, 1), _pd(1, 1, 2), _pd(2, 2, 2), _pd(3, 3, 2), _pd(4, meta=2), _pd(5, 5, 3)],
        [{"$match": {"$expr": {"$or": [{"$lt": ["$a", "$meta"]}, {"$lte": ["$meta", 2]}]}}}], [0, 1, 2, 3, 4]),
}


@pytest.mark.parametrize("case", list(PUSHDOWN_CASES))
def test_match_pushdown_results(db, case):
    """timeseries_match_pushdown.js (results only, not explain): ``$match`` on the time field, a
    measurement (with missing, null and array values), the meta field, their ``$and``/``$or``, the
    same inside ``$expr``, and consecutive ``$match`` stages — with buckets matching entirely,
    partly or not at all — return the expected measurements (sorted by time, ``_id`` ignored)."""
    docs, pipeline, seconds = PUSHDOWN_CASES[case]
    coll = make_ts(db, "ts", meta_field="meta")
    coll.insert_many([dict(d) for d in docs])
    got = list(coll.aggregate([*pipeline, {"$sort": {"time": 1}}]))
    for doc in got:
        del doc["_id"]
    expected = []
    for s in seconds:
        (doc,) = [d for d in docs if d["time"].second == s]
        expected.append(doc)
    assert got == expected


# --------------------------------------------------------------------------------------------------
# timeseries_filter_extended_range.js
# --------------------------------------------------------------------------------------------------

def _y(year: int) -> dt.datetime:
    return dt.datetime(year, 1, 1)


EXT_CASES = []
for _op, _bound, _under, _over in itertools.product(["$eq", "$lt", "$gt", "$lte", "$gte"], [1980],
                                                    [False, True], [False, True]):
    EXT_CASES.append((_under, _over, {"time": {_op: _y(_bound)}}))
EXT_CASES += [
    (False, True, {"time": {"$eq": _y(2040)}}),
    (True, False, {"time": {"$eq": _y(1965)}}),
    (True, False, {"time": {"$gt": _y(1920), "$lt": _y(1980)}}),
    (False, True, {"time": {"$gt": _y(1980), "$lt": _y(2050)}}),
    # the two cases the 7.0 jstest left commented out (SERVER-69952), fixed later: bounds outside the
    # 32-bit range with every date inside it
    (False, False, {"time": {"$gt": _y(1920), "$lt": _y(1980)}}),
    (False, False, {"time": {"$gt": _y(1980), "$lt": _y(2050)}}),
]


def _ext_expected(dates: list[dt.datetime], query: dict) -> list[dt.datetime]:
    ops = {"$eq": lambda a, b: a == b, "$lt": lambda a, b: a < b, "$gt": lambda a, b: a > b,
           "$lte": lambda a, b: a <= b, "$gte": lambda a, b: a >= b}
    cond = query["time"]
    return sorted((d for d in dates if all(ops[op](d, v) for op, v in cond.items())), reverse=True)


@pytest.mark.parametrize("underflow,overflow,query", EXT_CASES,
                         ids=[f"u{int(u)}o{int(o)}-{list(q['time'].items())}" for u, o, q in EXT_CASES])
def test_filter_extended_range(db, underflow, overflow, query):
    """timeseries_filter_extended_range.js: with a date before 1970 (1965) and/or after the 32-bit
    epoch (2040) among the measurements, ``$eq``/``$lt``/``$gt``/``$lte``/``$gte`` on the time field
    and ranges straddling the epoch limits return exactly the matching measurements, through both
    ``aggregate`` ($match + $project) and ``find`` with a projection."""
    dates = [_y(1965 if underflow else 1971), _y(1975), _y(1980), _y(1995), _y(2040 if overflow else 2030)]
    coll = make_ts(db, "ts")
    coll.insert_many([{"time": d} for d in dates])
    expected = [{"time": d} for d in _ext_expected(dates, query)]

    def by_time(docs):
        return sorted(docs, key=lambda d: d["time"], reverse=True)

    assert by_time(coll.aggregate([{"$match": query}, {"$project": {"_id": 0, "time": 1}}])) == expected
    assert by_time(coll.find(query, {"_id": 0, "time": 1})) == expected


# --------------------------------------------------------------------------------------------------
# query/timeseries_expr_in_split_pushdown.js
# --------------------------------------------------------------------------------------------------

T_0, T_1 = dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2)
EXPR_IN_CASES = {
    "measurements_only": ([{"$match": {"m": "tagA", "$expr": {"$and": [{"$in": ["$x", [1, 2]]}, {"$eq": ["$y", 10]}]}}},
                           {"$project": {"_id": 0, "m": 1, "x": 1, "y": 1}}],
                          [{"m": "tagA", "x": 1, "y": 10}]),
    "time_and_measurement": ([{"$match": {"m": "tagA",
                                          "$expr": {"$and": [{"$in": ["$t", [T_0]]}, {"$in": ["$x", [1, 2]]}]}}},
                              {"$project": {"_id": 0, "x": 1}}, {"$sort": {"x": 1}}],
                             [{"x": 1}, {"x": 2}]),
    "meta_and_measurement": ([{"$match": {"$expr": {"$and": [{"$in": ["$m", ["tagA", "tagB"]]},
                                                             {"$in": ["$x", [1, 3]]}]}}},
                              {"$project": {"_id": 0, "m": 1, "x": 1, "y": 1}}],
                             [{"m": "tagA", "x": 1, "y": 10}, {"m": "tagA", "x": 3, "y": 10},
                              {"m": "tagB", "x": 1, "y": 10}]),
    "two_measurements": ([{"$match": {"$expr": {"$and": [{"$in": ["$x", [1, 2]]}, {"$in": ["$y", [10, 20]]}]}}},
                          {"$project": {"_id": 0, "m": 1, "x": 1, "y": 1}}],
                         [{"m": "tagA", "x": 1, "y": 10}, {"m": "tagA", "x": 2, "y": 20},
                          {"m": "tagB", "x": 1, "y": 10}]),
}


@pytest.mark.parametrize("case", list(EXPR_IN_CASES))
def test_expr_in_split_pushdown(db, case):
    """query/timeseries_expr_in_split_pushdown.js: ``$expr`` with ``$and`` of ``$in`` predicates over
    measurement, time and meta fields (split between the part run on buckets and the part run on
    measurements) returns the expected measurements."""
    coll = make_ts(db, "ts", time_field="t", meta_field="m")
    coll.insert_many([{"t": T_0, "m": "tagA", "x": 1, "y": 10}, {"t": T_0, "m": "tagA", "x": 2, "y": 20},
                      {"t": T_1, "m": "tagA", "x": 3, "y": 10}, {"t": T_0, "m": "tagB", "x": 1, "y": 10}])
    pipeline, expected = EXPR_IN_CASES[case]
    got = list(coll.aggregate(pipeline))
    assert same_members(got, expected), got
    if case == "time_and_measurement":
        assert got == expected
