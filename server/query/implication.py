"""Whether a query filter implies a partial index's ``partialFilterExpression``: mongod 7.0's
``expression::isSubsetOf(query, filter)`` (src/mongo/db/matcher/expression_algo.cpp), rule for rule, so
that the planner uses a partial index exactly where mongod does and never where the query could match a
document the index lacks.

Both filters are parsed (``match_parse``) and simplified as mongod's optimizer simplifies them before it
plans (``_optimize``): nested ``$and``/``$or`` absorbed, single-child ones collapsed, an ``$in`` of one
value an equality, of one regex a regex, of nothing always false, ``$all`` a conjunction of equalities, a
``$nor`` of one clause its ``$not``, an ``$or`` of equalities/regexes on one path an ``$in``. Then ``isSubsetOf(lhs = query, rhs = filter)``:

- an equivalent pair (same operator, path and value: ``1`` and ``1.0`` are the same value) is implied;
- ``rhs`` an ``$or``: some branch is implied; ``rhs`` an ``$and``: every clause is; else ``lhs`` an
  ``$and``: some clause implies ``rhs``; ``lhs`` an ``$or``: every branch does (in that order);
- ``rhs`` a comparison (``$eq $lt $lte $gt $gte``): ``lhs`` a comparison on the same path whose value has
  the same canonical type (all numbers share one) and that is at least as narrow, comparing the values in
  BSON order (under the collation); NaN only implies NaN equalities; or ``lhs`` an ``$in`` without regexes
  whose every value, as an equality, implies ``rhs``;
- ``rhs`` an ``$in`` (without regexes): ``lhs`` implies the equality to one of its values (so ``{a: 1}``
  implies ``{a: {$in: [1, 2]}}``, but ``{a: {$in: [1, 2]}}`` implies only an equivalent ``$in``);
- ``rhs`` ``{$exists: true}``: ``lhs`` on the same path cannot match a missing field: a comparison with a
  non-null value, ``$elemMatch``, ``$exists: true``, geo, ``$mod``, a regex, ``$size``, ``$type``, an
  ``$in`` without null, ``$ne: null`` or ``$nin`` holding null;
- ``rhs`` a ``$_internalExpr*`` bound (time-series bucket filters): a bound of the same kind on the same
  path at least as narrow in BSON order;
- anything else is not implied (geo containment is not proven here: only an equivalent ``$geoWithin``).

Strings (and documents and arrays, which may hold strings) are ordered by the collation the index and the
query share. A caller that does not pass it gets the answer that holds under every collation: such values
then imply one another only when they are equal byte for byte.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import compare_for
from tidemark.query.match_ast import (
    All,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Cmp,
    ElemMatch,
    Exists,
    Geo,
    In,
    InternalExprCmp,
    Mod,
    Node,
    Nor,
    Not,
    Or,
    Regex,
    Size,
    Type,
)
from tidemark.query.match_parse import parse_filter
from tidemark.query.values import (
    BRACKET_ARRAY,
    BRACKET_OBJECT,
    BRACKET_STRING,
    canonical_type_order,
    float_is_nan,
)
from tidemark.query.values import compare as simple_compare

__all__ = ["filter_implies"]

Compare = Callable[[Any, Any], int | None]  # None: the order is not known (see _any_collation_compare)

# the leaves that never match a missing field (expression_algo.cpp, _isSubsetOf(.., ExistsMatchExpression))
_NEVER_MISSING = (ElemMatch, Exists, Geo, Mod, Regex, Size, Type)


_ANY_COLLATION: Any = object()
_COLLATABLE = (BRACKET_STRING, BRACKET_OBJECT, BRACKET_ARRAY)


def filter_implies(query: Any, partial: Any, collation: Any = _ANY_COLLATION) -> bool:
    """True when every document ``query`` matches also matches ``partial`` by mongod's rules.
    ``collation`` (``collation.Collation``, None = simple) is the one both filters compare strings
    under (an index whose collation differs from the query's is the caller's to refuse); left out,
    strings, documents and arrays are compared only for byte equality, which holds under any."""
    try:
        lhs = _optimize(parse_filter(query))
        rhs = _optimize(parse_filter(partial))
    except MongoError:
        return False  # the query fails anyway, when it runs
    cmp = _any_collation_compare if collation is _ANY_COLLATION else compare_for(collation)
    return _is_subset(lhs, rhs, cmp)


def _any_collation_compare(a: Any, b: Any) -> int | None:
    """BSON order where every collation agrees: values that may hold strings are known equal when
    they are byte-equal, and otherwise of unknown order."""
    if canonical_type_order(a) in _COLLATABLE or canonical_type_order(b) in _COLLATABLE:
        return 0 if simple_compare(a, b) == 0 else None
    return simple_compare(a, b)


# -- the optimizer's rewrites that change what isSubsetOf sees --------------------------------------------


def _optimize(node: Node) -> Node:
    if isinstance(node, And | Or):
        return _optimize_list(node)
    if isinstance(node, All):
        clauses = tuple(replace(v, path=node.path) if isinstance(v, Regex) else Cmp(node.path, "$eq", v)
                        for v in node.values)
        return _optimize(And(clauses))
    if isinstance(node, In):
        if not node.values and not node.regexes:
            return AlwaysFalse()
        if len(node.regexes) == 1 and not node.values:
            return replace(node.regexes[0], path=node.path)
        first = node.values[0] if node.values else None
        if not node.regexes and all(simple_compare(v, first) == 0 for v in node.values):
            return Cmp(node.path, "$eq", first)  # one distinct value: {$in: [5, 5.0]} is {$eq: 5}
        return node
    if isinstance(node, Not):
        return Not(_optimize(node.child))
    if isinstance(node, Nor) and len(node.children) == 1:
        return Not(_optimize(node.children[0]))  # a NOR of one clause is its NOT
    return node


def _optimize_list(node: And | Or) -> Node:
    """mongod's ListOfMatchExpression optimizer (expression_tree.cpp): optimize the children, absorb
    children of the same kind, drop always-true clauses of an AND / always-false branches of an OR,
    collapse one child, and short-circuit on an always-false clause / always-true branch."""
    kind = type(node)
    children: list[Node] = []
    for child in node.children:
        child = _optimize(child)
        if type(child) is kind:
            children.extend(child.children)
        else:
            children.append(child)
    if kind is And:
        children = [c for c in children if not _trivially_true(c)]
    else:
        children = [c for c in children if not isinstance(c, AlwaysFalse)]
        if not children:
            return AlwaysFalse()
    if len(children) == 1:
        return children[0]
    if kind is And and any(isinstance(c, AlwaysFalse) for c in children):
        return AlwaysFalse()
    if kind is Or:
        if any(_trivially_true(c) for c in children):
            return AlwaysTrue()
        merged = _or_to_in(children)
        if merged is not None:
            return merged
    return kind(tuple(children))


def _trivially_true(node: Node) -> bool:
    return isinstance(node, AlwaysTrue) or isinstance(node, And) and not node.children


def _or_to_in(children: list[Node]) -> Node | None:
    """An OR whose branches are all equalities (not to a regex) or regexes on one path is an ``$in``."""
    paths = {getattr(c, "path", None) for c in children}
    if len(paths) != 1:
        return None
    values: list[Any] = []
    regexes: list[Regex] = []
    for child in children:
        if isinstance(child, Cmp) and child.op == "$eq" and canonical_type_order(child.value) != _REGEX_BRACKET:
            values.append(child.value)
        elif isinstance(child, Regex):
            regexes.append(child)
        else:
            return None
    return _optimize(In(children[0].path, tuple(values), tuple(regexes)))  # type: ignore[attr-defined]


_REGEX_BRACKET = 50


def _distinct(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The values of an ``$in`` as mongod keeps them: sorted, one of each (BSON equality)."""
    ordered = sorted(values, key=functools.cmp_to_key(simple_compare))
    out: list[Any] = []
    for v in ordered:
        if not out or simple_compare(out[-1], v) != 0:
            out.append(v)
    return tuple(out)


