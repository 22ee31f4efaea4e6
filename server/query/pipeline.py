"""The aggregation pipeline: parse and validate every stage up front, then stream with generators.

- ``parse_pipeline(pipeline, ctx) -> list[Stage]`` validates the whole pipeline (stage shape, names,
  placement, each stage's own arguments, compiled expressions) before any document is read.
- ``run_pipeline(pipeline, source, ctx) -> Iterator[dict]`` chains ``stage.apply`` generators over
  ``source``. Only blocking stages ($group, $sort, $bucketAuto, $setWindowFields, $fill's linear
  method, $facet, $sample) buffer; everything else handles one document at a time.
- Rewrites done once at parse time: ``$sort`` directly followed by ``$limit`` becomes a top-k sort.

A ``Stage`` has ``name``, ``spec`` (what explain shows) and ``apply(iterator) -> iterator``.
``PipelineContext`` carries variables (``let`` and NOW), options, and the callbacks for stages that
need the server (``resolve_collection``, ``write_out``, ``merge_into``, ``coll_stats``,
``index_stats``); ``extra_stages`` lets the time-series layer plug in its own stages
(``$_internalUnpackBucket``) without this package importing it: a factory ``(spec, ctx)`` returns a
Stage, or simply an ``apply(iterator) -> iterator`` callable, which is wrapped as ``Stage(name, spec)``.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import desugar
from tidemark.query.docmeta import META_VAR
from tidemark.query.expressions import PARSE_SCOPE, now_ms
from tidemark.query.match_parse import SCALAR_TYPES

__all__ = ["PipelineContext", "Stage", "StageStats", "collecting", "collecting_stats", "parse_pipeline", "run_pipeline", "STAGES"]


@dataclass
class PipelineContext:
    """Everything a pipeline needs from its caller (all optional for pure in-memory use)."""

    variables: dict = field(default_factory=dict)
    allow_disk_use: bool = False
    collation: Any = None  # the command's collation.Collation; None = simple (binary)
    db: str | None = None
    coll: str | None = None
    resolve_collection: Callable[[str, str], Iterator[dict]] | None = None
    # the documents a leading stage reads from a collection through the read core (its indexes): a
    # {$match} (a $text one included), $geoNear or $indexStats; (db, coll, stage, variables or None)
    query_collection: Callable[[str, str, dict, dict | None], Iterator[dict]] | None = None
    # whether the read core would read every document of (db, coll) for such a leading {$match} (no
    # index serves it): a $lookup then keeps the collection's documents rather than re-reading them per input
    foreign_scans_all: Callable[[str, str, dict, dict | None], bool] | None = None
    deadline: Callable[[], None] | None = None  # raises 50 once the read's maxTimeMS has passed
    write_out: Callable[[Any, Iterator[dict]], None] | None = None
    merge_into: Callable[[Any, Iterator[dict], Any, dict], None] | None = None  # (spec, docs, collation, variables)
    coll_stats: Callable[[Any], Any] | None = None
    index_stats: Callable[[], Iterable[dict]] | None = None
    list_catalog: Callable[[], Iterable[dict]] | None = None  # $listCatalog: the catalog entries it lists
    plan_cache_stats: Callable[[], Iterable[dict]] | None = None  # $planCacheStats: the cache's entries
    current_op: Callable[[dict], list[dict]] | None = None  # $currentOp: options -> the report
    # the stages mongod puts in front of a read of (db, coll): a view's pipeline, a time-series
    # collection's UNPACK_FRONT (counted by the length limits of a $lookup/$unionWith sub-pipeline)
    front_stages: Callable[[str, str], list[dict]] | None = None
    extra_stages: dict[str, Callable[[Any, PipelineContext], Stage]] = field(default_factory=dict)
    memory_limit: int = 100 * 1024 * 1024  # internalQueryMaxBlockingSortMemoryUsageBytes
    group_memory_limit: int = 100 * 1024 * 1024  # internalDocumentSourceGroupMaxMemoryBytes ($group)
    bucket_auto_memory_limit: int = 100 * 1024 * 1024  # internalDocumentSourceBucketAutoMaxMemoryBytes
    window_memory_limit: int = 100 * 1024 * 1024  # internalDocumentSourceSetWindowFieldsMaxMemoryBytes
    lookup_cache_limit: int = 100 * 1024 * 1024  # internalDocumentSourceLookupCacheSizeBytes
    in_facet: bool = False
    in_lookup: bool = False
    sub_pipeline_depth: int = 0  # how many $lookup/$facet/$unionWith levels this pipeline is nested in
    # Whether ``variables`` names every variable the pipeline may reference, so that a reference to
    # another one fails 17276 when parsed (mongod's VariablesParseState). False for
    # ``parse_pipeline(p)`` without a context, whose caller's variables are unknown: they fail when run.
    check_variables: bool = True

    def __post_init__(self) -> None:
        if "NOW" not in self.variables:
            self.variables = {**self.variables, "NOW": now_ms()}

    def child(self, **changes: Any) -> PipelineContext:
        """A context for a sub-pipeline ($lookup/$facet/$unionWith) sharing callbacks and NOW; 232
        past mongod's 20 nested sub-pipelines (internalMaxSubPipelineViewDepth)."""
        if self.sub_pipeline_depth >= MAX_SUB_PIPELINE_DEPTH:
            raise MongoError(ErrorCode.MaxSubPipelineDepthExceeded,
                             f"Maximum number of nested sub-pipelines exceeded. Limit is {MAX_SUB_PIPELINE_DEPTH}")
        values = {f: getattr(self, f) for f in self.__dataclass_fields__}
        values.update(changes)
        values["sub_pipeline_depth"] = self.sub_pipeline_depth + 1
        return PipelineContext(**values)


