"""Comparison, boolean and conditional expressions: $eq $ne $gt $gte $lt $lte $cmp, $and $or $not,
$cond $ifNull $switch.

Comparisons use BSON order with missing below null (so ``{$eq: ["$nosuch", null]}`` is false, as in
mongod); boolean operators use MongoDB truthiness and short-circuit.
"""

from __future__ import annotations

import operator

from bson.int64 import Int64
from bson.min_key import MinKey

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_base import args_list, check_arity, comparator, constant_of, field_of, type_name
from tidemark.query.values import MISSING


def truthy(v) -> bool:
    if v is None or v is MISSING or v is False:
        return False
    if v is True:
        return True
    t = type(v)
    if t is int or t is float or t is Int64:
        return v != 0
    if hasattr(v, "to_decimal"):
        return v.to_decimal() != 0
    return True


def _compare_missing(x, y, compare) -> int:
    """$cmp and $eq & co. with a missing operand: a missing value ranks with undefined, above MinKey
    and below every other value (mongod's canonical type order gives MinKey -1, EOO 0, null 5)."""
    if x is y:
        return 0
    if type(x) is MinKey or type(y) is MinKey:
        return 1 if x is MISSING else -1
    return compare(x, y)


def _comparison(name, test, py_op):
    """``$eq`` & co.: ``test`` of the BSON comparison (``comparator``), specialised at compile time.

    Under the simple collation, two strings, or two ints/doubles neither of which is NaN, are ordered
    by Python exactly as by BSON (strings by code point = UTF-8 bytes; int vs double exactly), so
    ``py_op`` decides them without the general comparison; a constant operand's kind is read once."""
    def compile_op(args, cc):
        a, b = (cc(x) for x in check_arity(name, args, 2))
        compare = comparator(cc)

        def general(x, y):
            if x is MISSING or y is MISSING:
                return test(_compare_missing(x, y, compare))
            return test(compare(x, y))

        if getattr(cc, "collation", None) is not None:
            return lambda doc, vars: general(a(doc, vars), b(doc, vars))
        a_const, a_value = constant_of(a)
        b_const, b_value = constant_of(b)
        if a_const != b_const:  # one constant operand: the other's value is tested against its kind
            fn, value = (b, a_value) if a_const else (a, b_value)
            flip = a_const
            fast = _MIRRORED[py_op] if flip else py_op  # fast(v, value) is py_op of the operands in order

            def slow(v):
                return general(value, v) if flip else general(v, value)
            t = type(value)
            field = field_of(fn)
            if t is str:
                if field is not None:
                    def field_str_op(doc, vars):
                        try:
                            v = doc.get(field, MISSING)
                        except AttributeError:
                            v = MISSING
                        return fast(v, value) if type(v) is str else slow(v)
                    return field_str_op

                def str_op(doc, vars):
                    v = fn(doc, vars)
                    return fast(v, value) if type(v) is str else slow(v)
                return str_op
            if (t is int or t is float) and value == value:
                if field is not None:
                    def field_num_op(doc, vars):
                        try:
                            v = doc.get(field, MISSING)
                        except AttributeError:
                            v = MISSING
                        tv = type(v)
                        return fast(v, value) if (tv is int or tv is float) and v == v else slow(v)
                    return field_num_op

                def num_op(doc, vars):
                    v = fn(doc, vars)
                    tv = type(v)
                    return fast(v, value) if (tv is int or tv is float) and v == v else slow(v)
                return num_op

        def op(doc, vars):
            x, y = a(doc, vars), b(doc, vars)
            tx, ty = type(x), type(y)
            if tx is str:
                if ty is str:
                    return py_op(x, y)
            elif (tx is int or tx is float) and (ty is int or ty is float) and x == x and y == y:
                return py_op(x, y)
            return general(x, y)
        return op
    return compile_op


# py_op(a, b) == _MIRRORED[py_op](b, a)
_MIRRORED = {operator.eq: operator.eq, operator.ne: operator.ne, operator.gt: operator.lt,
             operator.ge: operator.le, operator.lt: operator.gt, operator.le: operator.ge}


def compile_cmp(args, cc):
    a, b = (cc(x) for x in check_arity("$cmp", args, 2))
    compare = comparator(cc)

    simple = getattr(cc, "collation", None) is None

    def cmp(doc, vars):
        x, y = a(doc, vars), b(doc, vars)
        if simple:  # the pairs Python orders as BSON does, inline (as $eq & co.)
            tx, ty = type(x), type(y)
            if (tx is str and ty is str) or (
                    (tx is int or tx is float) and (ty is int or ty is float) and x == x and y == y):
                return (x > y) - (x < y)
        if x is MISSING or y is MISSING:
            return _compare_missing(x, y, compare)
        return compare(x, y)
    return cmp


# The boolean operators test their operands' truth inline for the booleans comparisons return
# (``v is True`` / ``v is False``) and call ``truthy`` only for other values.

