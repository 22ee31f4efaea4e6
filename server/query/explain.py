"""Explain helpers for aggregation: how mongod's explain output shows the parsed pipeline stages.

``explain_stages(parsed_pipeline) -> list[dict]`` takes the output of ``pipeline.parse_pipeline``
(or a raw pipeline, which it parses first) and returns one ``{"$stage": spec}`` document per stage
as mongod prints them in ``explain.stages`` / ``queryPlanner``: a ``$sort`` absorbs a following
``$limit`` as ``{"$sort": {"sortKey": ..., "limit": n}}``; ``$limit``/``$skip`` show 64-bit integers;
``$sortByCount`` and ``$count`` are shown as the ``$group`` (+ ``$sort``/``$project``) they stand
for, ``$replaceWith`` as ``$replaceRoot``, ``$unset`` as an exclusion ``$project``. The command layer puts these
after its own ``$cursor``/queryPlanner section.

``executed=True`` (an explain at executionStats / allPlansExecution, of stages that ran inside
``pipeline.collecting_stats``) adds what each stage did, read from its ``Stage.stats``, as mongod 7.0's
serialize at kExecStats: the stage's own statistics (``$group``: document_source_group_base.cpp;
``$sort``: document_source_sort.cpp; ``$_internalSetWindowFields``: document_source_set_window_fields.cpp),
then ``nReturned`` and ``executionTimeMillisEstimate`` (pipeline.cpp appendCommonExecStats; time
counted with the stages before it). ``$lookup`` shows the foreign documents it read and its whole scans
of the foreign collection (document_source_lookup.cpp appendSpecificExecStats: Tidemark reads the foreign
collection once and joins in memory, so its counts are those of that read, not of a query per document);
``$unionWith`` its sub-pipeline's stages as they ran. A stage explain shows as several (``$sortByCount``: ``$group``,
``$sort``) gives each of them its counts.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from bson.int64 import Int64

from tidemark.query import desugar
from tidemark.query.pipeline import PipelineContext, Stage, StageStats, parse_pipeline
from tidemark.query.stage_write import merge_options

__all__ = ["explain_stages"]


def explain_stages(parsed_pipeline: list[Stage] | list[dict], ctx: PipelineContext | None = None, *,
                   executed: bool = False) -> list[dict]:
    """One ``{name: spec}`` per stage, in order (deep copies: callers may encode or mutate them);
    ``executed``: with each stage's execution statistics (see the module)."""
    stages = cast("list[Stage]", parsed_pipeline)
    if parsed_pipeline and not isinstance(parsed_pipeline[0], Stage):
        stages = parse_pipeline(list(parsed_pipeline), ctx)
    out: list[dict] = []
    db = ctx.db if ctx is not None else None
    for stage in stages:
        described = _describe(stage, db)
        if executed and stage.stats.sub_pipeline is not None:  # $unionWith: its sub-pipeline's stages as run
            spec = described[0][stage.name]
            if isinstance(spec, dict):
                leading, sub = stage.stats.sub_pipeline
                spec["pipeline"] = ([copy.deepcopy(leading)] if leading is not None else []) + \
                    explain_stages(sub, ctx, executed=True)
        if executed:
            parts = stage.stats.parts if len(stage.stats.parts) == len(described) else [stage] * len(described)
            for doc, part in zip(described, parts, strict=True):
                doc.update(_specific_stats(next(iter(doc)), part))
                doc.update(nReturned=Int64(part.stats.returned),
                           executionTimeMillisEstimate=Int64(int(part.stats.seconds * 1000)))
        out.extend(described)
    return out


def _specific_stats(shown: str, stage: Stage) -> dict[str, Any]:
    """The statistics mongod 7.0 adds for the stage it shows as ``shown`` (in its order)."""
    stats: StageStats = stage.stats
    if shown == "$group" and stage.name == "$group":
        fields = getattr(stage, "fields", ())  # (a fused lastpoint $group keeps no accumulator state)
        return {"maxAccumulatorMemoryUsageBytes": {name: Int64(stats.accumulator_bytes.get(name, 0))
                                                   for name, _ in fields},
                "totalOutputDataSizeBytes": Int64(stats.output_bytes),
                "usedDisk": stats.spills > 0, "spills": Int64(stats.spills),
                "spilledDataStorageSize": Int64(stats.spilled_storage),
                "numBytesSpilledEstimate": Int64(stats.spilled_bytes),
                "spilledRecords": Int64(stats.spilled_records)}
    if shown == "$sort" and stage.name == "$sort":
        return {"totalDataSizeSortedBytesEstimate": Int64(stats.data_bytes), "usedDisk": stats.spills > 0,
                "spills": Int64(stats.spills), "spilledDataStorageSize": Int64(stats.spilled_storage)}
    if shown == "$lookup":  # (document_source_lookup.cpp appendSpecificExecStats)
        return {"totalDocsExamined": Int64(stats.docs_examined), "totalKeysExamined": Int64(0),
                "collectionScans": Int64(stats.collection_scans), "indexesUsed": []}
    if shown == "$_internalSetWindowFields":
        return {"maxFunctionMemoryUsageBytes": {name: Int64(n) for name, n in stats.accumulator_bytes.items()},
                "maxTotalMemoryUsageBytes": Int64(stats.data_bytes), "usedDisk": stats.spills > 0}
    return {}


def _describe(stage: Stage, db: str | None) -> list[dict[str, Any]]:
    if stage.name == "$out":  # its target as mongod 7.0 serializes it ({db, coll} of the current db)
        spec = {"coll": stage.spec} if type(stage.spec) is str else stage.spec
        return [{"$out": {"db": spec.get("db", db), "coll": spec["coll"],
                          **({"timeseries": copy.deepcopy(spec["timeseries"])} if "timeseries" in spec else {})}}]
    if stage.name == "$merge":
        merge = merge_options(stage.spec)
        on = merge["on"][0] if merge["on"] == ["_id"] else merge["on"]
        matched = copy.deepcopy(stage.spec["whenMatched"]) if merge["whenMatched"] == "pipeline" \
            else merge["whenMatched"]
        return [{"$merge": {"into": {"db": merge["db"] or db, "coll": merge["into"]}, "on": on,
                            "whenMatched": matched, "whenNotMatched": merge["whenNotMatched"],
                            **({"let": copy.deepcopy(stage.spec["let"])} if isinstance(stage.spec, dict)
                               and "let" in stage.spec else {})}}]
    expanded = desugar.expand(stage.name, stage.spec)  # $sortByCount, $count, $setWindowFields
    if expanded is not None:
        return expanded
    if stage.name in ("$limit", "$skip"):
        return [{stage.name: Int64(stage.spec)}]
    if stage.name == "$unionWith" and type(stage.spec) is str:  # (mongod serializes its spec in full)
        return [{"$unionWith": {"coll": stage.spec, "pipeline": []}}]
    if stage.name == "$replaceWith":
        return [{"$replaceRoot": {"newRoot": copy.deepcopy(stage.spec)}}]
    if stage.name == "$unset":
        paths = [stage.spec] if type(stage.spec) is str else stage.spec
        return [{"$project": {**{p: False for p in paths}, "_id": True}}]
    return [{stage.name: copy.deepcopy(stage.spec)}]
