"""Parse, then dispatch: the one parser of each write command's statements (insert, update, delete)
and of findAndModify's statement-like fields.

mongod parses a whole write batch with its IDL (write_ops.idl) before it looks at the target, so a
statement of the wrong *shape* — not an object, a required field missing, an unknown field, a field of
the wrong type, a delete ``limit`` other than 0/1, an update pipeline's stage that is not an object of
one field naming a known stage — fails the whole command (ok: 0, mongod's code and
message), whatever the collection's kind. The update and delete handlers call this parser first and
only then dispatch by kind; the regular and the time-series families both consume the statements it
returns (plain, well-shaped dicts). What only a statement's *meaning* rules out (an unknown update
operator, a bad filter, the time-series update rules) is found when a family compiles the statement,
and stays that statement's write error, as in mongod.

Fields are checked in document order (the first offending field is reported), required fields after
them, as mongod's generated parsers do.
"""

from __future__ import annotations

import threading
import time
from typing import Any, cast

from bson import Decimal128, Timestamp

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.framing import MAX_WRITE_BATCH_SIZE
from tidemark.protocol.messages import RawDocuments
from tidemark.query.expr_base import type_name
from tidemark.query.plan import check_hint_type

# mongod 7.0's UpdateOpEntry / DeleteOpEntry fields: anything else is 40415.
UPDATE_FIELDS = {"q", "u", "c", "arrayFilters", "hint", "multi", "upsert", "upsertSupplied", "collation",
                 "sampleId", "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery"}
DELETE_FIELDS = {"q", "limit", "hint", "collation", "sampleId"}
STATEMENT_FIELDS = {"updates": UPDATE_FIELDS, "deletes": DELETE_FIELDS}


def statements(cmd: dict, field: str, command: str) -> list:
    """The command's statement array (``documents``, ``updates``, ``deletes``): present (40414), an
    array (14) of 1 to 100,000 entries (16)."""
    if field not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         f"BSON field '{command}.{field}' is missing but a required field")
    items = cmd[field]
    if not isinstance(items, list | RawDocuments):  # RawDocuments: an insert's kind-1 documents, undecoded
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field '{command}.{field}' is the wrong type '{type_name(items)}', "
                         "expected type 'array'")
    if not items or len(items) > MAX_WRITE_BATCH_SIZE:
        raise MongoError(ErrorCode.InvalidLength,
                         f"Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}. Got {len(items)} operations.")
    return cast(list, items)  # an insert's RawDocuments are a sequence of its documents too


def write_flags(cmd: dict) -> tuple[bool, bool]:
    """The write commands' WriteCommandBase flags (their types checked by ``arguments.check_command``:
    ``ordered`` a bool, ``bypassDocumentValidation`` a safeBool; null is absent) as (ordered,
    bypassDocumentValidation)."""
    return cmd.get("ordered") is not False, safe_bool_value(cmd.get("bypassDocumentValidation"))


def safe_bool_value(value: Any) -> bool:
    """The truth of an IDL ``safeBool`` (checked by ``arguments.check_command``; None: absent, false), as mongod's
    ``BSONElement::trueValue``: a number is true unless zero (NaN is true)."""
    if isinstance(value, Decimal128):
        return bool(value.to_decimal())  # a Decimal128 itself is always truthy
    return bool(value)


def insert_documents(cmd: dict) -> list:
    """The ``documents`` of an insert command: objects (a kind-1 document sequence holds nothing else)."""
    items = statements(cmd, "documents", "insert")
    if isinstance(items, list):
        for i, doc in enumerate(items):
            if not isinstance(doc, dict):
                raise _wrong_type(f"insert.documents.{i}", doc, "object")
    return items


def update_statements(cmd: dict) -> list[dict]:
    """The ``updates`` of an update command, every one well-shaped (else the command's error)."""
    _let(cmd, "update")
    items = statements(cmd, "updates", "update")
    for i, st in enumerate(items):
        _statement(st, "update", "updates", i, _UPDATE_CHECKS, ("q", "u"))
    return items


