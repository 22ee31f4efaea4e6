"""An aggregate the query layer answers alone is explained like a find (mongod 7.0, classic engine).

mongod pushes a collection aggregate's leading ``$match`` (the filter), a ``$sort`` then at the front with
the ``$limit``s it absorbs and the ``$skip``s after it (else the ``$limit``/``$skip`` stages that can
move to the front), and an inclusion ``$project`` (an exclusion one when nothing else is left) into the
query layer (pipeline_d.cpp); when no stage is left, run_aggregate.cpp's ``canOptimizeAwayPipeline``
drops the pipeline and explain answers with a top-level ``queryPlanner`` (``optimizedPipeline: true``)
and ``executionStats``, no ``stages``. Otherwise the ``$cursor`` form stays, and the leading ``$match``
is the ``$cursor``'s filter, not a stage of its own. Cases from jstests/aggregation/optimize_away_pipeline.js
(its classic-engine branch: Tidemark pushes no ``$group`` into the query layer, as SBE would). Found by
django-mongodb-backend's test suite, which reads ``explain["queryPlanner"]["winningPlan"]``."""

from __future__ import annotations

import pytest
from harness.jstests import plan_stages
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "aggregate")


def explain(db, pipeline, verbosity="queryPlanner", coll="c", **options):
    return db.command("explain", {"aggregate": coll, "pipeline": pipeline, "cursor": {}, **options},
                      verbosity=verbosity)


def find_stage(node, name):
    while isinstance(node, dict):
        if node.get("stage") == name:
            return node
        node = node.get("inputStage")
    return None


def assert_query_plan(db, pipeline, expected_stages=(), expected=None, ordered=False, **options):
    """assertPipelineDoesNotUseAggregation: no stages, the find-shaped plan, optimizedPipeline true."""
    reply = explain(db, pipeline, **options)
    assert "stages" not in reply, reply
    assert reply["queryPlanner"]["optimizedPipeline"] is True, reply
    names = plan_stages(reply["queryPlanner"]["winningPlan"])
    for stage in expected_stages:
        assert any(n.startswith(stage) for n in names), (stage, reply)
    check_result(db, pipeline, expected, ordered, options)
    return reply


def assert_aggregation(db, pipeline, expected=None, ordered=False, **options):
    """assertPipelineUsesAggregation: a $cursor stage first, no optimizedPipeline, stages after it."""
    reply = explain(db, pipeline, **options)
    assert "queryPlanner" not in reply, reply
    cursor = reply["stages"][0]["$cursor"]
    assert "optimizedPipeline" not in cursor["queryPlanner"], reply
    assert len(reply["stages"]) > 1, reply
    check_result(db, pipeline, expected, ordered, options)
    return reply


def check_result(db, pipeline, expected, ordered, options):
    if expected is None:
        return
    actual = list(db.c.aggregate(pipeline, **options))
    if ordered:
        assert actual == expected
    else:
        assert sorted(map(repr, actual)) == sorted(map(repr, expected))


@pytest.fixture
def base(db):
    db.c.insert_many([{"_id": 1, "x": 10}, {"_id": 2, "x": 20}, {"_id": 3, "x": 30}])
    return db


def test_match_on_a_partial_unique_index_is_a_query_plan(db):
    """The django-mongodb-backend reproduction."""
    db.t.create_index("integer", unique=True,
                      partialFilterExpression={"integer": {"$gte": -2**63, "$lte": 2**63 - 1}})
    db.t.insert_one({"integer": 42})
    reply = explain(db, [{"$match": {"integer": 42}}], coll="t")
    assert "stages" not in reply
    assert reply["queryPlanner"]["optimizedPipeline"] is True
    assert reply["queryPlanner"]["namespace"] == f"{db.name}.t"
    assert reply["queryPlanner"]["parsedQuery"] == {"integer": 42}
    assert "winningPlan" in reply["queryPlanner"]
    assert reply["command"]["aggregate"] == "t" and reply["explainVersion"] == "1"


