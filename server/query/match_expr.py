"""``$expr`` inside a filter: query B's aggregation-expression compiler plus MongoDB truthiness.

Imported lazily by ``match_compile`` (expressions import values/paths, so a module-level import
here would be a cycle). Until ``server.query.expressions`` is importable, a minimal local fallback
evaluates constants, ``$field`` paths and the comparison/boolean operators.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from bson.decimal128 import Decimal128

from protocol.errors import ErrorCode, MongoError
from server.query.paths import get_path
from server.query.values import MISSING, compare

__all__ = ["compile_expr_predicate", "truthy"]


def truthy(v: Any) -> bool:
    """MongoDB truthiness: false, null, missing, undefined and numeric zero are false."""
    if v is None or v is MISSING or v is False:
        return False
    if v is True:
        return True
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, Decimal128):
        return v.to_decimal() != 0
    return True


def compile_expr_predicate(expr: Any, variables: Mapping | None, collation: Any = None) -> Callable[[Any], bool]:
    variables = dict(variables or {})
    try:
        from server.query.expressions import compile_expression
        from server.query.expressions import truthy as b_truthy
    except ImportError:
        fn = _fallback_compile(expr)
        return lambda doc: truthy(fn(doc))
    compiled = compile_expression(expr, collation=collation)
    return lambda doc: b_truthy(compiled(doc, variables))


_CMP = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _fallback_compile(expr: Any) -> Callable[[Any], Any]:
    if isinstance(expr, str) and expr.startswith("$") and not expr.startswith("$$"):
        path = expr[1:]
        return lambda doc: get_path(doc, path)
    if isinstance(expr, Mapping) and len(expr) == 1 and next(iter(expr)).startswith("$"):
        op, args = next(iter(expr.items()))
        args = args if isinstance(args, list) else [args]
        fns = [_fallback_compile(a) for a in args]
        if op in _CMP and len(fns) == 2:
            cmp, (fa, fb) = _CMP[op], fns
            return lambda doc: cmp(compare(_nullish(fa(doc)), _nullish(fb(doc))), 0)
        if op == "$and":
            return lambda doc: all(truthy(f(doc)) for f in fns)
        if op == "$or":
            return lambda doc: any(truthy(f(doc)) for f in fns)
        if op == "$not" and len(fns) == 1:
            return lambda doc: not truthy(fns[0](doc))
        if op == "$literal":
            value = args[0]
            return lambda doc: value
        raise MongoError(ErrorCode.InvalidPipelineOperator, f"Unrecognized expression '{op}'")
    return lambda doc: expr


def _nullish(v: Any) -> Any:
    return None if v is MISSING else v
