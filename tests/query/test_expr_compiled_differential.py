"""The compiled expression closures (specialised at compile time by operator and argument kind: a
constant, a field path, anything else) against a deliberately simple reference evaluator written
here, over random expression trees and random documents.

The subset: field paths (dotted, through arrays), ``$$x``, constants of every kind the fast paths
look at (int32 / long / double with NaN, -0.0 and infinities / strings / bools / null / arrays /
objects / MinKey / MaxKey), the six comparisons and ``$cmp`` (BSON order, missing below null),
``$and`` ``$or`` ``$not`` ``$cond`` ``$ifNull``, ``$add`` ``$subtract`` ``$multiply`` (result type
int -> long -> double, overflow, null / missing, 14 TypeMismatch for a non-number). The same tree is
also run as a ``$match`` ``$expr`` filter, which must select exactly when the reference is truthy.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import compile_expression
from tidemark.query.match import compile_filter
from tidemark.query.values import MISSING, sort_key

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

# ----------------------------------------------------------------------------------------------
# values and documents

_int32 = st.one_of(st.integers(-3, 3), st.integers(*INT32), st.sampled_from([INT32[0], INT32[1]]))
_int64 = st.one_of(st.integers(-3, 3), st.integers(*INT64), st.sampled_from([*INT64, 2**31, -(2**31) - 1])).map(Int64)
_double = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.5, -2.0, 2.0**53, math.nan, math.inf, -math.inf]))
_scalar = st.one_of(
    _int32, _int64, _double, st.text("ab$", max_size=3), st.text("ab", max_size=2),
    st.sampled_from([None, True, False, MinKey(), MaxKey()]), st.sampled_from([None, False, "", 0, Int64(0), -0.0, math.nan]),  # (the truthiness edge cases)
)
_containers = st.recursive(
    st.one_of(st.lists(_scalar, max_size=3), st.dictionaries(st.sampled_from(["x", "y"]), _scalar, max_size=2)),
    lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)),
    max_leaves=4,
)
_value = st.one_of(_scalar, _scalar, _scalar, _containers)  # (one_of picks a branch uniformly: mostly scalars)
_doc = st.fixed_dictionaries(
    {},
    optional={
        "a": _value, "b": _value, "c": _value,
        "d": st.one_of(st.dictionaries(st.sampled_from(["x", "y"]), _value, max_size=2), _value),
        "arr": st.lists(st.one_of(st.dictionaries(st.sampled_from(["x", "y"]), _value, max_size=2), _scalar), max_size=3),
    },
)

# ----------------------------------------------------------------------------------------------
# expression trees

_PATHS = ["$a", "$b", "$c", "$d.x", "$d.x.y", "$arr.x", "$arr.x.y", "$nosuch", "$$x", "$$ROOT.a"]
_COMPARISONS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp"]


def _literal(v: Any) -> Any:
    # arrays, objects and strings that look like paths are written as $literal; plain scalars as they are
    if type(v) in (list, dict) or (type(v) is str and v.startswith("$")):
        return {"$literal": v}
    return v


_leaf = st.one_of(st.sampled_from(_PATHS), _value.map(_literal))


def _nodes(inner):
    two = st.lists(inner, min_size=2, max_size=2)
    return st.one_of(
        st.tuples(st.sampled_from(_COMPARISONS), two).map(lambda t: {t[0]: t[1]}),
        st.tuples(st.sampled_from(["$and", "$or"]), st.lists(inner, min_size=0, max_size=3)).map(lambda t: {t[0]: t[1]}),
        inner.map(lambda e: {"$not": [e]}),
        st.lists(inner, min_size=3, max_size=3).map(lambda a: {"$cond": a}),
        st.lists(inner, min_size=2, max_size=3).map(lambda a: {"$ifNull": a}),
        st.tuples(st.sampled_from(["$add", "$multiply"]), st.lists(inner, min_size=1, max_size=3)).map(lambda t: {t[0]: t[1]}),
        two.map(lambda a: {"$subtract": a}),
    )


_expr = st.recursive(_leaf, _nodes, max_leaves=8)

# ----------------------------------------------------------------------------------------------
# the reference evaluator


class _Error(Exception):
    def __init__(self, code: int):
        self.code = code


def _walk(v: Any, parts: list[str]) -> Any:
    if not parts:
        return v
    if type(v) is dict:
        return _walk(v.get(parts[0], MISSING), parts[1:])
    if type(v) is list:  # arrays map over their object elements, dropping what is missing
        out = [_walk(e, parts) for e in v if type(e) is dict]
        return [e for e in out if e is not MISSING]
    return MISSING


def _truthy(v: Any) -> bool:
    if v is None or v is MISSING or v is False:
        return False
    if type(v) in (int, float, Int64):
        return v != 0
    return True


def _compare(x: Any, y: Any) -> int:
    """BSON order, with missing above MinKey and below everything else."""
    if x is MISSING or y is MISSING:
        if x is MISSING and y is MISSING:
            return 0
        other = y if x is MISSING else x
        below = type(other) is not MinKey  # missing is below the other value
        return (-1 if below else 1) if x is MISSING else (1 if below else -1)
    kx, ky = sort_key(x), sort_key(y)
    return (kx > ky) - (kx < ky)


_TESTS = {"$eq": lambda c: c == 0, "$ne": lambda c: c != 0, "$gt": lambda c: c > 0, "$gte": lambda c: c >= 0,
          "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0, "$cmp": lambda c: c}


def _kind(v: Any) -> int | None:
    """0 int, 1 long, 2 double; None for a non-number."""
    if type(v) is float:
        return 2
    if type(v) is Int64:
        return 1
    if type(v) is int:
        return 0 if INT32[0] <= v <= INT32[1] else 1
    return None


def _integer(value: int, kind: int) -> Any:
    if kind == 0 and INT32[0] <= value <= INT32[1]:
        return value
    return Int64(value)


def _operands(args: list, doc: dict, variables: dict):
    """Each operand's value and kind, evaluated in order; None when a null or missing one ends it."""
    out = []
    for a in args:
        v = _ref(a, doc, variables)
        if v is None or v is MISSING:
            return None
        k = _kind(v)
        if k is None:
            raise _Error(14)
        out.append((v, k))
    return out


