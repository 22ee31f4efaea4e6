"""Why a document fails a collection validator: the ``errInfo`` of 121 DocumentValidationFailure, as
mongod 5.0+ generates it (doc_validation_error.cpp).

``validation_error_info(spec, doc, collation=...)`` -> ``{failingDocumentId, details}``. It is run only
once a document has failed (never on the write path of a passing document). The validator is read as
mongod's parser reads it: the clauses of a filter object are one implicit ``$and`` (a single clause is
itself); each operator of ``{path: {$op: ...}}`` is a clause; ``$not``/``$nor`` invert their children
("comparison succeeded" where the normal context says "comparison failed"); ``$ne``, ``$nin`` and
``$exists: false`` are the inverted ``$eq``, ``$in`` and ``$exists`` under their own names. Whether a
clause matches is decided by the one matcher (``compile_filter`` of that clause), and ``$jsonSchema``
explains itself (``jsonschema.explain_schema``).

Limits (mongod's): at most ``MAX_CONSIDERED_VALUES`` considered values (``consideredValuesTruncated``);
an error past 12 MiB is generated again without ``specifiedAs``/``consideredValue(s)`` (``truncated:
true``), and past it still only ``{failingDocumentId, note: "detailed error was too large"}``; an error
nested deeper than the BSON depth limit less 10 is ``{reason: "generated error was too deeply nested",
truncated: true}``; a failure while explaining is ``note: "failed to generate document validation error"``
(with the error's code when it is a MongoError): the write still answers 121.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import MongoError
from tidemark.query.jsonschema import compile_schema, explain_schema
from tidemark.query.match import compile_filter, is_operator_document
from tidemark.query.match_parse import true_value
from tidemark.query.match_regex import is_regex
from tidemark.query.paths import get_path_values
from tidemark.query.validation_detail import (
    MAX_CONSIDERED_VALUES,
    DetailContext,
    considered,
    entry,
    type_names,
)
from tidemark.query.values import DBREF_FIELDS, MISSING, bson_type_number

__all__ = ["validation_error_info", "MAX_ERROR_SIZE", "MAX_ERROR_DEPTH"]

MAX_ERROR_SIZE = 12 * 1024 * 1024  # kDefaultMaxDocValidationErrorSize
MAX_ERROR_DEPTH = 200 - 10  # BSON's maximum nesting depth less mongod's offset (computeMaxAllowed...Depth)

_NUMBERS = frozenset({1, 16, 18, 19})
_COMPARISONS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_BITS = frozenset({"$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear"})
_GEO = frozenset({"$geoWithin", "$geoIntersects", "$within"})

# leaf operators: (reason, inverted reason, expected BSON types or None, whether leaf arrays are expanded)
_LEAVES: dict[str, tuple[str, str, frozenset[int] | None, bool]] = {
    **{op: ("comparison failed", "comparison succeeded", None, True) for op in _COMPARISONS},
    "$in": ("no matching value found in array", "matching value found in array", None, True),
    "$mod": ("$mod did not evaluate to expected remainder", "$mod did evaluate to expected remainder", _NUMBERS, True),
    "$regex": ("regular expression did not match", "regular expression did match", frozenset({2, 11, 14}), True),
    "$size": ("array length was not equal to given size", "array length was equal to given size", frozenset({4}),
              False),
    "$elemMatch": ("array did not satisfy the child predicate", "array did satisfy the child predicate",
                   frozenset({4}), False),
    **{op: ("bitwise operator failed to match", "bitwise operator matched successfully", _NUMBERS | {5}, True)
       for op in _BITS},
    "$geoWithin": ("none of considered geometries was contained within the expression\u2019s geometry",
                   "at least one of considered geometries was contained within the expression\u2019s geometry",
                   frozenset({3, 4}), True),
    "$geoIntersects": ("none of considered geometries intersected the expression\u2019s geometry",
                       "at least one of considered geometries intersected the expression\u2019s geometry",
                       frozenset({3, 4}), True),
}
# the operators that parse as the inversion of another (mongod: a NOT under the operator's own name)
_INVERTED = {"$ne": "$eq", "$nin": "$in"}


class _Gen:
    """One generation: the document, the collation clauses match under, compiled clauses."""

    def __init__(self, doc: dict, collation: Any, ctx: DetailContext):
        self.doc = doc
        self.collation = collation
        self.ctx = ctx
        self._compiled: dict[int, Callable[[Any], bool]] = {}

    def matches(self, node: _Node) -> bool:
        fn = self._compiled.get(id(node))
        if fn is None:
            fn = self._compiled[id(node)] = compile_filter(dict(node.filter), collation=self.collation)
        return bool(fn(self.doc))

    def contributes(self, node: _Node, inverted: bool) -> bool:
        """mongod's kErrorNeedChildrenInfo: a child explains itself when its result is the failing one
        for its context (matched where inverted, failed where not); one that throws explains itself."""
        try:
            return self.matches(node) == inverted
        except MongoError:
            return True


class _Node:
    """A validator clause: ``filter`` is the clause as a filter of its own (what decides its match)."""

    __slots__ = ("filter",)

    def __init__(self, filter: Mapping):
        self.filter = filter

    def explain(self, g: _Gen, inverted: bool) -> dict | None:
        raise NotImplementedError


class _Logical(_Node):
    """``$and`` (also an implicit one), ``$or``, ``$nor``: the clauses that decided the result, by index."""

    __slots__ = ("op", "children")

    def __init__(self, filter: Mapping, op: str, children: list[_Node]):
        super().__init__(filter)
        self.op = op
        self.children = children

    def explain(self, g: _Gen, inverted: bool) -> dict | None:
        child_inverted = not inverted if self.op == "$nor" else inverted
        # which children explain: those that decided the result, where some did not ($and failing, $or
        # matching, $nor failing); every child where all did
        selective = (self.op == "$and" and not inverted) or (self.op == "$or" and inverted) or \
            (self.op == "$nor" and not inverted)
        clauses = []
        for i, child in enumerate(self.children):
            if selective and not g.contributes(child, child_inverted):
                continue
            details = child.explain(g, child_inverted)
            if details is not None:
                clauses.append({"index": i, "details": details})
        satisfied = child_inverted
        return {"operatorName": self.op, "clausesSatisfied" if satisfied else "clausesNotSatisfied": clauses}


class _Not(_Node):
    __slots__ = ("child",)

    def __init__(self, filter: Mapping, child: _Node):
        super().__init__(filter)
        self.child = child

    def explain(self, g: _Gen, inverted: bool) -> dict | None:
        return {"operatorName": "$not", "details": self.child.explain(g, not inverted)}


class _Leaf(_Node):
    """An operator on a path (``$eq`` for a plain value, ``$regex`` for a regex value)."""

    __slots__ = ("path", "op", "arg", "name", "negated")

    def __init__(self, filter: Mapping, path: str, op: str, arg: Any):
        super().__init__(filter)
        self.path = path
        self.name = op
        self.negated = op in _INVERTED or (op == "$exists" and not true_value(arg))
        self.op = _INVERTED.get(op, op)
        self.arg = arg

    def explain(self, g: _Gen, inverted: bool) -> dict | None:
        inverted ^= self.negated
        ctx = g.ctx
        out = entry(self.name, self.filter, ctx)
        op = self.op
        if op == "$exists":
            out["reason"] = "path does exist" if inverted else "path does not exist"
            return out
        if op == "$all":
            if not self.arg:
                out["reason"] = "expression always evaluates to false"
                return out
            values, cut = _values(g.doc, self.path, expand=False)
            if values is None:
                out["reason"] = "field was missing"
            else:
                out["reason"] = ("array did contain all specified values" if inverted
                                 else "array did not contain all specified values")
            considered(out, values, cut, ctx)
            return out
        if op == "$type":
            values, cut = _values(g.doc, self.path, expand=True)
            out["reason"] = "field was missing" if values is None else (
                "type did match" if inverted else "type did not match")
            considered(out, values, cut, ctx)
            type_names(out, "consideredType", values or ())
            return out
        reason, inverted_reason, expected, expand = _LEAVES.get(op, _LEAVES["$eq"])
        values, cut = _values(g.doc, self.path, expand=expand)
        if values is None:
            out["reason"] = "field was missing"
        elif expected is not None and not any(_type_number(v) in expected for v in values):
            out["reason"] = "type did not match"
            type_names(out, "consideredType", values)
            names = sorted(_TYPE_NAMES[t] for t in expected)
            if len(names) == 1:
                out["expectedType"] = names[0]
            else:
                out["expectedTypes"] = names
        else:
            out["reason"] = inverted_reason if inverted else reason
        considered(out, values, cut, ctx)
        return out


class _Expr(_Node):
    __slots__ = ("expr",)

    def __init__(self, filter: Mapping, expr: Any):
        super().__init__(filter)
        self.expr = expr

    def explain(self, g: _Gen, inverted: bool) -> dict | None:
        from tidemark.query.expressions import compile_expression

        out = entry("$expr", self.filter, g.ctx)
        try:
            result = compile_expression(self.expr, collation=g.collation)(g.doc, {})
        except MongoError as exc:
            out["reason"] = "failed to evaluate aggregation expression"
            out["details"] = {"code": exc.code, "codeName": exc.code_name, "errmsg": exc.message}
            return out
        out["reason"] = "expression did match" if inverted else "expression did not match"
        if result is not MISSING:  # (a missing result appends nothing)
            out["expressionResult"] = result
        return out


class _Constant(_Node):
    """``$alwaysTrue`` / ``$alwaysFalse`` (and ``$sampleRate`` 0 or 1, mongod's ``$expr`` of it)."""

    __slots__ = ("name",)

    def __init__(self, filter: Mapping, name: str):
        super().__init__(filter)
        self.name = name

    def explain(self, g: _Gen, inverted: bool) -> dict | None:
        out = entry(self.name, self.filter, g.ctx)
        if self.name == "$sampleRate":
            out["reason"] = "expression did match" if inverted else "expression did not match"
            out["expressionResult"] = inverted
        else:
            out["reason"] = "expression always evaluates to true" if inverted else \
                "expression always evaluates to false"
        return out


class _Schema(_Node):
    __slots__ = ("schema",)

    def __init__(self, filter: Mapping, schema: Mapping):
        super().__init__(filter)
        self.schema = schema

    def explain(self, g: _Gen, inverted: bool) -> dict | None:
        if inverted:  # (mongod does not say why a schema matched)
            return {"operatorName": "$jsonSchema", "reason": "schema matched"}
        return explain_schema(compile_schema(self.schema), self.schema, g.doc, g.ctx)


_TYPE_NAMES = {1: "double", 2: "string", 3: "object", 4: "array", 5: "binData", 11: "regex", 14: "symbol",
               16: "int", 18: "long", 19: "decimal"}


def _type_number(v: Any) -> int:
    try:
        return bson_type_number(v)
    except TypeError:
        return 0


def _values(doc: dict, path: str, *, expand: bool) -> tuple[list | None, bool]:
    """mongod's createValuesArray: the values the path reaches (leaf arrays by their elements when
    ``expand``), up to the first missing one and at most MAX_CONSIDERED_VALUES (``cut``: more were
    there); None when the path does not exist."""
    reached = get_path_values(doc, path, expand_arrays=expand)
    values: list = []
    cut = False
    for v in reached:
        if v is MISSING:
            break
        if len(values) == MAX_CONSIDERED_VALUES:
            cut = True
            break
        values.append(v)
    if not values and all(v is MISSING for v in get_path_values(doc, path)):
        return None, False
    return values, cut


# --------------------------------------------------------------------------------------------------
# reading the validator as mongod's parser does
# --------------------------------------------------------------------------------------------------

def _parse(spec: Mapping) -> _Node | None:
    """A filter object: its clauses, one implicit ``$and`` of several (None: no clause)."""
    clauses: list[_Node] = []
    for key, value in spec.items():
        if key.startswith("$") and key not in DBREF_FIELDS:
            node = _parse_top(key, value)
            if node is not None:
                clauses.append(node)
        elif is_operator_document(value):
            clauses.extend(_parse_operators(key, value))
        elif is_regex(value):
            clauses.append(_Leaf({key: value}, key, "$regex", value))
        else:
            clauses.append(_Leaf({key: value}, key, "$eq", value))
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else _Logical(spec, "$and", clauses)


def _parse_top(key: str, value: Any) -> _Node | None:
    if key in ("$and", "$or", "$nor"):
        # (an explicit $and/$or of one clause stays itself; an empty entry is an empty $and)
        children = [_parse(entry_) or _Logical(entry_, "$and", []) for entry_ in value]
        return _Logical({key: value}, key, children)
    if key == "$comment":
        return None
    if key == "$expr":
        return _Expr({key: value}, value)
    if key == "$jsonSchema":
        return _Schema({key: value}, value)
    if key in ("$alwaysTrue", "$alwaysFalse", "$sampleRate"):
        return _Constant({key: value}, key)
    return _Constant({key: value}, key)  # ($where and $text are refused in validators)


def _parse_operators(path: str, ops: Mapping) -> list[_Node]:
    out: list[_Node] = []
    if "$regex" in ops:
        regex_spec = {k: v for k, v in ops.items() if k in ("$regex", "$options")}
        out.append(_Leaf({path: regex_spec}, path, "$regex", regex_spec))
    for op, arg in ops.items():
        if op in ("$regex", "$options", "$comment"):
            continue
        if op == "$not":
            out.append(_Not({path: {op: arg}}, _parse_not(path, arg)))
        else:
            out.append(_Leaf({path: {op: arg}}, path, "$geoWithin" if op == "$within" else op, arg))
    return out


def _parse_not(path: str, arg: Any) -> _Node:
    if is_regex(arg):
        return _Leaf({path: arg}, path, "$regex", arg)
    children = _parse_operators(path, arg)
    return children[0] if len(children) == 1 else _Logical({path: arg}, "$and", children)


# --------------------------------------------------------------------------------------------------
# the error, with its limits
# --------------------------------------------------------------------------------------------------

def _depth(v: Any) -> int:
    """Nesting levels of documents and arrays (a document alone is 1)."""
    if isinstance(v, Mapping):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


def validation_error_info(spec: Mapping, doc: dict, *, collation: Any = None) -> dict:
    """The ``errInfo`` of a document ``spec`` refuses (mongod's generateError)."""
    failing_id = {"failingDocumentId": doc.get("_id")}
    root = _parse(spec)
    if root is None:  # (an empty validator refuses nothing)
        return {**failing_id, "details": {}}
    for truncate in (False, True):
        try:
            details = root.explain(_Gen(doc, collation, DetailContext(truncate)), False)
        except MongoError as exc:
            return {**failing_id, "note": "failed to generate document validation error",
                    "details": {"code": exc.code, "codeName": exc.code_name, "errmsg": exc.message}}
        except Exception:  # (an explanation must never turn a refusal into a server error)
            return {**failing_id, "note": "failed to generate document validation error"}
        info = {**failing_id, **({"truncated": True} if truncate else {}), "details": details}
        if _depth(info) > MAX_ERROR_DEPTH:
            return {"reason": "generated error was too deeply nested", "truncated": True}
        if len(encode(info)) <= MAX_ERROR_SIZE:
            return info
    return {**failing_id, "note": "detailed error was too large"}
