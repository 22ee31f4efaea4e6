"""Compile a filter AST into a fast predicate ``fn(doc) -> bool``.

Each path node becomes a *value predicate* ``vp(value) -> bool`` (one value, no traversal) wrapped
by a *path accessor* that applies it with mongod's semantics:

- the values are those of ``paths.get_path_values`` (implicit traversal of non-leaf arrays);
- for most operators a leaf array matches if the array itself or any of its elements matches
  ({a: 1} matches {a: [1, 2]}); ``$size`` and ``$elemMatch`` look at the array itself only; so does
  every operator at an array reached through an array position ({"a.0": 1} misses {a: [[1]]}, as
  mongod's iterator yields that array whole: ``paths.PositionalLeaf``);
- a top-level field (no dot) skips the traversal: ``doc.get(name)`` then the same leaf rule.

Inside a value-form ``$elemMatch`` the path is ``""``: the predicate sees the element as it is.
Value predicates live in ``match_leaf``. Speed: conjunctions run cheap/selective children first;
a numeric or date range on one top-level field is fused into one closure; dotted paths through
plain sub-documents avoid the general traversal.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

from bson.int64 import Int64
from bson.min_key import MinKey

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import compare_for
from tidemark.query.expressions import compile_expression, free_variables, truthy
from tidemark.query.jsonschema import compile_schema, validate
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
    Geo,
    GeoNear,
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
    Text,
    Type,
)
from tidemark.query.match_leaf import (
    bits_predicate,
    cmp_predicate,
    in_predicate,
    mod_predicate,
    regex_predicate,
    type_predicate,
)
from tidemark.query.paths import PositionalLeaf, get_path_values, is_numeric_component, split_path
from tidemark.query.values import (
    MISSING,
)

Predicate = Callable[[Any], bool]

__all__ = ["compile_node", "Predicate"]


def compile_node(node: Node, *, variables: Mapping | None = None, collation: Any = None) -> Predicate:
    """A predicate over documents for ``node`` (see module docstring for semantics).

    ``collation`` (``collation.Collation``, None = simple) orders strings in comparisons, ``$in``,
    ``$all`` and ``$expr``; regexes, ``$type`` and ``$jsonSchema`` ignore it, as in mongod."""
    kind = type(node)
    if kind is Cmp or kind is In or kind is Regex or kind is Type or kind is Mod or kind is Bits:
        return _value_leaf(node, collation)  # (a leaf reads no variable: no compiler to make)
    return _Compiler(variables, collation).compile(node)


def _value_predicate(node: Node, collation: Any) -> Predicate:
    if type(node) is Cmp:
        return cmp_predicate(node.op, node.value, collation)
    if type(node) is In:
        return in_predicate(node.values, node.regexes, collation)
    if type(node) is Regex:
        return regex_predicate(node.compiled, node.pattern, node.options)
    if type(node) is Type:
        return type_predicate(node.types)
    if type(node) is Mod:
        return mod_predicate(node.divisor, node.remainder)
    if type(node) is Bits:
        return bits_predicate(node.op, node.mask)
    if type(node) is All:  # only reached inside a value-form $elemMatch, where the element is the value
        return _all_of(_all_member_predicates(node, collation))
    raise TypeError(f"not a value node: {node!r}")


def _value_leaf(node: Any, collation: Any) -> Predicate:
    """The predicate of a value node on a path (``Cmp``, ``In``, ``Regex``, ``Type``, ``Mod``, ``Bits``)."""
    general = _on_path(node.path, _value_predicate(node, collation), expand=True)
    if type(node) is Cmp and (collation is None or type(node.value) is not str):
        return _fast_top_level_cmp(node, general) or general
    return general


class _Compiler:
    def __init__(self, variables: Mapping | None, collation: Any = None):
        self.variables = dict(variables or {})
        self.collation = collation

    def compile(self, node: Node) -> Predicate:
        if type(node) is And:
            return _all_of(self._and_children(node.children))
        if type(node) is Or:
            return _any_of([self.compile(c) for c in node.children])
        if type(node) is Nor:
            inner = _any_of([self.compile(c) for c in node.children])
            return lambda doc: not inner(doc)
        if type(node) is Not:
            inner = self.compile(node.child)
            return lambda doc: not inner(doc)
        if type(node) is AlwaysTrue:
            return lambda doc: True
        if type(node) is AlwaysFalse:
            return lambda doc: False
        if type(node) is Expr:
            return self._expr(node)
        if type(node) is JsonSchema:
            compiled = compile_schema(node.schema)
            return lambda doc: validate(compiled, doc)
        if type(node) is Exists:
            return _exists(node.path)
        if type(node) is Size:
            size = node.size
            return _on_path(node.path, lambda v: type(v) is list and len(v) == size, expand=False)
        if type(node) is ElemMatch:
            return self._elem_match(node)
        if type(node) is Geo:
            region, op = node.region, node.op
            return _on_path(node.path, lambda v: region.match_value(v, op), expand=False)
        if type(node) is GeoNear:
            near = node.near

            def in_range(v: Any) -> bool:
                return near.kept((v,)) is not None

            return _on_path(node.path, in_range, expand=False)
        if type(node) is Text:
            return lambda doc: True
        if type(node) is InternalExprCmp:
            return _internal_expr_predicate(node, self.collation)
        if type(node) is All:  # each member may be matched by a different element: a conjunction of paths
            return _all_of([_on_path(node.path, p, expand=True)
                            for p in _all_member_predicates(node, self.collation)])
        # what is left is a value node on a path (_value_predicate refuses anything else)
        return _value_leaf(node, self.collation)

    def _compile_each(self, nodes: list[Cmp]) -> list[Predicate]:
        return [self.compile(n) for n in nodes]

    def _and_children(self, children: tuple[Node, ...]) -> list[Predicate]:
        # Conjunction order does not change the result, so cheap/selective checks go first, and a
        # numeric range on one top-level field ({a: {$gte: x, $lt: y}}) becomes one closure.
        ordered = sorted(children, key=_cost)
        ranges: dict[str, list[Cmp]] = {}
        for c in ordered:
            if _fusable_range(c):
                ranges.setdefault(c.path, []).append(c)
        preds: list[Predicate] = []
        fused: set[str] = set()
        for c in ordered:
            if not _fusable_range(c):
                preds.append(self.compile(c))
                continue
            group = ranges.get(c.path)
            if (
                group
                and len(group) == 2
                and {g.op[:3] for g in group} == {"$gt", "$lt"}
                and _range_class(group[0].value) == _range_class(group[1].value)
            ):
                if c.path not in fused:
                    fused.add(c.path)
                    preds.append(_fused_range(c.path, group, functools.partial(self._compile_each, group)))
                continue
            preds.append(self.compile(c))
        return preds

    def _expr(self, node: Expr) -> Predicate:
        compiled = compile_expression(node.expr, collation=self.collation)
        variables = dict(self.variables)
        # The variables are bound here, once: a user variable they lack would fail 17276 at the first
        # document that reaches it, and mongod refuses it when it parses (VariablesParseState), also
        # for an empty collection or a branch no document takes.
        for name in free_variables(node.expr):
            if name not in variables:
                raise MongoError(17276, f"Use of undefined variable: {name}")
        return lambda doc: truthy(compiled(doc, variables))

    def _elem_match(self, node: ElemMatch) -> Predicate:
        inner = self.compile(node.child)
        if node.value_form:

            def elem_ok(arr: Any) -> bool:
                if type(arr) is not list:
                    return False
                for e in arr:
                    if inner(e):
                        return True
                return False

        else:
            # mongod takes every element that is an object *or an array* (an array element is read as
            # the object of its positions, {"0": ..., "1": ...}); scalars are skipped

            def elem_ok(arr: Any) -> bool:
                if type(arr) is not list:
                    return False
                for e in arr:
                    if isinstance(e, dict):
                        if inner(e):
                            return True
                    elif type(e) is list and inner({str(i): x for i, x in enumerate(e)}):
                        return True
                return False

        return _on_path(node.path, elem_ok, expand=False)


# One specialised closure per (operator, value class) for {field: {$op: number|string}} on a
# top-level field: a scalar of the same class is compared inline; anything else (arrays, other
# types, missing) takes the general predicate. Built once at import from a fixed template.
_FAST_TEMPLATE = """
def make(name, x, general, MISSING, Int64):
    def fast_cmp(doc):
        v = doc.get(name, MISSING)
        t = type(v)
        if {check}:
            return v {op} x
        return general(doc)
    return fast_cmp
