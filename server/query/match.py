"""Filters: ``parse_filter`` (document -> AST) and ``compile_node`` (AST -> predicate).

The AST lives in ``match_ast`` (documented in README.md), parsing in ``match_parse``, compiling in
``match_compile``. Callers keep the compiled callable; nothing is cached here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tidemark.query.expressions import expression_fields
from tidemark.query.match_ast import (
    VALUE_PATH,
    All,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Bits,
    Cmp,
    ElemMatch,
    Exists,
    Expr,
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
from tidemark.query.match_compile import compile_node
from tidemark.query.match_parse import is_operator_document, parse_filter, parse_value_condition

__all__ = [
    "parse_filter",
    "compile_node",
    "compile_filter",
    "compile_value_predicate",
    "filter_fields",
    "is_operator_document",
    "Node",
    "And",
    "Or",
    "Nor",
    "Not",
    "Cmp",
    "In",
    "Exists",
    "Type",
    "Regex",
    "ElemMatch",
    "Size",
    "All",
    "Mod",
    "Bits",
    "Expr",
    "JsonSchema",
    "AlwaysTrue",
    "AlwaysFalse",
]


def compile_filter(filter: Mapping | None, *, variables: Mapping | None = None,
                   collation: Any = None, no_where: bool = False) -> Callable[[dict], bool]:
    """Parse and compile ``filter`` into ``fn(doc) -> bool`` (raises MongoError when invalid);
    ``collation``: a ``collation.Collation`` or None (simple); ``no_where``: ``parse_filter``'s (an
    aggregation's ``$match``: ``$where`` refused, without a ``where_not_allowed()`` block's calls)."""
    return compile_node(parse_filter(filter, no_where=no_where), variables=variables, collation=collation)


def compile_value_predicate(ops: Mapping, collation: Any = None) -> Callable[[Any], bool]:
    """``fn(value) -> bool`` for an operator document applied to ONE value, without array
    expansion (mongod's matchesSingleElement; used by $pull and array-filter style conditions)."""
    return compile_node(parse_value_condition(ops), collation=collation)


def filter_fields(node: Node) -> set[str] | None:
    """The dotted paths a filter reads at document level, or None when it may read any field.

    ``$elemMatch`` contributes its own path (not the paths inside it); ``$expr`` contributes the
    ``$field`` paths it names, or the whole document when it names fields without a ``$path``
    (``$getField`` without ``input``, ``$$CURRENT``/``$$ROOT``: ``expressions.expression_fields``
    decides); ``$jsonSchema`` its top-level ``properties`` and ``required``, or the whole document
    when another keyword (``additionalProperties``, ``minProperties``, ``patternProperties``, ...)
    looks at every field. Callers that cannot prove which fields a filter reads read them all.
    """
    out: set[str] = set()
    return out if _collect_fields(node, out) else None


# $jsonSchema keywords at the top level that read no field beyond those named in properties/required.
_SCHEMA_NAMED_FIELDS_ONLY = frozenset({"properties", "required", "bsonType", "type", "title", "description"})


# The nodes that are not a comparison of one path (no subclasses: matched by type).
_NOT_LEAVES = frozenset({And, Or, Nor, Not, Expr, JsonSchema, AlwaysTrue, AlwaysFalse})


def _collect_fields(node: Node, out: set[str]) -> bool:
    # (a leaf first, by one set look-up, and loops: every time-series read's planning walks its filter here)
    t = type(node)
    if t not in _NOT_LEAVES:
        path = getattr(node, "path", VALUE_PATH)
        if path != VALUE_PATH:
            out.add(path)
        return True
    if t is And or t is Or or t is Nor:
        for child in node.children:  # type: ignore[attr-defined]
            if not _collect_fields(child, out):
                return False
        return True
    if isinstance(node, Not):
        return _collect_fields(node.child, out)
    if isinstance(node, Expr):
        if expression_fields(node.expr) is None:
            return False
        _expr_fields(node.expr, out)
        return True
    if isinstance(node, JsonSchema):
        if not set(node.schema) <= _SCHEMA_NAMED_FIELDS_ONLY:
            return False
        out.update(node.schema.get("properties", {}) or {})
        out.update(node.schema.get("required", []) or [])
        return True
    return True  # AlwaysTrue, AlwaysFalse


def _expr_fields(expr: Any, out: set[str]) -> None:
    if type(expr) is str:
        if expr.startswith("$") and not expr.startswith("$$"):
            out.add(expr[1:])
        elif expr.startswith(("$$CURRENT.", "$$ROOT.")):  # the document's own fields too
            out.add(expr.split(".", 1)[1])
    elif isinstance(expr, Mapping):
        for v in expr.values():
            _expr_fields(v, out)
    elif isinstance(expr, list):
        for v in expr:
            _expr_fields(v, out)
