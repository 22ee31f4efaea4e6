"""Which filters a partial index may have (pure): mongod 7.0 takes equality, ``$gt``/``$gte``/``$lt``/
``$lte``, ``$exists: true``, ``$type``, ``$in``, geo predicates, and ``$and``/``$or`` of them at any
depth; anything else (every negation — ``$ne``, ``$nin``, ``$not``, ``$nor``, ``$exists: false`` —,
``$regex``, ``$mod``, ``$size``, ``$all``, ``$elemMatch``, bit tests, ``$jsonSchema``) is 67
CannotCreateIndex "Expression not supported in partial index: <the expression>", ``$expr`` 224
QueryFeatureNotAllowed and ``$where`` 2 BadValue ("... is not allowed in this context"). An index
mongod refuses must not be built here: an application written against Tidemark would not start
against mongod."""

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
from tidemark.query.match_parse import parse_filter, where_not_allowed
from tidemark.query.value_repr import bson_repr

__all__ = ["check_partial_filter"]

_ALLOWED_LEAVES = (Cmp, In, Exists, Type, Geo, AlwaysTrue)


def check_partial_filter(raw: Mapping[str, Any]) -> None:
    """Raise mongod's error when ``raw`` (a ``partialFilterExpression``, already known to be an
    object) is not one a partial index may have."""
    _refuse_contexts(raw)
    with where_not_allowed():
        node = parse_filter(raw)
    _check(node)


def _refuse_contexts(value: Any) -> None:
    """``$expr`` anywhere in the filter: 224 (``$where`` is refused by the parse itself: 2)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if key == "$expr":
                raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$expr is not allowed in this context")
            _refuse_contexts(sub)
    elif isinstance(value, list):
        for sub in value:
            _refuse_contexts(sub)


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