# -- isSubsetOf ----------------------------------------------------------------------------------------


def _is_subset(lhs: Node, rhs: Node, cmp: Compare) -> bool:
    """expression::isSubsetOf: the documents ``lhs`` (the query) matches are among those ``rhs`` (the
    index's filter) matches. The recursion goes through ``rhs`` before ``lhs``: {a: 5, b: 5} is a subset
    of {$or: [{a: 3}, {$and: [{a: 5}, {b: 5}]}]}."""
    if _equivalent(lhs, rhs, cmp):
        return True
    if isinstance(rhs, Or):
        return any(_is_subset(lhs, c, cmp) for c in rhs.children)
    if isinstance(rhs, And):
        return all(_is_subset(lhs, c, cmp) for c in rhs.children)
    if isinstance(lhs, And):
        return any(_is_subset(c, rhs, cmp) for c in lhs.children)
    if isinstance(lhs, Or):
        return all(_is_subset(c, rhs, cmp) for c in lhs.children)
    if isinstance(rhs, Cmp):
        return _subset_of_comparison(lhs, rhs, cmp)
    if isinstance(rhs, Exists):
        return _subset_of_exists(lhs, rhs)
    if isinstance(rhs, In):
        return _subset_of_in(lhs, rhs, cmp)
    if isinstance(rhs, InternalExprCmp) and isinstance(lhs, InternalExprCmp):
        return _internal_expr_subset(lhs, rhs, cmp)
    return False


def _internal_expr_subset(lhs: InternalExprCmp, rhs: InternalExprCmp, cmp: Compare) -> bool:
    """_isSubsetOfInternalExpr for two bounds of one direction and kind (BSON order across types): mongod
    compares the operands with their field names, which a parsed filter does not keep, so bounds of
    different kinds ($_internalExprGt vs $_internalExprGte) are not proven here."""
    if lhs.path != rhs.path or lhs.op != rhs.op:
        return False
    c = cmp(lhs.value, rhs.value)
    if c is None:
        return False
    if rhs.op in ("$_internalExprLt", "$_internalExprLte"):
        return c <= 0
    if rhs.op in ("$_internalExprGt", "$_internalExprGte"):
        return c >= 0
    return False


