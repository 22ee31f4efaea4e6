"""Find projections (MongoDB 4.4+ semantics), parsed once and compiled to ``fn(doc) -> dict``.

Modes: an *inclusion* projection keeps only the named paths (plus ``_id`` unless ``_id: 0``);
an *exclusion* projection drops the named paths. Which one is decided by the fields other than
``_id``: ``1``/``true``/expressions/``$elemMatch``/positional ``a.$`` mean inclusion, ``0``/``false``
exclusion; ``$slice`` alone keeps the whole document. Mixing -> 31253/31254; a path and a path
inside it -> 31249/31250; ``{$meta: ...}`` fields (textScore, geoNear*) are added in either mode.

Paths go through arrays of documents (``{"a.b": 1}`` on ``{a: [{b: 1, c: 2}, 5]}`` gives
``{a: [{b: 1}]}``; scalars inside the array are dropped by inclusion, kept by exclusion).
Computed fields (aggregation expressions, via ``expressions.compile_expression``) are evaluated on
the original document and appended after the kept fields; a MISSING result omits the field.
Positional ``a.$`` needs ``filter=`` (the find filter): it keeps the first array element for
which the filter matches when the array is reduced to that element.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expressions import OPERATORS, SPECIAL_OPERATORS, compile_expression
from tidemark.query.match import compile_node, filter_fields, parse_filter
from tidemark.query.paths import split_path
from tidemark.query.values import MISSING, is_number

__all__ = ["compile_projection", "projection_is_inclusion", "PROJECTION_OPERATORS"]

# The find-only projection operators (positional ``a.$``, ``$elemMatch``, ``$slice``, ``$meta``).
PROJECTION_OPERATORS = frozenset({"$", "$elemMatch", "$slice", "$meta"})

_INCLUDE = "include"
_EXCLUDE = "exclude"


class _Leaf:
    __slots__ = ("kind", "arg")

    def __init__(self, kind: str, arg: Any = None):
        self.kind = kind  # include | exclude | slice | elemMatch | expr
        self.arg = arg


def _flatten(spec: Mapping, prefix: str = "") -> list[tuple[str, Any]]:
    """``{a: {b: 1}}`` -> ``[("a.b", 1)]``; operator objects and literals are leaves."""
    out: list[tuple[str, Any]] = []
    for key, value in spec.items():
        if key == "":
            raise MongoError(40352, "FieldPath cannot be constructed with empty string")
        if key.startswith("$"):
            raise MongoError(
                31252 if prefix else 2, f"Unknown projection operator or field name starting with '$': {key}"
            )
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if not value:
                raise MongoError(
                    51270, f"An empty sub-projection is not a valid value. Found empty object at path {path}"
                )
            if next(iter(value)).startswith("$"):
                out.append((path, value))
            else:
                out.extend(_flatten(value, path + "."))
        else:
            out.append((path, value))
    return out


def _is_truthy_number(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if is_number(v):
        return float(str(v)) != 0
    return None


def _classify(path: str, value: Any, collation: Any = None) -> tuple[str, Any]:
    flag = _is_truthy_number(value)
    if flag is not None:
        return (_INCLUDE if flag else _EXCLUDE), None
    if isinstance(value, Mapping):
        op = next(iter(value))
        if op == "$slice":
            arg = value["$slice"]
            if isinstance(arg, list) and not all(is_number(x) and not isinstance(x, bool) for x in arg):
                return "expr", value  # the aggregation $slice expression, e.g. {$slice: ["$arr", 2]}
            return "slice", _parse_slice(arg)
        if op == "$elemMatch":
            if "." in path:
                raise MongoError(ErrorCode.BadValue, "Cannot use $elemMatch projection on a nested field.")
            if not isinstance(value["$elemMatch"], Mapping):
                raise MongoError(ErrorCode.BadValue, "elemMatch: Invalid argument, object required.")

            node = parse_filter(value["$elemMatch"])
            return "elemMatch", compile_node(node, collation=collation)
        if op == "$meta":
            return "meta", value  # computed like an expression, but decides neither inclusion nor exclusion
        if len(value) == 1 and op.startswith("$") and op not in EXPRESSION_NAMES:
            # mongod's projection parser (parseSubObject): a lone $-field that names no expression is
            # no sub-projection either ("$x" is no FieldPath)
            raise MongoError(31325, f"Unknown expression {op}")
    return "expr", value


EXPRESSION_NAMES = frozenset(OPERATORS) | SPECIAL_OPERATORS  # what a lone $-field of a projection may name


def _parse_slice(arg: Any) -> tuple[int, int | None]:
    """-> (skip, limit); negative skip counts from the end; limit None = to the end."""
    if is_number(arg) and not isinstance(arg, bool):
        n = int(float(str(arg)))
        return (0, n) if n >= 0 else (n, None)
    if isinstance(arg, list) and len(arg) == 2 and all(is_number(x) and not isinstance(x, bool) for x in arg):
        skip, limit = int(float(str(arg[0]))), int(float(str(arg[1])))
        if limit <= 0:
            raise MongoError(ErrorCode.BadValue, f"$slice limit must be positive, got: {limit}")
        return skip, limit
    raise MongoError(
        28667 if isinstance(arg, list) else ErrorCode.BadValue,
        "$slice only supports numbers and [skip, limit] arrays",
    )


def _apply_slice(arr: list, skip: int, limit: int | None) -> list:
    if limit is None:  # {$slice: -n}: the last n
        return arr[skip:]
    if skip < 0:
        start = max(len(arr) + skip, 0)
        return arr[start : start + limit]
    return arr[skip : skip + limit]


def projection_is_inclusion(spec: Mapping | None) -> bool:
    """True when ``spec`` is an inclusion projection (False for exclusion or empty)."""
    if not spec:
        return False
    return _parse(spec)[0]


def _parse(spec: Mapping, collation: Any = None):
    leaves: dict[str, _Leaf] = {}
    mode: bool | None = None  # True inclusion, False exclusion
    positional: str | None = None
    id_leaf: _Leaf | None = None
    for path, value in _flatten(spec):
        if path.endswith(".$") or path == "$":
            base = path[:-2]
            if positional is not None:
                raise MongoError(31276, "Cannot specify more than one positional projection per query.")
            if ".$" in base or not base:
                raise MongoError(
                    ErrorCode.BadValue, "Positional projection must be on the last path component"
                )
            if any(leaf.kind == "elemMatch" for leaf in leaves.values()) or _has_elem_match(spec):
                raise MongoError(31256, "Cannot specify positional operator and $elemMatch.")
            if _is_truthy_number(value) is not True:
                raise MongoError(31308, "positional projection cannot be used with a literal")
            positional = base
            kind, arg = _INCLUDE, None
            path = base
        else:
            if "$" in split_path(path):
                raise MongoError(
                    ErrorCode.BadValue, f"Positional projection '{path}' must be on the last path component"
                )
            kind, arg = _classify(path, value, collation)
        if path == "_id" and kind in (_INCLUDE, _EXCLUDE):
            id_leaf = _Leaf(kind)
            _add_leaf(leaves, path, id_leaf)
            continue
        if kind == "meta":
            _add_leaf(leaves, path, _Leaf(kind, arg))
            continue
        if kind in (_INCLUDE, "expr", "elemMatch"):
            if mode is False:
                if kind == "expr":
                    raise MongoError(31252, "Cannot use expression other than $meta in exclusion projection")
                raise MongoError(31253, f"Cannot do inclusion on field {path} in exclusion projection")
            mode = True
        elif kind == _EXCLUDE:
            if mode is True:
                raise MongoError(31254, f"Cannot do exclusion on field {path} in inclusion projection")
            mode = False
        _add_leaf(leaves, path, _Leaf(kind, arg))
    if mode is None:
        # only _id and/or $slice: {_id: 1} alone is inclusion; {_id: 0} or slices are exclusion
        mode = (
            id_leaf is not None
            and id_leaf.kind == _INCLUDE
            and all(leaf.kind != "slice" for leaf in leaves.values())
        )
    return mode, leaves, positional


def _has_elem_match(spec: Mapping) -> bool:
    return any(isinstance(v, Mapping) and "$elemMatch" in v for v in spec.values())


def _add_leaf(leaves: dict[str, _Leaf], path: str, leaf: _Leaf) -> None:
    for existing in leaves:
        if existing == path:
            raise MongoError(31250, f"Path collision at {path}")
        if path.startswith(existing + "."):
            raise MongoError(31249, f"Path collision at {path} remaining portion {path[len(existing) + 1 :]}")
        if existing.startswith(path + "."):
            raise MongoError(31250, f"Path collision at {path}")
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
    collation: Any = None,
) -> Callable[[dict], dict]:
    """Compile a find projection; raises MongoError (mongod's codes) when invalid. ``collation``
    (``collation.Collation`` or None) applies to computed fields, ``$elemMatch`` and positional ``$``."""
    if not spec:
        return lambda doc: doc
    if not isinstance(spec, Mapping):
        raise MongoError(ErrorCode.TypeMismatch, "Expected field projectionto be of type object")
    inclusion, leaves, positional = _parse(spec, collation)
    variables = dict(variables or {})
    exprs = {
        p: compile_expression(leaf.arg, collation=collation)
        for p, leaf in leaves.items()
        if leaf.kind in ("expr", "meta")
    }
    for p in exprs:
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

        def project(doc: dict) -> dict:
            src = positional_fn(doc) if positional_fn else doc
            out = _include(src, tree, keep_id)
            for path, fn in exprs.items():  # (a missing value still makes its parent a document)
                _set_computed(out, path, fn(doc, variables))
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


def _include(doc: Any, tree: dict, keep_id: bool = False) -> dict:
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
                out[key] = _apply_slice(value, *node.arg) if isinstance(value, list) else value
            elif kind == "elemMatch":
                if isinstance(value, list):
                    for elem in value:
                        if isinstance(elem, dict) and node.arg(elem):
                            out[key] = [elem]
                            break
            continue
        if isinstance(value, dict):
            out[key] = _include(value, node)
        elif isinstance(value, list):
            out[key] = _include_array(value, node)
    return out


class _ComputedParent(dict):
    """A projection tree node with computed fields below it."""

    __slots__ = ()


def _include_array(arr: list, node: dict) -> list:
    """The kept elements of ``arr``: documents projected, arrays recursed; other values dropped, or,
    under a computed field, kept as MISSING for the computed fields to replace by a document."""
    placeholder = type(node) is _ComputedParent
    out: list[Any] = []
    for elem in arr:
        if isinstance(elem, dict):
            out.append(_include(elem, node))
        elif isinstance(elem, list):
            out.append(_include_array(elem, node))
        elif placeholder:
            out.append(MISSING)
    return out


def _exclude(doc: Any, tree: dict) -> dict:
    out: dict = {}
    for key, value in doc.items():
        node = tree.get(key)
        if node is None:
            out[key] = value
        elif isinstance(node, _Leaf):
            if node.kind == "slice":
                out[key] = _apply_slice(value, *node.arg) if isinstance(value, list) else value
            # exclude: drop the field
        elif isinstance(value, dict):
            out[key] = _exclude(value, node)
        elif isinstance(value, list):
            out[key] = _exclude_array(value, node)
        else:
            out[key] = value
    return out


def _exclude_array(arr: list, node: dict) -> list:
    out: list[Any] = []
    for elem in arr:
        if isinstance(elem, dict):
            out.append(_exclude(elem, node))
        elif isinstance(elem, list):
            out.append(_exclude_array(elem, node))
        else:
            out.append(elem)
    return out


def _positional(path: str, filter: Mapping | None, collation: Any = None) -> Callable[[dict], dict]:
    """Reduce the first array on ``path`` to the first element the filter matches through."""
    if filter is None:
        raise MongoError(51050, "Projections with a positional operator require a matcher")

    node = parse_filter(filter)
    parts = split_path(path)
    fields = filter_fields(node)  # None: the filter may read any field
    if fields is not None and not any(split_path(f)[0] == parts[0] for f in fields):
        raise MongoError(31277, f"Positional projection '{path}.$' does not match the query document.")
    pred = compile_node(node, collation=collation)

    def reduce(doc: dict) -> dict:
        node: Any = doc
        for depth, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                return doc
            node = node[part]
            if isinstance(node, list):
                prefix = parts[: depth + 1]
                for elem in node:
                    candidate = _replace_at(doc, prefix, [elem])
                    if pred(candidate):
                        return candidate
                raise MongoError(
                    51246,
                    "Executor error during find command :: caused by :: positional operator '.$' "
                    "couldn't find a matching element in the array",
                )
        return doc

    return reduce


def _replace_at(doc: dict, parts: tuple[str, ...], value: Any) -> dict:
    out = dict(doc)
    node = out
    for part in parts[:-1]:
        child = dict(node[part])
        node[part] = child
        node = child
    node[parts[-1]] = value
    return out
