"""Stages that read other collections or fan out: $lookup (equality and pipeline forms), $unionWith,
$facet.

Foreign collections come from ``ctx.resolve_collection(db, coll)`` (the command layer resolves
views). The equality form scans the foreign collection once per execution and hashes it by
``foreignField``, with mongod's equality semantics (an ``{foreignField: {$in: localValues}}`` query):
a foreign document is keyed by every value its path reaches (an array as a whole and each element;
null where the path reaches nothing or a missing field), a local document looks up its path's values
(a trailing array expanded, missing values dropped; null when there are none); several local values'
matches come back in the foreign scan's order. The pipeline form keeps the documents of its
sub-pipeline's uncorrelated prefix (``_PrefixCache``, mongod's SequentialDocumentCache, up to
internalDocumentSourceLookupCacheSizeBytes) and runs only the correlated rest per input document,
re-parsed with that document's ``let`` values; a variable bound to a missing field stays missing.

Parsing follows mongod's two passes: the shape, 'from' and the sub-pipeline's type first (the
LiteParsed pass), then each argument in document order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any, cast

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import docmeta
from tidemark.query.collation import parse_collation
from tidemark.query.expr_base import check_field_name, type_name, validate_variable_name
from tidemark.query.expressions import compile_expression
from tidemark.query.interrupt import tick
from tidemark.query.memory import LOOKUP_LIMIT, approx_size
from tidemark.query.paths import get_path_values
from tidemark.query.pipeline import (
    PipelineContext,
    Stage,
    StageStats,
    chain,
    check_after_front,
    check_expanded_length,
    check_shape,
    collecting,
    parse_pipeline,
)
from tidemark.query.stage_group import group_key_for
from tidemark.query.stages import field_path, set_nested_field
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING


def _foreign_source(ctx: PipelineContext, target: str | None):
    """The documents of collection ``target`` of the pipeline's database (none without one: a
    sub-pipeline starting with $documents)."""
    if target is None:
        return iter(())
    if ctx.resolve_collection is None:
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "reading another collection is not supported in this context")
    return ctx.resolve_collection(cast(str, ctx.db), target)  # a pipeline that reads collections runs in a database


def _with_front(ctx: PipelineContext, target: Any, sub: Any) -> list | None:
    """The sub-pipeline as mongod parses it: after the stages it puts in front of a read of ``target``
    (a view's pipeline, a time-series collection's unpacking), whose raw length is checked now (7749501);
    the caller checks its parsed length once the sub-pipeline has parsed (5054701). None without a
    sub-pipeline or a foreign collection (nothing in front of it: its own parse checks it)."""
    if not isinstance(sub, list) or type(target) is not str or ctx.front_stages is None or ctx.db is None:
        return None
    whole = ctx.front_stages(ctx.db, target) + sub
    check_shape(whole)
    return whole


def _check_front(whole: list, sub: list, ctx: PipelineContext) -> None:
    """mongod parses a sub-pipeline after the stages it puts in front of ``target`` (the view's, a
    time-series collection's unpack: ``whole``): a first-only stage of it is then not first (40602,
    none moved in front as for an aggregate on a view)."""
    if len(whole) > len(sub):
        check_after_front(sub, ctx, frozenset())


def _is_text_match(stage: dict) -> bool:
    arg = stage.get("$match") if len(stage) == 1 else None
    return isinstance(arg, dict) and "$text" in arg


def _read_core_leading(stage: Any, ctx: PipelineContext) -> bool:
    """A first stage of a sub-pipeline that reads its collection through the read core, as a first stage
    of an aggregate would (an index serves it): a $match (a $text one too), $geoNear, $indexStats. (A
    context without the read core — a pipeline run over given documents — filters a plain $match itself.)"""
    if not isinstance(stage, dict) or len(stage) != 1:
        return False
    name = next(iter(stage))
    return name in ("$geoNear", "$indexStats") or name == "$match" and (
        ctx.query_collection is not None or _is_text_match(stage))


def _lite_parse_lookup(spec: Any, ctx: PipelineContext) -> None:
    """mongod's first pass over a $lookup (LiteParsed): the shape, 'from' and the sub-pipeline's
    type, checked before the per-argument parse below (so its errors win)."""
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse,
                         f"the $lookup stage specification must be an object, but found {type_name(spec)}")
    if "from" not in spec:
        if "pipeline" not in spec:
            raise MongoError(ErrorCode.FailedToParse, "must specify 'pipeline' when 'from' is empty")
        sub = check_sub_pipeline(spec["pipeline"])
        if not sub or "$documents" not in sub[0]:
            raise MongoError(ErrorCode.FailedToParse, "$lookup stage without explicit collection must have a "
                                                      "pipeline with $documents as first stage")
        return
    target = spec["from"]
    if isinstance(target, dict):
        db, coll = target.get("db"), target.get("coll")
        # mongod accepts the object form only for internal namespaces (config.cache.chunks.*, local.oplog.rs).
        raise MongoError(ErrorCode.FailedToParse, "$lookup with syntax {from: {db:<>, coll:<>},..} is not supported "
                                                  f"for db: {db if type(db) is str else ''} and coll: "
                                                  f"{coll if type(coll) is str else ''}")
    if type(target) is not str:
        raise MongoError(ErrorCode.FailedToParse, f"$lookup 'from' field must be a string, but found {type_name(target)}")
    if not valid_collection_name(target):
        raise MongoError(ErrorCode.InvalidNamespace, f"invalid $lookup namespace: {ctx.db}.{target}")
    if "pipeline" in spec:
        check_sub_pipeline(spec["pipeline"])


def valid_collection_name(name: str) -> bool:
    """mongod's NamespaceString::isValid for a collection of the current database."""
    return bool(name) and "\0" not in name and not name.startswith(".")


