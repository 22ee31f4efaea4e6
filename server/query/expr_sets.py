"""Set expressions: $setUnion $setIntersection $setDifference $setEquals $setIsSubset.

Arrays are treated as sets under BSON equality (the collation's ``sort_key`` is the identity: 1, 1.0 and
Int64(1) are one element); results keep first-occurrence order; null/missing operands give null
where mongod does ($setUnion, $setIntersection, $setDifference).
"""

from __future__ import annotations

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_base import args_list, check_arity, nullish, type_name, value_key


def _dedupe(values, sort_key):
    seen, out = set(), []
    for v in values:
        k = sort_key(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _set_args(name, vals, code):
    for v in vals:
        if not nullish(v) and type(v) is not list:
            raise MongoError(code, f"All operands of {name} must be arrays. One argument is of type: {type_name(v)}")


def compile_set_union(args, cc):
    fns = [cc(x) for x in args_list(args)]
    sort_key = value_key(cc)

    def union(doc, vars):
        vals = [f(doc, vars) for f in fns]
        _set_args("$setUnion", vals, 17043)
        if any(nullish(v) for v in vals):
            return None
        return _dedupe((x for v in vals for x in v), sort_key)
    return union


def compile_set_intersection(args, cc):
    fns = [cc(x) for x in args_list(args)]
    sort_key = value_key(cc)

    def intersection(doc, vars):
        vals = [f(doc, vars) for f in fns]
        _set_args("$setIntersection", vals, 17047)
        if any(nullish(v) for v in vals):
            return None
        if not vals:
            return []
        common = {sort_key(x) for x in vals[0]}
        for v in vals[1:]:
            common &= {sort_key(x) for x in v}
        return [x for x in _dedupe(vals[0], sort_key) if sort_key(x) in common]
    return intersection


def compile_set_difference(args, cc):
    a, b = (cc(x) for x in check_arity("$setDifference", args, 2))
    sort_key = value_key(cc)

    def difference(doc, vars):
        x, y = a(doc, vars), b(doc, vars)
        if nullish(x) or nullish(y):
            return None
        for v, which in ((x, "first"), (y, "second")):
            if type(v) is not list:
                raise MongoError(17048 if which == "first" else 17049,
                                 f"both operands of $setDifference must be arrays. {which.capitalize()} argument is of type: {type_name(v)}")
        drop = {sort_key(e) for e in y}
        return [e for e in _dedupe(x, sort_key) if sort_key(e) not in drop]
    return difference


def compile_set_equals(args, cc):
    fns = [cc(x) for x in args_list(args)]
    sort_key = value_key(cc)
    if len(fns) < 2:
        raise MongoError(17045, "$setEquals needs at least two arguments had: " + str(len(fns)))

    def equals(doc, vars):
        sets = []
        for f in fns:
            v = f(doc, vars)
            if type(v) is not list:
                raise MongoError(17044, f"All operands of $setEquals must be arrays. One argument is of type: {type_name(v)}")
            sets.append({sort_key(e) for e in v})
        return all(s == sets[0] for s in sets[1:])
    return equals


def compile_set_is_subset(args, cc):
    a, b = (cc(x) for x in check_arity("$setIsSubset", args, 2))
    sort_key = value_key(cc)

    def is_subset(doc, vars):
        x, y = a(doc, vars), b(doc, vars)
        if type(x) is not list:
            raise MongoError(17046, f"both operands of $setIsSubset must be arrays. First argument is of type: {type_name(x)}")
        if type(y) is not list:
            raise MongoError(17042, f"both operands of $setIsSubset must be arrays. Second argument is of type: {type_name(y)}")
        return {sort_key(e) for e in x} <= {sort_key(e) for e in y}
    return is_subset


OPERATORS = {
    "$setUnion": compile_set_union,
    "$setIntersection": compile_set_intersection,
    "$setDifference": compile_set_difference,
    "$setEquals": compile_set_equals,
    "$setIsSubset": compile_set_is_subset,
}