class StageStats:
    """What one stage did, for an explain at executionStats / allPlansExecution (mongod's CommonStats
    and the stage's own SpecificStats). The one place a stage's statistics live: the stage object's
    ``stats``. Counters only, written by the stage where the work happens (a spill, the end of a
    sort); ``returned`` and ``seconds`` are counted by :meth:`Stage.apply` only while
    :func:`collecting_stats` is on, so a run that is not explained pays nothing per document."""

    __slots__ = ("returned", "seconds", "spills", "spilled_records", "spilled_bytes", "spilled_storage",
                 "data_bytes", "output_bytes", "accumulator_bytes", "docs_examined", "collection_scans",
                 "sub_pipeline", "parts")

    def __init__(self) -> None:
        self.returned = 0  # documents the stage passed on (nReturned)
        self.seconds = 0.0  # time spent producing them, its inputs' included (executionTimeMillisEstimate)
        self.spills = 0  # times it wrote its buffered state to disk
        self.spilled_records = 0  # documents / states written to disk
        self.spilled_bytes = 0  # bytes of them (mongod's estimate: their in-memory size)
        self.spilled_storage = 0  # bytes of the files written (spilledDataStorageSize)
        self.data_bytes = 0  # bytes of documents a sort buffered (totalDataSizeSortedBytesEstimate)
        self.output_bytes = 0  # bytes of the documents it made ($group's totalOutputDataSizeBytes)
        self.accumulator_bytes: dict[str, int] = {}  # peak bytes per accumulated field ($group)
        self.docs_examined = 0  # documents of another collection it read ($lookup)
        self.collection_scans = 0  # whole scans of another collection it made ($lookup)
        # ($unionWith) the sub-pipeline it ran: the stage its read core answered (raw, or None), then the
        # parsed stages, each with its own statistics
        self.sub_pipeline: tuple[dict | None, list] | None = None
        self.parts: list[Stage] = []  # the stages a stage runs as (``$sortByCount``: its $group and $sort)

    def note_spill(self, records: int, size: int, storage: int) -> None:
        self.spills += 1
        self.spilled_records += records
        self.spilled_bytes += size
        self.spilled_storage += storage


# Whether the stages applied now count what they return and the time it takes (an explain that
# executes: commands.explain turns it on around the read it runs).
_COLLECTING: contextvars.ContextVar[bool] = contextvars.ContextVar("tidemark_stage_stats", default=False)


@contextlib.contextmanager
def collecting_stats() -> Iterator[None]:
    """Stages applied (and sub-pipelines run) inside count ``returned`` and ``seconds``."""
    token = _COLLECTING.set(True)
    try:
        yield
    finally:
        _COLLECTING.reset(token)


def collecting() -> bool:
    """Whether stages count their statistics now (an explain that executes): what a stage checks once
    before work only an explain needs (the sizes of its output, its accumulators' memory)."""
    return _COLLECTING.get()