def _subset_of_comparison(lhs: Node, rhs: Cmp, cmp: Compare) -> bool:
    if getattr(lhs, "path", None) != rhs.path:
        return False
    if isinstance(lhs, Cmp):
        return _comparison_subset(lhs.op, lhs.value, rhs.op, rhs.value, cmp)
    if isinstance(lhs, In):
        # each value of the $in is an equality; a regex member is not proven
        return not lhs.regexes and all(_comparison_subset("$eq", v, rhs.op, rhs.value, cmp)
                                       for v in lhs.values)
    return False


def _subset_of_in(lhs: Node, rhs: In, cmp: Compare) -> bool:
    if getattr(lhs, "path", None) != rhs.path or rhs.regexes:
        return False
    return any(_subset_of_comparison(lhs, Cmp(rhs.path, "$eq", v), cmp) for v in rhs.values)


def _subset_of_exists(lhs: Node, rhs: Exists) -> bool:
    if isinstance(lhs, Not):
        child = lhs.child
        if getattr(child, "path", None) != rhs.path:
            return False
        if isinstance(child, Cmp):
            return child.op == "$eq" and child.value is None  # $ne: null
        if isinstance(child, In):
            return _has_null(child)  # $nin: [.., null]
        return False
    if getattr(lhs, "path", None) != rhs.path:
        return False
    if isinstance(lhs, Cmp):
        return lhs.value is not None
    if isinstance(lhs, In):
        return not _has_null(lhs)
    return isinstance(lhs, _NEVER_MISSING)


def _has_null(node: In) -> bool:
    return any(v is None for v in node.values)


_SUPPORTS_EQUALITY = ("$eq", "$gte", "$lte")


def _comparison_subset(op: str, value: Any, rhs_op: str, bound: Any, cmp: Compare) -> bool:
    """_isSubsetOf(ComparisonMatchExpression, ComparisonMatchExpression) on one path."""
    if canonical_type_order(value) != canonical_type_order(bound):
        return False
    if float_is_nan(value) or float_is_nan(bound):  # NaN compares equal only to itself
        if op in _SUPPORTS_EQUALITY and rhs_op in _SUPPORTS_EQUALITY:
            return float_is_nan(value) and float_is_nan(bound)
        return False
    c = cmp(value, bound)
    if c is None:
        return False
    if op == rhs_op and c == 0:
        return True
    if rhs_op in ("$lt", "$lte") and op in ("$lt", "$lte", "$eq"):
        return c <= 0 if rhs_op == "$lte" else c < 0
    if rhs_op in ("$gt", "$gte") and op in ("$gt", "$gte", "$eq"):
        return c >= 0 if rhs_op == "$gte" else c > 0
    return False


# -- MatchExpression::equivalent -----------------------------------------------------------------------


def _equivalent(a: Node, b: Node, cmp: Compare) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, And | Or):
        return _same_children(a.children, b.children, cmp)  # type: ignore[attr-defined]
    if isinstance(a, Not):
        return _equivalent(a.child, b.child, cmp)  # type: ignore[attr-defined]
    if isinstance(a, Cmp | InternalExprCmp):
        assert isinstance(b, Cmp | InternalExprCmp)
        # BSON equality of the values, strings compared binary (ComparisonMatchExpressionBase::equivalent)
        return (a.path == b.path and a.op == b.op
                and canonical_type_order(a.value) == canonical_type_order(b.value)
                and simple_compare(a.value, b.value) == 0)
    if isinstance(a, In):
        assert isinstance(b, In)
        if a.path != b.path or not _same_regexes(a.regexes, b.regexes):
            return False
        xs, ys = _distinct(a.values), _distinct(b.values)
        return len(xs) == len(ys) and all(cmp(x, y) == 0 for x, y in zip(xs, ys, strict=True))
    if isinstance(a, Regex):
        assert isinstance(b, Regex)
        return a.path == b.path and a.pattern == b.pattern and a.options == b.options
    if isinstance(a, Exists | Type | Mod | Size | AlwaysTrue | AlwaysFalse):
        return a == b
    return False  # geo regions, $elemMatch, $expr...: not compared


def _same_children(xs: tuple[Node, ...], ys: tuple[Node, ...], cmp: Compare) -> bool:
    """The same clauses in any order (mongod sorts both trees before it compares them pairwise)."""
    if len(xs) != len(ys):
        return False
    left = list(ys)
    for x in xs:
        for i, y in enumerate(left):
            if _equivalent(x, y, cmp):
                del left[i]
                break
        else:
            return False
    return True


def _same_regexes(xs: tuple[Any, ...], ys: tuple[Any, ...]) -> bool:
    return sorted((r.pattern, r.options) for r in xs) == sorted((r.pattern, r.options) for r in ys)
