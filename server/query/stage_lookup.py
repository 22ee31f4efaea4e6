"""Stages that read other collections or fan out: $lookup (equality and pipeline forms), $unionWith,
$facet.

Foreign collections come from ``ctx.resolve_collection(db, coll)`` (the command layer resolves
views). The equality form scans the foreign collection once per execution and hashes it by
``foreignField``; the pipeline form re-parses its sub-pipeline per input document only when ``let``
binds variables (an uncorrelated sub-pipeline runs once and is reused).
"""

from __future__ import annotations

from typing import Any, cast

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name, validate_variable_name
from tidemark.query.expressions import compile_expression
from tidemark.query.interrupt import tick
from tidemark.query.memory import LOOKUP_LIMIT, approx_size
from tidemark.query.paths import get_path_values
from tidemark.query.pipeline import PipelineContext, Stage, chain, parse_pipeline
from tidemark.query.stage_group import group_key_for
from tidemark.query.stages import set_field
from tidemark.query.values import MISSING


def _foreign_source(ctx: PipelineContext, target: Any):
    if target is None:
        return iter(())
    if isinstance(target, dict):
        db, coll = target.get("db", ctx.db), target.get("coll")
        if not isinstance(db, str) or not isinstance(coll, str):
            raise MongoError(ErrorCode.FailedToParse, "$lookup 'from' must name a 'db' and a 'coll' as strings")
    else:
        db, coll = cast(str, ctx.db), target  # a pipeline that reads collections runs in a database
    if ctx.resolve_collection is None:
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "reading another collection is not supported in this context")
    return ctx.resolve_collection(db, coll)