def test_basic_pipelines(base):
    docs = [{"_id": 1, "x": 10}, {"_id": 2, "x": 20}, {"_id": 3, "x": 30}]
    assert_query_plan(base, [], ["COLLSCAN"], docs)
    assert_query_plan(base, [{"$match": {"x": 20}}], ["COLLSCAN"], [docs[1]])
    assert_query_plan(base, [{"$match": {}}], ["COLLSCAN"], docs)
    assert_query_plan(base, [{"$match": {"x": {"$gte": 20}}}, {"$skip": 1}], ["SKIP", "COLLSCAN"], [docs[2]])


def test_collation(base):
    base.c.insert_one({"_id": 4, "x": 40, "b": "abc"})
    assert_query_plan(base, [{"$match": {"b": "ABC"}}], ["COLLSCAN"], [{"_id": 4, "x": 40, "b": "abc"}],
                      collation={"locale": "en_US", "strength": 2})


def test_sort_and_projection_over_an_index(base):
    base.c.create_index("x")
    assert_query_plan(base, [{"$sort": {"x": 1}}, {"$project": {"x": 1, "_id": 0}}], ["PROJECTION", "IXSCAN"],
                      [{"x": 10}, {"x": 20}, {"x": 30}], ordered=True)
    assert_query_plan(base, [{"$match": {"x": {"$gte": 20}}}, {"$sort": {"x": 1}}, {"$project": {"x": 1, "_id": 0}}],
                      ["IXSCAN"], [{"x": 20}, {"x": 30}], ordered=True)
    assert_query_plan(base, [{"$match": {"x": {"$gte": 20}}}, {"$sort": {"x": 1}}, {"$limit": 1},
                             {"$project": {"x": 1, "_id": 0}}], ["IXSCAN", "LIMIT"], [{"x": 20}])
    # a computed projection after a sort and limit is not pushed (SERVER-54128)
    assert_aggregation(base, [{"$match": {"x": {"$gte": 20}}}, {"$sort": {"x": 1}}, {"$limit": 1},
                              {"$project": {"x": {"$substr": ["$y", 0, 1]}, "_id": 0}}], [{"x": ""}])


def test_projections(base):
    base.c.insert_one({"_id": 4, "x": 40, "a": {"b": "ab1"}})
    assert_query_plan(base, [{"$project": {"x": 1, "_id": 0}}], ["PROJECTION", "COLLSCAN"],
                      [{"x": 10}, {"x": 20}, {"x": 30}, {"x": 40}])
    assert_query_plan(base, [{"$match": {"x": 20}}, {"$project": {"x": 1, "_id": 0}}], ["PROJECTION"], [{"x": 20}])
    assert_query_plan(base, [{"$project": {"x": 1, "a.b": 1, "_id": 0}}], ["PROJECTION"],
                      [{"x": 10}, {"x": 20}, {"x": 30}, {"x": 40, "a": {"b": "ab1"}}])
    assert_query_plan(base, [{"$match": {"x": 40}}, {"$project": {"a.b": 1, "_id": 0}}], ["PROJECTION"],
                      [{"a": {"b": "ab1"}}])
    assert_query_plan(base, [{"$project": {"x": {"$substr": ["$y", 0, 1]}, "_id": 0}}], ["PROJECTION"])
    assert_query_plan(base, [{"$match": {"x": 20}}, {"$project": {"x": {"$substr": ["$y", 0, 1]}, "_id": 0}}],
                      ["PROJECTION"], [{"x": ""}])
    assert_query_plan(base, [{"$project": {"x": {"$add": ["$a", 1]}}}], ["PROJECTION"])
    assert_query_plan(base, [{"$project": {"x": 0}}], ["PROJECTION", "COLLSCAN"])
    assert_query_plan(base, [{"$unset": "x"}], ["PROJECTION"])
    reply = assert_query_plan(base, [{"$match": {"x": 20}}, {"$project": {"_id": 0, "x": 1}}])
    assert find_stage(reply["queryPlanner"]["winningPlan"], "PROJECTION_SIMPLE")["transformBy"] == {"_id": 0, "x": 1}