def _add(values: list) -> Any:
    kind, total = 0, 0
    for v, k in values:
        if kind == 2 or k == 2:
            kind, total = 2, float(total) + float(v)
        else:
            kind = max(kind, k)
            if INT64[0] <= total + int(v) <= INT64[1]:
                total += int(v)
            else:  # the long total overflowing goes on as a double
                kind, total = 2, float(total) + float(v)
    return total if kind == 2 else _integer(total, kind)


def _multiply(values: list) -> Any:
    kind, product, double_product = 0, 1, 1.0
    for v, k in values:
        kind = max(kind, k)
        double_product *= float(v)
        if kind != 2:
            product *= int(v)
            if not INT64[0] <= product <= INT64[1]:
                kind = 2
    return double_product if kind == 2 else _integer(product, kind)


def _subtract(args: list, doc: dict, variables: dict) -> Any:
    x, y = (_ref(a, doc, variables) for a in args)
    if x is None or x is MISSING or y is None or y is MISSING:
        return None
    kx, ky = _kind(x), _kind(y)
    if kx is None or ky is None:
        raise _Error(14)
    kind = max(kx, ky)
    if kind == 2:
        return float(x) - float(y)
    exact = int(x) - int(y)
    if not INT64[0] <= exact <= INT64[1]:
        return float(x) - float(y)
    return _integer(exact, kind)


def _ref(e: Any, doc: dict, variables: dict) -> Any:
    if type(e) is str and e.startswith("$$"):
        name, *parts = e[2:].split(".")
        return _walk(doc if name == "ROOT" else variables[name], parts)
    if type(e) is str and e.startswith("$"):
        return _walk(doc, e[1:].split("."))
    if type(e) is not dict:
        return e
    ((op, args),) = e.items()
    if op == "$literal":
        return args
    if op in _TESTS:
        return _TESTS[op](_compare(_ref(args[0], doc, variables), _ref(args[1], doc, variables)))
    if op == "$and":
        return all(_truthy(_ref(a, doc, variables)) for a in args)
    if op == "$or":
        return any(_truthy(_ref(a, doc, variables)) for a in args)
    if op == "$not":
        return not _truthy(_ref(args[0], doc, variables))
    if op == "$cond":
        return _ref(args[1] if _truthy(_ref(args[0], doc, variables)) else args[2], doc, variables)
    if op == "$ifNull":
        for a in args[:-1]:
            v = _ref(a, doc, variables)
            if v is not None and v is not MISSING:
                return v
        return _ref(args[-1], doc, variables)
    if op == "$subtract":
        return _subtract(args, doc, variables)
    values = _operands(args, doc, variables)
    if values is None:
        return None
    return _add(values) if op == "$add" else _multiply(values)


