"""``$currentOp``: the running operations as documents (first stage of ``aggregate: 1`` on admin).

The server hands the report in through ``PipelineContext.current_op(options) -> list[dict]``; this
module validates the options like mongod (FailedToParse for a non-object, a non-boolean or an unknown
option; 73 outside ``admin`` / ``aggregate: 1``).
"""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.pipeline import PipelineContext, Stage
from tidemark.query.values import bson_type_name

OPTIONS = ("allUsers", "idleConnections", "idleSessions", "localOps", "truncateOps", "idleCursors",
           "backtrace")


def parse_current_op(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse,
                         f"$currentOp options must be specified in an object, but found: {bson_type_name(spec)}")
    if ctx.db != "admin" or ctx.coll != "$cmd.aggregate":
        raise MongoError(ErrorCode.InvalidNamespace,
                         "$currentOp must be run against the 'admin' database with {aggregate: 1}")
    for name, value in spec.items():
        if name not in OPTIONS:
            raise MongoError(ErrorCode.FailedToParse, f"Unrecognized option '{name}' in $currentOp stage.")
        if not isinstance(value, bool):
            raise MongoError(ErrorCode.FailedToParse,
                             f"The '{name}' parameter of the $currentOp stage must be a boolean value, but "
                             f"found: {bson_type_name(value)}")
    current_op = ctx.current_op
    if current_op is None:
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$currentOp is not available in this context")
    options = dict(spec)

    def apply(docs):
        yield from current_op(options)
    return Stage("$currentOp", spec, apply)


STAGES = {"$currentOp": parse_current_op}
