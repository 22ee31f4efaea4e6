"""Set expressions: $setUnion $setIntersection $setDifference $setEquals $setIsSubset.

Arrays are treated as sets under BSON equality (the collation's ``sort_key`` is the identity: 1, 1.0 and
Int64(1) are one element). $setUnion and $setIntersection answer in BSON (or collation) order, as
mongod's ordered value sets do; $setDifference keeps its first operand's order. Null/missing operands
give null where mongod does ($setUnion, $setIntersection, $setDifference), checked operand by operand.
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


def _operands(name, fns, code, doc, vars):
    """The operands of $setUnion/$setIntersection in mongod's order: each is evaluated and checked
    when reached, so a nullish one answers null before a later non-array is seen."""
    vals = []
    for f in fns:
        v = f(doc, vars)
        if nullish(v):
            return None
        if type(v) is not list:
            raise MongoError(code, f"All operands of {name} must be arrays. One argument is of type: {type_name(v)}")
        vals.append(v)
    return vals


def compile_set_union(args, cc):
    """mongod builds the union as an ordered set: the result is in BSON (or collation) order, each
    value as first met."""
    fns = [cc(x) for x in args_list(args)]
    sort_key = value_key(cc)

    def union(doc, vars):
        vals = _operands("$setUnion", fns, 17043, doc, vars)
        if vals is None:
            return None
        members: dict = {}
        for v in vals:
            for x in v:
                members.setdefault(sort_key(x), x)
        return [members[k] for k in sorted(members)]
    return union


def compile_set_intersection(args, cc):
    """As mongod's ordered set (ExpressionSetIntersection): the common values in BSON (or collation)
    order. Each operand in turn is intersected with the values so far by walking the smaller of the two
    sets (the values so far when the sizes are equal), whose values are kept: of 1 and 1.0, the one in
    the smaller set."""
    fns = [cc(x) for x in args_list(args)]
    sort_key = value_key(cc)

    def intersection(doc, vars):
        vals = _operands("$setIntersection", fns, 17047, doc, vars)
        if vals is None:
            return None
        if not vals:
            return []
        members: dict = {}
        for x in vals[0]:
            members.setdefault(sort_key(x), x)
        for v in vals[1:]:
            if not members:
                break
            other: dict = {}
            for x in v:
                other.setdefault(sort_key(x), x)
            small, big = (other, members) if len(members) > len(other) else (members, other)
            members = {k: x for k, x in small.items() if k in big}
        return [members[k] for k in sorted(members)]
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