"""
_FAST_CHECKS = {"number": "t is float or t is int or t is Int64", "string": "t is str"}
_FAST_OPS = {"$eq": "==", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_FAST_FACTORIES: dict[tuple[str, str], Callable] = {}
for _cls, _check in _FAST_CHECKS.items():
    for _op, _sym in _FAST_OPS.items():
        _ns: dict = {}
        exec(_FAST_TEMPLATE.format(check=_check, op=_sym), _ns)  # noqa: S102 (fixed template)
        _FAST_FACTORIES[(_op, _cls)] = _ns["make"]


def _fast_top_level_cmp(node: Cmp, general: Predicate) -> Predicate | None:
    if "." in node.path or node.path == VALUE_PATH:
        return None
    x = node.value
    t = type(x)
    if t is str:
        cls = "string"
    elif (t is int or t is Int64 or t is float) and x == x:
        cls = "number"
    else:
        return None
    return _FAST_FACTORIES[(node.op, cls)](node.path, x, general, MISSING, Int64)


def _cost(node: Node) -> int:
    t = type(node)
    if type(node) is Cmp:
        return 0 if node.op == "$eq" else 2
    if t is In or t is Exists:
        return 1
    if t is Expr or t is JsonSchema:
        return 5
    return 3


def _fusable_range(node: Node) -> TypeGuard[Cmp]:
    return (
        type(node) is Cmp
        and node.op in ("$gt", "$gte", "$lt", "$lte")
        and "." not in node.path
        and node.path != VALUE_PATH
        and _range_class(node.value) is not None
        and node.value == node.value
    )


def _range_class(v: Any) -> str | None:
    # Values whose Python ordering is BSON order within their bracket (fusable range bounds).
    t = type(v)
    if t is int or t is float or t is Int64:
        return "number"
    if t is _dt.datetime and v.tzinfo is None:
        return "date"
    return None


def _fused_range(path: str, group: list[Cmp], make_slow: Callable[[], list[Predicate]]) -> Predicate:
    """One closure for a number or date range on a top-level field; the two comparisons' own
    predicates (``make_slow``: for arrays and other types) are compiled when a document first needs
    them, most reads of a time window never do."""
    lo = next(g for g in group if g.op in ("$gt", "$gte"))
    hi = next(g for g in group if g.op in ("$lt", "$lte"))
    lo_v, hi_v = lo.value, hi.value
    lo_strict, hi_strict = lo.op == "$gt", hi.op == "$lt"
    name = path
    slow: list[Predicate] | None = None

    def both(doc: Any) -> bool:
        nonlocal slow
        if slow is None:
            slow = make_slow()
        p0, p1 = slow
        return p0(doc) and p1(doc)

    if lo_strict and hi_strict:

        def inside(v: Any) -> bool:
            return lo_v < v < hi_v
    elif lo_strict:

        def inside(v: Any) -> bool:
            return lo_v < v <= hi_v
    elif hi_strict:

        def inside(v: Any) -> bool:
            return lo_v <= v < hi_v
    else:

        def inside(v: Any) -> bool:
            return lo_v <= v <= hi_v

    if _range_class(lo_v) == "date":

        def date_range_pred(doc: Any) -> bool:
            v = doc.get(name, MISSING)
            if type(v) is _dt.datetime and v.tzinfo is None:
                return inside(v)  # a scalar: both bounds apply to the same value
            return both(doc)  # arrays etc.: each bound may be met by a different element

        return date_range_pred

    def range_pred(doc: Any) -> bool:
        v = doc.get(name, MISSING)
        t = type(v)
        if t is float or t is int or t is Int64:
            return inside(v)  # a scalar: both bounds apply to the same value
        return both(doc)  # arrays etc.: each bound may be met by a different element

    return range_pred


def _all_member_predicates(node: All, collation: Any = None) -> list[Predicate]:
    return [
        regex_predicate(v.compiled, v.pattern, v.options) if type(v) is Regex else cmp_predicate("$eq", v, collation)
        for v in node.values
    ]


# --- combinators --------------------------------------------------------------------------------
def _all_of(preds: list[Predicate]) -> Predicate:
    if not preds:
        return lambda doc: True
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        p0, p1 = preds
        return lambda doc: p0(doc) and p1(doc)
    if len(preds) == 3:
        p0, p1, p2 = preds
        return lambda doc: p0(doc) and p1(doc) and p2(doc)
    ps = tuple(preds)
    return lambda doc: all(p(doc) for p in ps)


def _any_of(preds: list[Predicate]) -> Predicate:
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        p0, p1 = preds
        return lambda doc: p0(doc) or p1(doc)
    ps = tuple(preds)
    return lambda doc: any(p(doc) for p in ps)


_INTERNAL_EXPR_TESTS: dict[str, Callable[[int], bool]] = {
    "$_internalExprEq": lambda c: c == 0, "$_internalExprGt": lambda c: c > 0,
    "$_internalExprGte": lambda c: c >= 0, "$_internalExprLt": lambda c: c < 0,
    "$_internalExprLte": lambda c: c <= 0}


def _internal_expr_predicate(node: InternalExprCmp, collation: Any) -> Predicate:
    """mongod's ``InternalExprComparisonMatchExpression``: the value at the path compared with
    ``node.value`` in BSON order across types (strings under ``collation``); an array anywhere along
    the path matches (mongod leaves such documents to the ``$expr`` it stands for); a missing value
    sorts with EOO, after MinKey and before every other value."""
    compare, rhs, test = compare_for(collation), node.value, _INTERNAL_EXPR_TESTS[node.op]
    missing = 1 if isinstance(rhs, MinKey) else -1
    parts = split_path(node.path)

    def predicate(doc: Any) -> bool:
        value = doc
        for part in parts:
            if type(value) is list:
                return True
            if not isinstance(value, Mapping):
                return test(missing)
            value = value.get(part, MISSING)
            if value is MISSING:
                return test(missing)
        return True if type(value) is list else test(compare(value, rhs))

    return predicate


def _on_path(path: str, vp: Predicate, *, expand: bool) -> Predicate:
    """Apply a value predicate at ``path`` with mongod's traversal and leaf-array rule."""
    if path == VALUE_PATH:
        return vp
    if "." not in path:
        name = path
        if expand:

            def top_level(doc: Any) -> bool:
                v = doc.get(name, MISSING)
                if vp(v):
                    return True
                if type(v) is list:
                    for e in v:
                        if vp(e):
                            return True
                return False

            return top_level

        return lambda doc: vp(doc.get(name, MISSING))

    parts = split_path(path)
    positional = False
    for part in parts:  # (a loop: a generator under any() is a call per part)
        if is_numeric_component(part):
            positional = True
            break
    _THROUGH_ARRAY = _through_array_marker

    def walk(doc: Any) -> Any:
        # Plain documents all the way down (the common case): the single leaf value, or
        # _THROUGH_ARRAY when a non-leaf array needs mongod's implicit traversal.
        cur = doc
        for part in parts:
            t = type(cur)
            if t is dict:
                cur = cur.get(part, MISSING)
            elif t is list:
                return _THROUGH_ARRAY
            else:
                return MISSING
        return cur

    if expand:

        def dotted(doc: Any) -> bool:
            # (walk's loop inline: this runs per document, and a call per document is its cost)
            v = doc
            for part in parts:
                t = type(v)
                if t is dict:
                    v = v.get(part, MISSING)
                elif t is list:
                    v = _THROUGH_ARRAY
                    break
                else:
                    v = MISSING
                    break
            values: Sequence[Any]
            if v is _THROUGH_ARRAY:
                # (only a numeric component can reach an array by position: PositionalLeaf, itself only)
                values = get_path_values(doc, path, positional=positional)
            else:
                values = (v,)
            for v in values:
                if type(v) is PositionalLeaf:
                    if vp(v.value):
                        return True
                    continue
                if vp(v):
                    return True
                if type(v) is list:
                    for e in v:
                        if vp(e):
                            return True
            return False

        return dotted

    def dotted_no_expand(doc: Any) -> bool:
        v = walk(doc)
        if v is not _THROUGH_ARRAY:
            return vp(v)
        for v in get_path_values(doc, path):
            if vp(v):
                return True
        return False

    def positional_no_expand(doc: Any) -> bool:
        v = walk(doc)
        if v is not _THROUGH_ARRAY:
            return vp(v)
        for v in get_path_values(doc, path, positional=True):
            if vp(v.value if type(v) is PositionalLeaf else v):
                return True
        return False

    return positional_no_expand if positional else dotted_no_expand


_through_array_marker = object()


def _exists(path: str) -> Predicate:
    if path == VALUE_PATH:
        return lambda v: v is not MISSING
    if "." not in path:
        name = path
        return lambda doc: name in doc
    return lambda doc: any(v is not MISSING for v in get_path_values(doc, path))
