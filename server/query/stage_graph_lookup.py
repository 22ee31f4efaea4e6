"""``$graphLookup``: a breadth-first search over a collection of the same database (pure; the
foreign documents come from ``ctx.query_collection``).

For each input document, ``startWith`` (an expression; an array is several starting values; a
missing value starts nothing) seeds the frontier. Each round queries the ``from`` collection with
``{connectToField: {$in: frontier}}`` (so an index on connectToField is used), keeps the documents
that pass ``restrictSearchWithMatch`` (compiled with the pipeline's variables, so it may read an
enclosing $lookup's ``let``) and were not seen before (by ``_id``; 40271 when a document has none)
with their round number in ``depthField`` (a long), and puts the ``connectFromField`` values of the
new documents (arrays give each element; a missing field gives nothing) into the next frontier.
Values already queried are not queried again, so cycles end; ``maxDepth`` n stops after round n
(0: only direct matches). The found documents go into the ``as`` array in discovery order. Values
match under the pipeline's collation (not the foreign collection's default one).

Limits like mongod: the documents found plus the frontier may not exceed the memory limit (100 MB;
40099 "$graphLookup reached maximum memory consumption"), and every round checks the read's
deadline (maxTimeMS).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expressions import compile_expression
from tidemark.query.match import compile_filter
from tidemark.query.match_parse import where_not_allowed
from tidemark.query.paths import get_path_values
from tidemark.query.pipeline import NEAR_NOT_ALLOWED, PipelineContext, Stage, has_near
from tidemark.query.sort import estimate_size
from tidemark.query.stage_group import group_key
from tidemark.query.stage_lookup import valid_collection_name
from tidemark.query.stages import set_nested_field
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, bson_type_name, is_number, to_float

_STRING_ARGS = ("from", "as", "connectFromField", "connectToField", "depthField")


def _field_path(name: str, value: str) -> list[str]:
    if value.startswith("$"):
        raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
    parts = value.split(".")
    if value == "" or any(p == "" for p in parts):
        raise MongoError(15998 if value else 40352, "FieldPath field names may not be empty strings."
                         if value else "FieldPath cannot be constructed with empty string")
    return parts


def _refuse_special(filter: dict) -> None:
    """$text and $near have no place in restrictSearchWithMatch (mongod parses it with no special
    features: BadValue, 5626500), wherever they sit among the logical operators."""
    if has_near(filter):
        raise MongoError(5626500, NEAR_NOT_ALLOWED)
    for k, v in filter.items():
        if k == "$text":
            raise MongoError(ErrorCode.BadValue, "$text is not allowed in this context")
        if k in ("$and", "$or", "$nor") and isinstance(v, list):
            for sub in v:
                if isinstance(sub, dict):
                    _refuse_special(sub)


def _render(spec: dict) -> str:
    return bson_repr(spec)


def parse_graph_lookup(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse, "the $graphLookup stage specification must be an object, but "
                                                  f"found {bson_type_name(spec)}")
    if "from" not in spec:
        raise MongoError(ErrorCode.FailedToParse,
                         f"missing 'from' option to $graphLookup stage specification: {_render(spec)}")
    # mongod's first pass (LiteParsed) resolves 'from' before the arguments are parsed one by one.
    target = spec["from"]
    if isinstance(target, dict):
        db, coll = target.get("db"), target.get("coll")
        raise MongoError(ErrorCode.FailedToParse, "$graphLookup with syntax {from: {db:<>, coll:<>},..} is not "
                                                  f"supported for db: {db if type(db) is str else ''} and coll: "
                                                  f"{coll if type(coll) is str else ''}")
    if type(target) is not str:
        raise MongoError(ErrorCode.FailedToParse,
                         f"$graphLookup 'from' field must be a string, but found {bson_type_name(target)}")
    if not valid_collection_name(target):
        raise MongoError(ErrorCode.InvalidNamespace, f"invalid $graphLookup namespace: {ctx.db}.{target}")
    args: dict[str, Any] = {}
    start_with = None
    max_depth = None
    restrict_pred: Callable[[dict], Any] | None = None
    for name, value in spec.items():
        if name == "startWith":
            start_with = compile_expression(value)
        elif name == "maxDepth":
            if not is_number(value):
                raise MongoError(40100, f"maxDepth must be numeric, found type: {bson_type_name(value)}")
            number = to_float(value)
            if number != number:
                number = 0.0
            max_depth = int(number) if abs(number) < 2**63 else (2**63 - 1 if number > 0 else -(2**63))
            if max_depth < 0:
                raise MongoError(40101, f"maxDepth requires a nonnegative argument, found: {max_depth}")
            if max_depth != number:
                raise MongoError(40102, f"maxDepth could not be represented as a long long: {max_depth}")
        elif name == "restrictSearchWithMatch":
            if not isinstance(value, dict):
                raise MongoError(40185, f"restrictSearchWithMatch must be an object, found {bson_type_name(value)}")
            try:
                _refuse_special(value)
                with where_not_allowed():
                    # Compiled with the pipeline's variables: $expr may read an enclosing $lookup's 'let'.
                    restrict_pred = compile_filter(value, variables=ctx.variables, collation=ctx.collation)
            except MongoError as e:
                raise MongoError(e.code, f"Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: "
                                         f"caused by :: {e.message}") from None
        elif name in _STRING_ARGS:
            if type(value) is not str:
                raise MongoError(40103, f"expected string as argument for {name}, found: {bson_type_name(value)}")
            args[name] = value
        else:
            raise MongoError(40104, f"Unknown argument to $graphLookup: {name}")
    if not args.get("from") or not args.get("as") or start_with is None or not args.get("connectFromField") \
            or not args.get("connectToField"):
        raise MongoError(40105, "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and "
                                "'connectToField' to be specified.")
    search = _Search(ctx, args["from"], _field_path("as", args["as"]),
                     ".".join(_field_path("connectFromField", args["connectFromField"])),
                     ".".join(_field_path("connectToField", args["connectToField"])),
                     _field_path("depthField", args["depthField"]) if "depthField" in args else None,
                     max_depth, restrict_pred)

    def apply(docs):
        for doc in docs:
            found = search.run(start_with(doc, ctx.variables))
            yield set_nested_field(doc, search.as_parts, found)

    return Stage("$graphLookup", spec, apply)


class _Search:
    def __init__(self, ctx: PipelineContext, coll: str, as_parts: list[str], connect_from: str, connect_to: str,
                 depth_parts: list[str] | None, max_depth: int | None, restrict: Callable[[dict], Any] | None):
        self.ctx = ctx
        self.coll = coll
        self.as_parts = as_parts
        self.connect_from = connect_from
        self.connect_to = connect_to
        self.depth_parts = depth_parts
        self.max_depth = max_depth
        self.restrict = restrict

    def _query(self, values: list) -> Any:
        query: dict = {self.connect_to: {"$in": values}}
        if any(v is None for v in values):  # null in $in also matches a missing field: mongod excludes it
            query = {"$and": [query, {self.connect_to: {"$exists": True}}]}
        ctx = self.ctx
        # mongod matches connectFromField and connectToField values under the pipeline's collation:
        # the query callback runs the query under it (an index of that collation serves the $in), and
        # its answer is checked again here (the seam's contract: a callback may answer more loosely);
        # without the callback (pure use) the collection is filtered here.
        found: Any
        if ctx.query_collection is not None:
            matches_query: Callable[[dict], Any] = compile_filter(query, collation=ctx.collation)
            found = filter(matches_query, ctx.query_collection(cast(str, ctx.db), self.coll, {"$match": query}, None))
        elif ctx.resolve_collection is None:
            raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$graphLookup is not supported here")
        else:
            matches: Callable[[dict], Any] = compile_filter(query, collation=ctx.collation)
            found = filter(matches, ctx.resolve_collection(cast(str, ctx.db), self.coll))  # runs in a database
        # restrictSearchWithMatch is applied here rather than sent with the query: it may read the
        # pipeline's variables, which the query callback does not know (the index serves $in).
        return found if self.restrict is None else filter(self.restrict, found)

    def run(self, start: Any) -> list[dict]:
        limit = self.ctx.memory_limit
        frontier: dict = {}
        for v in (start if isinstance(start, list) else [start]):
            if v is not MISSING:  # a missing start (or element) looks nothing up, not null
                frontier.setdefault(group_key(v), v)
        queried: set = set()
        visited: dict = {}
        used = 0
        depth = 0
        while frontier and (self.max_depth is None or depth <= self.max_depth):
            if self.ctx.deadline is not None:
                self.ctx.deadline()
            queried.update(frontier)
            values = list(frontier.values())
            frontier = {}
            for fdoc in self._query(values):
                if "_id" not in fdoc:
                    raise MongoError(40271, f"Documents in the '{self.ctx.db}.{self.coll}' namespace must contain an "
                                            "_id for de-duplication in $graphLookup")
                key = group_key(fdoc["_id"])
                if key in visited:
                    continue
                out = dict(fdoc)
                if self.depth_parts is not None:
                    out = set_nested_field(out, self.depth_parts, Int64(depth))
                visited[key] = out
                used += estimate_size(out)
                for v in get_path_values(fdoc, self.connect_from, expand_arrays=True):
                    if v is MISSING:  # a missing connectFromField ends the path there (mongod's visitAllValuesAtPath)
                        continue
                    k = group_key(v)
                    if k not in queried and k not in frontier:
                        frontier[k] = v
                        used += 16
                if used >= limit:
                    raise MongoError(40099, "$graphLookup reached maximum memory consumption")
            depth += 1
        return list(visited.values())


STAGES = {"$graphLookup": parse_graph_lookup}