class Stage:
    """One parsed stage. ``apply`` maps an iterator of documents to an iterator of documents;
    ``stats`` is what it did (:class:`StageStats`)."""

    __slots__ = ("name", "spec", "_apply", "blocking", "_stats")

    def __init__(self, name: str, spec: Any, apply: Callable[[Iterator[dict]], Iterator[dict]],
                 *, blocking: bool = False, stats: StageStats | None = None):
        self.name = name
        self.spec = spec
        self._apply = apply
        self.blocking = blocking
        self._stats = stats

    @property
    def stats(self) -> StageStats:
        # made when first asked (a spill, an explain, a stage sharing it): most runs never ask, and
        # every request parses a few stages
        stats = self._stats
        if stats is None:
            stats = self._stats = StageStats()
        return stats

    def apply(self, docs: Iterator[dict]) -> Iterator[dict]:
        if _COLLECTING.get():  # (once per run of the stage: nothing per document otherwise)
            return _counted(self._apply(docs), self.stats)
        return self._apply(docs)

    def uncounted(self, docs: Iterator[dict]) -> Iterator[dict]:
        """``apply`` without counting: for a stage standing in for this one, which counts into the
        same ``stats`` (a leading ``$match`` as its plan's FETCH filter: ``collections.open_read``)."""
        return self._apply(docs)

    def __repr__(self) -> str:
        return f"Stage({self.name})"


def _counted(docs: Iterator[dict], stats: StageStats) -> Iterator[dict]:
    """``docs``, counting them into ``stats.returned`` and the time spent drawing them (the stages
    before included, as mongod's executionTimeMillisEstimate) into ``stats.seconds``."""
    clock = time.perf_counter
    it = iter(docs)
    while True:
        start = clock()
        try:
            doc = next(it)
        except StopIteration:
            stats.seconds += clock() - start
            return
        except BaseException:
            stats.seconds += clock() - start
            raise
        stats.seconds += clock() - start
        stats.returned += 1
        yield doc


# Stage parsers, explicitly listed (nothing registers itself): name -> parse(spec, ctx) -> Stage.
def _stage_table() -> dict[str, Callable[[Any, PipelineContext], Stage]]:
    # Imported here, on the first parse, because the recursion is real: every stage module imports
    # this one (PipelineContext, Stage) and $lookup/$facet/$unionWith parse their sub-pipelines with
    # parse_pipeline; the table of stages is the one place that closes the loop.
    from tidemark.query import (
        geo_near,
        stage_current_op,
        stage_densify_fill,
        stage_graph_lookup,
        stage_group,
        stage_list_sessions,
        stage_lookup,
        stage_write,
        stages,
        windows,
    )
    table: dict[str, Callable[[Any, PipelineContext], Stage]] = {}
    for module in (stages, stage_group, stage_lookup, stage_densify_fill, windows, geo_near, stage_graph_lookup,
                   stage_current_op, stage_write, stage_list_sessions):
        table.update(module.STAGES)
    return table


STAGES: dict[str, Callable[[Any, PipelineContext], Stage]] = {}
MAX_PIPELINE_LENGTH = 1000  # mongod's internalPipelineLengthLimit
# what stands, for the length limits, for the $_internalUnpackBucket mongod puts in front of a read of a
# time-series collection (one stage)
UNPACK_FRONT: dict = {"$_internalUnpackBucket": {}}
MAX_SUB_PIPELINE_DEPTH = 20  # mongod's internalMaxSubPipelineViewDepth
_FIRST_ONLY = ("$collStats", "$indexStats", "$documents", "$changeStream", "$currentOp", "$listSessions",
               "$planCacheStats", "$listCatalog")
_LAST_ONLY = ("$out", "$merge")
_NOT_SUPPORTED = ("$changeStream", "$listLocalSessions", "$shardedDataDistribution",
                  "$changeStreamSplitLargeEvent")
# Atlas Search's stages: a community mongod 7.0 knows their names and refuses them when it parses the
# pipeline, 6047401 "<stage> stage is only allowed on MongoDB Atlas" (what drivers and ODMs test for)
_ATLAS_ONLY = ("$search", "$searchMeta", "$vectorSearch", "$listSearchIndexes")


def starts_with_source(pipeline: Any) -> bool:
    """Whether the pipeline's first stage makes its own documents (``$collStats``, ``$indexStats``,
    ``$documents``...: mongod's initial sources), so that its read scans no collection."""
    if not pipeline:
        return False
    first = pipeline[0]
    if type(first) is not dict and not isinstance(first, dict):
        return False
    for name in first:  # (its first key, without the calls of next(iter(...)); its length only for those)
        return name in _FIRST_ONLY and len(first) == 1
    return False


