"""Through an index, finds, counts and sorts answer exactly what the collection scan answers (hint
``$natural`` and the matcher) for mixtures of int32, int64, double and Decimal128 at their collision
boundaries (a double and the 34-digit decimals next to it, 2**53 +- k as long and double, NaN, -0, +-inf,
the exponent extremes), null, missing, ``[]`` and nested arrays: index keys order numbers by exact value
and key an empty array as undefined, as mongod's KeyString and BtreeKeyGenerator do."""

import datetime
import math

import pytest
from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from harness.bson_numbers import neighbours
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.commands("find", "count", "createIndexes", "insert")]

DOUBLES = [0.1, -0.1, 1 / 3, 2.5, 0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.7976931348623157e308,
           1e-300, 123456.789, 2.0 ** 53, 2.0 ** 53 + 2, -(2.0 ** 53), 2.0 ** 63, 1e20]


double = st.sampled_from(DOUBLES)
decimal128 = st.one_of(
    st.sampled_from([f for f in DOUBLES if f != 0]).flatmap(lambda f: st.sampled_from(neighbours(f))),
    st.sampled_from(["NaN", "-Infinity", "Infinity", "-0", "1E+6144", "-1E-6176", "9007199254740993"]).map(Decimal128))
integer = st.one_of(st.integers(-3, 3), st.integers(-4, 4).map(lambda k: Int64(2 ** 53 + k)),
                    st.sampled_from([Int64(2 ** 63 - 1), Int64(-(2 ** 63)), -(2 ** 31), 2 ** 31 - 1]))
number = st.one_of(double, decimal128, integer)
scalar = st.one_of(number, st.none())
value = st.one_of(scalar, st.just([]), st.lists(scalar, min_size=1, max_size=3),
                  st.lists(st.one_of(scalar, st.just([]), st.lists(scalar, max_size=2)), min_size=1, max_size=3))
document = st.one_of(st.just({}), value.map(lambda v: {"a": v}))
query = st.one_of(
    st.tuples(st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte"]), scalar).map(lambda p: {"a": {p[0]: p[1]}}),
    st.lists(scalar, min_size=1, max_size=3).map(lambda vs: {"a": {"$in": vs}}),
    scalar.map(lambda v: {"a": v}))


def _ids(cursor) -> list:
    return [d["_id"] for d in cursor]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(document, min_size=1, max_size=14), queries=st.lists(query, min_size=1, max_size=8))
@pytest.mark.slow
def test_indexed_finds_counts_and_sorts_answer_like_the_collection_scan(db, docs, queries):
    coll = db.nums
    coll.drop()
    coll.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    coll.create_index("a")
    coll.create_index([("a", 1), ("_id", 1)])
    for flt in queries:
        natural = sorted(_ids(coll.find(flt).hint({"$natural": 1})))
        assert sorted(_ids(coll.find(flt).hint("a_1"))) == natural, flt
        assert coll.count_documents(flt, hint="a_1") == len(natural), flt
    for direction in (1, -1):
        order = [("a", direction), ("_id", direction)]
        natural = _ids(coll.find({}, sort=order).hint({"$natural": 1}))
        assert _ids(coll.find({}, sort=order).hint("a_1__id_1")) == natural, direction
        assert _ids(coll.find({}, sort=order).hint("a_1")) == natural, direction


def test_a_double_above_its_34_digit_decimal_is_found_through_the_index(db):
    # 0.1 is 0.1000000000000000055511151231257827021181583404541015625: greater than this decimal
    dec = Decimal128("0.1000000000000000055511151231257827")
    db.c.insert_many([{"_id": 1, "a": 0.1}, {"_id": 2, "a": dec}, {"_id": 3, "a": Int64(2 ** 53 + 1)},
                      {"_id": 4, "a": 2.0 ** 53}])
    db.c.create_index("a")
    for flt, expected in [({"a": {"$gt": dec}}, [1, 3, 4]), ({"a": {"$lte": dec}}, [2]), ({"a": dec}, [2]),
                          ({"a": 0.1}, [1]), ({"a": {"$gt": 2.0 ** 53}}, [3]), ({"a": Int64(2 ** 53)}, [4])]:
        assert sorted(_ids(db.c.find(flt).hint("a_1"))) == expected, flt
        assert sorted(_ids(db.c.find(flt).hint({"$natural": 1}))) == expected, flt
    assert _ids(db.c.find({}, sort=[("a", 1)]).hint("a_1")) == [2, 1, 4, 3]