def test_stages_without_a_find_equivalent_keep_the_pipeline(base):
    assert_aggregation(base, [{"$match": {"x": {"$gte": 20}}}, {"$count": "count"}], [{"count": 2}])
    assert_aggregation(base, [{"$match": {"x": {"$gte": 20}}}, {"$group": {"_id": "null", "s": {"$sum": "$x"}}}],
                       [{"_id": "null", "s": 50}])
    assert_aggregation(base, [{"$addFields": {"z": "abc"}}, {"$group": {"_id": "$a", "b": {"$sum": "$b"}}}])
    assert_aggregation(base, [{"$project": {"c": 0}}, {"$group": {"_id": "$a", "b": {"$sum": "$b"}}}])
    assert_aggregation(base, [{"$addFields": {"z": 1}}])
    base.c.create_index({"y": "2d"})
    assert_aggregation(base, [{"$geoNear": {"near": [0, 0], "distanceField": "y", "spherical": True}},
                              {"$limit": 1}])


def test_text_search(base):
    base.c.create_index({"y": "text"})
    assert_query_plan(base, [{"$match": {"$text": {"$search": "abc"}}}], ["TEXT"])
    assert_query_plan(base, [{"$match": {"$text": {"$search": "abc"}}}, {"$sort": {"sortField": 1}},
                             {"$project": {"a": 1, "b": 1}}], ["PROJECTION", "SORT"], [])


def test_limit_and_skip_pushdown(base):
    base.c.create_index("x")
    assert_query_plan(base, [{"$limit": 1}], ["LIMIT", "COLLSCAN"])
    assert_query_plan(base, [{"$match": {"x": 20}}, {"$limit": 1}], ["LIMIT", "IXSCAN"], [{"_id": 2, "x": 20}])
    assert_aggregation(base, [{"$limit": 1}, {"$match": {"x": 20}}])  # a $match after a $limit stays
    assert_query_plan(base, [{"$match": {"x": {"$gte": 20}}}, {"$project": {"_id": 0, "x": 1}}, {"$limit": 1}],
                      ["IXSCAN", "LIMIT"], [{"x": 20}])
    assert_query_plan(base, [{"$match": {"x": {"$gte": 20}}}, {"$project": {"_id": 0, "x": 1, "y": 1}},
                             {"$limit": 1}], ["IXSCAN", "LIMIT", "PROJECTION"], [{"x": 20}])
    assert_aggregation(base, [{"$match": {"x": {"$gte": 20}}}, {"$project": {"_id": 0, "x": 1}}, {"$limit": 1},
                              {"$sort": {"x": 1}}], [{"x": 20}])
    assert_query_plan(base, [{"$match": {"x": {"$gte": 20}}}, {"$sort": {"x": -1}}, {"$limit": 2}],
                      ["IXSCAN", "LIMIT"], [{"_id": 3, "x": 30}, {"_id": 2, "x": 20}], ordered=True)
    match, sort, project = {"$match": {"x": {"$gte": 20}}}, {"$sort": {"x": -1}}, {"$project": {"_id": 0, "x": 1}}
    for pipeline in ([match, sort, {"$limit": 2}, project], [match, sort, project, {"$limit": 2}],
                     [match, sort, {"$limit": 3}, project, {"$limit": 2}]):
        reply = assert_query_plan(base, pipeline, ["IXSCAN", "LIMIT"], [{"x": 30}, {"x": 20}], ordered=True)
        assert find_stage(reply["queryPlanner"]["winningPlan"], "LIMIT")["limitAmount"] == 2
    assert_aggregation(base, [{"$sort": {"x": 1}}, {"$limit": 2}, {"$group": {"_id": None, "s": {"$sum": "$x"}}}],
                       [{"_id": None, "s": 30}])
    assert_aggregation(base, [{"$group": {"_id": "$x"}}], [{"_id": 10}, {"_id": 20}, {"_id": 30}])
    assert_aggregation(base, [{"$limit": 2}, {"$group": {"_id": "$x"}}])