def check_shape(pipeline: Any, implicit: int = 0) -> None:
    """The pipeline is an array of at most 1000 one-field objects (what code that looks at a pipeline
    before parsing it, like the time-series read planner, may rely on). ``implicit``: the stages mongod
    puts in front of it (a time-series collection's ``$_internalUnpackBucket``), counted as its own:
    mongod checks the raw length of the whole pipeline before parsing a stage (Pipeline::parseCommon,
    7749501); the length once aliases are expanded is :func:`check_expanded_length`'s."""
    if type(pipeline) is not list and not isinstance(pipeline, list):
        raise MongoError(ErrorCode.TypeMismatch, "'pipeline' option must be specified as an array")
    if len(pipeline) + implicit > MAX_PIPELINE_LENGTH:
        raise MongoError(7749501, f"Pipeline length must be no longer than {MAX_PIPELINE_LENGTH} stages.")
    for spec in pipeline:
        if type(spec) is not dict and not isinstance(spec, dict):  # (no call for the plain dict BSON gives)
            raise MongoError(ErrorCode.TypeMismatch, "Each element of the 'pipeline' array must be an object")
        try:
            [_] = spec  # (its one field, without a len call)
        except ValueError:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.") \
                from None


def check_expanded_length(pipeline: list, implicit: int = 0) -> None:
    """5054701 when the parsed pipeline — each alias stage counted as the stages it becomes
    (``desugar.width``: ``$sortByCount`` two, ...), plus ``implicit`` stages mongod puts in front —
    holds more than 1000 stages (Pipeline::validateCommon, run once every stage has parsed)."""
    n = len(pipeline) + implicit
    if n * desugar.MAX_WIDTH <= MAX_PIPELINE_LENGTH:  # (short enough whatever its stages become)
        return
    for spec in pipeline:
        name, arg = next(iter(spec.items()))
        n += desugar.width(name, arg) - 1
    if n > MAX_PIPELINE_LENGTH:
        raise MongoError(5054701, f"Pipeline length must be no longer than {MAX_PIPELINE_LENGTH} stages")


def is_stage(name: str) -> bool:
    """Whether ``name`` is an aggregation stage mongod knows (an update pipeline refuses an unknown one
    with 40324 before it says which known stages it allows)."""
    if not STAGES:
        STAGES.update(_stage_table())
    return name in STAGES or name in _NOT_SUPPORTED or name in _ATLAS_ONLY


def stage_names(pipeline: Any, extra: Any = (), out: list[str] | None = None) -> list[str]:
    """The name of each stage of ``pipeline`` and of its sub-pipelines ($lookup's and $unionWith's
    ``pipeline``, each of $facet's, $merge's ``whenMatched`` pipeline) that is a stage Tidemark knows
    (or one of ``extra``), in order: what mongod's LiteParsedPipeline::tickGlobalStageCounters counts.
    ``out``: the list to append them to (the sub-pipelines' walk), returned."""
    # (a list filled in one walk, not a generator: every aggregate counts its stages, and each
    # resumption of a generator costs a call)
    if not STAGES:
        STAGES.update(_stage_table())
    if out is None:
        out = []
    if type(pipeline) is not list:
        return out
    for stage in pipeline:
        if type(stage) is not dict and not isinstance(stage, dict):
            continue
        try:
            [name] = stage  # (its one field, without a call; none or several: not a stage)
        except ValueError:
            continue
        spec = stage[name]
        if name not in STAGES and name not in extra:
            continue
        out.append(name)
        if type(spec) is not dict and not isinstance(spec, dict):
            continue
        if name == "$lookup" or name == "$unionWith":
            stage_names(spec.get("pipeline"), extra, out)
        elif name == "$facet":
            for sub in spec.values():
                stage_names(sub, extra, out)
        elif name == "$merge":
            stage_names(spec.get("whenMatched"), extra, out)
    return out


def known_stage_names() -> list[str]:
    if not STAGES:
        STAGES.update(_stage_table())
    return list(STAGES)


def parse_pipeline(pipeline: Any, ctx: PipelineContext | None = None, *, shape_checked: bool = False) -> list[Stage]:
    """Validate and compile every stage; raises MongoError before any document is processed.
    ``shape_checked``: the caller passed every stage through ``check_shape`` already (the command's
    parse), so it is not walked again."""
    if not STAGES:
        STAGES.update(_stage_table())
    ctx = ctx or PipelineContext(check_variables=False)
    if not shape_checked:
        check_shape(pipeline)
    # (defined_variables' scope, set here without its block's calls)
    token = PARSE_SCOPE.set(frozenset(ctx.variables) if ctx.check_variables else None)
    try:
        return _parse_stages(pipeline, ctx)
    finally:
        PARSE_SCOPE.reset(token)