def test_an_empty_array_is_keyed_below_null_and_is_no_null_key(db):
    db.c.insert_many([{"_id": 1, "a": None}, {"_id": 2}, {"_id": 3, "a": []}, {"_id": 4, "a": [[]]}, {"_id": 5, "a": 0}])
    db.c.create_index("a")
    assert _ids(db.c.find({}, sort=[("a", 1)]).hint("a_1")) == [3, 1, 2, 5, 4]
    assert _ids(db.c.find({}, sort=[("a", 1)]).hint({"$natural": 1})) == [3, 1, 2, 5, 4]
    assert sorted(_ids(db.c.find({"a": None}).hint("a_1"))) == [1, 2]
    assert sorted(_ids(db.c.find({"a": []}).hint("a_1"))) == [3, 4]
    assert db.c.find_one({"_id": 3}, return_key=True, hint="a_1") == {"a": None}  # undefined shown as null
    db.u.create_index("a", unique=True)  # [] and null are different keys
    db.u.insert_many([{"a": []}, {"a": None}])


# The family over every BSON type a document may hold (no undefined: the codec reads it as null), at the
# edges of their brackets, and the operators whose bounds come from them: $exists, $type, $eq, ranges, $in
_OTHERS = ["", "x", "xy", {}, {"b": 1}, {"b": None}, True, False, ObjectId("0" * 24), ObjectId("f" * 24),
           datetime.datetime(1970, 1, 1), datetime.datetime(2020, 1, 1), Binary(b""), Binary(b"\x01", 5),
           Timestamp(0, 0), Timestamp(5, 1), MinKey(), MaxKey()]
any_scalar = st.one_of(number, st.none(), st.sampled_from(_OTHERS))
stored_scalar = st.one_of(any_scalar, st.sampled_from([Regex("^x"), Code("f")]))  # (no query value: a pattern)
any_value = st.one_of(stored_scalar, st.just([]), st.lists(stored_scalar, min_size=1, max_size=3),
                      st.lists(st.one_of(stored_scalar, st.just([])), min_size=1, max_size=2).map(lambda v: [v]))
_TYPES = ["number", "double", "int", "long", "decimal", "string", "object", "array", "binData", "objectId", "bool",
          "date", "null", "timestamp", "minKey", "maxKey", "regex", "javascript", 1, 2, 16, 18, 19, -1, 127]
