"""The expression forms of $sum $avg $max $min $stdDevPop $stdDevSamp (mongod's ExpressionFromAccumulator):
one operand's array is accumulated element-wise, several operands are accumulated as they are."""

import pytest
from bson import Decimal128, Int64

from tidemark.query.expressions import evaluate

DOC = {"a": [1, 2, 3], "b": 5, "c": [1.5, "x", None], "s": "z", "n": None}


@pytest.mark.parametrize(("expr", "expected"), [
    ({"$sum": "$a"}, 6),
    ({"$sum": ["$a"]}, 6),  # one operand, even inside an argument array
    ({"$sum": ["$a", "$b"]}, 5),  # several: the array is one (non-numeric) value
    ({"$sum": "$nope"}, 0),
    ({"$sum": [1, Int64(2), 2.5]}, 3.5 + 2),
    ({"$sum": [2147483647, 1]}, Int64(2147483648)),
    ({"$avg": "$a"}, 2.0),
    ({"$avg": "$c"}, 1.5),
    ({"$avg": []}, None),
    ({"$avg": [Decimal128("1.5"), 1]}, Decimal128("1.25")),
    ({"$max": "$a"}, 3),
    ({"$max": ["$a", "$b"]}, [1, 2, 3]),  # arrays sort above numbers
    ({"$min": ["$s", 3, "$n", "$nope"]}, 3),
    ({"$max": "$nope"}, None),
    ({"$stdDevPop": [1, 2, 3, 4]}, 1.118033988749895),
    ({"$stdDevSamp": "$b"}, None),
    ({"$stdDevSamp": "$a"}, 1.0),
])
def test_accumulator_expressions(expr, expected):
    got = evaluate(expr, DOC)
    assert got == expected and type(got) is type(expected)
