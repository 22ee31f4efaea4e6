"""The expression forms of accumulators: $sum $avg $max $min $stdDevPop $stdDevSamp $median $percentile.

As mongod's ``ExpressionFromAccumulator``: with one operand (``{$sum: "$a"}`` or ``{$sum: ["$a"]}``)
an array value is accumulated element by element, any other value as itself; with several operands
each value is accumulated as it is (an array is then one value: ignored by $sum/$avg/$stdDev*,
compared whole by $max/$min). The accumulators are those of ``$group`` (non-numbers ignored by the
numeric ones, null and missing by $max/$min): $sum of nothing is 0, the others null.

$median and $percentile (mongod 7.0's ExpressionFromAccumulatorQuantile) take the accumulator's
``{input, p, method}`` spec with its checks; a numeric input is one value, an array's numeric
elements are the values, anything else none (null, or one null per 'p').
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


def _quantile(name: str):
    def compile_op(args: Any, cc: Any):
        # (imported here: accumulators compiles expressions, so it loads after this module)
        from tidemark.query.accumulator_state import Percentile
        from tidemark.query.accumulators import parse_percentile

        input_expr, ps, scalar = parse_percentile(name, args, getattr(cc, "variables", None))
        input_fn = cc(input_expr)

        def run(doc, vars):
            acc = Percentile(ps, scalar)
            value = input_fn(doc, vars)
            for item in value if type(value) is list else (value,):
                acc.process(item)  # (non-numbers are ignored)
            return acc.result()
        return run
    return compile_op


OPERATORS = {
    "$sum": _compile(lambda collation: Sum()),
    "$avg": _compile(lambda collation: Avg()),
    "$max": _compile(_min_max(1)),
    "$min": _compile(_min_max(-1)),
    "$stdDevPop": _compile(lambda collation: StdDev(False)),
    "$stdDevSamp": _compile(lambda collation: StdDev(True)),
    "$median": _quantile("$median"),
    "$percentile": _quantile("$percentile"),
}