def test_limits_and_skips_combine(base):
    base.c.create_index("x")
    reply = assert_query_plan(base, [{"$match": {"x": {"$gte": 0}}}, {"$limit": 2}, {"$project": {"_id": 0, "x": 1}},
                                     {"$limit": 1}], ["IXSCAN", "LIMIT"])
    assert find_stage(reply["queryPlanner"]["winningPlan"], "LIMIT")["limitAmount"] == 1
    pipeline = [{"$match": {"x": {"$gte": 0}}}, {"$project": {"_id": 0, "x": 1}}, {"$skip": 20}, {"$limit": 15},
                {"$skip": 10}, {"$limit": 7}]
    reply = assert_query_plan(base, pipeline, ["IXSCAN", "LIMIT", "SKIP"], [])
    assert find_stage(reply["queryPlanner"]["winningPlan"], "SKIP")["skipAmount"] == 30
    assert find_stage(reply["queryPlanner"]["winningPlan"], "LIMIT")["limitAmount"] == 5
    # a $sort takes in the $limit past a $skip, the $skip after it is the find's skip
    reply = assert_query_plan(base, [{"$sort": {"x": 1}}, {"$skip": 1}, {"$limit": 1}], ["SKIP", "LIMIT"],
                              [{"_id": 2, "x": 20}])
    assert find_stage(reply["queryPlanner"]["winningPlan"], "SKIP")["skipAmount"] == 1
    assert find_stage(reply["queryPlanner"]["winningPlan"], "LIMIT")["limitAmount"] == 1
    # a skip past the limit leaves nothing: LimitThenSkip(2, 5) is skip 2 then limit 0
    reply = explain(base, [{"$sort": {"x": 1}}, {"$limit": 2}, {"$skip": 5}], verbosity="executionStats")
    assert find_stage(reply["queryPlanner"]["winningPlan"], "LIMIT")["limitAmount"] == 0
    assert reply["executionStats"]["nReturned"] == 0
    assert list(base.c.aggregate([{"$sort": {"x": 1}}, {"$limit": 2}, {"$skip": 5}])) == []
    # of two $sorts without a limit between them only the last one counts
    assert_query_plan(base, [{"$sort": {"x": 1}}, {"$sort": {"_id": -1}}], [],
                      [{"_id": 3, "x": 30}, {"_id": 2, "x": 20}, {"_id": 1, "x": 10}], ordered=True)


def test_blocking_sort_without_an_index(base):
    assert_query_plan(base, [{"$sort": {"x": -1}}], ["SORT", "COLLSCAN"],
                      [{"_id": 3, "x": 30}, {"_id": 2, "x": 20}, {"_id": 1, "x": 10}], ordered=True)
    assert_query_plan(base, [{"$match": {"x": {"$gte": 0}}}, {"$sort": {"x": -1}}, {"$limit": 1}], ["SORT"],
                      [{"_id": 3, "x": 30}])
    assert_query_plan(base, [{"$match": {"x": {"$gte": 20}}}, {"$sort": {"x": -1}}, {"$project": {"_id": 0, "x": 1}},
                             {"$limit": 2}], ["SORT", "PROJECTION"], [{"x": 30}, {"x": 20}], ordered=True)
    base.c.create_index({"y": 1, "x": 1})
    assert_query_plan(base, [{"$match": {"y": {"$gt": 0}, "x": {"$gte": 20}}}, {"$sort": {"x": -1}},
                             {"$project": {"_id": 0, "y": 1, "x": 1}}, {"$limit": 2}], [], [])


def test_rewrites_before_pushdown(base):
    """A $match after a $sort or an independent projection moves before it; adjacent $matches coalesce."""
    assert_query_plan(base, [{"$sort": {"x": -1}}, {"$match": {"x": {"$lt": 30}}}], ["SORT"],
                      [{"_id": 2, "x": 20}, {"_id": 1, "x": 10}], ordered=True)
    assert_query_plan(base, [{"$project": {"x": 1}}, {"$match": {"x": 20}}], ["PROJECTION"], [{"_id": 2, "x": 20}])
    assert_query_plan(base, [{"$match": {"x": {"$gt": 10}}}, {"$match": {"x": {"$lt": 30}}}], [], [{"_id": 2, "x": 20}])
    # the $match reads what the projection computes: it stays after it
    assert_aggregation(base, [{"$project": {"x": {"$add": ["$x", 1]}}}, {"$match": {"x": 21}}], [{"_id": 2, "x": 21}])
    assert_aggregation(base, [{"$addFields": {"x": 1}}, {"$match": {"x": 1}}])


