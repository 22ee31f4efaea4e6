"""Find projections (MongoDB 4.4+ semantics), parsed once and compiled to ``fn(doc) -> dict``.

Modes: an *inclusion* projection keeps only the named paths (plus ``_id`` unless ``_id: 0``);
an *exclusion* projection drops the named paths. Which one is decided by the fields other than
``_id``: ``1``/``true``/expressions/positional ``a.$`` mean inclusion, ``0``/``false`` exclusion;
mixing -> 31253/31254; a path and a path inside it -> 31249/31250. ``$slice``, ``$elemMatch`` and
``{$meta: ...}`` fields decide nothing; a projection of only those and ``_id`` follows mongod's
computeProjectionType (``_default_mode``), where find and aggregation (``aggregation=True``: no
find-only operators) differ for ``$meta``.

Paths go through arrays of documents (``{"a.b": 1}`` on ``{a: [{b: 1, c: 2}, 5]}`` gives
``{a: [{b: 1}]}``; scalars inside the array are dropped by inclusion, kept by exclusion); a find
``$slice`` applies through one level of arrays only (not inside an array of arrays).
Computed fields (aggregation expressions, via ``expressions.compile_expression``) are evaluated on
the original document and appended after the kept fields; a MISSING result omits the field.
Positional ``a.$`` needs ``filter=`` (the find filter): it keeps, of the first array on the path,
the element at the position mongod's matcher records while matching the filter (``_position_fn``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import docmeta
from tidemark.query.expr_base import check_field_name, safe_number_int
from tidemark.query.expressions import OPERATORS, SPECIAL_OPERATORS, compile_expression
from tidemark.query.match import compile_node, parse_filter
from tidemark.query.match_ast import (
    All,
    And,
    Bits,
    Cmp,
    ElemMatch,
    Exists,
    Expr,
    Geo,
    GeoNear,
    In,
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
from tidemark.query.match_parse import where_not_allowed
from tidemark.query.paths import split_path
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import DBREF_FIELDS, MISSING, bson_type_name, is_number

__all__ = ["compile_projection", "projection_is_inclusion", "PROJECTION_OPERATORS"]

# The find-only projection operators (positional ``a.$``, ``$elemMatch``, ``$slice``, ``$meta``).
PROJECTION_OPERATORS = frozenset({"$", "$elemMatch", "$slice", "$meta"})

_INCLUDE = "include"
_EXCLUDE = "exclude"


class _Leaf:
    __slots__ = ("kind", "arg")

    def __init__(self, kind: str, arg: Any = None):
        self.kind = kind  # include | exclude | slice | elemMatch | expr | meta
        self.arg = arg


def _is_positional(path: str) -> bool:
    return path.endswith(".$") or path == "$"


def _flatten(spec: Mapping, prefix: str = "") -> list[tuple[str, Any]]:
    """``{a: {b: 1}}`` -> ``[("a.b", 1)]``; operator objects and literals are leaves."""
    out: list[tuple[str, Any]] = []
    for key, value in spec.items():
        if key == "":
            raise MongoError(40352, "FieldPath cannot be constructed with empty string")
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if _is_positional(path):  # checked before the object is read as an expression or sub-projection
                raise MongoError(31271, "positional projection cannot be used with an expression or sub object")
        if not _is_positional(key):
            _check_field_path(key)
        elif key.endswith(".$") and len(key) > 2:  # (an empty base is the positional rules' 5392900)
            _check_field_path(key[:-2])
        if isinstance(value, Mapping):
            if not value:
                raise MongoError(
                    51270, f"An empty sub-projection is not a valid value. Found empty object at path {path}"
                )
            if is_expression_object(value):
                out.append((path, value))
            else:
                out.extend(_flatten(value, path + "."))
        else:
            out.append((path, value))
    return out


def is_expression_object(value: Mapping) -> bool:
    """Whether a projection's (non-empty) object value is an expression or find operator rather than a
    sub-projection: its first field is $-prefixed, but not one of a DBRef's own fields ($ref, $id, $db:
    FieldPath allows them, so ``{link: {$ref: 0}}`` projects ``link.$ref``: aggregation/exec/dbref.js)."""
    first = next(iter(value))
    return first.startswith("$") and first not in DBREF_FIELDS


def _check_field_path(key: str) -> None:
    """A projection's field name (maybe dotted) as mongod's FieldPath checks it, in its order: 40353 for
    a trailing '.', then per component 15998 empty, 16410 '$'-prefixed, 16411 a NUL (a positional
    ``$`` inside a path is left to the positional rules)."""
    if key.endswith("."):
        raise MongoError(40353, "FieldPath must not end with a '.'.")
    for part in key.split("."):
        if part != "$":
            check_field_name(part)


def _is_truthy_number(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if is_number(v):
        return float(str(v)) != 0
    return None


def _classify(path: str, value: Any, aggregation: bool) -> tuple[str, Any]:
    flag = _is_truthy_number(value)
    if flag is not None:
        return (_INCLUDE if flag else _EXCLUDE), None
    if not isinstance(value, Mapping):
        return "literal", value
    op = next(iter(value))
    if op == "$slice" and not aggregation:
        # mongod's attemptToParseFindSlice: a number or a [skip, positive limit] pair; anything else is
        # read as the $slice *expression* (a computed field), whose own errors are the ones reported
        found = _find_slice(value["$slice"])
        return ("slice", found) if found is not None else ("expr", value)
    if op == "$elemMatch":
        return "elemMatch", value["$elemMatch"]
    if op == "$meta":
        return "meta", value  # computed like an expression, but decides neither inclusion nor exclusion
    if len(value) == 1 and op.startswith("$") and op not in EXPRESSION_NAMES:
        # mongod's projection parser (parseSubObject): a lone $-field that names no expression is
        # no sub-projection either ("$x" is no FieldPath)
        raise MongoError(31325, f"Unknown expression {op}")
    return "expr", value


EXPRESSION_NAMES = frozenset(OPERATORS) | SPECIAL_OPERATORS  # what a lone $-field of a projection may name


def _find_slice(arg: Any) -> tuple[int, int | None] | None:
    """The find ``$slice`` form -> (skip, limit) (negative skip counts from the end; limit None = to
    the end), or None when ``arg`` is not of that form."""
    # mongod reads each number with safeNumberInt: NaN is 0, the infinities and values past the int
    # range are clamped to it (projection_parser.cpp)
    if is_number(arg) and not isinstance(arg, bool):
        n = safe_number_int(arg)
        return (0, n) if n >= 0 else (n, None)
    if isinstance(arg, list) and len(arg) == 2 and all(is_number(x) and not isinstance(x, bool) for x in arg):
        skip, limit = safe_number_int(arg[0]), safe_number_int(arg[1])
        return (skip, limit) if limit > 0 else None
    return None


def _apply_slice(arr: list, skip: int, limit: int | None) -> list:
    if limit is None:  # {$slice: -n}: the last n
        return arr[skip:]
    if skip < 0:
        start = max(len(arr) + skip, 0)
        return arr[start : start + limit]
    return arr[skip : skip + limit]


def projection_is_inclusion(spec: Mapping | None) -> bool:
    """True when ``spec`` is an inclusion find projection (False for exclusion or empty)."""
    if not spec:
        return False
    return _parse(spec)[0]


def projection_stage(spec: Mapping) -> str:
    """The stage name mongod's explain gives a find's projection over fetched documents (planner
    analysis: Projection::isSimple and an inclusion): PROJECTION_SIMPLE for an inclusion of top-level
    fields by flags alone, else PROJECTION_DEFAULT (exclusions, dotted paths, positional, $slice,
    $elemMatch, $meta, expressions). ``spec`` is a valid projection."""
    leaves = _flatten(spec)
    simple = all("." not in path and not _is_positional(path) and _is_truthy_number(value) is not None
                 for path, value in leaves)
    return "PROJECTION_SIMPLE" if simple and projection_is_inclusion(spec) else "PROJECTION_DEFAULT"


def distinct_projection(key: str) -> dict[str, int]:
    """mongod's getDistinctProjection: what a distinct on ``key`` projects from the documents its plan
    reads — ``{_id: 0, <key>: 1}`` (``{_id: 1}`` for ``_id``), a dotted key cut before its first array
    index (``a.b.2`` -> ``a.b``), ``_id`` kept when the key is under it."""
    parts = key.split(".")
    projected = key
    for i, part in enumerate(parts[1:], start=1):
        if part.isdigit() or (part.startswith("+") and part[1:].isdigit()):  # (NumberParser: base 10, >= 0)
            projected = ".".join(parts[:i])
            break
    if parts[0] == "_id":
        return {projected: 1}
    return {"_id": 0, projected: 1}


def keeps_sort_fields(spec: Mapping, sort: Mapping) -> bool:
    """mongod's condition for running a projection beneath a sort (tryPushdownProjectBeneathSort): the
    projection computes nothing (flags only) and keeps every sort field exactly
    (isFieldRetainedExactly: an inclusion names the field or an ancestor, ``_id`` unless excluded; an
    exclusion names neither the field nor an ancestor nor a descendant)."""
    leaves = _flatten(spec)
    if not all(_is_truthy_number(value) is not None and not _is_positional(path) for path, value in leaves):
        return False
    inclusion = projection_is_inclusion(spec)
    named = {path for path, value in leaves if bool(_is_truthy_number(value)) == inclusion}
    if inclusion and "_id" not in {path for path, _ in leaves}:
        named.add("_id")

    def covers(field: str) -> bool:
        return any(field == path or field.startswith(path + ".") for path in named)

    def touches(field: str) -> bool:
        return covers(field) or any(path.startswith(field + ".") for path in named)

    return all(covers(field) if inclusion else not touches(field) for field in sort)


def _default_mode(has_slice: bool, has_elem_match: bool, has_meta: bool, aggregation: bool,
                  id_included: bool) -> bool:
    """mongod's computeProjectionType, for a projection that names only ``_id`` and find-only
    operators: a find $slice makes it an exclusion unless ``_id: 1``; an $elemMatch an inclusion; a
    $meta field an inclusion in aggregate() and, in find, an exclusion unless ``_id: 1``."""
    if has_slice:
        return id_included
    if has_elem_match:
        return True
    if has_meta and aggregation:
        return True
    return id_included


def _parse(spec: Mapping, collation: Any = None, aggregation: bool = False):
    leaves: dict[str, _Leaf] = {}
    under: set[str] = set()  # every proper prefix of a leaf's path (_add_leaf)
    mode: bool | None = None  # True inclusion, False exclusion
    positional: str | None = None
    has_slice = has_elem_match = has_meta = id_included = False
    for path, value in _flatten(spec):
        if _is_positional(path):
            flag = _is_truthy_number(value)
            if flag is None:
                raise MongoError(31308, "positional projection cannot be used with a literal")
            if not flag:  # an exclusion of "a.$": the path itself is no FieldPath
                raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField "
                                        "or $setField.")
            if aggregation:
                raise MongoError(31324, "Cannot use positional projection in aggregation projection")
            base = path[:-2]
            if positional is not None:
                raise MongoError(31276, "Cannot specify more than one positional projection per query.")
            if has_elem_match:
                raise MongoError(31256, "Cannot specify positional operator and $elemMatch.")
            if not base:
                raise MongoError(5392900, f"Projection on field {path} is invalid")
            if "$" in base.split("."):  # ('sub.$id.$' is one positional: $id is a DBRef field name)
                raise MongoError(31287, f"Cannot use positional operator twice: {path}")
            if mode is False:
                raise MongoError(31253, f"Cannot do inclusion on field {path} in exclusion projection")
            mode = True
            positional = base
            _add_leaf(leaves, under, base, _Leaf(_INCLUDE))
            continue
        if "$" in split_path(path):
            raise MongoError(
                ErrorCode.BadValue, f"Positional projection '{path}' must be on the last path component"
            )
        kind, arg = _classify(path, value, aggregation)
        if path == "_id" and kind in (_INCLUDE, _EXCLUDE):
            id_included = kind == _INCLUDE
            _add_leaf(leaves, under, path, _Leaf(kind))
            continue
        if kind in ("meta", "slice", "elemMatch"):  # decide neither inclusion nor exclusion
            if kind == "elemMatch":
                arg = _compile_elem_match(path, arg, positional is not None, collation)
                has_elem_match = True
            has_meta |= kind == "meta"
            has_slice |= kind == "slice"
            _add_leaf(leaves, under, path, _Leaf(kind, arg))
            continue
        if kind in (_INCLUDE, "expr", "literal"):
            if mode is False:
                if kind == "expr":
                    raise MongoError(31252, "Cannot use expression other than $meta in exclusion projection")
                if kind == "literal":
                    raise MongoError(31310, f"Cannot use an expression {path}: {bson_repr(arg)} in an exclusion "
                                            "projection")
                raise MongoError(31253, f"Cannot do inclusion on field {path} in exclusion projection")
            mode = True
            if kind == "literal":  # a constant or "$path" operand (parseOperand), computed like an expression
                kind = "expr"
        elif kind == _EXCLUDE:
            if mode is True:
                raise MongoError(31254, f"Cannot do exclusion on field {path} in inclusion projection")
            mode = False
        _add_leaf(leaves, under, path, _Leaf(kind, arg))
    if mode is None:
        mode = _default_mode(has_slice, has_elem_match, has_meta, aggregation, id_included)
    return mode, leaves, positional


def _compile_elem_match(path: str, arg: Any, after_positional: bool, collation: Any) -> Callable[[dict], bool]:
    """The $elemMatch projection's matcher: ``{path: {$elemMatch: arg}}`` as a filter with no special
    features (mongod's kBanAllSpecialFeatures), run over ``{path: [element]}``; checked in mongod's
    order (31274 object, 31255 after a positional, 31275 top-level field)."""
    if not isinstance(arg, Mapping):
        raise MongoError(31274, f"elemMatch: Invalid argument, object required, but got {bson_type_name(arg)}")
    if after_positional:
        raise MongoError(31255, "Cannot specify positional operator and $elemMatch.")
    if "." in path:
        raise MongoError(31275, "Cannot use $elemMatch projection on a nested field.")
    _refuse_feature_keys(arg)  # before the parse, whose level checks ($expr below the top) come later in mongod
    with where_not_allowed():
        node = parse_filter({path: {"$elemMatch": arg}})
    _refuse_special_features(node)
    return compile_node(node, collation=collation)


def _refuse_feature_keys(arg: Mapping) -> None:
    """``$expr`` / ``$jsonSchema`` anywhere a filter operator may stand inside the $elemMatch argument
    (its top level, the logical operators' clauses, nested ``$elemMatch`` objects): mongod's parser
    tests the allowed features first (224)."""
    for key, value in arg.items():
        if key in ("$expr", "$jsonSchema"):
            raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"{key} is not allowed in this context")
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    _refuse_feature_keys(clause)
        elif isinstance(value, Mapping) and isinstance(value.get("$elemMatch"), Mapping):
            _refuse_feature_keys(value["$elemMatch"])
    inner = arg.get("$elemMatch")
    if isinstance(inner, Mapping):
        _refuse_feature_keys(inner)


def _refuse_special_features(node: Node) -> None:
    """mongod parses an $elemMatch projection without $expr, $jsonSchema, $text and $near (224 for the
    first two, 2 for the others; $where is refused by the parse itself)."""
    if isinstance(node, (And, Or, Nor)):
        for child in node.children:
            _refuse_special_features(child)
    elif isinstance(node, (Not, ElemMatch)):
        _refuse_special_features(node.child)
    elif isinstance(node, JsonSchema):
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$jsonSchema is not allowed in this context")
    elif isinstance(node, Expr):
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$expr is not allowed in this context")
    elif isinstance(node, Text):
        raise MongoError(ErrorCode.BadValue, "$text is not allowed in this context")
    elif isinstance(node, GeoNear):
        raise MongoError(ErrorCode.BadValue, "$geoNear, $near, and $nearSphere are not allowed in this context")


def _add_leaf(leaves: dict[str, _Leaf], under: set[str], path: str, leaf: _Leaf) -> None:
    """Add ``path``'s leaf unless it collides with one already there: the same path or one extending it
    (31250), or one it extends (31249, with the remaining portion). ``under`` holds every proper prefix
    of the leaves so far, so each check costs the path's own length, not the number of leaves (a
    projection of n fields parses in O(n), not O(n^2): 10,000 fields took 1.6 s)."""
    if path in leaves or path in under:
        raise MongoError(31250, f"Path collision at {path}")
    dot = path.find(".")
    while dot != -1:
        if path[:dot] in leaves:
            raise MongoError(31249, f"Path collision at {path} remaining portion {path[dot + 1:]}")
        under.add(path[:dot])
        dot = path.find(".", dot + 1)
    leaves[path] = leaf


def _tree(leaves: dict[str, _Leaf]) -> dict:
    root: dict = {}
    for path, leaf in leaves.items():
        parts = split_path(path)
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = leaf
    return root


def compile_projection(
    spec: Mapping | None, *, variables: Mapping | None = None, filter: Mapping | None = None,
    collation: Any = None, aggregation: bool = False,
) -> Callable[[dict], dict]:
    """Compile a find projection; raises MongoError (mongod's codes) when invalid. ``collation``
    (``collation.Collation`` or None) applies to computed fields, ``$elemMatch`` and positional ``$``.
    ``aggregation``: an aggregation ``$project`` (mongod's policies without the find-only operators:
    ``$slice`` is the expression, a ``$meta`` field alone makes an inclusion)."""
    if not spec:
        return lambda doc: doc
    if not isinstance(spec, Mapping):
        raise MongoError(ErrorCode.TypeMismatch, "Expected field projectionto be of type object")
    inclusion, leaves, positional = _parse(spec, collation, aggregation)
    variables = dict(variables or {})
    table = docmeta.table(variables)
    if table is not None:
        # the per-document metadata (index key, sort key) is made only when asked: say so now, before
        # the read runs (a $meta field's argument is valid here: _parse compiled nothing yet, below)
        for leaf in leaves.values():
            if leaf.kind == "meta" and type(leaf.arg.get("$meta")) is str:
                table.want(leaf.arg["$meta"])
    exprs = {
        p: compile_expression(leaf.arg, collation=collation)
        for p, leaf in leaves.items()
        if leaf.kind in ("expr", "meta")
    }
    # In an inclusion, mongod's $elemMatch is a computed field (ExpressionInternalFindElemMatch): it
    # comes after the included fields, with the other computed fields in the projection's order.
    elem_matches = {p: leaf.arg for p, leaf in leaves.items() if inclusion and leaf.kind == "elemMatch"}
    computed = [p for p in leaves if p in exprs or p in elem_matches]
    for p in computed:
        del leaves[p]
    positional_fn = _positional(positional, filter, collation) if positional is not None else None
    tree = _tree({p: leaf for p, leaf in leaves.items() if p != "_id"})
    if inclusion:
        # A computed "a.b" makes "a" a projected sub-document as in mongod: documents under it (also
        # inside arrays) are kept, then the computed field is set in each. Its nodes are marked so
        # that an array's other elements keep their places (mongod's projection_node.cpp: a non-document
        # becomes a document of the computed fields).
        for path in exprs:
            node = tree
            for part in split_path(path)[:-1]:
                nxt = node.get(part)
                if nxt is None or (isinstance(nxt, dict) and type(nxt) is not _ComputedParent):
                    nxt = node[part] = _ComputedParent(nxt or {})
                elif not isinstance(nxt, dict):
                    break
                node = nxt
    id_leaf = leaves.get("_id")
    keep_id = id_leaf is None or id_leaf.kind == _INCLUDE

    if inclusion:
        # each computed field's work decided now, not per document: (path, its components when
        # dotted, the $elemMatch matcher or the compiled expression)
        steps: list[tuple[str, Any, Any, Any]] = [
            (path, None if "." not in path else split_path(path), elem_matches.get(path), exprs.get(path))
            for path in computed]

        def project(doc: dict) -> dict:
            src = positional_fn(doc) if positional_fn else doc
            out = _include(src, tree, keep_id)
            for path, parts, matcher, fn in steps:
                if matcher is not None:  # (a top-level field: nested $elemMatch is 31275)
                    out.pop(path, None)
                    _elem_match_into(out, path, doc.get(path), matcher)
                elif parts is not None:  # (a missing value still makes its parent a document)
                    _set_computed_parts(out, parts, fn(doc, variables))
                else:  # _set_computed_parts of one component, inline
                    value = fn(doc, variables)
                    if value is MISSING:
                        out.pop(path, None)
                    else:
                        out[path] = value
            return out

    else:

        def project(doc: dict) -> dict:
            out = _exclude(doc, tree)
            if not keep_id:
                out.pop("_id", None)
            for path, fn in exprs.items():  # only $meta fields reach an exclusion projection
                _set_computed(out, path, fn(doc, variables))
            return out

    return project


def _set_computed(out: dict, path: str, value: Any) -> None:
    _set_computed_parts(out, split_path(path), value)


def _set_computed_parts(node: dict, parts: Sequence[str], value: Any) -> None:
    """Set a computed field like mongod: through an array, in every element (a scalar element
    becomes a document holding just the computed field); any other non-document is replaced. A
    missing value sets nothing, but the documents on its way are made all the same: mongod replaces
    a non-document by "a new document of all the computed values" (``{"a.b": "$nope"}`` on ``{}`` or
    ``{a: 5}`` gives ``{a: {}}``)."""
    head = parts[0]
    if len(parts) == 1:
        if value is MISSING:
            node.pop(head, None)
        else:
            node[head] = value
        return
    nxt = node.get(head)
    if isinstance(nxt, list):
        node[head] = _computed_in_array(nxt, parts[1:], value)
        return
    if not isinstance(nxt, dict):
        nxt = {}
        node[head] = nxt
    _set_computed_parts(nxt, parts[1:], value)


def _computed_in_array(arr: list, parts: Sequence[str], value: Any) -> list:
    out: list[Any] = []
    for elem in arr:
        if isinstance(elem, list):
            out.append(_computed_in_array(elem, parts, value))
            continue
        doc = dict(elem) if isinstance(elem, dict) else {}
        _set_computed_parts(doc, parts, value)
        out.append(doc)
    return out


def _include(doc: Any, tree: dict, keep_id: bool = False, nested: bool = False) -> dict:
    """``nested``: below an array inside an array, where mongod's find $slice no longer applies
    (slice1.js: the value is kept whole) while inclusions go on to any depth."""
    out: dict = {}
    for key, value in doc.items():
        node = tree.get(key)
        if node is None:
            if keep_id and key == "_id":
                out[key] = value
            continue
        if isinstance(node, _Leaf):
            kind = node.kind
            if kind == _INCLUDE:
                out[key] = value
            elif kind == "slice":
                out[key] = _apply_slice(value, *node.arg) if isinstance(value, list) and not nested else value
            elif kind == "elemMatch":
                _elem_match_into(out, key, value, node.arg)
            continue
        if isinstance(value, dict):
            out[key] = _include(value, node, nested=nested)
        elif isinstance(value, list):
            out[key] = _include_array(value, node, nested)
    return out


def _elem_match_into(out: dict, key: str, value: Any, matches: Callable[[dict], bool]) -> None:
    """Set ``out[key]`` to the first element of the array ``value`` the $elemMatch projection
    matches, as a one-element array; nothing when ``value`` is no array or no element matches."""
    if isinstance(value, list):
        for elem in value:
            if matches({key: [elem]}):
                out[key] = [elem]
                return


class _ComputedParent(dict):
    """A projection tree node with computed fields below it."""

    __slots__ = ()


def _include_array(arr: list, node: dict, nested: bool = False) -> list:
    """The kept elements of ``arr``: documents projected, arrays recursed; other values dropped, or,
    under a computed field, kept as MISSING for the computed fields to replace by a document."""
    placeholder = type(node) is _ComputedParent
    out: list[Any] = []
    for elem in arr:
        if isinstance(elem, dict):
            out.append(_include(elem, node, nested=nested))
        elif isinstance(elem, list):
            out.append(_include_array(elem, node, True))
        elif placeholder:
            out.append(MISSING)
    return out


def _exclude(doc: Any, tree: dict, nested: bool = False) -> dict:
    out: dict = {}
    for key, value in doc.items():
        node = tree.get(key)
        if node is None:
            out[key] = value
        elif isinstance(node, _Leaf):
            if node.kind == "slice":
                out[key] = _apply_slice(value, *node.arg) if isinstance(value, list) and not nested else value
            elif node.kind == "elemMatch":  # (an exclusion with an $elemMatch: {x: {$elemMatch}, d: 0})
                _elem_match_into(out, key, value, node.arg)
            # exclude: drop the field
        elif isinstance(value, dict):
            out[key] = _exclude(value, node, nested)
        elif isinstance(value, list):
            out[key] = _exclude_array(value, node, nested)
        else:
            out[key] = value
    return out


def _exclude_array(arr: list, node: dict, nested: bool = False) -> list:
    out: list[Any] = []
    for elem in arr:
        if isinstance(elem, dict):
            out.append(_exclude(elem, node, nested))
        elif isinstance(elem, list):
            out.append(_exclude_array(elem, node, True))
        else:
            out.append(elem)
    return out


# ------------------------------------------------------------------------------------------------
# Positional projection: mongod records, while matching the filter, the array position at which it
# matched (MatchDetails' elemMatchKey) and keeps that element of the first array on the projected path.
# ------------------------------------------------------------------------------------------------

_POSITION_LEAVES = (Cmp, In, Exists, Type, Regex, ElemMatch, Size, All, Mod, Bits, Geo)

PositionFn = Callable[[dict], "int | None"]


def _positional(path: str, filter: Mapping | None, collation: Any = None) -> Callable[[dict], dict]:
    """Reduce the first array on ``path`` to the element at the position the filter matched at
    (51246 when it recorded none, 51247 when the array is too short); a path that reaches no array
    is left as it is."""
    if filter is None:
        raise MongoError(51050, "Projections with a positional operator require a matcher")
    position = _position_fn(parse_filter(filter), collation)
    parts = split_path(path)

    def reduce(doc: dict) -> dict:
        found = _first_array(doc, parts)
        if found is None:
            return doc
        prefix, arr = found
        key = position(doc)
        if key is None:
            raise MongoError(51246, "Executor error during find command :: caused by :: positional operator "
                                    "'.$' couldn't find a matching element in the array")
        if key >= len(arr):
            raise MongoError(51247, "Executor error during find command :: caused by :: positional operator "
                                    "'.$' element mismatch")
        return _replace_at(doc, prefix, [arr[key]])

    return reduce


def _position_fn(node: Node, collation: Any) -> PositionFn:
    """``fn(doc)`` -> the position mongod's matcher records for a document the filter matched: a
    conjunction keeps its last child's position; a predicate on a path the index, in the first array
    on that path, of the first element it matches through (none when only the whole array matches);
    ``$or`` (unless rewritten to ``$in``: equalities on one path), ``$nor``, ``$not``, ``$expr`` and
    the like record none. Built once per query; per document it runs only when the projected path
    reaches an array."""
    if isinstance(node, And):
        children = [_position_fn(child, collation) for child in node.children]

        def conjunction(doc: dict) -> int | None:
            key = None
            for child in children:
                found = child(doc)
                if found is not None:
                    key = found
            return key

        return conjunction
    path = _position_path(node)
    if path is None:
        return lambda doc: None
    pred = compile_node(node, collation=collation)
    parts = split_path(path)

    def leaf(doc: dict) -> int | None:
        found = _first_array(doc, parts)
        if found is None:
            return None
        prefix, arr = found
        if len(prefix) < len(parts) and parts[len(prefix)].isdigit():
            return None  # an explicit offset ("a.0") records no position
        for i, elem in enumerate(arr):
            if pred(_replace_at(doc, prefix, [elem])):
                return i
        return None

    return leaf


def _position_path(node: Node) -> str | None:
    if isinstance(node, _POSITION_LEAVES):
        return node.path
    if isinstance(node, Or) and node.children:  # mongod rewrites equalities on one path to $in
        paths = {child.path for child in node.children if isinstance(child, (Cmp, In))
                 and (not isinstance(child, Cmp) or child.op == "$eq")}
        if len(paths) == 1 and all(isinstance(child, (Cmp, In)) for child in node.children):
            return paths.pop()
    return None


def _first_array(doc: dict, parts: tuple[str, ...]) -> tuple[tuple[str, ...], list] | None:
    """The first array on the path ``parts`` (through documents) and the path prefix leading to it."""
    node: Any = doc
    for depth, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
        if isinstance(node, list):
            return parts[: depth + 1], node
    return None


def _replace_at(doc: dict, parts: tuple[str, ...], value: Any) -> dict:
    out = dict(doc)
    node = out
    for part in parts[:-1]:
        child = dict(node[part])
        node[part] = child
        node = child
    node[parts[-1]] = value
    return out
