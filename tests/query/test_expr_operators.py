"""Table-driven operator tests; expected values follow MongoDB's documented behaviour."""

import datetime as dt
import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import evaluate
from tidemark.query.values import MISSING

DOC = {"i": 5, "f": 2.5, "s": "café", "n": None, "arr": [3, 1, 2], "d": dt.datetime(2020, 1, 1),
       "objs": [{"k": "a", "v": 1}, {"k": "b", "v": 2}], "o": {"x": 1, "y": 2}}


def same(a, b):
    """Equal values of the same BSON type (1 != 1.0 here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


ARITHMETIC = [
    ({"$add": [1, 2]}, 3),
    ({"$add": [1, 2.5]}, 3.5),
    ({"$add": [1, Int64(2)]}, Int64(3)),
    ({"$add": [2147483647, 1]}, Int64(2147483648)),          # int overflow widens to long
    ({"$add": [Int64(2**63 - 1), Int64(1)]}, float(2**63)),   # long overflow widens to double
    ({"$add": [1, Decimal128("0.1")]}, Decimal128("1.1")),
    ({"$add": [1, "$n"]}, None),
    ({"$add": [1, "$missing"]}, None),
    ({"$add": ["$d", 1000]}, dt.datetime(2020, 1, 1, 0, 0, 1)),
    ({"$subtract": ["$d", dt.datetime(2019, 12, 31)]}, Int64(86400000)),
    ({"$subtract": ["$d", 60000]}, dt.datetime(2019, 12, 31, 23, 59)),
    ({"$subtract": [5, 7.5]}, -2.5),
    ({"$multiply": [2, 3, 4]}, 24),
    ({"$multiply": [2, 1.5]}, 3.0),
    ({"$divide": [6, 3]}, 2.0),
    ({"$divide": [Decimal128("1"), 4]}, Decimal128("0.25")),
    ({"$mod": [7, 3]}, 1),
    ({"$mod": [-7, 3]}, -1),
    ({"$mod": [7.5, 2]}, 1.5),
    ({"$abs": -5}, 5),
    ({"$abs": -(2**31)}, Int64(2**31)),
    ({"$ceil": 1.2}, 2.0),
    ({"$floor": -1.2}, -2.0),
    ({"$sqrt": 16}, 4.0),
    ({"$pow": [2, 10]}, 1024),
    ({"$pow": [2, -1]}, 0.5),
    ({"$pow": [2, 62]}, Int64(2**62)),
    ({"$pow": [10, 400]}, float("inf")),
    ({"$exp": 0}, 1.0),
    ({"$ln": 1}, 0.0),
    ({"$log10": 1000}, 3.0),
    ({"$log": [8, 2]}, 3.0),
    ({"$round": [2.5, 0]}, 2.0),                                # half to even
    ({"$round": [1234.5678, -2]}, 1200.0),
    ({"$round": [1234, -2]}, 1200),
    ({"$trunc": [7.89, 1]}, 7.8),
    ({"$trunc": -7.89}, -7.0),
    ({"$ceil": "$n"}, None),
]

COMPARISON_AND_LOGIC = [
    ({"$eq": [1, 1.0]}, True),
    ({"$eq": ["$missing", None]}, False),
    ({"$eq": ["$missing", "$alsoMissing"]}, True),
    ({"$gt": ["a", 5]}, True),                 # strings sort after numbers
    ({"$lt": [None, 0]}, True),
    ({"$cmp": [[1, 2], [1, 3]]}, -1),
    ({"$ne": [1, 2]}, True),
    ({"$gte": [2, 2]}, True),
    ({"$lte": [3, 2]}, False),
    ({"$and": [1, "x", True]}, True),
    ({"$and": [1, 0]}, False),
    ({"$and": []}, True),
    ({"$or": [None, 0, False]}, False),
    ({"$or": []}, False),
    ({"$not": [0]}, True),
    ({"$cond": {"if": {"$gt": ["$i", 3]}, "then": "big", "else": "small"}}, "big"),
    ({"$cond": [None, 1, 2]}, 2),
    ({"$ifNull": ["$missing", "$n", "fallback"]}, "fallback"),
    ({"$ifNull": ["$i", 0]}, 5),
    ({"$switch": {"branches": [{"case": {"$lt": ["$i", 0]}, "then": "neg"},
                               {"case": {"$gt": ["$i", 0]}, "then": "pos"}], "default": "zero"}}, "pos"),
]

STRINGS = [
    ({"$concat": ["a", "b", "c"]}, "abc"),
    ({"$concat": ["a", "$n"]}, None),
    ({"$toUpper": "$s"}, "CAFé"),  # ASCII letters only, as mongod 7.0 (jstests upperlower.js)
    ({"$toLower": 1}, "1"),
    ({"$toLower": "$n"}, ""),
    ({"$strLenBytes": "$s"}, 5),
    ({"$strLenCP": "$s"}, 4),
    ({"$substrCP": ["$s", 1, 3]}, "afé"),
    ({"$substrBytes": ["abcde", 1, 2]}, "bc"),
    ({"$split": ["a-b-c", "-"]}, ["a", "b", "c"]),
    ({"$trim": {"input": "  hi  "}}, "hi"),
    ({"$ltrim": {"input": "xxhix", "chars": "x"}}, "hix"),
    ({"$rtrim": {"input": "xxhix", "chars": "x"}}, "xxhi"),
    ({"$indexOfBytes": ["cafeteria", "e"]}, 3),
    ({"$indexOfCP": ["café", "é"]}, 3),
    ({"$indexOfCP": ["abc", "z"]}, -1),
    ({"$strcasecmp": ["ABC", "abc"]}, 0),
    ({"$regexMatch": {"input": "Hello", "regex": "^h", "options": "i"}}, True),
    ({"$regexFind": {"input": "a1b22", "regex": "(\\d+)"}}, {"match": "1", "idx": 1, "captures": ["1"]}),
    ({"$regexFindAll": {"input": "a1b22", "regex": "\\d+"}},
     [{"match": "1", "idx": 1, "captures": []}, {"match": "22", "idx": 3, "captures": []}]),
    ({"$replaceOne": {"input": "aXbX", "find": "X", "replacement": "-"}}, "a-bX"),
    ({"$replaceAll": {"input": "aXbX", "find": "X", "replacement": "-"}}, "a-b-"),
]

ARRAYS = [
    ({"$arrayElemAt": ["$arr", 0]}, 3),
    ({"$arrayElemAt": ["$arr", -1]}, 2),
    ({"$arrayElemAt": ["$arr", 10]}, MISSING),
    ({"$first": "$arr"}, 3),
    ({"$last": "$arr"}, 2),
    ({"$concatArrays": ["$arr", [4]]}, [3, 1, 2, 4]),
    ({"$concatArrays": ["$arr", "$n"]}, None),
    ({"$filter": {"input": "$arr", "as": "x", "cond": {"$gte": ["$$x", 2]}}}, [3, 2]),
    ({"$filter": {"input": "$arr", "cond": {"$gte": ["$$this", 2]}, "limit": 1}}, [3]),
    ({"$map": {"input": "$arr", "in": {"$add": ["$$this", "$i"]}}}, [8, 6, 7]),
    ({"$reduce": {"input": "$arr", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}, 6),
    ({"$size": "$arr"}, 3),
    ({"$slice": ["$arr", 2]}, [3, 1]),
    ({"$slice": ["$arr", -2]}, [1, 2]),
    ({"$slice": ["$arr", 1, 1]}, [1]),
    ({"$in": [2, "$arr"]}, True),
    ({"$in": [2.0, [1, Int64(2)]]}, True),
    ({"$indexOfArray": ["$arr", 1]}, 1),
    ({"$isArray": "$arr"}, True),
    ({"$range": [0, 10, 3]}, [0, 3, 6, 9]),
    ({"$reverseArray": "$arr"}, [2, 1, 3]),
    ({"$zip": {"inputs": [[1, 2], ["a"]]}}, [[1, "a"]]),
    ({"$zip": {"inputs": [[1, 2], ["a"]], "useLongestLength": True, "defaults": [0, "z"]}}, [[1, "a"], [2, "z"]]),
    ({"$sortArray": {"input": "$arr", "sortBy": 1}}, [1, 2, 3]),
    ({"$sortArray": {"input": "$objs", "sortBy": {"v": -1}}}, [{"k": "b", "v": 2}, {"k": "a", "v": 1}]),
    ({"$maxN": {"n": 2, "input": [3, None, 7, 1]}}, [7, 3]),
    ({"$minN": {"n": 2, "input": [3, None, 7, 1]}}, [1, 3]),
    ({"$firstN": {"n": 2, "input": "$arr"}}, [3, 1]),
    ({"$lastN": {"n": 2, "input": "$arr"}}, [1, 2]),
    ({"$allElementsTrue": [[1, True, "x"]]}, True),
    ({"$anyElementTrue": [[0, None]]}, False),
    ({"$setUnion": [[1, 2], [2, 3]]}, [1, 2, 3]),
    # mongod 7.0's ExpressionSetIntersection keeps the smaller set's values (jstests set.js)
    ({"$setIntersection": [[1, 2, 3], [3, 2.0]]}, [2.0, 3]),
    ({"$setDifference": [[1, 2, 3], [2]]}, [1, 3]),
    ({"$setEquals": [[1, 2], [2, 1, 1]]}, True),
    ({"$setIsSubset": [[1], [1, 2]]}, True),
]

OBJECTS_AND_TYPES = [
    ({"$mergeObjects": ["$o", {"y": 3, "z": 4}, "$n"]}, {"x": 1, "y": 3, "z": 4}),
    ({"$getField": "i"}, 5),
    ({"$getField": {"field": "a.b", "input": {"$literal": {"a.b": 7}}}}, 7),
    ({"$setField": {"field": "q", "input": "$o", "value": 9}}, {"x": 1, "y": 2, "q": 9}),
    ({"$setField": {"field": "x", "input": "$o", "value": "$$REMOVE"}}, {"y": 2}),
    ({"$unsetField": {"field": "x", "input": "$o"}}, {"y": 2}),
    ({"$objectToArray": "$o"}, [{"k": "x", "v": 1}, {"k": "y", "v": 2}]),
    ({"$arrayToObject": "$objs"}, {"a": 1, "b": 2}),
    ({"$arrayToObject": [[["p", 1], ["q", 2]]]}, {"p": 1, "q": 2}),
    ({"$type": "$i"}, "int"),
    ({"$type": "$missing"}, "missing"),
    ({"$type": Int64(1)}, "long"),
    ({"$isNumber": "$f"}, True),
    ({"$toString": 2.5}, "2.5"),
    ({"$toString": "$d"}, "2020-01-01T00:00:00.000Z"),
    ({"$toString": True}, "true"),
    ({"$toInt": "42"}, 42),
    ({"$toInt": 4.9}, 4),
    ({"$toLong": "$d"}, Int64(1577836800000)),
    ({"$toDouble": "1.5"}, 1.5),
    ({"$toDecimal": 1}, Decimal128("1")),
    ({"$toBool": 0}, False),
    ({"$toBool": "false"}, True),
    ({"$toDate": Int64(0)}, dt.datetime(1970, 1, 1)),
    ({"$toDate": "2020-01-01T00:00:00Z"}, dt.datetime(2020, 1, 1)),
    ({"$toObjectId": "5ab9cbfa31c2ab715d42129e"}, ObjectId("5ab9cbfa31c2ab715d42129e")),
    ({"$toInt": "$n"}, None),
    ({"$convert": {"input": "abc", "to": "int", "onError": -1}}, -1),
    ({"$convert": {"input": "$missing", "to": "int", "onNull": 0}}, 0),
    ({"$convert": {"input": "7", "to": 16}}, 7),
]


@pytest.mark.parametrize("expr,expected", ARITHMETIC + COMPARISON_AND_LOGIC + STRINGS + ARRAYS + OBJECTS_AND_TYPES)
def test_operator_result(expr, expected):
    result = evaluate(expr, DOC)
    assert same(result, expected), f"{expr} -> {result!r}, expected {expected!r}"


ERRORS = [
    ({"$add": [1, "a"]}, 14, "$add only supports numeric or date types, not string"),
    ({"$add": ["$d", "$d"]}, 16612, "only one date allowed in an $add expression"),
    ({"$multiply": [1, "a"]}, 14, "$multiply only supports numeric types, not string"),
    ({"$divide": [1, 0]}, 2, "can't $divide by zero"),
    ({"$mod": [1, 0]}, 16610, None),
    ({"$abs": "x"}, 28765, "$abs only supports numeric types, not string"),
    ({"$sqrt": -1}, 28714, None),
    ({"$abs": Int64(-(2**63))}, 28680, "can't take $abs of long long min"),
    ({"$ln": 0}, 28766, None),
    ({"$concat": ["a", 1]}, 16702, "$concat only supports strings, not int"),
    ({"$size": "$missing"}, 17124, "The argument to $size must be an array. Type of given argument: missing"),
    ({"$in": [1, "x"]}, 40081, "$in requires an array as a second argument, found: string"),
    ({"$arrayElemAt": ["x", 0]}, 28689, None),
    ({"$switch": {"branches": [{"case": False, "then": 1}]}}, 40066, None),
    ({"$toInt": "abc"}, 241, None),
    ({"$toInt": 2**40}, 241, None),
    ({"$convert": {"input": 1, "to": "nonsense"}}, 2, None),
    ({"$mergeObjects": [1]}, 40400, None),
    ({"$objectToArray": 1}, 40390, None),
    ({"$strLenCP": 1}, 34471, None),
    ({"$split": ["a", ""]}, 40087, None),
]


@pytest.mark.parametrize("expr,code,message", ERRORS)
def test_operator_type_errors(expr, code, message):
    with pytest.raises(MongoError) as e:
        evaluate(expr, DOC)
    assert e.value.code == code
    if message:
        assert e.value.message == message


# Null/missing propagation: each of these returns null when the marked argument is null or missing.
NULL_PROPAGATING = [
    ("$add", lambda x: [1, x]), ("$subtract", lambda x: [x, 1]), ("$multiply", lambda x: [2, x]),
    ("$divide", lambda x: [x, 2]), ("$mod", lambda x: [x, 2]), ("$abs", lambda x: x), ("$ceil", lambda x: x),
    ("$floor", lambda x: x), ("$sqrt", lambda x: x), ("$exp", lambda x: x), ("$ln", lambda x: x),
    ("$log10", lambda x: x), ("$log", lambda x: [x, 10]), ("$pow", lambda x: [x, 2]), ("$round", lambda x: [x, 1]),
    ("$trunc", lambda x: x), ("$concat", lambda x: ["a", x]), ("$split", lambda x: [x, ","]),
    ("$trim", lambda x: {"input": x}), ("$indexOfCP", lambda x: [x, "a"]), ("$replaceAll", lambda x: {"input": x, "find": "a", "replacement": "b"}),
    ("$arrayElemAt", lambda x: [x, 0]), ("$concatArrays", lambda x: [[1], x]), ("$filter", lambda x: {"input": x, "cond": True}),
    ("$map", lambda x: {"input": x, "in": 1}), ("$reduce", lambda x: {"input": x, "initialValue": 0, "in": 1}),
    ("$slice", lambda x: [x, 1]), ("$reverseArray", lambda x: x), ("$setUnion", lambda x: [[1], x]),
    ("$setDifference", lambda x: [x, [1]]), ("$objectToArray", lambda x: x), ("$arrayToObject", lambda x: x),
    ("$toInt", lambda x: x), ("$toString", lambda x: x), ("$toDate", lambda x: x), ("$year", lambda x: x),
    ("$dateToString", lambda x: {"date": x}), ("$dateTrunc", lambda x: {"date": x, "unit": "day"}),
    ("$dateAdd", lambda x: {"startDate": x, "unit": "day", "amount": 1}),
    ("$dateDiff", lambda x: {"startDate": x, "endDate": dt.datetime(2020, 1, 1), "unit": "day"}),
    ("$dateFromString", lambda x: {"dateString": x}), ("$dateToParts", lambda x: {"date": x}),
    ("$dateFromParts", lambda x: {"year": x}), ("$indexOfArray", lambda x: [x, 1]),
]


@pytest.mark.parametrize("op,args", NULL_PROPAGATING, ids=[op for op, _ in NULL_PROPAGATING])
@pytest.mark.parametrize("hole", [None, "$missing"], ids=["null", "missing"])
def test_null_and_missing_inputs_give_null(op, args, hole):
    assert evaluate({op: args(hole)}, DOC) is None


def test_operators_that_do_not_propagate_null():
    assert evaluate({"$toLower": None}, DOC) == ""
    assert evaluate({"$isArray": None}, DOC) is False
    assert evaluate({"$ifNull": [None, 1]}, DOC) == 1
    assert evaluate({"$type": None}, DOC) == "null"
    assert evaluate({"$eq": [None, None]}, DOC) is True
    assert evaluate({"$in": [None, [None]]}, DOC) is True
    assert evaluate({"$mergeObjects": [None, {"a": 1}]}, DOC) == {"a": 1}


def test_subtract_type_error_message():
    with pytest.raises(MongoError) as e:
        evaluate({"$subtract": ["a", 1]}, DOC)
    assert (e.value.code, e.value.message) == (14, "cant $subtract a int from a string")


@pytest.mark.parametrize("expr,check", [
    ({"$add": [float("inf"), Decimal128("-Infinity")]}, lambda v: v.to_decimal().is_nan()),
    ({"$multiply": [0, Decimal128("Infinity")]}, lambda v: v.to_decimal().is_nan()),
    ({"$mod": [float("inf"), 2]}, lambda v: math.isnan(v)),
    ({"$divide": [Decimal128("1"), Decimal128("3")]}, lambda v: str(v) == "0.3333333333333333333333333333333333"),
])
def test_ieee_edge_cases_give_nan_or_infinity_instead_of_failing(expr, check):
    assert check(evaluate(expr, DOC))


@pytest.mark.parametrize("expr,code", [
    ({"$add": [Int64(2**63 - 1), dt.datetime(2020, 1, 1)]}, 15),
    ({"$subtract": [dt.datetime(2020, 1, 1), float("nan")]}, 15),
    ({"$substrBytes": ["abc", 0, float("nan")]}, 16034),
    ({"$round": [1.5, float("inf")]}, 51083),
    ({"$range": [0, 2**31 - 1]}, 146),
    ({"$convert": {"input": 1, "to": [1]}}, 2),
])
def test_edge_inputs_raise_mongo_errors(expr, code):
    with pytest.raises(MongoError) as e:
        evaluate(expr, DOC)
    assert e.value.code == code


@pytest.mark.parametrize(("expr", "expected"), [
    ({"$bitAnd": [0, 127]}, 0), ({"$bitAnd": [2, 3]}, 2), ({"$bitAnd": [3, 5]}, 1),
    ({"$bitOr": [1, 2]}, 3), ({"$bitOr": [3, 5]}, 7), ({"$bitXor": [2, 3]}, 1), ({"$bitXor": [3, 5]}, 6),
    ({"$bitNot": 3}, -4), ({"$bitAnd": []}, -1), ({"$bitOr": []}, 0),
    ({"$bitAnd": [3, None]}, None), ({"$bitOr": [3, "$missing"]}, None), ({"$bitNot": None}, None),
])
def test_bitwise_expressions(expr, expected):
    assert evaluate(expr, {}) == expected


def test_bitwise_result_is_long_when_any_operand_is_long():
    result = evaluate({"$bitOr": [1, Int64(2)]}, {})
    assert type(result) is Int64 and result == 3
    assert type(evaluate({"$bitNot": Int64(0)}, {})) is Int64
    assert type(evaluate({"$bitXor": [1, 2]}, {})) is int


@pytest.mark.parametrize("expr", [
    {"$bitAnd": [1, 12.0]}, {"$bitOr": [1, Decimal128("12")]}, {"$bitXor": [1, [1, 2]]}, {"$bitAnd": [[1, 2]]},
    {"$bitNot": 12.5}, {"$bitOr": [1, "a"]},
])
def test_bitwise_operands_must_be_int_or_long(expr):
    with pytest.raises(MongoError) as err:
        evaluate(expr, {})
    assert err.value.code == 14


def test_bitnot_takes_one_argument():
    with pytest.raises(MongoError) as err:
        evaluate({"$bitNot": [1, 2]}, {})
    assert err.value.code == 16020
