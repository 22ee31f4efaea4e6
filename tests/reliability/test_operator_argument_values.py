"""Every operator the server knows, given hostile values as its argument, answers like mongod: a result
or a MongoDB error code (never 1 InternalError, never Python or library text), on a connection that stays
open.

The family, over the server's own tables (the ones tests/test_operator_table.py checks against MongoDB
7.0's lists), on a regular and on a time-series collection: each aggregation stage as ``[{<stage>: v}]``;
each query operator as ``{a: {<op>: v}}`` (the top-level ones as ``{<op>: v}``); each projection
operator as ``{a: {<op>: v}}``; each expression operator as ``{$project: {x: {<op>: v}}}`` and with
``v`` as every argument of a two-argument list; each accumulator in ``$group``; each window function in
``$setWindowFields`` with and without a window. The values are ``harness.hostile.HOSTILE``, the edges of
each BSON type. One level deeper, the "named arguments" run gives each operator a document of one to four
of the argument names operators take (``NAMED``), valued at random among the hostile values and plausible
ones (a seeded run: the same requests every time)."""

from __future__ import annotations

import random

import pytest
from harness.hostile import DB, HOSTILE, send_all

from tidemark.query import accumulators, expressions, match_parse, pipeline, project, windows

TOP_LEVEL_QUERY = frozenset({"$and", "$or", "$nor", "$expr", "$where", "$text", "$comment", "$jsonSchema",
                             "$alwaysTrue", "$alwaysFalse", "$sampleRate"})


NAMED = """path as from localField foreignField pipeline let into on coll db size by output sortBy partitionBy
range step field unit bounds groupBy buckets boundaries default near distanceField maxDistance minDistance key
query includeArrayIndex preserveNullAndEmptyArrays newRoot timeField metaField _id n input startWith
connectFromField connectToField maxDepth depthField restrictSearchWithMatch whenMatched whenNotMatched date
timezone binSize startOfWeek format onError onNull amount startDate endDate find replacement regex options chars
vars in cond then else branches if case to p method initialExpr window documents alpha N spherical includeLocs
distanceMultiplier granularity fields values arrays useLongestLength count allUsers idleCursors localOps
fullDocument caseSensitive diacriticSensitive language""".split()
PLAUSIBLE = ["$a", "$m", "$t", 1, "a", {"a": 1}, [1, 2], "day", "hour", "UTC"]
NAMED_RUN = 6_000


def _named_bodies(rng: random.Random):
    stages = sorted(pipeline.STAGES or pipeline._stage_table())
    exprs = sorted(set(expressions.OPERATORS) | expressions.SPECIAL_OPERATORS)
    accs, wins = sorted(accumulators.ACCUMULATORS), sorted(windows.WINDOW_FUNCTIONS)

    def spec() -> dict:
        return {k: rng.choice(HOSTILE + PLAUSIBLE) for k in rng.sample(NAMED, rng.randint(1, 4))}

    for _ in range(NAMED_RUN):
        target, kind = rng.choice(["c", "ts"]), rng.randrange(4)
        if kind == 0:
            stage = {rng.choice(stages): spec()}
        elif kind == 1:
            stage = {"$project": {"x": {rng.choice(exprs): spec()}}}
        elif kind == 2:
            stage = {"$group": {"_id": None, "x": {rng.choice(accs): spec()}}}
        else:
            window = {"window": spec()} if rng.random() < 0.5 else {}
            stage = {"$setWindowFields": {"sortBy": {"a": 1}, "output": {"x": {rng.choice(wins): spec(), **window}}}}
        yield _aggregate(target, [stage])


def _aggregate(target: str, stages: list) -> dict:
    return {"aggregate": target, "pipeline": stages, "cursor": {}, "$db": DB}


def _bodies(kind: str):
    if kind == "named arguments":
        yield from _named_bodies(random.Random(62))
        return
    for target in ("c", "ts"):
        for value in HOSTILE:
            if kind == "stages":
                for stage in sorted(pipeline.STAGES or pipeline._stage_table()):
                    yield _aggregate(target, [{stage: value}])
            elif kind == "query":
                for op in sorted(match_parse.QUERY_OPERATORS):
                    flt = {op: value} if op in TOP_LEVEL_QUERY else {"a": {op: value}}
                    yield {"find": target, "filter": flt, "$db": DB}
            elif kind == "projection":
                for op in sorted(project.PROJECTION_OPERATORS):
                    yield {"find": target, "projection": {"a": {op: value}}, "$db": DB}
            elif kind == "expressions":
                for op in sorted(set(expressions.OPERATORS) | expressions.SPECIAL_OPERATORS):
                    yield _aggregate(target, [{"$project": {"x": {op: value}}}])
                    yield _aggregate(target, [{"$project": {"x": {op: [value, value]}}}])
            elif kind == "accumulators":
                for op in sorted(accumulators.ACCUMULATORS):
                    yield _aggregate(target, [{"$group": {"_id": None, "x": {op: value}}}])
            else:  # windows
                for op in sorted(windows.WINDOW_FUNCTIONS):
                    yield _aggregate(target, [{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"x": {op: value}}}}])
                    yield _aggregate(target, [{"$setWindowFields": {"sortBy": {"a": 1}, "output": {
                        "x": {op: value, "window": {"documents": [-1, 1]}}}}}])


@pytest.mark.slow
@pytest.mark.commands("aggregate", "find")
@pytest.mark.parametrize("kind", ["stages", "query", "projection", "expressions", "accumulators", "windows",
                                  "named arguments"])
def test_every_operator_answers_hostile_argument_values_with_a_mongodb_error(start_server, kind):
    srv = start_server()
    sent, problems = send_all(srv.port, _bodies(kind))
    assert sent > 100
    assert not problems, f"{len(problems)} of {sent}:\n" + "\n".join(problems[:30])
    assert srv.running and srv.client().admin.command("ping")["ok"] == 1