def test_execution_stats_at_the_top_level(base):
    reply = explain(base, [{"$match": {"x": {"$gte": 20}}}, {"$skip": 1}], verbosity="executionStats")
    assert "stages" not in reply and reply["executionStats"]["nReturned"] == 1
    assert reply["executionStats"]["executionStages"]["stage"] == "SKIP"
    reply = explain(base, [], verbosity="allPlansExecution")
    assert reply["executionStats"]["nReturned"] == 3 and reply["executionStats"]["allPlansExecution"] == []


def test_explain_option_of_aggregate(base):
    reply = base.command("aggregate", "c", pipeline=[{"$match": {"x": 10}}], explain=True)
    assert "stages" not in reply and reply["queryPlanner"]["optimizedPipeline"] is True
    assert reply["queryPlanner"]["parsedQuery"] == {"x": 10}


def test_missing_collection_is_eof(db):
    reply = explain(db, [{"$match": {"x": 1}}], coll="nothing")
    assert reply["queryPlanner"]["winningPlan"]["stage"] == "EOF"
    assert reply["queryPlanner"]["optimizedPipeline"] is True


def test_cursor_form_absorbs_the_leading_match(base):
    reply = explain(base, [{"$match": {"x": {"$gte": 20}}}, {"$group": {"_id": None, "n": {"$sum": 1}}}])
    assert [next(iter(stage)) for stage in reply["stages"]] == ["$cursor", "$group"]
    assert reply["stages"][0]["$cursor"]["queryPlanner"]["parsedQuery"] == {"x": {"$gte": 20}}
    assert reply["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["filter"] == {"x": {"$gte": 20}}


# --------------------------------------------------------------------------------------------------
# the family: random pipelines of $match/$sort/$skip/$limit/$project/$addFields, maybe a final $group
# --------------------------------------------------------------------------------------------------

DOCS = [{"_id": i, "x": (i * 7) % 11, "y": i % 3, "a": i} for i in range(1, 11)]
MATCHES = [{"x": {"$gte": 4}}, {"y": 1}, {"a": {"$lt": 8}}, {"$or": [{"y": 0}, {"x": 2}]}, {}]
SORTS = [{"x": 1, "_id": 1}, {"x": -1, "_id": 1}, {"_id": -1}, {"y": 1, "_id": -1}]
PROJECTS = [{"x": 1, "y": 1}, {"x": 0}, {"y": 1, "x2": {"$add": ["$x", 1]}}, {"a": 0}]
ADD_FIELDS = [{"z": 1}, {"y": {"$multiply": ["$a", 2]}}]
STAGE = st.one_of(
    st.sampled_from(MATCHES).map(lambda m: {"$match": m}),
    st.sampled_from(SORTS).map(lambda s: {"$sort": s}),
    st.integers(0, 4).map(lambda n: {"$skip": n}),
    st.integers(1, 6).map(lambda n: {"$limit": n}),
    st.sampled_from(PROJECTS).map(lambda p: {"$project": p}),
    st.sampled_from(ADD_FIELDS).map(lambda a: {"$addFields": a}),
)
GROUP = {"$group": {"_id": "$y", "s": {"$sum": "$x"}}}


def _matches(doc, flt) -> bool:
    for key, cond in flt.items():
        if key == "$or":
            if not any(_matches(doc, c) for c in cond):
                return False
        elif isinstance(cond, dict):
            (op, value), = cond.items()
            if key not in doc or not (doc[key] >= value if op == "$gte" else doc[key] < value):
                return False
        elif doc.get(key, object()) != cond:
            return False
    return True


def _sort_key(doc, spec):
    # missing sorts before numbers; _id is in every spec, so no two documents tie
    return tuple((0, 0) if k not in doc else (1, doc[k] if d == 1 else -doc[k]) for k, d in spec.items())


def reference(pipeline: list[dict]) -> list[dict]:
    """What the pipeline returns over DOCS (insertion order before any $sort), by hand."""
    docs = [dict(d) for d in DOCS]
    for stage in pipeline:
        (name, spec), = stage.items()
        if name == "$match":
            docs = [d for d in docs if _matches(d, spec)]
        elif name == "$sort":
            docs = sorted(docs, key=lambda d: _sort_key(d, spec))
        elif name == "$skip":
            docs = docs[spec:]
        elif name == "$limit":
            docs = docs[:spec]
        elif name == "$project" and spec == {"x": 1, "y": 1}:
            docs = [{k: v for k, v in d.items() if k in ("_id", "x", "y")} for d in docs]
        elif name == "$project" and "x2" in spec:
            docs = [{"_id": d["_id"], **({"y": d["y"]} if "y" in d else {}),
                     "x2": d["x"] + 1 if "x" in d else None} for d in docs]
        elif name == "$project":  # an exclusion
            docs = [{k: v for k, v in d.items() if k not in spec} for d in docs]
        elif name == "$addFields":
            (field, value), = spec.items()
            docs = [{**d, field: value if value == 1 else (d["a"] * 2 if "a" in d else None)} for d in docs]
        else:  # the final $group
            groups: dict = {}
            for d in docs:
                groups[d.get("y")] = groups.get(d.get("y"), 0) + (d.get("x") or 0)
            docs = [{"_id": k, "s": v} for k, v in groups.items()]
    return docs


def clearly_pushed(pipeline: list[dict]) -> bool:
    """Pipelines of the find shape in the find's own order: $match? $sort? ($skip|$limit)* $project?
    (computed projections only without sort, skip or limit; an exclusion one always)."""
    names = [next(iter(s)) for s in pipeline]
    i = 0
    if i < len(names) and names[i] == "$match":
        i += 1
    sorted_ = i < len(names) and names[i] == "$sort"
    i += sorted_
    bounded = False
    while i < len(names) and names[i] in ("$skip", "$limit"):
        i, bounded = i + 1, True
    if i < len(names) and names[i] == "$project":
        spec = pipeline[i]["$project"]
        if not ("x2" in spec and (sorted_ or bounded)):
            i += 1
    return i == len(names)


@pytest.fixture
def family(db):
    db.c.insert_many(DOCS)
    return db


@given(body=st.lists(STAGE, max_size=5), group=st.booleans())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_shape_follows_the_pushdown_and_results_are_unchanged(family, body, group):
    pipeline = [*body, GROUP] if group else body
    reply = explain(family, pipeline, verbosity="executionStats")
    actual = list(family.c.aggregate(pipeline))
    expected = reference(pipeline)
    if group:
        assert sorted(map(repr, actual)) == sorted(map(repr, expected))
    else:
        assert actual == expected
    event("query layer alone" if "queryPlanner" in reply else "$cursor and stages")
    if "queryPlanner" in reply:  # the query layer answered alone
        assert "stages" not in reply and reply["queryPlanner"]["optimizedPipeline"] is True
        assert not group and not any("$addFields" in s for s in pipeline)
        assert reply["executionStats"]["nReturned"] == len(actual)
    else:
        stages = reply["stages"]
        assert "$cursor" in stages[0] and len(stages) > 1
        assert "optimizedPipeline" not in stages[0]["$cursor"]["queryPlanner"]
        assert not clearly_pushed(pipeline), pipeline
        if pipeline and "$match" in pipeline[0] and pipeline[0]["$match"]:
            # the leading $match is the $cursor's filter, not a stage of its own
            assert stages[0]["$cursor"]["queryPlanner"]["parsedQuery"] == pipeline[0]["$match"]
            matches = sum("$match" in stage for stage in pipeline)
            assert sum("$match" in stage for stage in stages[1:]) == matches - 1
    if group or any("$addFields" in s for s in pipeline):
        assert "stages" in reply
    elif clearly_pushed(pipeline):
        assert "queryPlanner" in reply, pipeline