type_arg = st.one_of(st.sampled_from(_TYPES), st.lists(st.sampled_from(_TYPES), min_size=1, max_size=3))
condition = st.one_of(
    st.booleans().map(lambda b: {"$exists": b}),
    type_arg.map(lambda t: {"$type": t}),
    st.tuples(st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte"]), any_scalar).map(lambda p: {p[0]: p[1]}),
    st.lists(any_scalar, min_size=1, max_size=3).map(lambda vs: {"$in": vs}),
    any_scalar.filter(lambda v: not isinstance(v, dict)),
    st.just([]))


def _both(first, second):
    """Two conditions on one path: one operator document when they can be, else ``$and``."""
    if isinstance(first, dict) and isinstance(second, dict) and not set(first) & set(second) and \
            all(k.startswith("$") for k in (*first, *second)):
        return {**first, **second}
    return None


@st.composite
def typed_filter(draw):
    a = draw(condition)
    if draw(st.integers(0, 3)) == 0:
        a = _both(a, draw(condition)) or a
    flt = {"a": a}
    if draw(st.booleans()):
        flt["b"] = draw(st.one_of(st.integers(-1, 2), st.just({"$exists": True}), st.just({"$gt": 0}),
                                  st.just({"$type": "number"})))
    return flt


# (index keys, options, whether a hint may name it: a hinted sparse or partial index may leave out
# documents the filter matches, as mongod's does, so those are chosen by the planner instead)
_INDEXES = [([("a", 1)], {}, True), ([("a", -1), ("b", 1)], {}, True), ([("b", 1), ("a", 1)], {}, True),
            ([("a", 1)], {"sparse": True}, False), ([("a", 1), ("b", 1)], {"sparse": True}, False),
            ([("a", -1)], {"sparse": True}, False),
            ([("a", 1)], {"partialFilterExpression": {"b": {"$gt": 0}}}, False)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.sampled_from(_INDEXES),
       docs=st.lists(st.fixed_dictionaries({"a": any_value}, optional={"b": st.integers(-1, 2)}), min_size=1, max_size=12)
       .map(lambda ds: [d if i % 5 else {k: v for k, v in d.items() if k != "a"} for i, d in enumerate(ds)]),
       queries=st.lists(typed_filter(), min_size=1, max_size=6))
@pytest.mark.slow
@pytest.mark.commands("find", "count", "distinct", "explain")
def test_every_type_and_operator_reads_through_an_index_as_the_collection_scan(db, index, docs, queries):
    keys, options, hinted = index
    coll = db.typed
    coll.drop()
    coll.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    coll.create_index(keys, name="ix", **options)
    natural = {"$natural": 1}
    for flt in queries:
        if "partialFilterExpression" in options:
            flt = {**flt, "b": {"$gt": 0}}  # (the filter implies the index's)
        hint = {"hint": "ix"} if hinted else {}
        expected = sorted(_ids(coll.find(flt, hint=natural)))
        assert sorted(_ids(coll.find(flt, **hint))) == expected, flt
        assert db.command("count", "typed", query=flt, **hint)["n"] == len(expected), flt
        assert db.command("count", "typed", query=flt, hint=natural)["n"] == len(expected), flt
        assert sorted(db.command("distinct", "typed", key="_id", query=flt, **hint)["values"]) == expected, flt
        plan = db.command("explain", {"count": "typed", "query": flt, **hint}, verbosity="queryPlanner")
        stage = plan["queryPlanner"]["winningPlan"]["inputStage"]
        if stage["stage"] == "COUNT_SCAN":  # (the bounds decide the whole filter: nothing re-checked)
            assert stage["indexName"] == "ix", flt


def _plan(db, command: dict) -> dict:
    return db.command("explain", command, verbosity="queryPlanner")["queryPlanner"]["winningPlan"]


def _stage(plan: dict, name: str) -> dict | None:
    while plan is not None:
        if plan.get("stage") == name:
            return plan
        plan = plan.get("inputStage")
    return None


# (index keys, options, filter, explain's indexBounds of the index's first field, whether a FETCH filter is
# left, whether a count is a COUNT_SCAN) — mongod 7.0's IndexBoundsBuilder: $exists: true every key, EXACT
# only on a sparse index of one field; $exists: false the null key; $type each type's bracket (appendMinForType
# to appendMaxForType, a variable-width type's end excluded), EXACT for "number" alone
@pytest.mark.commands("explain", "count", "find")
@pytest.mark.parametrize("keys, options, flt, bounds, filtered, count_scan", [
    ([("a", 1)], {"sparse": True}, {"a": {"$exists": True}}, ["[MinKey, MaxKey]"], False, True),
    ([("a", 1)], {"sparse": True}, {"a": {"$exists": 1}}, ["[MinKey, MaxKey]"], False, True),
    ([("a", 1)], {}, {"a": {"$exists": True}}, ["[MinKey, MaxKey]"], True, False),
    ([("a", 1), ("b", 1)], {"sparse": True}, {"a": {"$exists": True}}, ["[MinKey, MaxKey]"], True, False),
    ([("a", 1)], {}, {"a": {"$exists": False}}, ["[null, null]"], True, False),
    ([("a", 1)], {}, {"a": {"$type": "number"}}, ["[nan.0, inf.0]"], False, True),
    ([("a", -1)], {}, {"a": {"$type": ["number"]}}, ["[inf.0, nan.0]"], False, True),
    ([("a", 1)], {}, {"a": {"$type": "int"}}, ["[nan.0, inf.0]"], True, False),
    ([("a", 1)], {}, {"a": {"$type": "string"}}, ['["", {})'], True, False),
    ([("a", 1)], {}, {"a": {"$type": ["object", "string"]}}, ['["", [])'], True, False),
    ([("a", 1)], {}, {"a": {"$type": "array"}}, ["[MinKey, MaxKey]"], True, False),
    ([("a", 1)], {}, {"a": {"$type": ["bool", "null"]}}, ["[null, null]", "[false, true]"], True, False),
    ([("a", 1)], {}, {"a": {"$type": "date"}},
     ["[new Date(-9223372036854775808), new Date(9223372036854775807)]"], True, False),
    ([("a", 1)], {}, {"a": {"$type": "objectId"}},
     ["[ObjectId('000000000000000000000000'), ObjectId('ffffffffffffffffffffffff')]"], True, False),
    ([("a", 1)], {}, {"a": {"$type": "minKey"}}, ["[MinKey, MinKey]"], True, False),
    ([("a", 1)], {}, {"a": {"$type": "string", "$gt": "m"}}, ['("m", {})'], True, False),
    ([("a", 1)], {}, {"a": Decimal128("2.5")}, ["[2.5, 2.5]"], False, True),
    ([("a", 1)], {}, {"a": math.nan}, ["[nan.0, nan.0]"], False, True),
    ([("a", 1)], {}, {"a": {"$in": [Decimal128("NaN"), math.inf]}}, ["[NaN, NaN]", "[inf.0, inf.0]"], False, False),
    ([("a", 1)], {}, {"a": {"$lt": Decimal128("Infinity")}}, ["[-inf.0, Infinity)"], False, True),
    ([("a", 1)], {}, {"a": {"$gte": -math.inf, "$lt": Decimal128("1E+6144")}}, None, False, True),
    ([("a", 1)], {}, {"a": {"$lte": Decimal128("NaN")}}, ["[NaN, NaN]"], False, True),  # (NaN alone)
    ([("a", 1)], {}, {"a": {"$gt": math.nan}}, None, True, False),  # (nothing; not an empty scan here)
])
def test_exists_type_and_every_number_bound_an_index_as_mongod(db, keys, options, flt, bounds, filtered, count_scan):
    db.c.insert_many([{"_id": i, "a": v} for i, v in enumerate(
        [1, 2.5, Decimal128("2.5"), math.nan, math.inf, "x", None, True, {"b": 1}, "y"])] + [{"_id": 99}])
    db.c.create_index(keys, **options)
    find = _plan(db, {"find": "c", "filter": flt})
    scan = _stage(find, "IXSCAN")
    assert scan is not None, find
    if bounds is not None:
        assert scan["indexBounds"][keys[0][0]] == bounds
    fetch = _stage(find, "FETCH")
    assert (fetch is not None and "filter" in fetch) is filtered, find
    count = _plan(db, {"count": "c", "query": flt})["inputStage"]
    assert (count["stage"] == "COUNT_SCAN") is count_scan, count
    expected = db.c.count_documents(flt, hint={"$natural": 1})
    assert db.command("count", "c", query=flt)["n"] == expected
    assert sorted(_ids(db.c.find(flt))) == sorted(_ids(db.c.find(flt, hint={"$natural": 1})))


@pytest.mark.commands("explain", "find")
def test_a_sparse_index_is_never_read_for_a_filter_a_missing_field_matches(db):
    db.c.insert_many([{"_id": 1, "a": None}, {"_id": 2}, {"_id": 3, "a": 1}])
    db.c.create_index("a", sparse=True)
    for flt in ({"a": {"$exists": False}}, {"a": None}, {"a": {"$type": "null"}, "b": {"$exists": False}}):
        plan = _plan(db, {"find": "c", "filter": flt})
        if isinstance(flt["a"], dict) and "$type" in flt["a"]:  # (false of a missing field: the index serves it)
            assert _stage(plan, "IXSCAN")["indexBounds"] == {"a": ["[null, null]"]}
        else:
            assert plan["stage"] == "COLLSCAN", (flt, plan)
        assert sorted(_ids(db.c.find(flt))) == sorted(_ids(db.c.find(flt, hint={"$natural": 1})))