def compile_and(args, cc):
    fns = [cc(a) for a in args_list(args)]
    if len(fns) == 2:
        f, g = fns

        def and2(doc, vars):
            v = f(doc, vars)
            if v is not True and (v is False or not truthy(v)):
                return False
            v = g(doc, vars)
            return v is True or (v is not False and truthy(v))
        return and2

    def and_(doc, vars):
        for fn in fns:
            v = fn(doc, vars)
            if v is not True and (v is False or not truthy(v)):
                return False
        return True
    return and_


def compile_or(args, cc):
    fns = [cc(a) for a in args_list(args)]
    if len(fns) == 2:
        f, g = fns

        def or2(doc, vars):
            v = f(doc, vars)
            if v is True or (v is not False and truthy(v)):
                return True
            v = g(doc, vars)
            return v is True or (v is not False and truthy(v))
        return or2

    def or_(doc, vars):
        for fn in fns:
            v = fn(doc, vars)
            if v is True or (v is not False and truthy(v)):
                return True
        return False
    return or_


def compile_not(args, cc):
    (a,) = (cc(x) for x in check_arity("$not", args, 1))

    def not_(doc, vars):
        v = a(doc, vars)
        return v is False or (v is not True and not truthy(v))
    return not_


def compile_cond(args, cc):
    if isinstance(args, dict):
        # mongod parses each argument as it meets it, so an unknown one fails after the earlier
        # arguments' own parse errors, and a missing one only once all are read
        parsed = {}
        for k, v in args.items():
            if k not in ("if", "then", "else"):
                raise MongoError(17083, f"Unrecognized parameter to $cond: {k}")
            parsed[k] = cc(v)
        for code, k in ((17080, "if"), (17081, "then"), (17082, "else")):
            if k not in parsed:
                raise MongoError(code, f"Missing '{k}' parameter to $cond")
        c, t, e = parsed["if"], parsed["then"], parsed["else"]
    else:
        c, t, e = (cc(x) for x in check_arity("$cond", args, 3))

    def cond(doc, vars):
        v = c(doc, vars)
        if v is True or (v is not False and truthy(v)):
            return t(doc, vars)
        return e(doc, vars)
    return cond


def compile_if_null(args, cc):
    lst = args_list(args)
    if len(lst) < 2:
        raise MongoError(1257300, "$ifNull needs at least two arguments, had: " + str(len(lst)))
    fns = [cc(a) for a in lst]
    *candidates, fallback = fns

    def if_null(doc, vars):
        for fn in candidates:
            v = fn(doc, vars)
            if v is not None and v is not MISSING:
                return v
        return fallback(doc, vars)
    return if_null


def compile_switch(args, cc):
    if not isinstance(args, dict):
        raise MongoError(40060, f"$switch requires an object as an argument, found: {type_name(args)}")
    branches = []
    default = None
    for k, v in args.items():
        if k == "branches":
            if not isinstance(v, list):
                raise MongoError(40061, f"$switch expected an array for 'branches', found: {type_name(v)}")
            for br in v:
                if not isinstance(br, dict):
                    raise MongoError(40062, f"$switch expected each branch to be an object, found: {type_name(br)}")
                parts = {}
                for bk, bv in br.items():  # parsed as met, as mongod does
                    if bk not in ("case", "then"):
                        raise MongoError(40063, f"$switch found an unknown argument to a branch: {bk}")
                    parts[bk] = cc(bv)
                if "case" not in parts:
                    raise MongoError(40064, "$switch requires each branch have a 'case' expression")
                if "then" not in parts:
                    raise MongoError(40065, "$switch requires each branch have a 'then' expression.")
                branches.append((parts["case"], parts["then"]))
        elif k == "default":
            default = cc(v)
        else:
            raise MongoError(40067, f"$switch found an unknown argument: {k}")
    if not branches:
        raise MongoError(40068, "$switch requires at least one branch")

    def switch(doc, vars):
        for case, then in branches:
            if truthy(case(doc, vars)):
                return then(doc, vars)
        if default is None:
            raise MongoError(40066, "$switch could not find a matching branch for an input, and no default was specified.")
        return default(doc, vars)
    return switch


OPERATORS = {
    "$eq": _comparison("$eq", lambda c: c == 0, operator.eq),
    "$ne": _comparison("$ne", lambda c: c != 0, operator.ne),
    "$gt": _comparison("$gt", lambda c: c > 0, operator.gt),
    "$gte": _comparison("$gte", lambda c: c >= 0, operator.ge),
    "$lt": _comparison("$lt", lambda c: c < 0, operator.lt),
    "$lte": _comparison("$lte", lambda c: c <= 0, operator.le),
    "$cmp": compile_cmp,
    "$and": compile_and,
    "$or": compile_or,
    "$not": compile_not,
    "$cond": compile_cond,
    "$ifNull": compile_if_null,
    "$switch": compile_switch,
}
