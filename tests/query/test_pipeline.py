"""Pipeline parsing: stage shape, names, placement, validation before execution, streaming, explain."""

import itertools

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.explain import explain_stages
from tidemark.query.pipeline import PipelineContext, Stage, parse_pipeline, run_pipeline


@pytest.mark.parametrize("pipeline,code,message", [
    ([{"$foo": {}}], 40324, "Unrecognized pipeline stage name: '$foo'"),
    ([{"$match": {}, "$limit": 1}], 40323, "A pipeline stage specification object must contain exactly one field."),
    ([{}], 40323, None),
    ([{"$out": "x"}, {"$match": {}}], 40601, "$out can only be the final stage in the pipeline"),
    ([{"$merge": "x"}, {"$match": {}}], 40601, "$merge can only be the final stage in the pipeline"),
    ([{"$match": {}}, {"$collStats": {}}], 40602, "$collStats is only valid as the first stage in a pipeline"),
    ([{"$match": {}}, {"$indexStats": {}}], 40602, None),
    ([{"$match": {}}, {"$documents": []}], 40602, None),
    # mongod's projection parser: a lone $-field naming no expression (projection_parser.cpp)
    ([{"$project": {"x": {"$nope": 1}}}], 31325, "Invalid $project :: caused by :: Unknown expression $nope"),
    ([{"$group": {"_id": 1, "x": {"$nope": 1}}}], 15952, None),
    ([{"$graphLookup": {}}], 9, "missing 'from' option to $graphLookup stage specification: {}"),
    (["$match"], 14, None),
    ({"$match": {}}, 14, None),
])
def test_pipeline_parse_errors(pipeline, code, message):
    with pytest.raises(MongoError) as e:
        parse_pipeline(pipeline)
    assert e.value.code == code
    if message:
        assert e.value.message == message


def test_whole_pipeline_is_validated_before_the_first_document_is_read():
    pulled = []

    def source():
        for i in range(3):
            pulled.append(i)
            yield {"a": i}
    with pytest.raises(MongoError):
        run_pipeline([{"$match": {}}, {"$limit": -1}], source())
    assert pulled == []


def test_streaming_stages_pull_only_what_they_need():
    counter = itertools.count()
    source = ({"a": next(counter)} for _ in itertools.repeat(None))  # infinite
    out = list(run_pipeline([{"$match": {"a": {"$gte": 5}}}, {"$addFields": {"b": 1}}, {"$limit": 3}], source))
    assert [d["a"] for d in out] == [5, 6, 7]


def test_sort_followed_by_limit_becomes_top_k_and_explain_shows_it():
    stages = parse_pipeline([{"$match": {"a": 1}}, {"$sort": {"a": -1}}, {"$limit": 2}, {"$skip": 1}])
    assert [s.name for s in stages] == ["$match", "$sort", "$skip"]
    assert explain_stages(stages) == [{"$match": {"a": 1}}, {"$sort": {"sortKey": {"a": -1}, "limit": 2}},
                                      {"$skip": 1}]


def test_explain_accepts_a_raw_pipeline():
    assert explain_stages([{"$limit": 5}]) == [{"$limit": 5}]


def test_extra_stages_plug_in_through_the_context():
    def parse_double(spec, ctx):
        return Stage("$_double", spec, lambda docs: (d for doc in docs for d in (doc, doc)))
    ctx = PipelineContext(extra_stages={"$_double": parse_double})
    assert list(run_pipeline([{"$_double": {}}, {"$count": "n"}], [{"a": 1}], ctx)) == [{"n": 2}]


def test_let_variables_and_now_reach_expressions():
    ctx = PipelineContext(variables={"k": 10})
    out = list(run_pipeline([{"$project": {"_id": 0, "v": {"$add": ["$a", "$$k"]}, "has_now": {"$ne": ["$$NOW", None]}}}],
                            [{"a": 1}], ctx))
    assert out == [{"v": 11, "has_now": True}]


def test_out_and_merge_hand_documents_to_the_callbacks():
    written = {}

    def write_out(spec, docs):
        written[str(spec)] = list(docs)

    def merge_into(spec, docs, collation, variables):
        assert collation is None  # (no collation asked: the simple one)
        write_out(spec, docs)
    ctx = PipelineContext(write_out=write_out, merge_into=merge_into)
    assert list(run_pipeline([{"$match": {"a": 1}}, {"$out": "t"}], [{"a": 1}, {"a": 2}], ctx)) == []
    assert written["t"] == [{"a": 1}]
    list(run_pipeline([{"$merge": {"into": "m"}}], [{"a": 3}], ctx))
    assert written[str({"into": "m"})] == [{"a": 3}]


