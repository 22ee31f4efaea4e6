"""Parse and validate an update (operators, replacement or pipeline) before touching any document.

Validation mirrors mongod: unknown modifiers and empty operator objects -> 9 FailedToParse;
two operators touching the same path or a path and its prefix -> 40 ConflictingUpdateOperators;
$-prefixed fields in a replacement -> 52; arrayFilters problems -> 2/9. Document-dependent errors
(type mismatches, _id changes) are raised when the update is applied (``update_apply``).
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bson.decimal128 import Decimal128

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import compile_filter
from tidemark.query.pipeline import PipelineContext, is_stage, parse_pipeline
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import bson_type_name, is_number

__all__ = ["Update", "Action", "parse_update", "as_long", "OPERATORS", "PIPELINE_STAGES"]

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
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
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
    variables: dict | None = None  # the command's let variables and NOW (pipelines, the filters' $$vars)
    # '$''s compiled query conjuncts, built for the first document and reused for the statement's others:
    # (the query they came from, update._PositionalResolver's list)
    positional: Any = None
    # applied by oplog application (applyOps): what it stores is not validated for storage (mongod's
    # UpdateStage for a fromOplogApplication request: no $-prefixed name or nesting rule)
    from_oplog: bool = False


def _short(v: Any) -> str:
    return bson_repr(v)


def parse_update(update: Any, *, array_filters: list | None = None, collation: Any = None,
                 variables: dict | None = None, from_oplog: bool = False) -> Update:
    """Validate ``update`` (a dict or a pipeline list); raises MongoError as mongod would.

    ``collation`` (``collation.Collation`` or None) and ``variables`` (the command's evaluated
    ``let`` plus NOW) are bound once here, for every document the update is applied to.
    ``from_oplog``: an applyOps entry's update (``Update.from_oplog``; a replacement may then hold
    ``$``-prefixed names)."""
    if isinstance(update, list):
        return _parse_pipeline(update, array_filters, collation, variables)
    if not isinstance(update, Mapping):
        raise MongoError(ErrorCode.FailedToParse, "Update argument must be either an object or an array")
    if not update or not next(iter(update)).startswith("$"):
        if array_filters:  # validated first (their own errors win); a replacement then ignores them,
            _parse_array_filters(array_filters, collation, variables)  # as mongod's ObjectReplaceExecutor
        return _parse_replacement(update, from_oplog)
    filters = _parse_array_filters(array_filters or [], collation, variables)
    actions: list[Action] = []
    tree = _UpdateTree(filters)
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
        # an empty operand ({$set: {}}) is a no-op since MongoDB 5.0 (verify_update_mods.js)
        for path, arg in fields.items():
            parts = _validate_path(path, op)
            if op == "$rename":  # a placeholder at the source first, then the rename at the target
                tree.merge(path, parts)
                _validate_rename_target(path, arg)
                target = _validate_path(arg, op)
                _validate_arg(op, path, arg)
                tree.merge(arg, target)
                actions += (Action(op, path, parts, arg), Action("$rename-target", arg, target, path))
            else:
                _validate_arg(op, path, arg)
                tree.merge(path, parts)
                actions.append(Action(op, path, parts, arg))
    used = tree.used
    for ident in filters:
        if ident not in used:
            raise MongoError(
                ErrorCode.FailedToParse,
                f"The array filter for identifier '{ident}' was not used in the update {_short(update)}",
            )
    return Update("operators", actions=actions, array_filters=filters, raw=update, collation=collation,
                  variables=variables, from_oplog=from_oplog)


def _parse_replacement(update: Mapping, from_oplog: bool = False) -> Update:
    for key in update if not from_oplog else ():
        if key.startswith("$"):
            raise MongoError(
                ErrorCode.DollarPrefixedFieldName,
                f"The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of an update's "
                "replacement document. Consider using an aggregation pipeline with $replaceWith.",
            )
    return Update("replacement", replacement=dict(update), raw=update, from_oplog=from_oplog)


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
    if type(path) is not str or path == "":
        raise MongoError(ErrorCode.EmptyFieldName, "An empty update path is not valid.")
    parts = tuple(path.split("."))
    for part in parts:
        if part == "":
            raise MongoError(
                ErrorCode.EmptyFieldName,
                f"The update path '{path}' contains an empty field name, which is not allowed.",
            )
    # mongod's UpdateObjectNode::parseAndMerge: one positional at most, never first; nor an array
    # update first (there is no array above the document).
    if "$" in parts:
        if parts.count("$") > 1:
            raise MongoError(ErrorCode.BadValue, f"Too many positional (i.e. '$') elements found in path '{path}'")
        if parts[0] == "$":
            raise MongoError(
                ErrorCode.BadValue, f"Cannot have positional (i.e. '$') element in the first position in path '{path}'"
            )
    return parts


def _validate_rename_target(path: str, arg: Any) -> None:
    if type(arg) is not str:
        raise MongoError(ErrorCode.BadValue, f"The 'to' field for $rename must be a string: {path}: {_short(arg)}")


def _validate_arg(op: str, path: str, arg: Any) -> None:
    if op in ("$inc", "$mul") and not is_number(arg):
        verb = "increment" if op == "$inc" else "multiply"
        raise MongoError(
            ErrorCode.TypeMismatch, f"Cannot {verb} with non-numeric argument: {{{path}: {_short(arg)}}}"
        )
    if op == "$rename":  # (RenameNode::init, after the target's path checks)
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
            # mongod's RenameNode::init: a positional '$' or an array update ('$[]', '$[id]') is
            # dynamic; another '$'-prefixed name ('$b', 'b.$c') is a field like any other
            if any(c == "$" or (c.startswith("$[") and c.endswith("]")) for c in p.split(".")):
                raise MongoError(ErrorCode.BadValue, f"The {which} field for $rename may not be dynamic: {p}")
    if op == "$pop":
        n = _integer_arg(path, arg)
        if n not in (1, -1):
            raise MongoError(ErrorCode.FailedToParse, f"$pop expects 1 or -1, found: {n}")
    if op == "$pull":
        _check_pull_condition(arg)
    if op == "$pullAll" and not isinstance(arg, list):
        raise MongoError(
            ErrorCode.BadValue, f"$pullAll requires an array argument but was given a {bson_type_name(arg)}"
        )
    if op == "$currentDate":
        if isinstance(arg, Mapping):
            for key in arg:  # mongod's CurrentDateNode: options in order, then a valid $type
                if key != "$type":
                    raise MongoError(ErrorCode.BadValue, f"Unrecognized $currentDate option: {key}")
            if arg.get("$type") not in ("date", "timestamp"):
                raise MongoError(
                    ErrorCode.BadValue,
                    "The '$type' string field is required to be 'date' or 'timestamp': "
                    "{$currentDate: {field : {$type: 'date'}}}",
                )
        elif not isinstance(arg, bool):
            raise MongoError(
                ErrorCode.BadValue,
                f"{bson_type_name(arg)} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({{$type: 'timestamp/date'}}).",
            )
    if op == "$bit":
        if not isinstance(arg, Mapping):
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
        if not arg:
            raise MongoError(
                ErrorCode.BadValue,
                "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}",
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


def as_long(v: Any) -> int | None:
    """``v`` as a 64-bit integer when it is a number of integral value in range (mongod's
    parseIntegerElementToLong: 2.0 counts, 2.5, NaN, ±inf and 2**63 do not); else None."""
    if isinstance(v, bool) or not is_number(v):
        return None
    if isinstance(v, int):
        return int(v)
    d = v.to_decimal() if isinstance(v, Decimal128) else decimal.Decimal(v)
    if not d.is_finite() or d != d.to_integral_value():
        return None
    n = int(d)
    return n if _LONG_MIN <= n <= _LONG_MAX else None


def _integer_arg(path: str, v: Any) -> int:
    """mongod's parseIntegerElementToLong with its messages (9): a number of integral value that
    fits in 64 bits; the element shows as ``path: value``."""
    elem = f"{path}: {_short(v)}"
    if isinstance(v, bool) or not is_number(v):
        raise MongoError(ErrorCode.FailedToParse, f"Expected a number in: {elem}")
    if isinstance(v, float) and v != v:
        raise MongoError(ErrorCode.FailedToParse, f"Expected an integer, but found NaN in: {elem}")
    n = as_long(v)
    if n is None:
        in_range = isinstance(v, float) and -(2.0**63) <= v < 2.0**63
        raise MongoError(ErrorCode.FailedToParse,
                         f"Expected an integer: {elem}" if in_range else f"Cannot represent as a 64-bit integer: {elem}")
    return n


def _validate_push_modifiers(arg: Mapping) -> None:
    if "$slice" in arg:
        s = arg["$slice"]
        if as_long(s) is None:
            raise MongoError(
                ErrorCode.BadValue,
                f"The value for $slice must be an integer value but was given type: {bson_type_name(s)}",
            )
    if "$sort" in arg:
        s = arg["$sort"]
        if isinstance(s, Mapping):
            if not s:
                raise MongoError(
                    ErrorCode.BadValue, "The $sort pattern is empty when it should be a set of fields."
                )
            for k, v in s.items():
                if not is_number(v) or float(str(v)) not in (1.0, -1.0):
                    raise MongoError(ErrorCode.BadValue, "The $sort element value must be either 1 or -1")
                if k == "":
                    raise MongoError(ErrorCode.BadValue, "The $sort field cannot be empty")
                if "" in k.split("."):
                    raise MongoError(
                        ErrorCode.BadValue, f"The $sort field is a dotted field but has an empty part: {k}"
                    )
        elif not is_number(s):
            raise MongoError(
                ErrorCode.BadValue,
                "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
            )
        elif float(str(s)) not in (1.0, -1.0):
            raise MongoError(ErrorCode.BadValue, "The $sort element value must be either 1 or -1")
    if "$position" in arg:  # mongod parses $each, $slice, $sort, then $position
        p = arg["$position"]
        if as_long(p) is None:
            raise MongoError(
                ErrorCode.BadValue,
                f"The value for $position must be an integer value, not of type: {bson_type_name(p)}",
            )


def _is_array_update(part: str) -> bool:
    return part.startswith("$[") and part.endswith("]")


_LEAF = object()  # an operation's node in _UpdateTree


class _UpdateTree:
    """mongod's update tree as the parse builds it (UpdateObjectNode::parseAndMerge), one path at a time
    in the update's order, for what the building refuses, when it meets it: an array update
    (``$[]``/``$[id]``) first in a path or naming no filter (2), and a path that meets another's
    operation or the other kind of node (array updates and fields never share a parent): 40 naming
    this path and where. ``used``: the filter identifiers met."""

    def __init__(self, filters: Mapping):
        self.filters = filters
        self.used: set[str] = set()
        self.root: dict = {}  # name -> _LEAF | (is_array_node, children)

    def merge(self, path: str, parts: tuple[str, ...]) -> None:
        node = self.root
        last = len(parts) - 1
        for i, part in enumerate(parts):
            name = part
            if _is_array_update(part):
                if i == 0:
                    raise MongoError(ErrorCode.BadValue, "Cannot have array filter identifier (i.e. '$[<id>]') "
                                                         f"element in the first position in path '{path}'")
                name = part[2:-1]
                if name and name not in self.filters:
                    raise MongoError(ErrorCode.BadValue,
                                     f"No array filter found for identifier '{name}' in path '{path}'")
                if name:
                    self.used.add(name)
            child = node.get(name)
            if i == last:
                if child is not None:
                    self._conflict(path, path)
                node[name] = _LEAF
                return
            array_node = _is_array_update(parts[i + 1])
            if child is None:
                child = node[name] = (array_node, {})
            elif child is _LEAF or child[0] != array_node:
                self._conflict(path, ".".join(parts[: i + 1]))
            node = child[1]

    @staticmethod
    def _conflict(path: str, at: str) -> None:
        raise MongoError(ErrorCode.ConflictingUpdateOperators,
                         f"Updating the path '{path}' would create a conflict at '{at}'")


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


# mongod parses array filters and $pull conditions with every special feature banned
# (kBanAllSpecialFeatures): the operator -> (code, message) it answers. Array filters prefix it
# "Error parsing array filter :: caused by :: "; a $pull condition answers it as is.
_BANNED_TOP = {
    "$text": (ErrorCode.BadValue, "$text is not allowed in this context"),
    "$where": (ErrorCode.BadValue, "$where is not allowed in this context"),
    "$expr": (ErrorCode.QueryFeatureNotAllowed, "$expr is not allowed in this context"),
    "$jsonSchema": (ErrorCode.QueryFeatureNotAllowed, "$jsonSchema is not allowed in this context"),
}
# Inside an $elemMatch object mongod's parser checks the level before the feature for these two.
_SUB_DOCUMENT_ONLY = {
    "$text": (ErrorCode.BadValue, "$text can only be applied to the top-level document"),
    "$expr": (ErrorCode.BadValue, "$expr can only be applied to the top-level document"),
}
_BANNED_NEAR = frozenset({"$near", "$nearSphere", "$geoNear"})
_NEAR_MESSAGE = "$geoNear, $near, and $nearSphere are not allowed in this context"


def check_banned_features(flt: Mapping, prefix: str = "", *, top_level: bool = True) -> None:
    """Refuse the special features a filter parsed with kBanAllSpecialFeatures may not use, in
    document order (the first one the parser meets wins): ``$text``/``$where``/``$expr``/
    ``$jsonSchema`` at the filter's level (also under ``$and``/``$or``/``$nor`` and in an
    ``$elemMatch`` object, where ``$expr``/``$text`` are refused for their level first) and the
    near operators in a field. ``prefix`` goes before mongod's message."""
    for key, value in flt.items():
        banned = None if top_level else _SUB_DOCUMENT_ONLY.get(key)
        banned = banned or _BANNED_TOP.get(key)
        if banned is not None:
            raise MongoError(banned[0], f"{prefix}{banned[1]}")
        if key in ("$and", "$or", "$nor"):
            for child in value if isinstance(value, list) else ():
                if isinstance(child, Mapping):
                    check_banned_features(child, prefix, top_level=top_level)
        elif not key.startswith("$") and isinstance(value, Mapping):
            check_banned_operators(value, prefix)


