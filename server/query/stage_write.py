"""The writing stages: ``$out`` and ``$merge`` parsed and validated here (mongod's parse-time codes);
the writes themselves are the context's ``write_out`` / ``merge_into`` callbacks (server side:
``server/write_stages.py``, ``server/collections.py``)."""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.pipeline import PipelineContext, Stage
from tidemark.query.stages import _need
from tidemark.query.values import MISSING


def parse_out(spec: Any, ctx: PipelineContext) -> Stage:
    if type(spec) is str:
        if not spec:
            raise MongoError(ErrorCode.InvalidNamespace, "Invalid $out target namespace, ")
    elif isinstance(spec, dict):
        if "coll" not in spec or type(spec["coll"]) is not str:
            raise MongoError(ErrorCode.FailedToParse, "BSON field '$out.coll' is missing but a required field")
        for k in spec:
            if k not in ("db", "coll", "timeseries"):
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$out.{k}' is an unknown field.")
    else:
        raise MongoError(16990, f"$out only supports a string or object argument, but found {type_name(spec)}")
    write = ctx.write_out

    def apply(docs):  # a generator: the write happens when the cursor is first pulled, not at build time
        _need(write, "$out")(spec, docs)
        yield from ()
    return Stage("$out", spec, apply, blocking=True)


_WHEN_MATCHED = ("replace", "keepExisting", "merge", "fail")
_WHEN_NOT_MATCHED = ("insert", "discard", "fail")
# mongod's merge strategy table (document_source_merge.cpp getDescriptors): the (whenMatched,
# whenNotMatched) pairs it has a strategy for, and the actions each needs on the target (a strategy that
# may insert needs insert, one that may change a document needs update; whenMatched: fail only inserts).
MERGE_MODES: dict[tuple[str, str], tuple[str, ...]] = {
    ("replace", "insert"): ("insert", "update"), ("replace", "fail"): ("update",),
    ("replace", "discard"): ("update",), ("merge", "insert"): ("insert", "update"),
    ("merge", "fail"): ("update",), ("merge", "discard"): ("update",),
    ("keepExisting", "insert"): ("insert", "update"), ("fail", "insert"): ("insert",),
    ("pipeline", "insert"): ("insert", "update"), ("pipeline", "fail"): ("update",),
    ("pipeline", "discard"): ("update",),
}


def merge_options(spec: Any) -> dict:
    """A $merge spec validated as mongod's parser does: ``{into, db, on: [paths], whenMatched,
    whenNotMatched}`` (``db`` None for the current database; ``whenMatched`` "pipeline" for an array)."""
    if type(spec) is not str and not isinstance(spec, dict):
        raise MongoError(51182, f"$merge only supports a string or object argument, not {type_name(spec)}")
    if isinstance(spec, str):  # (a JavaScript value was refused above)
        return {"into": spec, "db": None, "on": ["_id"], "whenMatched": "merge", "whenNotMatched": "insert"}
    for k in spec:
        if k not in ("into", "on", "let", "whenMatched", "whenNotMatched"):
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$merge.{k}' is an unknown field.")
    if "into" not in spec:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field '$merge.into' is missing but a required field")
    into = spec["into"]
    db = None
    if type(into) is str:
        if not into:
            raise MongoError(5786800, "$merge 'into' field cannot be an empty string")
    elif isinstance(into, dict):
        for k, v in into.items():
            if k not in ("db", "coll"):
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'into.{k}' is an unknown field.")
            if type(v) is not str and v is not None:
                raise MongoError(ErrorCode.TypeMismatch,
                                 f"BSON field 'into.{k}' is the wrong type '{type_name(v)}', expected type 'string'")
        db, into = into.get("db") or None, into.get("coll")
        if not into:
            raise MongoError(5786801, "$merge 'into' field must specify a 'coll' that is not empty, null or undefined")
    else:
        raise MongoError(51178, f"$merge 'into' field  must be either a string or an object, but found {type_name(into)}")
    on = spec.get("on", MISSING)
    if on is MISSING:
        on_fields = ["_id"]
    elif type(on) is str:
        on_fields = [on]
    elif isinstance(on, list):
        on_fields = []
        for f in on:
            if type(f) is not str:
                raise MongoError(51134, f"$merge 'on' array elements must be strings, but found {type_name(f)}")
            if f in on_fields:
                raise MongoError(31465, f"Found a duplicate field '{f}'")
            on_fields.append(f)
        if not on_fields:
            raise MongoError(51187, "If explicitly specifying $merge 'on', must include at least one field")
    else:
        raise MongoError(51186, f"$merge 'on' field  must be either a string or an array of strings, but found "
                                f"{type_name(on)}")
    matched = spec.get("whenMatched", "merge")
    if isinstance(matched, list):
        matched = "pipeline"
    elif type(matched) is not str:
        raise MongoError(51191, f"$merge 'whenMatched' field  must be either a string or an array, but found "
                                f"{type_name(matched)}")
    elif matched not in _WHEN_MATCHED:
        raise MongoError(ErrorCode.BadValue, f"Enumeration value '{matched}' for field 'whenMatched' is not a valid value.")
    not_matched = spec.get("whenNotMatched", "insert")
    if not_matched not in _WHEN_NOT_MATCHED:
        raise MongoError(ErrorCode.BadValue,
                         f"Enumeration value '{not_matched}' for field 'whenNotMatched' is not a valid value.")
    if (matched, not_matched) not in MERGE_MODES:
        raise MongoError(51181, f"Combination of $merge modes 'whenMatched: {matched}' and 'whenNotMatched: "
                                f"{not_matched}' is not supported")
    if "let" in spec and matched != "pipeline":
        raise MongoError(51199, f"Cannot use 'let' variables with 'whenMatched: {matched}' mode")
    return {"into": into, "db": db, "on": on_fields, "whenMatched": matched, "whenNotMatched": not_matched}


def parse_merge(spec: Any, ctx: PipelineContext) -> Stage:
    merge_options(spec)
    merge = ctx.merge_into
    # the pipeline's collation (the aggregate's, else the source collection's default): the unique
    # index backing the ``on`` fields must have it (mongod's supportsUniqueKey: collatorsMatch)
    collation = ctx.collation

    def apply(docs):
        _need(merge, "$merge")(spec, docs, collation, ctx.variables)
        yield from ()
    return Stage("$merge", spec, apply, blocking=True)


STAGES = {
    "$out": parse_out,
    "$merge": parse_merge,
}