def test_out_without_a_server_is_not_supported():
    with pytest.raises(MongoError) as e:
        list(run_pipeline([{"$out": "t"}], [{"a": 1}]))
    assert e.value.code == 224


def test_coll_stats_and_index_stats_use_the_callbacks():
    ctx = PipelineContext(coll_stats=lambda spec: {"ns": "db.c", "count": 3}, index_stats=lambda: [{"name": "_id_"}])
    assert list(run_pipeline([{"$collStats": {"count": {}}}], [], ctx)) == [{"ns": "db.c", "count": 3}]
    assert list(run_pipeline([{"$indexStats": {}}], [], ctx)) == [{"name": "_id_"}]


def test_group_memory_limit_without_allow_disk_use_is_292():
    ctx = PipelineContext(group_memory_limit=10_000)
    docs = ({"k": i, "s": "x" * 100} for i in range(1000))
    with pytest.raises(MongoError) as e:
        list(run_pipeline([{"$group": {"_id": "$k"}}], docs, ctx))
    assert e.value.code == 292
    ctx = PipelineContext(group_memory_limit=10_000, allow_disk_use=True)
    docs = ({"k": i, "s": "x" * 100} for i in range(1000))  # the groups spill
    assert sorted(d["_id"] for d in run_pipeline([{"$group": {"_id": "$k"}}], docs, ctx)) == list(range(1000))
    ctx = PipelineContext(group_memory_limit=100_000, allow_disk_use=True)
    docs = ({"k": i} for i in range(100))
    assert len(list(run_pipeline([{"$group": {"_id": "$k"}}], docs, ctx))) == 100


def test_sort_then_first_last_group_is_fused_without_changing_results():
    import random
    rng = random.Random(3)
    docs = [{"h": rng.choice(["a", "b", "c", None]), "t": rng.randrange(20), "v": i} for i in range(300)]
    docs += [{"t": 5, "v": -1}]  # missing group key groups with null
    fused = [{"$sort": {"h": 1, "t": -1}}, {"$group": {"_id": "$h", "first": {"$first": "$v"}, "last": {"$last": "$v"},
                                                       "t": {"$first": "$t"}}}]
    plain = [fused[0], {"$match": {}}, fused[1]]  # a stage in between prevents the rewrite
    assert [s.name for s in parse_pipeline(fused)] == ["$sort", "$group"]
    assert list(run_pipeline(fused, [dict(d) for d in docs])) == list(run_pipeline(plain, [dict(d) for d in docs]))


def test_date_trunc_bin_cache_handles_unordered_input():
    import datetime as dt
    times = [dt.datetime(2020, 1, 1, 0, m, s) for m, s in [(5, 1), (5, 59), (4, 59), (5, 0), (6, 0), (5, 30)]]
    out = list(run_pipeline([{"$project": {"_id": 0, "m": {"$dateTrunc": {"date": "$t", "unit": "minute"}}}}],
                            [{"t": t} for t in times]))
    assert [d["m"].minute for d in out] == [5, 5, 4, 5, 6, 5]


def test_extra_stage_factories_may_return_a_bare_apply_callable():
    ctx = PipelineContext(extra_stages={"$_tag": lambda spec, ctx: (lambda docs: ({**d, "tag": spec} for d in docs))})
    stages = parse_pipeline([{"$_tag": "x"}, {"$limit": 1}], ctx)
    assert explain_stages(stages) == [{"$_tag": "x"}, {"$limit": 1}]
    assert list(run_pipeline(stages, [{"a": 1}, {"a": 2}])) == [{"a": 1, "tag": "x"}]


def test_explain_desugars_alias_stages_like_mongod():
    shown = explain_stages([{"$count": "n"}, {"$replaceWith": "$a"}, {"$unset": ["x", "y"]}, {"$sortByCount": "$k"}])
    assert shown == [
        {"$group": {"_id": {"$const": None}, "n": {"$sum": {"$const": 1}}}},
        {"$project": {"n": True, "_id": False}},
        {"$replaceRoot": {"newRoot": "$a"}},
        {"$project": {"x": False, "y": False, "_id": True}},
        {"$group": {"_id": "$k", "count": {"$sum": {"$const": 1}}}},
        {"$sort": {"sortKey": {"count": -1}}},
    ]


def test_out_writes_lazily_when_the_result_is_pulled():
    written = []
    ctx = PipelineContext(write_out=lambda spec, docs: written.extend(docs))
    result = run_pipeline([{"$out": "t"}], [{"a": 1}], ctx)
    assert written == []
    assert list(result) == [] and written == [{"a": 1}]