def delete_statements(cmd: dict) -> list[dict]:
    """The ``deletes`` of a delete command, every one well-shaped (else the command's error)."""
    _let(cmd, "delete")
    items = statements(cmd, "deletes", "delete")
    for i, st in enumerate(items):
        _statement(st, "delete", "deletes", i, _DELETE_CHECKS, ("q", "limit"))
    return items


def check_find_and_modify(cmd: dict, command: str) -> None:
    """findAndModify's statement fields of a custom IDL type, checked like an update statement's
    before the dispatch, in document order (null: absent): ``update`` an object or a pipeline,
    ``hint``, ``arrayFilters``; then the option combinations mongod's ``validate`` refuses. (The
    plainly typed fields — objects, safeBools — are ``arguments.check_command``'s.)"""
    for name, value in cmd.items():
        check = _FIND_AND_MODIFY_CHECKS.get(name)
        if check is not None and value is not None:
            check(f"{command}.{name}", value)
    _check_find_and_modify_combination(cmd)


def _check_find_and_modify_combination(cmd: dict) -> None:
    """mongod's findAndModify ``validate``: the option combinations it refuses (9), in its order —
    remove beside an update, upsert, new or arrayFilters; arrayFilters with a pipeline update."""
    update = cmd.get("update")
    remove = safe_bool_value(cmd.get("remove"))
    if not remove and update is None:
        raise MongoError(ErrorCode.FailedToParse, "Either an update or remove=true must be specified")
    if remove:
        if update is not None:
            raise MongoError(ErrorCode.FailedToParse, "Cannot specify both an update and remove=true")
        if safe_bool_value(cmd.get("upsert")):
            raise MongoError(ErrorCode.FailedToParse, "Cannot specify both upsert=true and remove=true ")
        if safe_bool_value(cmd.get("new")):
            raise MongoError(ErrorCode.FailedToParse,
                             "Cannot specify both new=true and remove=true; 'remove' always returns the deleted "
                             "document")
        if cmd.get("arrayFilters") is not None:
            raise MongoError(ErrorCode.FailedToParse, "Cannot specify arrayFilters and remove=true")
    if isinstance(update, list) and cmd.get("arrayFilters") is not None:
        raise MongoError(ErrorCode.FailedToParse, "Cannot specify arrayFilters and a pipeline update")


def _let(cmd: dict, command: str) -> None:
    if cmd.get("let") is not None:
        _object(f"{command}.let", cmd["let"])


def _statement(st: Any, command: str, field: str, i: int, checks: dict, required: tuple[str, ...]) -> None:
    if not isinstance(st, dict):
        raise _wrong_type(f"{command}.{field}.{i}", st, "object")
    allowed = STATEMENT_FIELDS[field]
    for name, value in st.items():
        if name not in allowed:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{command}.{field}.{name}' is an unknown field.")
        check = checks.get(name)
        if check is not None:
            check(f"{command}.{field}.{name}", value)
    for name in required:
        if name not in st:
            raise MongoError(ErrorCode.IDLFailedToParse,
                             f"BSON field '{command}.{field}.{name}' is missing but a required field")


def _wrong_type(path: str, value: Any, expected: str) -> MongoError:
    return MongoError(ErrorCode.TypeMismatch,
                      f"BSON field '{path}' is the wrong type '{type_name(value)}', expected type '{expected}'")