def check_banned_operators(ops: Mapping, prefix: str = "") -> None:
    """``check_banned_features`` for the operators of one path (``{$near: ...}``, ``{$elemMatch: ...}``)."""
    for op, arg in ops.items():
        if op in _BANNED_NEAR:
            raise MongoError(ErrorCode.BadValue, f"{prefix}{_NEAR_MESSAGE}")
        if op == "$elemMatch" and isinstance(arg, Mapping):
            check_banned_features(arg, prefix, top_level=False)
        elif op == "$not" and isinstance(arg, Mapping):
            check_banned_operators(arg, prefix)


_ARRAY_FILTER_ERROR = "Error parsing array filter :: caused by :: "

# Operators that start a whole filter rather than a condition on a value: mongod's PullNode parses a
# $pull condition led by one of them (or by a field name) as a filter over each document element
# (its ObjectMatcher), any other as a condition on the element itself (its WrappedObjectMatcher).
PULL_FILTER_LEVEL_OPS = frozenset({"$and", "$or", "$nor", "$expr", "$jsonSchema", "$comment", "$alwaysTrue",
                                   "$alwaysFalse", "$where", "$text"})


def _check_pull_condition(cond: Any) -> None:
    """A $pull condition is parsed with the update, with every special feature banned (mongod's
    PullNode::init): ``{$pull: {a: {$expr: ...}}}`` is 224 before any document is read."""
    if not isinstance(cond, Mapping) or not cond:
        return
    first = next(iter(cond))
    if first.startswith("$") and first not in PULL_FILTER_LEVEL_OPS:
        check_banned_operators(cond)
    else:
        check_banned_features(cond)


def _parse_array_filters(filters: list, collation: Any = None, variables: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flt in filters:
        if not isinstance(flt, Mapping):
            raise MongoError(ErrorCode.TypeMismatch, "Each array filter must be an object")
        check_banned_features(flt, _ARRAY_FILTER_ERROR)
        try:  # mongod parses the filter first: its errors win over the identifier checks below
            compiled = compile_filter(flt, collation=collation, variables=variables)
        except MongoError as exc:
            raise MongoError(exc.code, f"Error parsing array filter :: caused by :: {exc.message}") from None
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
        out[ident] = compiled
    return out