def check_sub_pipeline(sub: Any) -> list:
    """A sub-pipeline's type (mongod's parsePipelineFromBSON): an array of objects, else 14."""
    if not isinstance(sub, list):
        raise MongoError(ErrorCode.TypeMismatch, "'pipeline' option must be specified as an array")
    for st in sub:
        if not isinstance(st, dict):
            raise MongoError(ErrorCode.TypeMismatch, "Each element of the 'pipeline' array must be an object")
    return sub


def parse_lookup(spec: Any, ctx: PipelineContext) -> Stage:
    _lite_parse_lookup(spec, ctx)
    for k, v in spec.items():  # mongod's createFromBson, argument by argument
        if k == "let":
            if not isinstance(v, dict):
                raise MongoError(ErrorCode.FailedToParse, f"$lookup argument 'let: {bson_repr(v)}' must be an "
                                                          f"object, is type {type_name(v)}")
        elif k == "_internalCollation":  # (mongod reads it with BSONElement::Obj())
            if not isinstance(v, dict):
                raise MongoError(10065, f"invalid parameter: expected an object ({k})")
        elif k not in ("pipeline", "from"):
            if type(v) is not str:
                raise MongoError(ErrorCode.FailedToParse, f"$lookup argument '{k}' must be a string, found "
                                                          f"{k}: {bson_repr(v)}: {type_name(v)}")
            if k not in ("as", "localField", "foreignField"):
                raise MongoError(ErrorCode.FailedToParse, f"unknown argument to $lookup: {k}")
    if not spec.get("as"):
        raise MongoError(ErrorCode.FailedToParse, "must specify 'as' field for a $lookup")
    has_local, has_foreign = bool(spec.get("localField")), bool(spec.get("foreignField"))
    if "pipeline" in spec:
        if (has_local or has_foreign) and not (has_local and has_foreign):
            raise MongoError(ErrorCode.FailedToParse,
                             "$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
    else:
        if not (has_local and has_foreign):
            raise MongoError(ErrorCode.FailedToParse,
                             "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
        if "let" in spec:
            raise MongoError(ErrorCode.FailedToParse, "$lookup with a 'let' argument must also specify 'pipeline'")
    # 'as', 'localField' and 'foreignField' are field paths (mongod's FieldPath: 16410 / 15998 / 40352).
    as_parts = field_path(spec["as"])
    if has_local:
        field_path(spec["localField"])
        field_path(spec["foreignField"])
    target = spec.get("from")
    # An empty localField/foreignField counts as not given (mongod tests the strings for emptiness).
    local_path: Any = spec["localField"] if has_local else None
    foreign_path: Any = spec["foreignField"] if has_local else None
    let = spec.get("let", {})
    for name in let:
        validate_variable_name(name)
    let_fns = [(name, compile_expression(expr, collation=ctx.collation)) for name, expr in let.items()]
    if spec.get("_internalCollation"):
        # mongod's fromCollator: the join (localField/foreignField equality) and the sub-pipeline run
        # under this collation instead of the command's; 'let' is evaluated on the local side, above.
        ctx = dataclasses.replace(ctx, collation=parse_collation(spec["_internalCollation"], "_internalCollation"))
    group_key = group_key_for(ctx.collation)  # local/foreign equality under the foreign side's collation
    sub = spec.get("pipeline")
    # A sub-pipeline led by a $match, a $geoNear or an $indexStats (no localField, whose $match
    # would lead it) runs that stage on the foreign collection through the read core (its indexes —
    # a $expr equality of a foreign field and a let variable is a point of that field's index, as
    # mongod's $_internalExprEq —, a text score in the pipeline's DocMeta table), with the input
    # document's let variables; the rest of the sub-pipeline runs here over what it finds. (Before, a
    # $match read the whole foreign collection once per input document.) Not under an
    # _internalCollation, which the read core's foreign reads do not take.
    leading = sub[0] if (sub and local_path is None and target is not None and _read_core_leading(sub[0], ctx)
                         and (_is_text_match(sub[0]) or "$match" not in sub[0] or not spec.get("_internalCollation"))) \
        else None
    whole = _with_front(ctx, target, sub)
    given = sub
    if leading is not None:
        # validated as the first stage of a pipeline, where these may stand
        parse_pipeline(sub[:1], ctx.child(variables={**ctx.variables, **{n: None for n in let}}))
        sub = sub[1:]
    if sub is not None:
        sub_ctx = ctx.child(in_lookup=True, variables={**ctx.variables, **{n: None for n in let}})
        parse_pipeline(sub, sub_ctx)  # validate now; correlated pipelines re-parse with real values
    if whole is not None:
        _check_front(whole, given, ctx.child(in_lookup=True, variables={**ctx.variables, **{n: None for n in let}}))
        check_expanded_length(whole)

    stats = StageStats()  # the stage's (explain): the foreign documents it read, its whole scans

    def sub_source(variables: dict | None = None):
        """What the sub-pipeline reads: the foreign collection, or what its leading stage reads there."""
        if leading is None:
            return _examined(_foreign_source(ctx, target), stats, True)
        if ctx.query_collection is None:
            raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"{next(iter(leading))} is not supported in this context")
        return _examined(ctx.query_collection(cast(str, ctx.db), cast(str, target), leading, variables), stats, False)

    def whole_source():
        return _examined(_foreign_source(ctx, target), stats, True)

    null_key = group_key(None)

    def local_keys(doc) -> tuple[list, bool]:
        """The values mongod looks up for ``doc`` (extractAllElementsAlongPath, trailing array
        expanded; nested arrays stay values; missing contributes nothing): null when there are none.
        Also whether one of them is an array (only those can equal a foreign array as a whole)."""
        values = [v for v in get_path_values(doc, local_path, expand_arrays=True) if v is not MISSING]
        if not values:
            return [null_key], False
        return [group_key(v) for v in values], any(type(v) is list for v in values)

    def foreign_keys(fdoc) -> Any:
        """The values an ``{foreignField: {$eq: v}}`` query matches ``fdoc`` on, but arrays as a whole
        (``whole_array_keys``): every value the path reaches and each element of an array, and null
        when the path reaches nothing or a missing field (but not for an empty array at the leaf)."""
        values = get_path_values(fdoc, foreign_path)
        if len(values) == 1 and type(values[0]) is not list:  # the common case: one scalar
            v = values[0]
            return (null_key if v is MISSING else group_key(v),)
        keys: set[Any] = set()
        for v in values or (MISSING,):
            if type(v) is list:
                keys.update(group_key(e) for e in v)
            else:
                keys.add(null_key if v is MISSING else group_key(v))
        return keys

    # A collectionless sub-pipeline joined on localField/foreignField ($documents first, no 'from'):
    # mongod matches the documents $documents produces, so the equality applies after that stage and
    # the rest of the sub-pipeline runs over the matches. With 'let' the $documents may read the
    # variables, so its documents (and their index) are made per input document.
    docs_first = target is None and local_path is not None and bool(sub) and "$documents" in sub[0]
    joined_sub = sub[1:] if docs_first else sub
    # a sub-pipeline drawing random numbers ($sample, $rand, $sampleRate) is run again for each input
    # document, never reused: mongod's cached prefix stops at a stage needing the random generator
    random = _draws_random(spec.get("pipeline"))
    per_doc_index = docs_first and (bool(let_fns) or random)
    cache = _PrefixCache.plan(spec["pipeline"], {n for n, _ in let_fns}, leading, target, ctx) \
        if sub is not None and local_path is None else None

    def foreign_scan(variables):
        """The documents the equality join matches against: the foreign collection's, or those of the
        sub-pipeline's leading $documents."""
        if not docs_first:
            return _examined(_foreign_source(ctx, target), stats, True)
        return chain(parse_pipeline(cast(list, sub)[:1], ctx.child(in_lookup=True, variables=variables)), iter(()))

    def whole_array_keys(fdoc) -> set:
        return {group_key(v) for v in get_path_values(fdoc, foreign_path) if type(v) is list}

    foreign_name = target

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
        # key -> positions in the foreign scan (``foreign``): several keys' matches are merged back
        # into scan order, the order in which mongod's query on the foreign collection returns them.
        # Arrays as a whole are indexed apart, on the first local array value that needs them.
        index: dict[Any, list[int]] | None = None
        array_index: dict[Any, list[int]] | None = None
        foreign: list[dict] = []
        uncorrelated = None
        for doc in docs:
            candidates = None
            variables = ctx.variables
            if let_fns:
                # A variable bound to a missing field stays missing ("$$v" then adds no field), as in mongod.
                variables = {**ctx.variables, **{n: f(doc, ctx.variables) for n, f in let_fns}}
            if local_path is not None:
                if index is None or per_doc_index:
                    index, array_index, foreign = {}, None, []
                    for pos, fdoc in enumerate(foreign_scan(variables)):
                        foreign.append(fdoc)
                        for k in foreign_keys(fdoc):
                            index.setdefault(k, []).append(pos)
                keys, has_array = local_keys(doc)
                if has_array and array_index is None:
                    array_index = {}
                    for pos, fdoc in enumerate(foreign):
                        for k in whole_array_keys(fdoc):
                            array_index.setdefault(k, []).append(pos)
                if len(keys) == 1 and not has_array:
                    candidates = [foreign[pos] for pos in index.get(keys[0], ())]
                else:
                    found: set[int] = set()
                    for k in keys:
                        found.update(index.get(k, ()))
                        if has_array and array_index is not None:
                            found.update(array_index.get(k, ()))
                    candidates = [foreign[pos] for pos in sorted(found)]
            if sub is None:
                result = collect(candidates)
            elif cache is not None and cache.serves(variables, sub_source, whole_source):
                # the uncorrelated prefix's documents, read once; the correlated rest runs per input
                if cache.suffix:
                    stages = parse_pipeline(cache.suffix, ctx.child(in_lookup=True, variables=variables))
                    result = [dict(d) for d in collect(chain(stages, iter(cast(list, cache.docs))))]
                else:  # an uncorrelated sub-pipeline: one answer for every input
                    if uncorrelated is None:
                        uncorrelated = collect(cast(list, cache.docs))
                    result = [dict(d) for d in uncorrelated]
            else:
                stages = parse_pipeline(joined_sub if candidates is not None else sub,
                                        ctx.child(in_lookup=True, variables=variables))
                source = iter(candidates) if candidates is not None else sub_source(variables)
                result = collect(chain(stages, source))
            out = set_nested_field(doc, as_parts, result)
            if meta is not None:
                meta.hand_on(doc, out)
            yield out
    # The output keeps its input's metadata (a $text score), as mongod's. Handed on here, not by
    # pipeline._keeping_meta: that runs a stage one document at a time, which would rebuild the
    # foreign index above for each input document.
    meta = docmeta.table(ctx.variables)
    return Stage("$lookup", spec, apply, stats=stats)


class _PrefixCache:
    """mongod's SequentialDocumentCache for a correlated ``$lookup`` sub-pipeline (``let`` and a
    pipeline, no localField): the documents its uncorrelated prefix yields — the leading stages that
    read no ``let`` variable and draw no random number — computed for the first input document and
    reused for every later one, the correlated ``suffix`` running over them per input. Past
    ``ctx.lookup_cache_limit`` bytes (internalDocumentSourceLookupCacheSizeBytes) while it is built it
    is abandoned: the whole sub-pipeline then runs for each input document, as before.

    Where every stage is correlated mongod caches nothing and re-reads the collection per input, an
    index serving its leading ``$match``. Here re-reading means decoding every foreign document again,
    so when no index serves that ``$match`` (``ctx.foreign_scans_all``, asked with the first input's
    variables) or the sub-pipeline reads the collection whole anyway, the prefix is the collection
    itself: its documents are kept and the whole sub-pipeline runs over them per input."""

    __slots__ = ("prefix", "suffix", "leading", "docs", "abandoned", "decided", "ctx", "target")

    def __init__(self, prefix: list, suffix: list, leading: dict | None, correlated: bool, target: Any,
                 ctx: PipelineContext):
        # ``leading``: the sub-pipeline's first stage when the read core runs it; ``correlated``: it reads
        # a variable (then the suffix holds it, and it is kept only when no index serves it)
        self.prefix, self.suffix, self.target, self.ctx = prefix, suffix, target, ctx
        self.leading = leading
        self.docs: list[dict] | None = None
        self.abandoned = False
        self.decided = not correlated

    @classmethod
    def plan(cls, pipeline: Any, names: set[str], leading: dict | None, target: Any,
             ctx: PipelineContext) -> _PrefixCache | None:
        stages = cast(list, pipeline)
        split = 0
        while split < len(stages) and not _references(stages[split], names) and not _draws_random(stages[split]):
            split += 1
        if split == 0 and leading is not None and ("$match" not in leading or _is_text_match(leading)):
            return None  # a correlated $geoNear, $text or $indexStats needs the read core each time
        if split == 0 and stages and _draws_random(stages[0]):
            return None
        # an uncorrelated leading stage is run by the read core, once
        return cls(stages[1 if leading is not None and split else 0:split], stages[split:], leading,
                   leading is not None and not split, target, ctx)

    def serves(self, variables: dict, sub_source: Any, whole: Any) -> bool:
        """Whether the kept documents answer this input (built on the first call). ``sub_source(v)``:
        what the leading stage reads with variables ``v``; ``whole()``: the whole foreign collection."""
        if self.docs is not None:
            return True
        if self.abandoned:
            return False
        ctx = self.ctx
        if not self.decided:  # a correlated leading $match: kept only when no index serves it
            self.decided = True
            probe = ctx.foreign_scans_all
            if probe is None or not probe(cast(str, ctx.db), cast(str, self.target), cast(dict, self.leading),
                                          variables):
                self.abandoned = True
                return False
            self.leading = None  # the $match runs here, over the collection's kept documents
        source = sub_source(ctx.variables) if self.leading is not None else whole()
        docs: list[dict] = []
        size, limit = 0, ctx.lookup_cache_limit
        for d in chain(parse_pipeline(self.prefix, ctx.child(in_lookup=True)), source):
            size += approx_size(d, limit)
            if size > limit:
                self.abandoned = True
                return False
            docs.append(d)
        self.docs = docs
        return True


def _references(value: Any, names: set[str]) -> bool:
    """Whether a stage's spec reads one of the variables ``names`` (a ``"$$name"`` or ``"$$name.path"``
    string at any depth; conservative: a string that only looks like one counts too); iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            if item.startswith("$$") and item[2:].split(".", 1)[0] in names:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _examined(docs: Iterable[dict], stats: StageStats, whole: bool) -> Iterable[dict]:
    """``docs`` read from the foreign collection (``whole``: all of it, a collection scan), counted into
    the stage's ``stats`` while an explain runs (else handed on as they are: nothing per document)."""
    if not collecting():
        return docs
    if whole:
        stats.collection_scans += 1
    return _counting(docs, stats)


def _counting(docs: Iterable[dict], stats: StageStats) -> Iterator[dict]:
    for doc in docs:
        stats.docs_examined += 1
        yield doc


_RANDOM_OPERATORS = frozenset({"$sample", "$rand", "$sampleRate"})


def _draws_random(value: Any) -> bool:
    """Whether a (sub-)pipeline's spec names a stage or operator that draws random numbers (mongod's
    DepsTracker::needRandomGenerator), at any depth; iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not _RANDOM_OPERATORS.isdisjoint(item):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_union_with(spec: Any, ctx: PipelineContext) -> Stage:
    target: str | None
    if type(spec) is str:
        target, sub = spec, []
    elif isinstance(spec, dict):
        for k in spec:
            if k not in ("coll", "pipeline"):
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$unionWith.{k}' is an unknown field.")
        target, sub = spec.get("coll"), spec.get("pipeline", [])
        # mongod's IDL (UnionWithSpec) checks the types first, then a collectionless spec's first stage.
        if target is not None and type(target) is not str:
            raise MongoError(ErrorCode.TypeMismatch,
                             f"BSON field '$unionWith.coll' is the wrong type '{type_name(target)}', expected type 'string'")
        if not isinstance(sub, list):
            raise MongoError(ErrorCode.TypeMismatch,
                             f"BSON field '$unionWith.pipeline' is the wrong type '{type_name(sub)}', expected type 'array'")
        if target is None:
            first = sub[0] if sub else None
            if not isinstance(first, dict) or "$documents" not in first:
                raise MongoError(ErrorCode.FailedToParse, "$unionWith stage without explicit collection must have a "
                                                          "pipeline with $documents as first stage")
    else:
        raise MongoError(ErrorCode.FailedToParse, "the $unionWith stage specification must be an object or string, "
                                                  f"but found {type_name(spec)}")
    for st in check_sub_pipeline(sub):
        if len(st) == 1 and next(iter(st)) in ("$out", "$merge"):
            raise MongoError(31441, f"{next(iter(st))} is not allowed within a $unionWith's sub-pipeline")
    # A sub-pipeline led by a $match, a $geoNear or an $indexStats reads the collection through the
    # read core (as in $lookup: a $match uses its indexes); the rest of the sub-pipeline runs here over what it finds.
    leading = sub[0] if sub and target is not None and _read_core_leading(sub[0], ctx) else None
    whole = _with_front(ctx, target, sub)
    given = sub
    if leading is not None:
        parse_pipeline(sub[:1], ctx.child())  # validated as the first stage of a pipeline, where these may stand
        sub = sub[1:]
    stages = parse_pipeline(sub, ctx.child(in_lookup=True))
    if whole is not None:
        _check_front(whole, given, ctx.child(in_lookup=True))
        check_expanded_length(whole)

    def source():
        if leading is None:
            return _foreign_source(ctx, target)
        if ctx.query_collection is None:
            raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"{next(iter(leading))} is not supported in this context")
        return ctx.query_collection(cast(str, ctx.db), cast(str, target), leading, None)

    stats = StageStats()
    stats.sub_pipeline = (leading, stages)  # (explain shows them, with what each did)

    def apply(docs):
        yield from docs
        yield from chain(stages, source())
    return Stage("$unionWith", spec, apply, stats=stats)


def parse_facet(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict) or not spec:
        raise MongoError(40169, f"the $facet specification must be a non-empty object, but found: $facet: "
                                f"{bson_repr(spec)}")
    facets = []
    for name, sub in spec.items():
        _facet_name(name)
        if not isinstance(sub, list):
            raise MongoError(40170, f"arguments to $facet must be arrays, {name} is type {type_name(sub)}")
        for st in sub:
            if not isinstance(st, dict):
                raise MongoError(40171, f"elements of arrays in $facet spec must be non-empty objects, {name} "
                                        f"argument contained an element of type {type_name(st)}: {bson_repr(st)}")
        for st in sub:
            # Stages whose constraints forbid $facet (mongod's 40600, checked once the stage parses;
            # the position of a first-only stage is checked by parse_pipeline).
            if len(st) == 1 and next(iter(st)) in _NOT_IN_FACET:
                raise MongoError(40600, f"{next(iter(st))} is not allowed to be used within a $facet stage")
        facets.append((name, parse_pipeline(sub, ctx.child(in_facet=True))))

    def apply(docs):
        buffered = list(docs)
        yield {name: list(chain(stages, iter(buffered))) for name, stages in facets}
    return Stage("$facet", spec, apply, blocking=True)


# Stages that may not run inside a $facet (their StageConstraints say FacetRequirement::kNotAllowed).
_NOT_IN_FACET = frozenset({"$facet", "$collStats", "$indexStats", "$geoNear", "$documents", "$changeStream",
                           "$currentOp", "$listSessions", "$listLocalSessions", "$planCacheStats", "$out",
                           "$merge"})  # ($search / $searchMeta: refused at their parse, 6047401, in a community mongod)


def _facet_name(name: str) -> None:
    """A $facet output name obeys mongod's FieldPath::uassertValidFieldName."""
    check_field_name(name)


STAGES = {
    "$lookup": parse_lookup,
    "$unionWith": parse_union_with,
    "$facet": parse_facet,
}