def _outcome(run) -> tuple:
    try:
        return ("value", run())
    except (MongoError, _Error) as e:
        return ("error", e.code)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same BSON type (NaN equals NaN, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow  # 300 examples: a second or more
@_SETTINGS
@given(expr=_expr, doc=_doc, x=_value)
def test_compiled_expression_agrees_with_the_reference(expr, doc, x):
    variables = {"x": x}
    expected = _outcome(lambda: _ref(expr, doc, variables))
    got = _outcome(lambda: compile_expression(expr)(doc, variables))
    assert got[0] == expected[0], (expr, doc, got, expected)
    if got[0] == "error":
        assert got[1] == expected[1], (expr, doc, got, expected)
    else:
        assert _same(got[1], expected[1]), (expr, doc, got, expected)


@pytest.mark.slow  # 300 examples: a second or more
@_SETTINGS
@given(expr=_expr, doc=_doc, x=_value)
def test_expr_filter_selects_where_the_reference_is_truthy(expr, doc, x):
    variables = {"x": x}
    expected = _outcome(lambda: _truthy(_ref(expr, doc, variables)))
    got = _outcome(lambda: compile_filter({"$expr": expr}, variables=variables)(doc))
    assert got == expected, (expr, doc)


_numbers = st.one_of(_int32, _int64, _double, st.sampled_from([None, True, "s"]))


@pytest.mark.slow  # 300 examples: a second or more
@_SETTINGS
@given(op=st.sampled_from(_COMPARISONS), x=_value, y=_value, swap=st.booleans(), field=st.sampled_from(["k", "none"]))
def test_comparison_of_a_field_and_a_constant_agrees_with_bson_order(op, x, y, swap, field):
    """The specialised shapes (field against constant, constant against field, both evaluated), the
    field missing included, decide as the BSON order does."""
    doc = {"k": x}
    path, constant = "$" + field, _literal(y)
    args = [constant, path] if swap else [path, constant]
    value = doc.get(field, MISSING)
    left, right = (y, value) if swap else (value, y)
    expected = _TESTS[op](_compare(left, right))
    assert compile_expression({op: args})(doc, {}) == expected
    assert compile_expression({op: ["$k", "$$y"]})(doc, {"y": y}) == _TESTS[op](_compare(x, y))


@pytest.mark.slow  # 300 examples: a second or more
@_SETTINGS
@given(op=st.sampled_from(["$add", "$multiply", "$subtract"]),
       args=st.lists(st.one_of(_numbers, st.sampled_from(["$k", "$nosuch"])), min_size=2, max_size=4),
       k=_numbers)
def test_arithmetic_result_types_agree_with_the_reference(op, args, k):
    args = args[:2] if op == "$subtract" else args
    doc = {"k": k}
    expected = _outcome(lambda: _ref({op: args}, doc, {}))
    got = _outcome(lambda: compile_expression({op: args})(doc, {}))
    assert got[0] == expected[0] and (got[1] == expected[1] if got[0] == "error" else _same(got[1], expected[1])), \
        (op, args, doc, got, expected)


@pytest.mark.slow  # 300 examples: a second or more
@_SETTINGS
@given(op=st.sampled_from(["$and", "$or", "$not", "$cond", "$ifNull"]), args=st.lists(_leaf, min_size=1, max_size=4),
       doc=_doc, x=_value)
def test_boolean_and_conditional_operators_agree_with_the_reference(op, args, doc, x):
    """One level of each boolean / conditional operator over leaves: every truthiness case (0, NaN,
    null, missing, false, empty strings and arrays) reaches the specialised two-operand forms."""
    args = args[:1] if op == "$not" else (args * 3)[:3] if op == "$cond" else args
    if op == "$ifNull" and len(args) < 2:
        args = args + ["$nosuch"]
    expr, variables = {op: args}, {"x": x}
    expected = _ref(expr, doc, variables)
    got = compile_expression(expr)(doc, variables)
    assert _same(got, expected), (expr, doc, got, expected)


_EDGES = [MISSING, None, math.nan, -math.inf, -1.5, -0.0, 0, 1, 1.0, 1.5, Int64(1), Int64(2**40), 2**31 - 1,
          2.0**53, math.inf, "", "a", "b", "é", True, False, MinKey(), MaxKey(), [], [1], {}, {"x": 1}]


@pytest.mark.slow  # ~60,000 compiles: a few seconds
def test_every_comparison_shape_orders_the_edge_values_as_bson():
    """Every pair of edge values (missing, NaN, ±0, infinities, int/long/double, strings, bools,
    MinKey/MaxKey, arrays, objects) in every specialised shape, both ways round: a top-level or dotted
    field against a constant or a variable, two fields, two constants."""
    for op, test in _TESTS.items():
        for x in _EDGES:
            for y in _EDGES:
                doc = {name: v for name, v in (("k", x), ("j", y)) if v is not MISSING}
                doc["d"] = {"k": x} if x is not MISSING else {}
                variables = {} if y is MISSING else {"y": y}
                expected, flipped = test(_compare(x, y)), test(_compare(y, x))
                shapes = [["$k", "$$y" if y is not MISSING else "$$REMOVE"], ["$d.k", "$j"], ["$k", "$j"]]
                if y is not MISSING:
                    shapes += [["$k", _literal(y)], ["$d.k", _literal(y)]]
                    if x is not MISSING:
                        shapes.append([_literal(x), _literal(y)])
                for args in shapes:
                    assert compile_expression({op: args})(doc, variables) == expected, (op, args, x, y)
                    assert compile_expression({op: args[::-1]})(doc, variables) == flipped, (op, args[::-1], x, y)
