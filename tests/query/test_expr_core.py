"""The expression compiler: field paths, variables, literals, parse errors, dependency analysis."""

import datetime as dt

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import (
    compile_expression,
    evaluate,
    evaluate_let,
    expression_fields,
    is_constant,
    truthy,
)
from tidemark.query.values import MISSING

DOC = {"a": 1, "b": {"c": 2}, "arr": [{"x": 1}, {"y": 2}, {"x": 3}, 7, [{"x": 9}]], "n": None}


@pytest.mark.parametrize("path,expected", [
    ("$a", 1), ("$b.c", 2), ("$b", {"c": 2}), ("$nope", MISSING), ("$b.nope", MISSING),
    ("$a.b", MISSING),
    ("$arr.x", [1, 3]),  # arrays map over their object elements; nested arrays are skipped
    ("$n", None),
])
def test_field_paths_resolve_like_mongod(path, expected):
    assert evaluate(path, DOC) == expected


def test_object_literal_drops_missing_fields_and_arrays_turn_missing_into_null():
    assert evaluate({"x": "$a", "y": "$nope", "z": "$$REMOVE"}, DOC) == {"x": 1}
    assert evaluate(["$a", "$nope"], DOC) == [1, None]


def test_system_variables():
    now = dt.datetime(2024, 1, 1)
    assert evaluate("$$ROOT", DOC) is DOC
    assert evaluate("$$CURRENT.b.c", DOC) == 2
    assert evaluate("$$NOW", DOC, {"NOW": now}) == now
    assert evaluate("$$REMOVE", DOC) is MISSING
    assert evaluate("$$x.k", DOC, {"x": {"k": 5}}) == 5


def test_let_binds_variables_and_can_rebind_current():
    assert evaluate({"$let": {"vars": {"t": {"$add": ["$a", 1]}}, "in": {"$multiply": ["$$t", 10]}}}, DOC) == 20
    assert evaluate({"$let": {"vars": {"CURRENT": "$b"}, "in": "$c"}}, DOC) == 2
    assert evaluate({"$let": {"vars": {"CURRENT": "$b"}, "in": "$$ROOT.a"}}, DOC) == 1


def test_literal_is_not_interpreted():
    assert evaluate({"$literal": "$a"}, DOC) == "$a"
    assert evaluate({"$literal": {"$add": [1]}}, DOC) == {"$add": [1]}


@pytest.mark.parametrize("expr,code,message", [
    ({"$foo": 1}, 168, "Unrecognized expression '$foo'"),
    ({"$subtract": [1]}, 16020, "Expression $subtract takes exactly 2 arguments. 1 were passed in."),
    ({"$add": 1, "$sub": 2}, 15983, None),
    ("$$undefinedVar", 17276, "Use of undefined variable: undefinedVar"),
    ("$", 16872, None),
    ({"$let": {"vars": {"Bad": 1}, "in": 1}}, 16867, None),
    ({"$function": {}}, 31261, "The body function must be specified."),
])
def test_parse_errors_use_mongod_codes(expr, code, message):
    with pytest.raises(MongoError) as e:
        compile_expression(expr)({}, {})
    assert e.value.code == code
    if message:
        assert e.value.message == message


def test_unknown_operator_is_rejected_at_compile_time_not_per_document():
    with pytest.raises(MongoError):
        compile_expression({"$cond": [True, {"$nope": 1}, 2]})


@pytest.mark.parametrize("value,expected", [
    (False, False), (None, False), (MISSING, False), (0, False), (0.0, False), ("", True), ([], True),
    ({}, True), (1, True), ("false", True), (float("nan"), True), (Int64(0), False), (Int64(2), True),
    (Decimal128("0"), False), (Decimal128("-0.5"), True),
])
def test_truthy(value, expected):
    assert truthy(value) is expected


def test_expression_fields_lists_top_level_fields_or_none_for_root():
    expr = {"$add": ["$a.b", {"$max": ["$c", "$$x.y"]}, {"$dateTrunc": {"date": "$time", "unit": "hour"}}]}
    assert expression_fields(expr) == {"a", "c", "time"}
    assert expression_fields({"$mergeObjects": ["$$ROOT", {"k": 1}]}) is None
    assert expression_fields({"$getField": "weird.name"}) is None
    assert expression_fields({"$literal": "$a"}) == set()
    assert expression_fields("$$CURRENT.q.r") == {"q"}


def test_is_constant():
    assert is_constant({"$add": [1, 2]})
    assert not is_constant({"$add": ["$a", 2]})
    assert is_constant({"$literal": "$a"})


def test_let_bindings_see_the_outer_scope_and_nested_lets_shadow():
    expr = {"$let": {"vars": {"a": 1}, "in": {"$let": {"vars": {"a": 2, "b": "$$a"}, "in": ["$$a", "$$b"]}}}}
    assert evaluate(expr, {}) == [2, 1]


@pytest.mark.parametrize("spec,code", [
    ("x", 16874), ({"vars": {}, "in": 1, "z": 1}, 16875), ({"in": 1}, 16876), ({"vars": {}}, 16877),
])
def test_let_shape_errors(spec, code):
    with pytest.raises(MongoError) as e:
        compile_expression({"$let": spec})
    assert e.value.code == code


def test_variables_can_be_forbidden():
    with pytest.raises(MongoError):
        compile_expression("$$x", allow_vars=False)
    assert compile_expression("$a", allow_vars=False)({"a": 1}, {}) == 1


def _mongod_variable_name_code(name: str, *, defining: bool) -> int | None:
    """mongod 7.0's variableValidation (validateNameForUserWrite / validateNameForUserRead): 16866 empty,
    16867 a bad first character (a defined name starts with a-z, a read one with a letter; non-ASCII
    always passes), 16868 a later character other than a letter, digit, '_' or non-ASCII."""
    if not name:
        return 16866
    first = name[0]
    if first.isascii() and not ("a" <= first <= "z" or (not defining and "A" <= first <= "Z")):
        return 16867
    if any(ch.isascii() and not (ch.isalnum() or ch == "_") for ch in name[1:]):
        return 16868
    return None


_NAMES = st.text(st.sampled_from("aZz_9-. $é"), max_size=5).filter(
    lambda s: s not in ("CURRENT", "ROOT", "REMOVE", "NOW"))


@given(_NAMES)
def test_variable_names_follow_mongods_rules_when_defined_and_when_read(name):
    """A command's ``let``, ``$let``'s vars (writes) and a ``$$name`` reference (reads) answer mongod's
    code for every name; a valid name then binds (write) or is merely undefined (read, 17276)."""
    expected = _mongod_variable_name_code(name, defining=True)
    for define in (lambda: evaluate_let({name: 1}), lambda: compile_expression({"$let": {"vars": {name: 1}, "in": 1}})):
        if expected is None:
            define()
        else:
            with pytest.raises(MongoError) as err:
                define()
            assert err.value.code == expected
    read_name = name.split(".", 1)[0]  # "$$a.b" reads the variable "a" and its path "b"
    expected = _mongod_variable_name_code(read_name, defining=False)
    with pytest.raises(MongoError) as err:
        evaluate("$$" + name, {})
    assert err.value.code == (17276 if expected is None else expected)
