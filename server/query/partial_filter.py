"""Which filters a partial index may have, and when two of them are the same (pure).

``check_partial_filter``: mongod 7.0 takes equality, ``$gt``/``$gte``/``$lt``/``$lte``, ``$exists: true``,
``$type``, ``$in``, geo predicates, and ``$and``/``$or`` of them, at most ``MAX_DEPTH`` nodes deep (67
"partialFilterExpression depth may not exceed 4", counted on the tree mongod's parser builds: a document
of one condition is that condition, of several an ``$and`` one level up; ``{a: {$gt: 1, $lt: 5}}`` is two
conditions). Anything else (every negation — ``$ne``, ``$nin``, ``$not``, ``$nor``, ``$exists: false`` —,
``$regex``, ``$mod``, ``$size``, ``$all``, ``$elemMatch``, bit tests, ``$jsonSchema``) is 67
CannotCreateIndex "Expression not supported in partial index: <the expression>"; the parse refuses
``$expr`` and ``$jsonSchema`` (224 QueryFeatureNotAllowed), ``$where`` and ``$text`` (2 BadValue: "... is not
allowed in this context") and ``$near``/``$nearSphere`` (5626500), as mongod's does. The tree is
checked depth-first in document order, as mongod does, so of two faults the first one found is reported.
An index mongod refuses must not be built here: an application written against Tidemark would not start
against mongod.

``filter_signature``: the form under which mongod compares the filters of two indexes on the same key
(``MatchExpression::equivalent`` after ``parseAndNormalize``): nested ``$and``/``$or`` flattened, one-child
ones and one-value ``$in`` collapsed, children stably sorted by (kind, path, number of children) —
not by value, so ``{$and: [{a: {$type: 1}}, {a: {$type: 2}}]}`` and its reverse differ, as in mongod —
and values compared in BSON order (``1`` is ``1.0``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match_ast import (
    All,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Bits,
    Cmp,
    ElemMatch,
    Exists,
    Geo,
    In,
    InternalExprCmp,
    JsonSchema,
    Mod,
    Node,
    Nor,
    Not,
    Or,
    Regex,
    Size,
    Type,
)
from tidemark.query.match_parse import is_operator_document, parse_filter, where_not_allowed
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import sort_key

__all__ = ["MAX_DEPTH", "check_partial_filter", "filter_signature", "parse_partial_filter"]

# mongod's internalPartialFilterExpressionMaxDepth (default 4): nodes on the path from the root to a leaf
MAX_DEPTH = 4
_ALLOWED_LEAVES = (Cmp, In, Exists, Type, Geo, AlwaysTrue, InternalExprCmp)


def check_partial_filter(raw: Mapping[str, Any]) -> None:
    """Raise mongod's error when ``raw`` (a ``partialFilterExpression``, already known to be an
    object) is not one a partial index may have."""
    parse_partial_filter(raw)  # parse errors first (mongod parses before checking the tree)
    _check_document(raw, 0)


def parse_partial_filter(raw: Mapping[str, Any]) -> None:
    """Only parse ``raw`` as mongod does a partial filter (no ``$expr``, ``$where``): its parse errors."""
    _refuse_contexts(raw)
    with where_not_allowed():
        parse_filter(raw)


def _depth_ok(level: int) -> None:
    if level + 1 > MAX_DEPTH:
        raise MongoError(ErrorCode.CannotCreateIndex, f"partialFilterExpression depth may not exceed {MAX_DEPTH}")


def _conditions(raw: Mapping[str, Any]) -> list[dict]:
    """The conditions mongod's parser makes of a filter document, in order: one per logical operator or
    other top-level ``$`` key (``$comment`` none), one per operator of a field's operator document
    (``$options`` belongs to its ``$regex``), one for a field's plain value."""
    out: list[dict] = []
    for key, value in raw.items():
        if key == "$comment":
            continue
        if not key.startswith("$") and is_operator_document(value):
            ops = [op for op in value if not (op == "$options" and "$regex" in value)]
            for op in ops:
                sub = {op: value[op]}
                if op == "$regex" and "$options" in value:
                    sub["$options"] = value["$options"]
                out.append({key: sub})
        else:
            out.append({key: value})
    return out


def _check_document(raw: Mapping[str, Any], level: int) -> None:
    """Check ``raw`` parsed as one node at ``level``: one condition is that node, several an ``$and``."""
    conditions = _conditions(raw)
    if len(conditions) != 1:
        _depth_ok(level)
        level += 1
    for condition in conditions:
        _check_condition(condition, level)


def _check_condition(condition: dict, level: int) -> None:
    _depth_ok(level)
    (key, value), = condition.items()
    if key in ("$and", "$or") and isinstance(value, list):
        for sub in value:
            _check_document(sub, level + 1)
        return
    with where_not_allowed():
        _check(parse_filter(condition))  # a leaf (or $nor): allowed or 67 with its debug form


# mongod parses a partial filter with every special feature banned (kBanAllSpecialFeatures): the top-level
# operators it then refuses, with their codes and messages, and the near operators (5626500)
_BANNED_TOP = {
    "$text": (ErrorCode.BadValue, "$text is not allowed in this context"),
    "$where": (ErrorCode.BadValue, "$where is not allowed in this context"),
    "$expr": (ErrorCode.QueryFeatureNotAllowed, "$expr is not allowed in this context"),
    "$jsonSchema": (ErrorCode.QueryFeatureNotAllowed, "$jsonSchema is not allowed in this context"),
}
_BANNED_NEAR = frozenset({"$near", "$nearSphere", "$geoNear"})


