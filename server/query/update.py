"""Updates: ``parse_update`` (validate once) and ``apply_update`` (per document, never mutating it).

- ``apply_update(doc, update, *, is_upsert=False, query=None, now=None) -> (new_doc, modified)``.
  Operator updates resolve positional paths against the document (``$`` from ``query``, ``$[]``,
  ``$[id]`` from arrayFilters), then apply the operators in field-name order (mongod 5.0+: the
  order new fields appear in; a ``$rename`` where its target sorts). ``_id`` may not change (66,
  checked by each operation as it applies, so the first failing one in that order answers). The result may nest at most 180 levels
  (``check_storage_depth``, 15), whatever the kind of update, unless oplog application (applyOps:
  ``Update.from_oplog``) runs it.
- ``upsert_seed(query, *, only_id=False) -> dict``: the document an upsert starts from (the query's
  equalities; only ``_id`` for a replacement).
- ``check_upsert_query(query)``: an upsert's query may not hold ``$expr`` (224), checked after the
  update is parsed and before the query is compiled, as mongod's ParsedUpdate.
- ``modified_paths(update) -> list[str]``: the paths an operator update writes; ``[""]`` (the whole
  document) for replacements and pipelines.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.framing import MAX_STORED_DEPTH
from tidemark.query.match import compile_filter, is_operator_document
from tidemark.query.match_regex import is_regex
from tidemark.query.paths import get_path, is_numeric_component, set_path, split_path
from tidemark.query.pipeline import run_pipeline
from tidemark.query.update_ops import OPS, UpdateContext, deep_copy, identical
from tidemark.query.update_parse import Action, Update, parse_update
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, compare

__all__ = ["Update", "parse_update", "apply_update", "upsert_seed", "check_upsert_query", "check_replaced_id",
           "modified_paths"]

_NOT_EXACT_VALUE_FIELD = 111  # NotExactValueField (not in the shared ErrorCode table)
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
        if is_upsert and query:
            upsert_seed(query, only_id=True)  # the query's _id must be one whole value (111), as the seed's
        new, modified = _replace(doc, update.replacement or {})
        if not update.from_oplog:
            check_storage_depth(new)
        return new, modified
    if update.kind == "pipeline":
        new, modified = _run_pipeline(doc, update.compiled_pipeline or update.pipeline or [])
        check_storage_depth(new)
        return new, modified
    now = now or _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
    new = deep_copy(doc)
    ctx = UpdateContext(doc, is_upsert, now, update.collation)
    concrete: list[tuple[tuple, Action, tuple]] = []
    positional = _PositionalResolver(doc, query, update)
    for action in update.actions:
        if action.op == "$rename-target":
            continue
        for parts in _expand(doc, action.parts, update.array_filters, positional, action):
            concrete.append((_order_key(parts), action, parts))
    concrete.sort(key=lambda e: e[0])
    if any(p.startswith("$") for a in update.actions for p in a.parts):
        _check_concrete_conflicts(concrete)
    if any(action.op == "$rename" for action in update.actions):
        # mongod's tree holds a $rename's RenameNode at its target (a placeholder at its source),
        # so the rename runs where the target sorts: what it creates follows the fields created
        # before that point, and its errors come in that order (paths never positional)
        concrete.sort(key=lambda e: _order_key(split_path(e[1].arg)) if e[1].op == "$rename" else e[0])
    modified = False
    storage_rules = not (is_upsert or update.from_oplog)  # (an upsert's document is checked whole)
    has_id = "_id" in new  # (an operation creating _id conflicts with any other under it)
    for _, action, parts in concrete:
        op = action.op
        # (the two checks below cost a comparison for the usual operation, under no _id nor '$' name)
        touched = _id_paths(new, parts, action) if has_id and (parts[0] == "_id" or op == "$rename") else None
        if OPS[op](new, parts, action.arg, ctx):
            modified = True
            if touched:
                _refuse_id_change(new, touched)
            if storage_rules and (parts[0][0] == "$" or op == "$rename") and op != "$unset":
                _refuse_top_level_dollar(action, parts)  # (UnsetNode validates only the siblings)
    if update.from_oplog:
        pass  # oplog application stores what the entry says (UpdateStage: not a user-initiated write)
    elif is_upsert:
        check_storage_depth(new)  # the whole new document, seed included (UpsertStage)
    elif modified:
        check_storage_depth(new, {action.parts[0] for action in update.actions})
    return new, modified


def _id_paths(doc: dict, parts: tuple, action: Action) -> list[tuple[tuple, int]]:
    """The paths under an existing ``_id`` that applying ``action`` at ``parts`` writes, each with
    how many of its leading components exist before it runs (``$rename``: its target, then its
    source, the order mongod's RenameNode sets and unsets them). Only for a document holding ``_id``
    (an upsert's may gain the ``_id`` it lacks)."""
    written = [split_path(action.arg), parts] if action.op == "$rename" else [parts]
    return [(p, _existing_prefix(doc, p)) for p in written if p[0] == "_id"]


def _existing_prefix(doc: dict, parts: tuple) -> int:
    node: Any = doc
    for n, part in enumerate(parts):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and is_numeric_component(part) and int(part) < len(node):
            node = node[int(part)]
        else:
            return n
    return len(parts)


def _refuse_id_change(new: dict, touched: list[tuple[tuple, int]]) -> None:
    """66 for an operation that changed something under ``_id`` (mongod's immutable-path check,
    made by each modifier after it applies, so the first such operation in apply order fails):
    an element that existed is named by its whole path (ModifierNode::applyToExistingElement); one
    the operation created by the deepest element that existed, shown as it now is
    (applyToNonexistentElement)."""
    parts, existed = touched[0]
    if existed == len(parts):
        raise MongoError(
            ErrorCode.ImmutableField,
            f"Performing an update on the path '{'.'.join(parts)}' would modify the immutable field '_id'",
        )
    taken = parts[:existed]
    raise MongoError(
        ErrorCode.ImmutableField,
        f"Updating the path '{'.'.join(taken)}' to {taken[-1]}: {bson_repr(get_path(new, taken))} "
        "would modify the immutable field '_id'",
    )


def _refuse_top_level_dollar(action: Action, parts: tuple) -> None:
    """52 for an operation that wrote a top-level ``$``-prefixed field (a ``$rename``: its target),
    as it applies: mongod's ModifierNode::validateUpdate checks the element each operation changed
    or created, and only a top-level name may not start with '$' (5.0+; a ``$y`` an insert stored
    and the update leaves alone stays). Upserts and oplog application store such names."""
    name = action.arg.split(".", 1)[0] if action.op == "$rename" else parts[0]
    if name.startswith("$"):
        raise MongoError(
            ErrorCode.DollarPrefixedFieldName,
            f"The dollar ($) prefixed field '{name}' in '{name}' is not allowed in the context of an update's "
            "replacement document. Consider using an aggregation pipeline with $replaceWith.",
        )


def check_storage_depth(doc: dict, fields: set[str] | None = None) -> None:
    """mongod's depth rule for what an update stores (storage_validation::scanDocument): a top-level
    field is an element at level 1 (the fields of an ``_id`` document too: scanDocument starts ``_id``
    at level 0), an element inside another one level below it, and an element past level 180 is 15
    "Document exceeds maximum nesting depth of 180". An operator update checks what it wrote
    (``fields``: the top-level fields its paths start with; ModifierNode::validateUpdate checks the
    elements it modified), a replacement, a pipeline and an upsert the whole document. (An insert has
    its own rule and message: ``core.collection.prepare_insert``. mongod's oplog application skips
    this validation, as every storage rule: an update parsed ``from_oplog`` (applyOps) is not checked,
    and applyOps's ``$v: 2`` diffs do not come here.)"""
    stack: list[tuple[Any, int]] = []
    for name in doc if fields is None else fields:
        value = doc.get(name)
        if (type(value) is dict or type(value) is list) and value:
            stack.append((value, 0 if name == "_id" and type(value) is dict else 1))
    while stack:
        container, level = stack.pop()  # a non-empty container element: its elements are one level below
        if level >= MAX_STORED_DEPTH:
            raise MongoError(ErrorCode.Overflow, f"Document exceeds maximum nesting depth of {MAX_STORED_DEPTH}")
        for child in container.values() if type(container) is dict else container:
            if (type(child) is dict or type(child) is list) and child:
                stack.append((child, level + 1))


def _check_concrete_conflicts(concrete: list) -> None:
    # Array updates ($[], $[id], $) can reach one element through two paths; sorted neighbours
    # reveal every equal-or-prefix pair (the parse refused the ones its paths spell: update_parse._UpdateTree).
    for (_, action_a, a), (_, action_b, b) in zip(concrete, concrete[1:], strict=False):
        if b[: len(a)] == a:
            raise MongoError(
                ErrorCode.ConflictingUpdateOperators,
                f"Update created a conflict at '{_conflict_path(a, action_a.parts, action_b.parts)}'",
            )


def _conflict_path(concrete: tuple, pattern_a: tuple, pattern_b: tuple) -> str:
    """Where mongod reports two array updates meeting on one element: it merges the two update
    subtrees at the last component where their patterns still differ (there both resolve to the
    same element), so the path is concrete up to that component and the shared pattern after it."""
    last = -1
    for i in range(len(concrete)):
        if pattern_a[i] != pattern_b[i]:
            last = i
    return ".".join(concrete[: last + 1] + pattern_a[last + 1 : len(concrete)])


def _order_key(parts: tuple) -> tuple:
    """The order mongod applies updates in: its update tree orders each level's field names with
    pathsupport::cmpPathsAndArrayIndexes, so the components compare one by one."""
    return tuple(map(_component_key, parts))


def _component_key(p: str) -> tuple:
    """cmpPathsAndArrayIndexes as a sort key: names starting with a digit other than a leading zero
    compare by (byte) length first, so array positions are in numeric order; every other pair is
    plain byte order. Grouping by the first character keeps the two rules one total order: names
    below "0", then those starting with "0" (zero-padded, plain order), then the numeric-like ones,
    then the rest."""
    c = p[:1]
    if c < "0":
        return (0, p)
    if c == "0":
        return (1, p)
    if c <= "9":
        return (2, len(p) if p.isascii() else len(p.encode()), p)
    return (3, p)


def _replace(doc: dict, replacement: dict) -> tuple[dict, bool]:
    new: dict = {}
    if "_id" in replacement:
        check_replaced_id(replacement["_id"], doc.get("_id", MISSING))
        new["_id"] = deep_copy(replacement["_id"])  # (first: mongod's ensureIdFieldIsFirst)
    elif "_id" in doc:
        new["_id"] = doc["_id"]  # (kept when the replacement has none)
    for k, v in replacement.items():
        if k != "_id":
            new[k] = deep_copy(v)
    # a no-op only when the replacement as sent equals the stored document, _id included (mongod's
    # ObjectReplaceExecutor compares them binary): {} over {_id: 0} is a modification, validated
    return new, not identical(replacement, doc)


def _run_pipeline(doc: dict, stages: list) -> tuple[dict, bool]:
    results = list(run_pipeline(stages, [deep_copy(doc)]))
    new = results[0] if results else {}
    # (as a replacement: a no-op only when the pipeline's output, before _id is kept, equals the document)
    changed = not identical(new, doc)
    if "_id" in new:
        check_replaced_id(new["_id"], doc.get("_id", MISSING))
    elif "_id" in doc:
        new = {"_id": doc["_id"], **new}
    return new, changed


def check_replaced_id(new_id: Any, old_id: Any) -> None:
    """The ``_id`` a replacement or a pipeline's result holds, as mongod's ObjectReplaceExecutor checks
    it: first storage (storageValidIdField: never an array or a regex, 53), then immutability by
    *value* (BSONElement::woCompare: the document may change ``_id: 1`` into ``_id: 1.0``, which is
    what it then stores; a document's fields compare in order) — 66 when it differs."""
    if isinstance(new_id, list) or is_regex(new_id):
        kind = "array" if isinstance(new_id, list) else "regex"
        raise MongoError(ErrorCode.InvalidIdField, f"The '_id' value cannot be of type {kind}")
    if old_id is not MISSING and compare(new_id, old_id) != 0:
        raise MongoError(
            ErrorCode.ImmutableField,
            f"After applying the update, the (immutable) field '_id' was found to have been altered to "
            f"_id: {bson_repr(new_id)}",
        )


# mongod's MatchType order (matcher/expression.h) for the conjuncts that can record a position:
# CanonicalQuery normalizes the query (nested $and and one-clause $or flattened, every operator of a
# field its own conjunct) and sorts the conjunction by (type, path); the matcher then evaluates the
# conjuncts in that order and each one that matches through an array records its position over the
# previous one's. Negations ($ne, $nin, $not, $nor), $or of several clauses, $where, $expr and $text
# record nothing (mongod's matcher evaluates them without match details).
_ELEM_MATCH_OBJECT, _ELEM_MATCH_VALUE, _SIZE, _EQ, _REGEX = 2, 3, 4, 5, 10
_OPERATOR_RANK = {
    "$eq": _EQ, "$lte": 6, "$lt": 7, "$gt": 8, "$gte": 9, "$regex": _REGEX, "$mod": 11, "$exists": 12, "$in": 13,
    "$bitsAllSet": 14, "$bitsAllClear": 15, "$bitsAnySet": 16, "$bitsAnyClear": 17, "$type": 20,
    "$geoWithin": 21, "$within": 21, "$geoIntersects": 21, "$size": _SIZE,
}


def _recording_conjuncts(query: Mapping) -> list[tuple[int, str, dict]]:
    """The conjuncts of ``query`` that may record '$''s position, as ``(rank, path, clause)`` in
    mongod's evaluation order (see ``_OPERATOR_RANK``); ``clause`` is a filter of that conjunct alone."""
    out: list[tuple[int, str, dict]] = []
    _collect_conjuncts(query, out)
    out.sort(key=lambda c: (c[0], c[1]))  # stable, as mongod's sortTree: equal conjuncts keep query order
    return out


def _collect_conjuncts(query: Mapping, out: list[tuple[int, str, dict]]) -> None:
    for key, value in query.items():
        if key == "$and" or (key == "$or" and isinstance(value, list) and len(value) == 1):
            for child in value if isinstance(value, list) else ():
                if isinstance(child, Mapping):
                    _collect_conjuncts(child, out)
        elif key.startswith("$"):
            continue  # $or, $nor, $where, $expr, $text, $comment, ...: no position
        elif is_operator_document(value):
            _collect_operators(key, value, out)
        else:
            out.append((_REGEX if is_regex(value) else _EQ, key, {key: value}))


def _collect_operators(path: str, ops: Mapping, out: list[tuple[int, str, dict]]) -> None:
    for op, arg in ops.items():
        if op == "$elemMatch":
            rank = _ELEM_MATCH_VALUE if is_operator_document(arg) else _ELEM_MATCH_OBJECT
            out.append((rank, path, {path: {op: arg}}))
        elif op == "$regex":
            clause = {op: arg, **({"$options": ops["$options"]} if "$options" in ops else {})}
            out.append((_REGEX, path, {path: clause}))
        elif op == "$all" and isinstance(arg, list):
            for value in arg:  # an $all is a conjunction of equalities (or of $elemMatch clauses)
                rank = _ELEM_MATCH_OBJECT if is_operator_document(value) else _REGEX if is_regex(value) else _EQ
                out.append((rank, path, {path: {"$all": [value]}}))
        elif op == "$in" and isinstance(arg, list) and len(arg) == 1:
            out.append((_REGEX if is_regex(arg[0]) else _EQ, path, {path: {op: arg}}))  # optimized to one
        elif op == "$exists":
            if arg:  # {$exists: false} is a negation
                out.append((_OPERATOR_RANK[op], path, {path: {op: arg}}))
        elif op in _OPERATOR_RANK:
            out.append((_OPERATOR_RANK[op], path, {path: {op: arg}}))


class _PositionalResolver:
    """The array position '$' takes: mongod's matcher records, for each conjunct of the (normalized)
    query that matches through an array, the offset in the first array its path traverses implicitly
    (a field name applied to an array, or the array a path ends at); the last conjunct to record wins,
    and '$' takes that position whichever array the update path names."""

    def __init__(self, doc: dict, query: Mapping | None, update: Update):
        self.doc = doc
        self.query = query
        self.update = update
        self._position: int | None = None
        self._resolved = False

    def index(self) -> int:
        """The recorded position (mongod's matchedField). It names the component '$' stands for
        wherever the update path is: an index of the array there, or past its end (padding), a
        field of a document, a field to create (UpdateObjectNode::apply applies the positional
        child under that name whatever the element)."""
        if not self.query:
            raise MongoError(ErrorCode.BadValue, _POSITIONAL_NOT_FOUND)
        if not self._resolved:
            self._position = self._recorded_position(self.query)
            self._resolved = True
        if self._position is None:
            raise MongoError(ErrorCode.BadValue, _POSITIONAL_NOT_FOUND)
        return self._position

    def _conjuncts(self, query: Mapping) -> list[tuple[int, tuple[str, ...], Callable[[Any], bool]]]:
        """The query's recording conjuncts compiled, once per statement (cached on the update)."""
        cached = self.update.positional
        if cached is None or cached[0] is not query:
            update = self.update
            compiled = [(rank, split_path(path), compile_filter(clause, collation=update.collation,
                                                                variables=update.variables))
                        for rank, path, clause in _recording_conjuncts(query)]
            cached = update.positional = (query, compiled)
        return cached[1]

    def _recorded_position(self, query: Mapping) -> int | None:
        position = None
        for rank, parts, pred in self._conjuncts(query):
            prefix = _implicit_array_prefix(self.doc, parts)
            if prefix is None or (rank == _SIZE and prefix == parts):
                continue  # no array traversed ($size sees the array it ends at whole)
            i = _matched_position(self.doc, pred, prefix, get_path(self.doc, prefix))
            if i is not None:
                position = i
        return position


def _matched_position(doc: dict, pred: Callable[[Any], bool], prefix: tuple[str, ...], array: list) -> int | None:
    """The first element of the array at ``prefix`` through which ``pred`` matches (the array reduced
    to that element); None when it matches only the array as a whole, or not at all."""
    for i, elem in enumerate(array):
        if pred(_with_value(doc, prefix, [elem])):
            return i
    return None


def _implicit_array_prefix(doc: dict, parts: tuple[str, ...]) -> tuple[str, ...] | None:
    """Where ``parts`` first traverses an array implicitly in ``doc`` (a field name applied to an
    array, or an array at the end of the path); None when it never does."""
    node: Any = doc
    for i, part in enumerate(parts):
        if isinstance(node, list):
            if not is_numeric_component(part):
                return parts[:i]
            node = node[int(part)] if int(part) < len(node) else MISSING
        elif isinstance(node, dict):
            node = node.get(part, MISSING)
        else:
            return None
    return parts if isinstance(node, list) else None


def _with_value(doc: dict, prefix: tuple[str, ...], value: Any) -> dict:
    """``doc`` with ``value`` at ``prefix`` (copying only the containers on the way; numeric
    components of the prefix index arrays)."""
    out = dict(doc)
    node: Any = out
    for part in prefix[:-1]:
        key: Any = int(part) if isinstance(node, list) else part
        child = node[key]
        child = list(child) if isinstance(child, list) else dict(child)
        node[key] = child
        node = child
    node[int(prefix[-1]) if isinstance(node, list) else prefix[-1]] = value
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
            part = str(positional.index())
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


def _equality_pairs(query: Mapping) -> list[tuple[str, Any]]:
    """The (path, value) equalities an upsert takes from ``query``, in query order: top-level
    equalities, ``$eq``, single-element ``$in``, ``$all`` (one equality per element, as mongod
    rewrites it), ``$and`` and one-clause ``$or`` of those; regexes and other operators count not."""
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
                all_values = value.get("$all")
                if isinstance(all_values, list):
                    pairs.extend((key, v) for v in all_values if not is_regex(v) and not is_operator_document(v))
            elif not is_regex(value):
                pairs.append((key, value))

    collect(query)
    return pairs


_UPSERT_EXPR = "$expr is not allowed in the query predicate for an upsert"


def check_upsert_query(query: Mapping) -> None:
    """Refuse ``$expr`` in the query of an upsert: mongod parses that query without the $expr
    feature (what the new document would take from an expression is undefined) and answers 224
    with this message. Only the document's own level counts (the top and ``$and``/``$or``/``$nor``
    children): inside ``$elemMatch`` the parser's "top-level document" error comes first."""
    for key, value in query.items():
        if key == "$expr":
            raise MongoError(ErrorCode.QueryFeatureNotAllowed, _UPSERT_EXPR)
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for child in value:
                if isinstance(child, Mapping):
                    check_upsert_query(child)


def upsert_seed(query: Mapping | None, *, only_id: bool = False) -> dict:
    """The equality fields of ``query`` as a document (``{b: 1, "a.c": 2}`` -> ``{a: {c: 2}}, b: 1}``: in
    the byte order of their paths, as mongod adds them).

    The equalities are ``_equality_pairs``'; multi-clause ``$or`` and other operators are ignored. A path
    matched twice, or beside one of its prefixes, raises 54 NotSingleValueField. ``only_id`` (a
    replacement upsert, mongod's extractFullEqualityMatches over the immutable ``_id``): the other
    fields are ignored, even when they conflict, and ``_id`` must be one whole value: an equality on a
    path under it is 111 NotExactValueField (checked, per equality in query order, before the 54).
    """
    pairs = _equality_pairs(query) if query else []
    seed: dict = {}
    seen: dict[tuple, str] = {}
    found: list[tuple[str, tuple, Any]] = []
    for path, value in pairs:
        parts = split_path(path)
        if only_id:
            if parts[0] != "_id":
                continue
            if len(parts) > 1:
                raise MongoError(
                    _NOT_EXACT_VALUE_FIELD,
                    f"field at '_id' must be exactly specified, field at sub-path '{path}'found",
                )
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
        found.append((path, parts, value))
    # mongod collects the equalities in a std::map keyed by the dotted path (EqualityMatches) and
    # adds them in its order (pathsupport::addEqualitiesToDoc): byte order of the paths, not the query's
    for _, parts, value in sorted(found, key=lambda e: e[0]):
        set_path(seed, parts, deep_copy(value))
    return seed


def modified_paths(update: Update) -> list[str]:
    """Paths an operator update writes ($rename: source and target); ``[""]`` for whole-document kinds."""
    if update.kind != "operators":
        return [""]
    return [a.path for a in update.actions]