def _object(path: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise _wrong_type(path, value, "object")


def _bool(path: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise _wrong_type(path, value, "bool")


def _array_of_objects(path: str, value: Any) -> None:
    if not isinstance(value, list):
        raise _wrong_type(path, value, "array")
    for j, item in enumerate(value):
        if not isinstance(item, dict):
            raise _wrong_type(f"{path}.{j}", item, "object")


def _update_modification(path: str, value: Any) -> None:
    if not isinstance(value, dict | list):
        raise MongoError(ErrorCode.FailedToParse, "Update argument must be either an object or an array")
    if isinstance(value, list):
        _update_pipeline_shape(value)


def _update_pipeline_shape(stages: list) -> None:
    """A pipeline-style update's stages as mongod reads them before it runs any statement (its
    UpdateModification parse, then the lite parse of the pipeline when it checks authorization): an
    element that is not an object, a stage of other than one field, or a stage name no aggregation
    knows fails the command. Which known stages an update allows is the statement's write error."""
    from tidemark.query.pipeline import is_stage  # the stage table: loaded on a pipeline update only

    for stage in stages:
        if not isinstance(stage, dict):
            raise MongoError(ErrorCode.TypeMismatch, "Each element of the 'pipeline' array must be an object")
    for stage in stages:
        if len(stage) != 1:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
        name = next(iter(stage))
        if not is_stage(name):
            raise MongoError(40324, f"Unrecognized pipeline stage name: '{name}'")


def _hint(path: str, value: Any) -> None:
    check_hint_type(value)


def delete_limit(value: Any) -> float:
    """A delete statement's ``limit`` as mongod reads it (``BSONElement::numberDouble``: a value of a
    non-numeric type — bool, string, null — is 0, a delete of every match); 0 or 1, else 9."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        return 0.0
    if isinstance(value, Decimal128):
        exact = value.to_decimal()
        limit = float("nan") if exact.is_nan() else float(exact)  # float() refuses a signaling NaN
    else:
        limit = float(value)
    if limit != 0 and limit != 1:
        # mongod streams the double with the default ostream format (6 significant digits: %g)
        raise MongoError(ErrorCode.FailedToParse, f"The limit field in delete objects must be 0 or 1. Got {limit:g}")
    return limit


def _limit(path: str, value: Any) -> None:
    delete_limit(value)


_UPDATE_CHECKS = {"q": _object, "u": _update_modification, "c": _object, "arrayFilters": _array_of_objects,
                  "hint": _hint, "multi": _bool, "upsert": _bool, "upsertSupplied": _bool, "collation": _object}
_DELETE_CHECKS = {"q": _object, "limit": _limit, "hint": _hint, "collation": _object}
_FIND_AND_MODIFY_CHECKS = {"update": _update_modification, "hint": _hint, "arrayFilters": _array_of_objects}


# --------------------------------------------------------------------------------------------------
# empty timestamps
# --------------------------------------------------------------------------------------------------

# mongod replaces a top-level Timestamp(0, 0) of an inserted document or of a replacement (not its
# _id, not a nested one, not one an update operator or a pipeline writes) with the next cluster time
# (jstests/core/empty_ts.js, ts1.js): strictly increasing values, the increment counting within a
# second. The clock is shared by every thread that prepares writes.
_EMPTY_TS = Timestamp(0, 0)
_clock_lock = threading.Lock()
_clock: tuple[int, int] = (0, 0)


def next_timestamp() -> Timestamp:
    """The next cluster time: (now, 1), or the last one's increment + 1 within the same second."""
    global _clock
    now = int(time.time())
    with _clock_lock:
        secs, inc = _clock
        _clock = (now, 1) if now > secs else (secs, inc + 1)
        return Timestamp(*_clock)


def fill_empty_timestamps(doc: dict) -> dict:
    """``doc`` with each top-level ``Timestamp(0, 0)`` but ``_id``'s replaced by the next cluster time
    (a new dict; ``doc`` itself when it holds none — the common case costs one pass over its values)."""
    for value in doc.values():
        if value.__class__ is Timestamp and value == _EMPTY_TS:
            break
    else:
        return doc
    return {k: next_timestamp() if k != "_id" and v.__class__ is Timestamp and v == _EMPTY_TS else v
            for k, v in doc.items()}


def fill_replacement_timestamps(update: Any) -> Any:
    """A replacement-style update (an object whose first field is not an operator) with its empty
    timestamps filled, as mongod's replacement executor does when it parses it; anything else as is."""
    if isinstance(update, dict) and not (update and str(next(iter(update))).startswith("$")):
        return fill_empty_timestamps(update)
    return update