def check_after_front(pipeline: Any, ctx: PipelineContext, exempt: frozenset[str], *,
                      shape_checked: bool = False) -> None:
    """For a pipeline mongod runs after stages of its own (a time-series view's ``$_internalUnpackBucket``),
    which the caller does not parse whole (its source absorbs the leading stages): a first-only stage
    anywhere in it, its head included, is not first, so it fails 40602 — after every stage's own parse,
    as mongod parses them all before it checks positions (``$currentOp``'s 73 comes first).
    ``exempt``: the stages mongod moves in front of those stages when they head the pipeline.
    ``shape_checked``: every stage is a one-field object already (``check_shape``): not looked at again."""
    if not shape_checked and not isinstance(pipeline, list):
        return
    for i, spec in enumerate(pipeline):
        name = None
        if shape_checked or (type(spec) is dict or isinstance(spec, dict)) and len(spec) == 1:
            for key in spec:  # (its one key, without the calls of next(iter(...)))
                name = key
        if name in _FIRST_ONLY and (i or name not in exempt):
            parse_pipeline(pipeline, ctx)  # (raises for a stage past the head: the parse's own check)
            raise MongoError(40602, f"{name} is only valid as the first stage in a pipeline")


TEXT_NOT_FIRST = "$match with $text is only allowed as the first pipeline stage"


def is_text_match(spec: Any) -> bool:
    """Whether a $match's filter is a $text query, which only the first stage may hold (17313)."""
    return isinstance(spec, dict) and "$text" in spec


def check_text_first(pipeline: list) -> None:
    """17313 for a $text $match past the first stage, as the parse of ``pipeline`` would: for a read
    that drops a stage an index answers before the rest is parsed."""
    for spec in pipeline[1:]:
        if isinstance(spec, dict) and len(spec) == 1 and "$match" in spec and is_text_match(spec["$match"]):
            raise MongoError(17313, TEXT_NOT_FIRST)


def _parse_stages(pipeline: list, ctx: PipelineContext) -> list[Stage]:
    stages: list[Stage] = []
    n = len(pipeline)
    misplaced = None  # the first first-only stage past the head
    extra = ctx.extra_stages
    for i, spec in enumerate(pipeline):
        [name] = spec  # (one field: check_shape; its name without a call)
        arg = spec[name]
        own = name in extra
        parser = extra[name] if own else STAGES[name] if name in STAGES else None
        if parser is None:
            if name in _ATLAS_ONLY:
                raise MongoError(6047401, f"{name} stage is only allowed on MongoDB Atlas")
            if name in _NOT_SUPPORTED:
                raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"{name} is not supported by Tidemark")
            raise MongoError(40324, f"Unrecognized pipeline stage name: '{name}'")
        if name in _LAST_ONLY:
            if ctx.in_facet:
                raise MongoError(40600, f"{name} is not allowed to be used within a $facet stage")
            if i != n - 1:  # (the pipeline's own check, before $lookup's: disallowed_in_lookup.js)
                raise MongoError(40601, f"{name} can only be the final stage in the pipeline")
            if ctx.in_lookup:
                raise MongoError(51047, f"{name} is not allowed within a $lookup's sub-pipeline")
        if name in _FIRST_ONLY and i != 0 and misplaced is None:
            misplaced = name  # (refused once every stage has parsed: mongod's validateCommon)
        if name in ("$collStats", "$indexStats") and (ctx.in_facet or ctx.in_lookup):
            raise MongoError(40602, f"{name} is only valid as the first stage in a pipeline")
        if name == "$match" and (i or ctx.in_facet or ctx.in_lookup) and is_text_match(arg):
            raise MongoError(17313, TEXT_NOT_FIRST)
        if name == "$match" and isinstance(arg, dict) and has_near(arg):
            raise MongoError(5626500, NEAR_NOT_ALLOWED)
        if name == "$geoNear" and (i or ctx.in_facet or ctx.in_lookup):
            raise MongoError(40602, "$geoNear is only valid as the first stage in a pipeline")
        stage = parser(arg, ctx)
        if own and not isinstance(stage, Stage):
            # extra_stages factories may return a bare ``apply(iterator) -> iterator`` callable (STAGES'
            # parsers return a Stage: no isinstance call for them)
            if not callable(stage):
                raise TypeError(f"stage parser for {name} returned {type(stage).__name__}")
            stage = Stage(name, arg, stage)
        stages.append(stage)
    if misplaced is not None:
        # mongod parses every stage (their own errors first), then checks where each stands
        raise MongoError(40602, f"{misplaced} is only valid as the first stage in a pipeline")
    check_expanded_length(pipeline)
    stages = _optimize(stages)
    meta = ctx.variables[META_VAR] if META_VAR in ctx.variables else None
    if meta is not None:
        stages = [_keeping_meta(stage, meta) if stage.name in _META_KEEPING else stage for stage in stages]
    return stages


