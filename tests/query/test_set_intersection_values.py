"""$setIntersection keeps, of equal values in different numeric types, those of the smaller set at each
step (mongod 7.0's ExpressionSetIntersection: it walks the smaller of the values so far and the next
operand's set, the values so far on a tie). Checked against a transcription of that loop."""

from __future__ import annotations

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given
from hypothesis import strategies as st

from tidemark.query.expressions import evaluate
from tidemark.query.values import sort_key

_NUMBERS = st.sampled_from([1, 1.0, Int64(1), Decimal128("1"), 2, 2.0, Int64(2), 3, Decimal128("3.0"), -0.0, 0])


def _as_set(values: list) -> list:
    """mongod's ordered ValueSet built from an array: the first of equal values, in BSON order."""
    out: dict = {}
    for v in values:
        out.setdefault(sort_key(v), v)
    return [out[k] for k in sorted(out)]


def model(operands: list[list]) -> list:
    current = _as_set(operands[0])
    for nxt in operands[1:]:
        if not current:
            break
        other = _as_set(nxt)
        if len(current) > len(other):
            current, other = other, current
        keys = {sort_key(v) for v in other}
        current = [v for v in current if sort_key(v) in keys]
    return current


def _typed(values: list) -> list:
    return [(type(v).__name__, str(v)) for v in values]


@given(operands=st.lists(st.lists(_NUMBERS, max_size=5), min_size=1, max_size=4))
def test_set_intersection_keeps_the_smaller_sets_values(operands):
    result = evaluate({"$setIntersection": [{"$literal": o} for o in operands]}, {})
    assert _typed(result) == _typed(model(operands))


def test_set_js_example():
    assert _typed(evaluate({"$setIntersection": [[1, 2, 3], [3, 2.0]]}, {})) == _typed([2.0, 3])
    assert _typed(evaluate({"$setIntersection": [[1, 2], [2.0, 1.0]]}, {})) == _typed([1, 2])  # a tie: the first