def parse_lookup(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse, "the $lookup specification must be an Object")
    allowed = {"from", "as", "localField", "foreignField", "let", "pipeline"}
    for k in spec:
        if k not in allowed:
            raise MongoError(ErrorCode.FailedToParse, f"unknown argument to $lookup: {k}")
    if "as" not in spec or not isinstance(spec["as"], str):
        raise MongoError(ErrorCode.FailedToParse, "must specify 'as' field for a $lookup")
    for name in ("localField", "foreignField"):
        if name in spec and not isinstance(spec[name], str):
            raise MongoError(ErrorCode.FailedToParse, f"$lookup argument '{name}' must be a string, found "
                                                      f"{name}: {type_name(spec[name])}")
    if "pipeline" in spec and not isinstance(spec["pipeline"], list):
        raise MongoError(ErrorCode.FailedToParse,
                         f"$lookup argument 'pipeline' must be an array, is type {type_name(spec['pipeline'])}")
    if "from" in spec and not isinstance(spec["from"], str | dict):
        raise MongoError(ErrorCode.FailedToParse,
                         f"$lookup 'from' field must be a string or an object, but found {type_name(spec['from'])}")
    has_local, has_foreign = "localField" in spec, "foreignField" in spec
    if has_local != has_foreign:
        raise MongoError(ErrorCode.FailedToParse, "$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
    if "pipeline" not in spec and not has_local:
        raise MongoError(ErrorCode.FailedToParse, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
    if "let" in spec and "pipeline" not in spec:
        raise MongoError(ErrorCode.FailedToParse, "$lookup with 'let' must also specify 'pipeline'")
    if "from" not in spec and not (spec.get("pipeline") and isinstance(spec["pipeline"][0], dict)
                                   and "$documents" in spec["pipeline"][0]):
        raise MongoError(ErrorCode.FailedToParse, "must specify 'from' field for a $lookup")
    as_parts = spec["as"].split(".")
    target = spec.get("from")
    local_path: Any = spec.get("localField")
    foreign_path: Any = spec.get("foreignField")
    let = spec.get("let", {})
    if not isinstance(let, dict):
        raise MongoError(ErrorCode.FailedToParse, "$lookup argument 'let' must be an object")
    for name in let:
        validate_variable_name(name)
    let_fns = [(name, compile_expression(expr, collation=ctx.collation)) for name, expr in let.items()]
    group_key = group_key_for(ctx.collation)  # local/foreign equality under the pipeline's collation
    sub = spec.get("pipeline")
    if sub is not None:
        sub_ctx = ctx.child(in_lookup=True, variables={**ctx.variables, **{n: None for n in let}})
        parse_pipeline(sub, sub_ctx)  # validate now; correlated pipelines re-parse with real values

    def local_keys(doc):
        vals = get_path_values(doc, local_path, expand_arrays=True)
        keys = [group_key(v) for v in vals if type(v) is not list] or [None]
        return keys

    foreign_name = target.get("coll") if isinstance(target, dict) else target

    def collect(matched) -> list:
        """The documents of one input document's ``as`` array, refused past 100 MB (mongod's 4568)
        while they are gathered, not after."""
        out, size = [], 0
        for d in matched:
            tick()
            size += approx_size(d, LOOKUP_LIMIT)
            if size > LOOKUP_LIMIT:
                raise MongoError(4568, f"Total size of documents in {foreign_name} matching pipeline's $lookup "
                                       f"stage exceeds {LOOKUP_LIMIT} bytes")
            out.append(d)
        return out

    def apply(docs):
        index: dict[Any, list[dict]] | None = None
        uncorrelated = None
        for doc in docs:
            candidates = None
            if local_path is not None:
                if index is None:
                    index = {}
                    for fdoc in _foreign_source(ctx, target):
                        fvals = get_path_values(fdoc, foreign_path, expand_arrays=True) or [MISSING]
                        seen = set()
                        for v in fvals:
                            if type(v) is list:
                                continue
                            k = group_key(v)
                            if k not in seen:
                                seen.add(k)
                                index.setdefault(k, []).append(fdoc)
                keys = local_keys(doc)
                matched, seen_ids = [], set()
                for k in keys:
                    for fdoc in index.get(k, ()):
                        if id(fdoc) not in seen_ids:
                            seen_ids.add(id(fdoc))
                            matched.append(fdoc)
                candidates = matched
            if sub is None:
                result = collect(candidates)
            elif not let_fns:
                if candidates is not None:
                    result = collect(chain(parse_pipeline(sub, ctx.child(in_lookup=True)), iter(candidates)))
                else:
                    if uncorrelated is None:
                        uncorrelated = collect(chain(parse_pipeline(sub, ctx.child(in_lookup=True)),
                                                     _foreign_source(ctx, target)))
                    result = [dict(d) for d in uncorrelated]
            else:
                variables = {**ctx.variables, **{n: _none_if_missing(f(doc, ctx.variables)) for n, f in let_fns}}
                stages = parse_pipeline(sub, ctx.child(in_lookup=True, variables=variables))
                source = iter(candidates) if candidates is not None else _foreign_source(ctx, target)
                result = collect(chain(stages, source))
            yield set_field(doc, as_parts, result)
    return Stage("$lookup", spec, apply)


def _none_if_missing(v):
    return None if v is MISSING else v


def parse_union_with(spec: Any, ctx: PipelineContext) -> Stage:
    target: str | None
    if isinstance(spec, str):
        target, sub = spec, []
    elif isinstance(spec, dict):
        for k in spec:
            if k not in ("coll", "pipeline"):
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$unionWith.{k}' is an unknown field.")
        if "coll" not in spec and not spec.get("pipeline"):
            raise MongoError(ErrorCode.FailedToParse, "$unionWith requires a 'coll' or a 'pipeline' starting with $documents")
        target, sub = spec.get("coll"), spec.get("pipeline", [])
        if target is not None and not isinstance(target, str):
            raise MongoError(ErrorCode.TypeMismatch,
                             f"BSON field '$unionWith.coll' is the wrong type '{type_name(target)}', expected type 'string'")
    else:
        raise MongoError(ErrorCode.FailedToParse, f"the $unionWith stage specification must be an object or string, but found {type(spec).__name__}")
    stages = parse_pipeline(sub, ctx.child(in_lookup=True))

    def apply(docs):
        yield from docs
        yield from chain(stages, _foreign_source(ctx, target))
    return Stage("$unionWith", spec, apply)


def parse_facet(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(15947, "the $facet specification must be a non-empty object")
    if not spec:
        raise MongoError(40169, "the $facet specification must be a non-empty object")
    facets = []
    for name, sub in spec.items():
        if not isinstance(sub, list):
            raise MongoError(40170, f"arguments to $facet must be arrays, {name} is type {type(sub).__name__}")
        if not sub:
            raise MongoError(40171, f"sub-pipeline in $facet stage cannot be empty: {name}")
        for st in sub:
            if isinstance(st, dict) and st and next(iter(st)) == "$facet":
                raise MongoError(40600, "$facet is not allowed to be used within a $facet stage")
        facets.append((name, parse_pipeline(sub, ctx.child(in_facet=True))))

    def apply(docs):
        buffered = list(docs)
        yield {name: list(chain(stages, iter(buffered))) for name, stages in facets}
    return Stage("$facet", spec, apply, blocking=True)


STAGES = {
    "$lookup": parse_lookup,
    "$unionWith": parse_union_with,
    "$facet": parse_facet,
}