def _refuse_contexts(flt: Mapping[str, Any]) -> None:
    """The banned features where mongod's parser meets them, in document order: a top-level operator
    (also under ``$and``/``$or``/``$nor`` and in an ``$elemMatch`` object) or a near operator of a field."""
    for key, value in flt.items():
        banned = _BANNED_TOP.get(key)
        if banned is not None:
            raise MongoError(*banned)
        if key in ("$and", "$or", "$nor"):
            for child in value if isinstance(value, list) else ():
                if isinstance(child, Mapping):
                    _refuse_contexts(child)
        elif not key.startswith("$") and isinstance(value, Mapping):
            _refuse_operators(value)


def _refuse_operators(ops: Mapping[str, Any]) -> None:
    from tidemark.query.pipeline import NEAR_NOT_ALLOWED

    for op, arg in ops.items():
        if op in _BANNED_NEAR:
            raise MongoError(5626500, NEAR_NOT_ALLOWED)
        if op == "$elemMatch" and isinstance(arg, Mapping):
            _refuse_contexts(arg)
        elif op == "$not" and isinstance(arg, Mapping):
            _refuse_operators(arg)


def _check(node: Node) -> None:
    if isinstance(node, (And, Or)):
        for child in node.children:
            _check(child)
        return
    if isinstance(node, _ALLOWED_LEAVES) and not (isinstance(node, Cmp) and node.op not in _CMP_OPS):
        return
    raise MongoError(ErrorCode.CannotCreateIndex, f"Expression not supported in partial index: {_debug(node)}")


_CMP_OPS = frozenset({"$eq", "$gt", "$gte", "$lt", "$lte"})


def _debug(node: Node, depth: int = 0) -> str:
    """mongod's debug form of a match expression (its tree, four spaces a level, a line each)."""
    pad = "    " * depth
    if isinstance(node, (Not, Nor, And, Or)):
        name = {Not: "$not", Nor: "$nor", And: "$and", Or: "$or"}[type(node)]
        children = (node.child,) if isinstance(node, Not) else node.children
        return pad + name + "\n" + "".join(_debug(child, depth + 1) for child in children)
    path = getattr(node, "path", "")
    if isinstance(node, Cmp):
        return f"{pad}{path} {node.op} {bson_repr(node.value)}\n"
    if isinstance(node, Exists):
        return f"{pad}{path} exists\n"
    if isinstance(node, Regex):
        return f"{pad}{path} regex /{node.pattern}/{node.options}\n"
    if isinstance(node, Mod):
        return f"{pad}{path} mod {node.divisor} % x == {node.remainder}\n"
    if isinstance(node, Size):
        return f"{pad}{path} $size : {node.size}\n"
    if isinstance(node, ElemMatch):
        return f"{pad}{path} $elemMatch{' (value)' if node.value_form else ''}\n" + _debug(node.child, depth + 1)
    if isinstance(node, All):
        return f"{pad}{path} $all\n"
    if isinstance(node, Bits):
        return f"{pad}{path} {node.op}\n"
    if isinstance(node, JsonSchema):
        return f"{pad}$jsonSchema\n"
    if isinstance(node, AlwaysFalse):
        return f"{pad}$alwaysFalse\n"
    return f"{pad}{type(node).__name__}\n"


def filter_signature(raw: Mapping[str, Any]) -> Any:
    """A hashable form of a (valid) partial filter; two filters mongod deems equivalent have equal forms."""
    return _signature(parse_filter(raw))


def _flatten(node: Node) -> list[Node]:
    kind = type(node)
    out: list[Node] = []
    for child in node.children:  # type: ignore[attr-defined]
        out.extend(_flatten(child) if type(child) is kind else [child])
    return out


def _signature(node: Node) -> Any:
    if isinstance(node, (And, Or)):
        children = _flatten(node)
        if len(children) == 1:
            return _signature(children[0])
        parts = [(_sort_key(child), _signature(child)) for child in children]
        parts.sort(key=lambda part: part[0])  # stable: equal kinds keep their order, as mongod's sort
        return (type(node).__name__, tuple(sig for _, sig in parts))
    if isinstance(node, In) and len(node.values) == 1 and not node.regexes:
        return ("Cmp", "$eq", node.path, sort_key(node.values[0]))  # mongod rewrites a one-value $in
    if isinstance(node, (Cmp, InternalExprCmp)):
        return (type(node).__name__, node.op, node.path, sort_key(node.value))
    if isinstance(node, In):
        return ("In", node.path, tuple(sorted({sort_key(v) for v in node.values})),
                tuple(sorted((r.pattern, r.options) for r in node.regexes)))
    if isinstance(node, Exists):
        return ("Exists", node.path)
    if isinstance(node, Type):
        return ("Type", node.path, tuple(sorted(map(str, node.types))))
    if isinstance(node, Geo):
        return ("Geo", node.op, node.path, repr(node.region))
    return (type(node).__name__, repr(node))


def _sort_key(node: Node) -> tuple:
    """mongod's matchExpressionComparator: the kind, then the path, then the number of children."""
    if isinstance(node, (And, Or)):
        return (type(node).__name__, "", len(_flatten(node)))
    if isinstance(node, In) and len(node.values) == 1 and not node.regexes:
        return ("Cmp$eq", node.path, 0)
    kind = type(node).__name__ + (getattr(node, "op", "") if isinstance(node, (Cmp, InternalExprCmp)) else "")
    return (kind, getattr(node, "path", ""), 0)
