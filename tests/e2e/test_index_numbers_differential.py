"""Through an index, finds, counts and sorts answer exactly what the collection scan answers (hint
``$natural`` and the matcher) for mixtures of int32, int64, double and Decimal128 at their collision
boundaries (a double and the 34-digit decimals next to it, 2**53 +- k as long and double, NaN, -0, +-inf,
the exponent extremes), null, missing, ``[]`` and nested arrays: index keys order numbers by exact value
and key an empty array as undefined, as mongod's KeyString and BtreeKeyGenerator do."""

import decimal
import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.commands("find", "count", "createIndexes", "insert")]

_DOWN = decimal.Context(prec=34, rounding=decimal.ROUND_DOWN, Emax=6144, Emin=-6143)
_UP = decimal.Context(prec=34, rounding=decimal.ROUND_UP, Emax=6144, Emin=-6143)
_NEAR = decimal.Context(prec=34, Emax=6144, Emin=-6143)

DOUBLES = [0.1, -0.1, 1 / 3, 2.5, 0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.7976931348623157e308,
           1e-300, 123456.789, 2.0 ** 53, 2.0 ** 53 + 2, -(2.0 ** 53), 2.0 ** 63, 1e20]


def _neighbours(f: float) -> list[Decimal128]:
    exact = decimal.Decimal(f)
    out = []
    for ctx in (_DOWN, _UP, _NEAR):
        d = ctx.plus(exact)
        out += [d, _NEAR.next_plus(d), _NEAR.next_minus(d)]
    return [Decimal128(d) for d in out]


double = st.sampled_from(DOUBLES)
decimal128 = st.one_of(
    st.sampled_from([f for f in DOUBLES if math.isfinite(f) and f != 0]).flatmap(lambda f: st.sampled_from(_neighbours(f))),
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
