"""The expression forms of accumulators: $sum $avg $max $min $stdDevPop $stdDevSamp.

As mongod's ``ExpressionFromAccumulator``: with one operand (``{$sum: "$a"}`` or ``{$sum: ["$a"]}``)
an array value is accumulated element by element, any other value as itself; with several operands
each value is accumulated as it is (an array is then one value: ignored by $sum/$avg/$stdDev*,
compared whole by $max/$min). The accumulators are those of ``$group`` (non-numbers ignored by the
numeric ones, null and missing by $max/$min): $sum of nothing is 0, the others null.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidemark.query.accumulator_state import Accumulator, Avg, MinMax, StdDev, Sum
from tidemark.query.expr_base import args_list
from tidemark.query.values import MISSING, compare


def _compile(factory: Callable[[Any], Accumulator]):
    def compile_op(args: Any, cc: Any):
        fns = [cc(x) for x in args_list(args)]
        collation = getattr(cc, "collation", None)
        single = len(fns) == 1

        def run(doc, vars):
            acc = factory(collation)
            if single:
                value = fns[0](doc, vars)
                for item in value if type(value) is list else (value,):
                    if item is not MISSING:
                        acc.process(item)
            else:
                for fn in fns:
                    value = fn(doc, vars)
                    if value is not MISSING:
                        acc.process(value)
            return acc.result()
        return run
    return compile_op


def _min_max(sign: int) -> Callable[[Any], Accumulator]:
    def make(collation: Any) -> Accumulator:
        return MinMax(sign, collation.compare if collation is not None else compare)
    return make


OPERATORS = {
    "$sum": _compile(lambda collation: Sum()),
    "$avg": _compile(lambda collation: Avg()),
    "$max": _compile(_min_max(1)),
    "$min": _compile(_min_max(-1)),
    "$stdDevPop": _compile(lambda collation: StdDev(False)),
    "$stdDevSamp": _compile(lambda collation: StdDev(True)),
}