# Stages whose outputs keep the metadata ($meta) of the input document they came from. ($lookup
# hands it on itself: run one document at a time it would rebuild its foreign index per document.)
_META_KEEPING = frozenset({"$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$unwind",
                           "$graphLookup"})


def _keeping_meta(stage: Stage, meta: Any) -> Stage:
    """Run ``stage`` one input document at a time and hand each input's metadata to its outputs
    (only for reads that carry a DocMeta table)."""
    def apply(docs: Iterator[dict]) -> Iterator[dict]:
        for doc in docs:
            for out in stage._apply(iter((doc,))):  # (counted once, by the Stage returned)
                meta.hand_on(doc, out)
                yield out
    return Stage(stage.name, stage.spec, apply, blocking=stage.blocking, stats=stage.stats)


# mongod's refusal of $near/$nearSphere in a filter that cannot sort ($match, restrictSearchWithMatch).
NEAR_NOT_ALLOWED = ("$geoNear, $near, and $nearSphere are not allowed in this context, as these operators require "
                    "sorting geospatial data. If you do not need sort, consider using $geoWithin instead. Check out "
                    "https://dochub.mongodb.org/core/near-sort-operation and https://dochub.mongodb.org/core/"
                    "nearSphere-sort-operationfor more details.")


def has_near(value: Any) -> bool:
    """``$near``/``$nearSphere`` (or their legacy spelling ``$geoNear``) anywhere in a filter (what a
    ``$match`` may not hold: 5626500)."""
    # (every $match is walked: one breadth-first pass over a list of the containers met, which grows as
    # it is read: no call per container nor per scalar; a client controls the nesting, so no recursion)
    todo = [value]
    for v in todo:
        t = type(v)
        if t is dict or t is not list and isinstance(v, dict):
            if "$near" in v or "$nearSphere" in v or "$geoNear" in v:
                return True
            for k in v:
                if (tx := type(x := v[k])) is dict or tx is list \
                        or tx not in SCALAR_TYPES and isinstance(x, (dict, list)):
                    todo += (x,)
        elif t is list or isinstance(v, list):
            for x in v:
                if (tx := type(x)) is dict or tx is list or tx not in SCALAR_TYPES and isinstance(x, (dict, list)):
                    todo += (x,)
    return False


def _optimize(stages: list[Stage]) -> list[Stage]:
    """Rewrites that keep results identical:

    - $sort immediately followed by $limit becomes one top-k $sort (explain shows the limit);
    - $sort followed by a $group using only $first/$last (TSBS "lastpoint") keeps one document
      per group instead of sorting everything; the $sort stays in the list as a no-op for explain.
    """
    out: list[Stage] = []
    for stage in stages:
        prev = out[-1] if out else None
        if stage.name == "$limit" and prev is not None and prev.name == "$sort" and hasattr(prev, "with_limit"):
            out[-1] = prev.with_limit(stage.spec)
            continue
        if (stage.name == "$group" and prev is not None and prev.name == "$sort"
                and getattr(prev, "limit", 0) is None and hasattr(stage, "can_fuse_sort") and stage.can_fuse_sort()):
            out[-1] = Stage("$sort", prev.spec, lambda docs: docs)
            stage = stage.fuse_sort(prev.sort_spec)  # type: ignore[attr-defined]
        out.append(stage)
    return out


def run_pipeline(pipeline: list[dict] | list[Stage], source: Iterable[dict],
                 ctx: PipelineContext | None = None) -> Iterator[dict]:
    """Parse (unless already parsed) and chain the stages over ``source``; returns a generator."""
    stages = pipeline if pipeline and isinstance(pipeline[0], Stage) else parse_pipeline(pipeline, ctx)
    return chain(stages, source)


def chain(stages: list[Stage], source: Iterable[dict]) -> Iterator[dict]:
    it: Iterator[dict] = iter(source)
    for stage in stages:
        it = stage.apply(it)
    return it
