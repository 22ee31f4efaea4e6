"""Pure tests of the array, set, object and comparison expressions where they follow mongod's parse
and evaluation order (codes, messages, result order); the e2e ports are
``tests/e2e/test_jstests_expressions_arrays.py``."""

import pytest
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_objects import array_to_object
from tidemark.query.expressions import compile_expression, evaluate
from tidemark.query.values import MISSING


def code_of(expr, doc=None) -> int:
    with pytest.raises(MongoError) as info:
        evaluate(expr, doc if doc is not None else {})
    return info.value.code


# --------------------------------------------------------------------------------------------------
# $arrayToObject: the first element fixes the format, each element is checked in order


@pytest.mark.parametrize(
    "value,code",
    [
        ([{"k": "a", "v": 1}, ["b", 2]], 40391),
        ([["a", 1], {"k": "b", "v": 2}], 40396),
        ([0], 40398),
        ([["a"]], 40397),
        ([[1, 2]], 40395),
        ([{"x": 1, "y": 2}], 40393),
        ([{"k": "a"}], 40392),
        ([{"k": 1, "v": 2}], 40394),
        ([["a\0b", 1]], 4940400),
        ([{"k": "a\0b", "v": 1}], 4940401),
        ("s", 40386),
    ],
)
def test_array_to_object_codes(value, code):
    with pytest.raises(MongoError) as info:
        array_to_object(value)
    assert info.value.code == code


def test_array_to_object_repeated_key_keeps_first_position():
    assert list(array_to_object([["a", 1], ["b", 2], ["a", 3]]).items()) == [("a", 3), ("b", 2)]
    assert array_to_object(None) is None and array_to_object(MISSING) is None and array_to_object([]) == {}


# --------------------------------------------------------------------------------------------------
# $getField / $setField / $unsetField: parse order and the constant-string 'field'


@pytest.mark.parametrize(
    "arg,code",
    [
        ({"input": {}}, 3041702),
        ({"field": "a", "input": {}, "x": 1}, 3041701),
        ("$a", 5654600),
        ({"field": "$$CURRENT.a", "input": {}}, 5654600),
        ({"$add": [1, 2]}, 5654601),
        ({"field": ["a"], "input": {}}, 5654601),
        ({"field": {"$const": 1}, "input": {}}, 5654602),
        (True, 5654602),
    ],
)
def test_get_field_parse_codes(arg, code):
    assert code_of({"$getField": arg}) == code


def test_get_field_short_forms():
    doc = {"a.b": 1, "$x": 2}
    assert evaluate({"$getField": "a.b"}, doc) == 1
    assert evaluate({"$getField": {"field": "a.b"}}, doc) == 1  # input omitted: $$CURRENT
    assert evaluate({"$getField": {"$const": "$x"}}, doc) == 2
    assert evaluate({"$getField": {"$literal": "$x"}}, doc) == 2
    assert evaluate({"$getField": {"field": "a", "input": None}}, doc) is None
    assert evaluate({"$getField": {"field": "a", "input": 5}}, doc) is MISSING


@pytest.mark.parametrize(
    "op,arg,code",
    [
        ("$setField", "x", 4161100),
        ("$setField", {"$add": 1}, 4161101),
        ("$unsetField", {"field": "a", "value": 1}, 4161101),
        ("$setField", {"value": 1, "input": {}}, 4161102),
        ("$setField", {"field": "a", "input": {}}, 4161103),
        ("$setField", {"field": 1, "value": 1}, 4161109),
        ("$setField", {"field": "$a", "value": 1, "input": {}}, 4161108),
        ("$setField", {"field": {"$concat": ["a"]}, "value": 1, "input": {}}, 4161106),
        ("$unsetField", {"field": None, "input": {}}, 4161107),
        ("$setField", {"field": "a", "value": 1, "input": 3}, 4161105),
    ],
)
def test_set_field_codes(op, arg, code):
    assert code_of({op: arg}) == code


def test_set_field_keeps_position_and_removes():
    doc = {"o": {"a": 1, "b": 2}}
    assert list(evaluate({"$setField": {"field": "a", "input": "$o", "value": 9}}, doc).items()) == [
        ("a", 9),
        ("b", 2),
    ]
    assert evaluate({"$setField": {"field": "a", "input": "$o", "value": "$$REMOVE"}}, doc) == {"b": 2}
    assert evaluate({"$unsetField": {"field": "b", "input": "$o"}}, doc) == {"a": 1}


# --------------------------------------------------------------------------------------------------
# positional operators: 32-bit indexes and mongod's checking order


@pytest.mark.parametrize(
    "args,code",
    [
        ([[1], 2.0**32], 28691),
        ([[1], Int64(2**31)], 28691),
        ([[1], 1.5], 28691),
        ([[1], "1"], 28690),
        (["x", 0], 28689),
    ],
)
def test_array_elem_at_codes(args, code):
    assert code_of({"$arrayElemAt": args}) == code


@pytest.mark.parametrize(
    "args,code",
    [
        ([[1], 1.5], 28726),
        ([[1], 2.0**32], 28726),
        ([[1], "1"], 28725),
        ([[1], 0, "1"], 28727),
        ([[1], 0, 1.5], 28728),
        ([[1], 0, 0], 28729),
        (["x", 0, None], 28724),
        ([[1], "1", None], 28725),
    ],
)
def test_slice_codes(args, code):
    assert code_of({"$slice": args}) == code


