"""Filters: ``parse_filter`` (document -> AST) and ``compile_node`` (AST -> predicate).

The AST lives in ``match_ast`` (documented in README.md), parsing in ``match_parse``, compiling in
``match_compile``. Callers keep the compiled callable; nothing is cached here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from server.query.match_ast import (
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
from server.query.match_compile import compile_node
from server.query.match_parse import is_operator_document, parse_filter, parse_value_condition

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
                   collation: Any = None) -> Callable[[dict], bool]:
    """Parse and compile ``filter`` into ``fn(doc) -> bool`` (raises MongoError when invalid);
    ``collation``: a ``collation.Collation`` or None (simple)."""
    return compile_node(parse_filter(filter), variables=variables, collation=collation)


def compile_value_predicate(ops: Mapping, collation: Any = None) -> Callable[[Any], bool]:
    """``fn(value) -> bool`` for an operator document applied to ONE value, without array
    expansion (mongod's matchesSingleElement; used by $pull and array-filter style conditions)."""
    return compile_node(parse_value_condition(ops), collation=collation)


def filter_fields(node: Node) -> set[str]:
    """The dotted paths a filter reads at document level.

    ``$elemMatch`` contributes its own path (not the paths inside it); ``$expr`` contributes the
    ``$field`` paths it names; ``$jsonSchema`` its top-level ``properties`` and ``required``.
    """
    out: set[str] = set()
    _collect_fields(node, out)
    return out


def _collect_fields(node: Node, out: set[str]) -> None:
    if isinstance(node, (And, Or, Nor)):
        for child in node.children:
            _collect_fields(child, out)
    elif isinstance(node, Not):
        _collect_fields(node.child, out)
    elif isinstance(node, Expr):
        _expr_fields(node.expr, out)
    elif isinstance(node, JsonSchema):
        out.update(node.schema.get("properties", {}) or {})
        out.update(node.schema.get("required", []) or [])
    elif isinstance(node, (AlwaysTrue, AlwaysFalse)):
        return
    else:
        path = getattr(node, "path", "")
        if path:
            out.add(path)


def _expr_fields(expr: Any, out: set[str]) -> None:
    if isinstance(expr, str):
        if expr.startswith("$") and not expr.startswith("$$"):
            out.add(expr[1:])
    elif isinstance(expr, Mapping):
        for v in expr.values():
            _expr_fields(v, out)
    elif isinstance(expr, list):
        for v in expr:
            _expr_fields(v, out)
