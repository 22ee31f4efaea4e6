"""Updates: ``parse_update`` (validate once) and ``apply_update`` (per document, never mutating it).

- ``apply_update(doc, update, *, is_upsert=False, query=None, now=None) -> (new_doc, modified)``.
  Operator updates resolve positional paths against the document (``$`` from ``query``, ``$[]``,
  ``$[id]`` from arrayFilters), then apply the operators in field-name order (mongod 5.0+: the
  order new fields appear in). ``_id`` may not change (66).
- ``upsert_seed(query) -> dict``: the document an upsert starts from (the query's equalities).
- ``modified_paths(update) -> list[str]``: the paths an operator update writes; ``[""]`` (the whole
  document) for replacements and pipelines.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import compile_node, filter_fields, is_operator_document, parse_filter
from tidemark.query.match_regex import is_regex
from tidemark.query.paths import is_numeric_component, set_path, split_path
from tidemark.query.pipeline import run_pipeline
from tidemark.query.update_ops import OPS, UpdateContext, deep_copy, identical
from tidemark.query.update_parse import Action, Update, parse_update
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING

__all__ = ["Update", "parse_update", "apply_update", "upsert_seed", "modified_paths"]

_POSITIONAL_NOT_FOUND = "The positional operator did not find the match needed from the query."


def apply_update(
    doc: dict,
    update: Update,
    *,
    is_upsert: bool = False,
    query: Mapping | None = None,
    now: _dt.datetime | None = None,
) -> tuple[dict, bool]:
    """Apply a parsed update to ``doc``; returns (new document, changed?). ``doc`` is not mutated."""
    if update.kind == "replacement":
        return _replace(doc, update.replacement or {})
    if update.kind == "pipeline":
        return _run_pipeline(doc, update.compiled_pipeline or update.pipeline or [])
    now = now or _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
    new = deep_copy(doc)
    ctx = UpdateContext(doc, is_upsert, now, update.collation)
    concrete: list[tuple[tuple, Action, tuple]] = []
    positional = _PositionalResolver(doc, query, update.collation, update.variables)
    for action in update.actions:
        if action.op == "$rename-target":
            continue
        for parts in _expand(doc, action.parts, update.array_filters, positional, action):
            concrete.append((_order_key(parts), action, parts))
    concrete.sort(key=lambda e: e[0])
    if any(p.startswith("$") for a in update.actions for p in a.parts):
        _check_concrete_conflicts(concrete)
    modified = False
    for _, action, parts in concrete:
        if OPS[action.op](new, parts, action.arg, ctx):
            modified = True
    if modified and "_id" in doc and not identical(new.get("_id", MISSING), doc["_id"]):
        raise MongoError(
            ErrorCode.ImmutableField,
            "Performing an update on the path '_id' would modify the immutable field '_id'",
        )
    return new, modified


def _check_concrete_conflicts(concrete: list) -> None:
    # Array updates ($[], $[id], $) can reach one element through two paths; sorted neighbours
    # reveal every equal-or-prefix pair (see update_parse._check_conflicts).
    for (_, _, a), (_, _, b) in zip(concrete, concrete[1:], strict=False):
        if b[: len(a)] == a:
            raise MongoError(
                ErrorCode.ConflictingUpdateOperators, f"Update created a conflict at '{'.'.join(a)}'"
            )


def _order_key(parts: tuple) -> tuple:
    # Field names in string order, array positions in numeric order.
    return tuple((0, int(p), "") if is_numeric_component(p) else (1, 0, p) for p in parts)


def _replace(doc: dict, replacement: dict) -> tuple[dict, bool]:
    new: dict = {}
    if "_id" in doc:
        if "_id" in replacement and not identical(replacement["_id"], doc["_id"]):
            raise MongoError(
                ErrorCode.ImmutableField,
                "After applying the update, the (immutable) field '_id' was found to have been altered to "
                f"_id: {bson_repr(replacement['_id'])}",
            )
        new["_id"] = doc["_id"]
    for k, v in replacement.items():
        if k != "_id" or "_id" not in new:
            new[k] = deep_copy(v)
    return new, not identical(new, doc)


def _run_pipeline(doc: dict, stages: list) -> tuple[dict, bool]:
    results = list(run_pipeline(stages, [deep_copy(doc)]))
    new = results[0] if results else {}
    if "_id" in doc:
        if "_id" not in new:
            new = {"_id": doc["_id"], **new}
        elif not identical(new["_id"], doc["_id"]):
            raise MongoError(
                ErrorCode.ImmutableField,
                "After applying the update, the (immutable) field '_id' was found to have been altered to "
                f"_id: {bson_repr(new['_id'])}",
            )
    return new, not identical(new, doc)


class _PositionalResolver:
    """Finds the array index the query matched for ``$`` (first element the query matches through)."""

    def __init__(self, doc: dict, query: Mapping | None, collation: Any = None, variables: Any = None):
        self.doc = doc
        self.query = query
        self.collation = collation
        self.variables = variables
        self._pred: Callable[[Any], bool] | None = None
        self._fields: set[str] | None = set()  # None: the query may read any field

    def index(self, prefix: tuple[str, ...]) -> int:
        if not self.query:
            raise MongoError(ErrorCode.BadValue, _POSITIONAL_NOT_FOUND)
        pred = self._pred
        if pred is None:
            parsed = parse_filter(self.query)
            self._fields = filter_fields(parsed)
            self._pred = pred = compile_node(parsed, collation=self.collation, variables=self.variables)
        joined = ".".join(prefix)
        if self._fields is not None and not any(f == joined or f.startswith(joined + ".") for f in self._fields):
            raise MongoError(ErrorCode.BadValue, _POSITIONAL_NOT_FOUND)
        node: Any = self.doc
        for part in prefix:
            node = node.get(part, MISSING) if isinstance(node, dict) else MISSING
        if not isinstance(node, list):
            raise MongoError(ErrorCode.BadValue, _POSITIONAL_NOT_FOUND)
        for i, elem in enumerate(node):
            candidate = _with_value(self.doc, prefix, [elem])
            if pred(candidate):
                return i
        raise MongoError(ErrorCode.BadValue, _POSITIONAL_NOT_FOUND)


def _with_value(doc: dict, prefix: tuple[str, ...], value: Any) -> dict:
    out = dict(doc)
    node = out
    for part in prefix[:-1]:
        child = dict(node[part])
        node[part] = child
        node = child
    node[prefix[-1]] = value
    return out


def _expand(
    doc: dict, parts: tuple, filters: dict, positional: _PositionalResolver, action: Action
) -> list[tuple]:
    """Concrete paths for ``parts`` (resolving $, $[] and $[id] against ``doc``)."""
    if not any(p.startswith("$") for p in parts):
        return [parts]
    out: list[tuple] = []

    def walk(node: Any, i: int, prefix: tuple) -> None:
        if i == len(parts):
            out.append(prefix)
            return
        part = parts[i]
        if part == "$":
            idx = positional.index(prefix)
            walk(node[idx], i + 1, prefix + (str(idx),))
            return
        if part.startswith("$[") and part.endswith("]"):
            if node is MISSING:
                raise MongoError(
                    ErrorCode.BadValue,
                    f"The path '{'.'.join(prefix)}' must exist in the document in order to apply array updates.",
                )
            if not isinstance(node, list):
                raise MongoError(
                    ErrorCode.BadValue,
                    f"Cannot apply array updates to non-array element {prefix[-1]}: {bson_repr(node)}",
                )
            ident = part[2:-1]
            pred = filters.get(ident) if ident else None
            for idx, elem in enumerate(node):
                if pred is None or pred({ident: elem}):
                    walk(elem, i + 1, prefix + (str(idx),))
            return
        if isinstance(node, dict):
            child = node.get(part, MISSING)
        elif isinstance(node, list) and is_numeric_component(part) and int(part) < len(node):
            child = node[int(part)]
        else:
            child = MISSING
        walk(child, i + 1, prefix + (part,))

    walk(doc, 0, ())
    return out


def upsert_seed(query: Mapping | None) -> dict:
    """The equality fields of ``query`` as a document (``{a: 1, "b.c": 2}`` -> ``{a: 1, b: {c: 2}}``).

    Top-level equalities, ``$eq``, single-element ``$in``, ``$and`` and one-clause ``$or`` of those
    count; other operators, regexes and multi-clause ``$or`` are ignored. A path matched twice raises 54 NotSingleValueField.
    """
    pairs: list[tuple[str, Any]] = []

    def collect(q: Mapping) -> None:
        for key, value in q.items():
            if (key == "$and" or key == "$or" and len(value) == 1) and isinstance(value, list):
                for sub in value:  # a one-clause $or is its clause (mongod simplifies it first)
                    if isinstance(sub, Mapping):
                        collect(sub)
            elif key.startswith("$"):
                continue
            elif is_operator_document(value):
                if "$eq" in value:
                    pairs.append((key, value["$eq"]))
                elif "$in" in value and isinstance(value["$in"], list) and len(value["$in"]) == 1:
                    if not is_regex(value["$in"][0]):
                        pairs.append((key, value["$in"][0]))
            elif not is_regex(value):
                pairs.append((key, value))

    if query:
        collect(query)
    seed: dict = {}
    seen: dict[tuple, str] = {}
    for path, value in pairs:
        parts = split_path(path)
        for other_parts, other in seen.items():
            if other_parts == parts:
                raise MongoError(
                    ErrorCode.NotSingleValueField,
                    f"cannot infer query fields to set, path '{path}' is matched twice",
                )
            n = min(len(parts), len(other_parts))
            if parts[:n] == other_parts[:n]:
                raise MongoError(
                    ErrorCode.NotSingleValueField,
                    f"cannot infer query fields to set, both paths '{other}' and '{path}' are matched",
                )
        seen[parts] = path
        set_path(seed, parts, deep_copy(value))
    return seed


def modified_paths(update: Update) -> list[str]:
    """Paths an operator update writes ($rename: source and target); ``[""]`` for whole-document kinds."""
    if update.kind != "operators":
        return [""]
    return [a.path for a in update.actions]