@given(arr=st.lists(st.integers(), max_size=6), a=st.integers(-8, 8), n=st.integers(1, 8))
@settings(max_examples=200, deadline=None)
def test_slice_model(arr, a, n):
    first = max(len(arr) + a, 0) if a < 0 else min(a, len(arr))
    assert evaluate({"$slice": [{"$literal": arr}, a, n]}, {}) == arr[first : first + n]
    assert evaluate({"$slice": [{"$literal": arr}, a]}, {}) == (arr[a:] if a < 0 else arr[:a])


# --------------------------------------------------------------------------------------------------
# set operators: ordered results, operands checked one by one


def test_set_union_and_intersection_are_in_bson_order():
    assert evaluate({"$setUnion": [[3, "a", 1], [2.0, Int64(1)]]}, {}) == [1, 2.0, 3, "a"]
    assert type(evaluate({"$setUnion": [[Int64(1)], [1]]}, {})[0]) is Int64  # the first one met stays
    assert evaluate({"$setIntersection": [[3, 2, 1], [1, 3]]}, {}) == [1, 3]
    assert evaluate({"$setDifference": [[3, 2, 1, 3], [2]]}, {}) == [3, 1]


@pytest.mark.parametrize("op,code", [("$setUnion", 17043), ("$setIntersection", 17047)])
def test_set_operands_checked_in_order(op, code):
    assert evaluate({op: [None, "x"]}, {}) is None
    assert code_of({op: ["x", None]}) == code


@given(a=st.lists(st.integers(0, 5), max_size=6), b=st.lists(st.integers(0, 5), max_size=6))
@settings(max_examples=200, deadline=None)
def test_set_operators_model(a, b):
    la, lb = {"$literal": a}, {"$literal": b}
    assert evaluate({"$setUnion": [la, lb]}, {}) == sorted(set(a) | set(b))
    assert evaluate({"$setIntersection": [la, lb]}, {}) == sorted(set(a) & set(b))
    assert evaluate({"$setDifference": [la, lb]}, {}) == [x for x in dict.fromkeys(a) if x not in set(b)]
    assert evaluate({"$setEquals": [la, lb]}, {}) == (set(a) == set(b))
    assert evaluate({"$setIsSubset": [la, lb]}, {}) == (set(a) <= set(b))


# --------------------------------------------------------------------------------------------------
# comparisons: MinKey < missing < null < everything else < MaxKey


@pytest.mark.parametrize(
    "other,expected", [(MinKey(), 1), (None, -1), (0, -1), ("", -1), ([], -1), (MaxKey(), -1)]
)
def test_missing_ranks_above_min_key(other, expected):
    cmp = compile_expression({"$cmp": ["$nosuch", {"$literal": other}]})
    assert cmp({}, {}) == expected
    assert compile_expression({"$cmp": [{"$literal": other}, "$nosuch"]})({}, {}) == -expected
    assert compile_expression({"$gt": ["$nosuch", {"$literal": other}]})({}, {}) is (expected > 0)
    assert compile_expression({"$eq": ["$nosuch", "$alsoMissing"]})({}, {}) is True


# --------------------------------------------------------------------------------------------------
# parse messages


def test_operator_object_with_two_fields_message():
    with pytest.raises(MongoError) as info:
        compile_expression({"$add": [1], "x": "$y"})
    assert info.value.code == 15983
    assert (
        str(info.value)
        == 'An object representing an expression must have exactly one field: { $add: [ 1 ], x: "$y" }'
    )


@pytest.mark.parametrize(
    "spec,code,message",
    [
        ("x", 40060, "$switch requires an object as an argument, found: string"),
        ({"branches": 1}, 40061, "$switch expected an array for 'branches', found: int"),
        ({"branches": [1]}, 40062, "$switch expected each branch to be an object, found: int"),
    ],
)
def test_switch_parse_messages(spec, code, message):
    with pytest.raises(MongoError) as info:
        compile_expression({"$switch": spec})
    assert (info.value.code, str(info.value)) == (code, message)


@pytest.mark.parametrize(
    "expr,code",
    [
        ({"$cond": {"if": {"$bad": 1}, "x": 1}}, 168),
        ({"$cond": {"x": 1, "if": {"$bad": 1}}}, 17083),
        ({"$switch": {"branches": [{"case": {"$bad": 1}, "x": 1}]}}, 168),
        ({"$switch": {"branches": [{"x": 1, "case": {"$bad": 1}}]}}, 40063),
    ],
)
def test_named_arguments_parsed_as_met(expr, code):
    """$cond's and $switch's arguments are parsed in order: a sub-expression's error before a later
    unknown argument, an unknown argument before a later sub-expression's error."""
    with pytest.raises(MongoError) as info:
        compile_expression(expr)
    assert info.value.code == code


@pytest.mark.parametrize(
    "path,code", [("$$Z..", 17276), ("$$z..", 17276), ("$$CURRENT..", 15998), ("$$NOW.a..b", 15998)]
)
def test_variable_resolved_before_its_path(path, code):
    """mongod looks the variable up before it reads the path: an undefined one answers 17276 even
    when the path is invalid; a defined one meets the path's error."""
    assert code_of(path) == code


def test_defined_variable_with_invalid_path():
    with pytest.raises(MongoError) as info:
        compile_expression("$$z..")({}, {"z": 1})
    assert info.value.code == 15998


@pytest.mark.parametrize("name,code", [("", 15998), ("$a", 16410), ("a\0b", 16411), ("a.b", 16412)])
def test_object_expression_field_names(name, code):
    """An object expression's field names are checked as mongod's FieldPath::uassertValidFieldName
    checks them: empty (15998), '$' first (16410), a NUL (16411), a dot (16412)."""
    with pytest.raises(MongoError) as info:
        compile_expression({"a": 1, name: 2})
    assert info.value.code == code
