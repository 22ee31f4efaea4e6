"""Parse and validate an update (operators, replacement or pipeline) before touching any document.

Validation mirrors mongod: unknown modifiers and empty operator objects -> 9 FailedToParse;
two operators touching the same path or a path and its prefix -> 40 ConflictingUpdateOperators;
$-prefixed fields in a replacement -> 52; arrayFilters problems -> 2/9. Document-dependent errors
(type mismatches, _id changes) are raised when the update is applied (``update_apply``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import compile_filter
from tidemark.query.pipeline import PipelineContext, is_stage, parse_pipeline
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import bson_type_name, is_number

__all__ = ["Update", "Action", "parse_update", "OPERATORS", "PIPELINE_STAGES"]

OPERATORS = (
    "$set",
    "$unset",
    "$inc",
    "$mul",
    "$min",
    "$max",
    "$rename",
    "$setOnInsert",
    "$currentDate",
    "$push",
    "$addToSet",
    "$pop",
    "$pull",
    "$pullAll",
    "$bit",
)
PIPELINE_STAGES = ("$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith")
_IDENTIFIER = re.compile(r"^[a-z][a-zA-Z0-9]*$")
_FILTER_ID = re.compile(r"^\$\[([^\]]*)\]$")


@dataclass(frozen=True)
class Action:
    """One ``operator: {path: arg}`` entry; ``parts`` is the split path (may hold $, $[], $[id])."""

    op: str
    path: str
    parts: tuple[str, ...]
    arg: Any


@dataclass
class Update:
    """A parsed update. ``kind`` is "operators", "replacement" or "pipeline"."""

    kind: str
    actions: list[Action] = field(default_factory=list)
    replacement: dict | None = None
    pipeline: list | None = None
    compiled_pipeline: list | None = None  # the parsed pipeline stages, reused for every document
    array_filters: dict[str, Any] = field(default_factory=dict)  # identifier -> compiled predicate
    raw: Any = None
    collation: Any = None  # the command's collation.Collation (None = simple)
    variables: dict | None = None  # the command's let variables and NOW (pipelines, $expr in arrayFilters)


def _short(v: Any) -> str:
    return bson_repr(v)


def parse_update(update: Any, *, array_filters: list | None = None, collation: Any = None,
                 variables: dict | None = None) -> Update:
    """Validate ``update`` (a dict or a pipeline list); raises MongoError as mongod would.

    ``collation`` (``collation.Collation`` or None) and ``variables`` (the command's evaluated
    ``let`` plus NOW) are bound once here, for every document the update is applied to."""
    if isinstance(update, list):
        return _parse_pipeline(update, array_filters, collation, variables)
    if not isinstance(update, Mapping):
        raise MongoError(ErrorCode.FailedToParse, "Update argument must be either an object or an array")
    if not update or not next(iter(update)).startswith("$"):
        if array_filters:  # validated first (their own errors win), then unused in a replacement
            ids = ", ".join(sorted(_parse_array_filters(array_filters, collation, variables)))
            raise MongoError(
                ErrorCode.FailedToParse,
                f"The array filter for identifier '{ids}' was not used in the update {_short(update)}",
            )
        return _parse_replacement(update)
    filters = _parse_array_filters(array_filters or [], collation, variables)
    actions: list[Action] = []
    for op, fields in update.items():
        if op not in OPERATORS:
            raise MongoError(
                ErrorCode.FailedToParse,
                f"Unknown modifier: {op}. Expected a valid update modifier or pipeline-style update specified as an array",
            )
        if not isinstance(fields, Mapping):
            raise MongoError(
                ErrorCode.FailedToParse,
                f"Modifiers operate on fields but we found type {bson_type_name(fields)} instead. For example: "
                f"{{$mod: {{<field>: ...}}}} not {{{op}: {_short(fields)}}}",
            )
        if not fields:
            raise MongoError(
                ErrorCode.FailedToParse,
                f"'{op}' is empty. You must specify a field like so: {{{op}: {{<field>: ...}}}}",
            )
        for path, arg in fields.items():
            parts = _validate_path(path, op)
            _validate_arg(op, path, arg)
            actions.append(Action(op, path, parts, arg))
            if op == "$rename":
                actions.append(Action("$rename-target", arg, _validate_path(arg, op), path))
    _check_conflicts(actions)
    used = {p[2:-1] for a in actions for p in a.parts if _FILTER_ID.match(p) and p != "$[]"}
    for ident in used:
        if ident not in filters:
            path = next(a.path for a in actions if f"$[{ident}]" in a.parts)
            raise MongoError(
                ErrorCode.BadValue, f"No array filter found for identifier '{ident}' in path '{path}'"
            )
    for ident in filters:
        if ident not in used:
            raise MongoError(
                ErrorCode.FailedToParse,
                f"The array filter for identifier '{ident}' was not used in the update {_short(update)}",
            )
    return Update("operators", actions=actions, array_filters=filters, raw=update, collation=collation,
                  variables=variables)


def _parse_replacement(update: Mapping) -> Update:
    for key in update:
        if key.startswith("$"):
            raise MongoError(
                ErrorCode.DollarPrefixedFieldName,
                f"The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of an update's "
                "replacement document. Consider using an aggregation pipeline with $replaceWith.",
            )
    return Update("replacement", replacement=dict(update), raw=update)


def _parse_pipeline(stages: list, array_filters: list | None, collation: Any = None,
                    variables: dict | None = None) -> Update:
    if array_filters:
        raise MongoError(
            ErrorCode.FailedToParse, "arrayFilters may not be specified for pipeline-style updates"
        )
    for stage in stages:
        if not isinstance(stage, Mapping) or len(stage) != 1:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
        name = next(iter(stage))
        if name not in PIPELINE_STAGES:
            if not is_stage(name):
                raise MongoError(40324, f"Unrecognized pipeline stage name: '{name}'")
            raise MongoError(ErrorCode.InvalidOptions, f"{name} is not allowed to be used within an update")

    ctx = PipelineContext(variables=dict(variables or {}), collation=collation)
    compiled = parse_pipeline(list(stages), ctx)
    return Update("pipeline", pipeline=list(stages), compiled_pipeline=compiled, raw=stages, collation=collation,
                  variables=variables)


def _validate_path(path: Any, op: str) -> tuple[str, ...]:
    if not isinstance(path, str) or path == "":
        raise MongoError(ErrorCode.EmptyFieldName, "An empty update path is not valid.")
    parts = tuple(path.split("."))
    for part in parts:
        if part == "":
            raise MongoError(
                ErrorCode.EmptyFieldName,
                f"The update path '{path}' contains an empty field name, which is not allowed.",
            )
    return parts


def _validate_arg(op: str, path: str, arg: Any) -> None:
    if op in ("$inc", "$mul") and not is_number(arg):
        verb = "increment" if op == "$inc" else "multiply"
        raise MongoError(
            ErrorCode.TypeMismatch, f"Cannot {verb} with non-numeric argument: {{{path}: {_short(arg)}}}"
        )
    if op == "$rename":
        if not isinstance(arg, str):
            raise MongoError(
                ErrorCode.BadValue, f"The 'to' field for $rename must be a string: {path}: {_short(arg)}"
            )
        if arg == path:
            raise MongoError(
                ErrorCode.BadValue,
                f"The source and target field for $rename must differ: {path}: {_short(arg)}",
            )
        if arg.startswith(path + ".") or path.startswith(arg + "."):
            raise MongoError(
                ErrorCode.BadValue,
                f"The source and target field for $rename must not be on the same path: {path}: {_short(arg)}",
            )
        for which, p in (("source", path), ("destination", arg)):
            if any(c.startswith("$") for c in p.split(".")):
                raise MongoError(ErrorCode.BadValue, f"The {which} field for $rename may not be dynamic: {p}")
    if op == "$pop":
        if not is_number(arg) or float(str(arg)) not in (1.0, -1.0):
            raise MongoError(ErrorCode.FailedToParse, f"$pop expects 1 or -1, found: {_short(arg)}")
    if op == "$pullAll" and not isinstance(arg, list):
        raise MongoError(
            ErrorCode.BadValue, f"$pullAll requires an array argument but was given a {bson_type_name(arg)}"
        )
    if op == "$currentDate":
        ok = isinstance(arg, bool) or (
            isinstance(arg, Mapping) and set(arg) == {"$type"} and arg["$type"] in ("date", "timestamp")
        )
        if not ok:
            if isinstance(arg, Mapping):
                raise MongoError(
                    ErrorCode.BadValue,
                    "The '$type' string field is required to be 'date' or 'timestamp': "
                    "{$currentDate: {field : {$type: 'date'}}}",
                )
            raise MongoError(
                ErrorCode.BadValue,
                f"{bson_type_name(arg)} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({{$type: 'timestamp/date'}}).",
            )
    if op == "$bit":
        if not isinstance(arg, Mapping) or not arg:
            raise MongoError(
                ErrorCode.BadValue,
                f"The $bit modifier is not compatible with a {bson_type_name(arg)}. You must pass in an embedded document: {{$bit: {{field: {{and/or/xor: #}}}}",
            )
        for how, mask in arg.items():
            if how not in ("and", "or", "xor"):
                raise MongoError(
                    ErrorCode.BadValue,
                    f"The $bit modifier only supports 'and', 'or', and 'xor', not '{how}' which is an unknown operator: {{{how}: {_short(mask)}}}",
                )
            if not (isinstance(mask, int) and not isinstance(mask, bool)):
                raise MongoError(
                    ErrorCode.BadValue,
                    f"The $bit modifier field must be an Integer(32/64 bit); a '{bson_type_name(mask)}' is not supported here: {{{how}: {_short(mask)}}}",
                )
    if op in ("$push", "$addToSet") and isinstance(arg, Mapping) and "$each" in arg:
        each = arg["$each"]
        if not isinstance(each, list):
            raise MongoError(
                ErrorCode.BadValue,
                f"The argument to $each in {op} must be an array but it was of type: {bson_type_name(each)}",
            )
        allowed = {"$each"} if op == "$addToSet" else {"$each", "$slice", "$sort", "$position"}
        for key in arg:
            if key not in allowed:
                if op == "$addToSet":
                    raise MongoError(
                        ErrorCode.BadValue,
                        f"Found unexpected fields after $each in $addToSet: {_short(dict(arg))}",
                    )
                raise MongoError(ErrorCode.BadValue, f"Unrecognized clause in $push: {key}")
        if op == "$push":
            _validate_push_modifiers(arg)


def _validate_push_modifiers(arg: Mapping) -> None:
    if "$slice" in arg:
        s = arg["$slice"]
        if not is_number(s) or float(str(s)) != int(float(str(s))):
            raise MongoError(
                ErrorCode.BadValue,
                f"The value for $slice must be an integer value but was given type: {bson_type_name(s)}",
            )
    if "$position" in arg:
        p = arg["$position"]
        if not is_number(p) or float(str(p)) != int(float(str(p))):
            raise MongoError(
                ErrorCode.BadValue,
                f"The value for $position must be an integer value, not of type: {bson_type_name(p)}",
            )
    if "$sort" in arg:
        s = arg["$sort"]
        if isinstance(s, Mapping):
            if not s:
                raise MongoError(
                    ErrorCode.BadValue, "The $sort pattern is empty when it should be a set of fields."
                )
            for v in s.values():
                if not is_number(v) or float(str(v)) not in (1.0, -1.0):
                    raise MongoError(ErrorCode.BadValue, "The $sort element value must be either 1 or -1")
        elif not is_number(s) or float(str(s)) not in (1.0, -1.0):
            raise MongoError(
                ErrorCode.BadValue,
                "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
            )


def _check_conflicts(actions: list[Action]) -> None:
    # After sorting by components, a path and any path under it are adjacent somewhere (everything
    # between them shares the prefix), so checking neighbours finds every conflict: O(n log n).
    entries = sorted(((a.parts, a.path) for a in actions), key=lambda e: e[0])
    for (p_parts, p_path), (q_parts, q_path) in zip(entries, entries[1:], strict=False):
        if q_parts[: len(p_parts)] == p_parts:
            _raise_conflict(actions, p_path, q_path)


def _raise_conflict(actions: list[Action], a: str, b: str) -> None:
    order = {x.path: i for i, x in reversed(list(enumerate(actions)))}
    first, second = sorted((a, b), key=lambda p: order.get(p, 0))
    shorter = a if len(a) <= len(b) else b
    raise MongoError(
        ErrorCode.ConflictingUpdateOperators,
        f"Updating the path '{second}' would create a conflict at '{shorter}'",
    )


def _filter_identifiers(flt: Mapping, idents: set) -> None:
    """The top-level names an array filter uses; ``$and``/``$or``/``$nor`` lend their children's."""
    for key, value in flt.items():
        if key in ("$and", "$or", "$nor"):
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, Mapping):
                        _filter_identifiers(child, idents)
            continue
        if key.startswith("$"):
            continue
        idents.add(key.split(".")[0])


def _parse_array_filters(filters: list, collation: Any = None, variables: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flt in filters:
        if not isinstance(flt, Mapping):
            raise MongoError(ErrorCode.TypeMismatch, "Each array filter must be an object")
        idents: set = set()
        _filter_identifiers(flt, idents)
        if not idents:
            raise MongoError(
                ErrorCode.FailedToParse,
                "Error parsing array filter :: caused by :: Cannot use an expression without a top-level field name in arrayFilters",
            )
        if len(idents) > 1:
            a, b = sorted(idents)[:2]
            raise MongoError(
                ErrorCode.FailedToParse,
                f"Error parsing array filter :: caused by :: Expected a single top-level field name, found '{a}' and '{b}'",
            )
        ident = idents.pop()
        if not _IDENTIFIER.match(ident):
            raise MongoError(
                ErrorCode.BadValue,
                "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric "
                f"string beginning with a lowercase letter, found '{ident}'",
            )
        if ident in out:
            raise MongoError(
                ErrorCode.FailedToParse,
                f"Found multiple array filters with the same top-level field name {ident}",
            )
        out[ident] = compile_filter(flt, collation=collation, variables=variables)
    return out
