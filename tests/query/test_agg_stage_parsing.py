"""Pure units behind the aggregation-stage jstest port (tests/e2e/test_jstests_agg_stages.py): FieldPath
checks, $lookup's equality keys and foreign order, $graphLookup's missing values, $redact, and the
7.0 parse errors of $lookup, $facet, $unionWith, $densify, $fill, $replaceRoot, $unset and $count."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import PipelineContext, parse_pipeline, run_pipeline
from tidemark.query.stages import _bind_redact_variables, field_path, value_str


def collections(**colls):
    """A context whose other collections are ``colls`` (name -> documents)."""
    def resolve(db, name):
        return iter([dict(d) for d in colls.get(name, [])])
    return PipelineContext(db="db", resolve_collection=resolve)


def run(pipeline, docs, ctx=None):
    return list(run_pipeline(pipeline, [dict(d) for d in docs], ctx))


def fails(pipeline, ctx=None) -> MongoError:
    with pytest.raises(MongoError) as e:
        parse_pipeline(pipeline, ctx or collections())
    return e.value


@pytest.mark.parametrize("path, code", [("", 40352), ("a..b", 15998), ("a.", 15998), ("$a", 16410), ("a.$b", 16410),
                                        ("a\0b", 16411)])
def test_field_path_refuses_what_mongod_refuses(path, code):
    with pytest.raises(MongoError) as e:
        field_path(path)
    assert e.value.code == code


def test_field_path_accepts_dbref_parts_and_splits():
    assert field_path("a.$id") == ["a", "$id"]
    assert field_path("a.b.0") == ["a", "b", "0"]


def test_value_str_prints_like_mongods_document_printing():
    assert value_str({"_id": 1, "x": [1, 2], "y": "a", "z": {}}) == '{_id: 1, x: [1, 2], y: "a", z: {}}'


# $lookup -----------------------------------------------------------------------------------------

def _lookup_ids(local, foreign, local_field="a", foreign_field="b"):
    ctx = collections(f=foreign)
    out = run([{"$lookup": {"from": "f", "localField": local_field, "foreignField": foreign_field, "as": "m"}}],
              local, ctx)
    return [[d["_id"] for d in doc["m"]] for doc in out]


def test_lookup_foreign_arrays_match_whole_and_by_element():
    foreign = [{"_id": 0, "b": [1, 2]}, {"_id": 1, "b": [[1, 2], 3]}, {"_id": 2, "b": []}, {"_id": 3, "b": [[]]}]
    assert _lookup_ids([{"a": [[1, 2], 9]}], foreign) == [[0, 1]]  # [1, 2] equals 0 whole, an element of 1
    assert _lookup_ids([{"a": 1}], foreign) == [[0]]
    assert _lookup_ids([{"a": [[], 7]}], foreign) == [[2, 3]]


def test_lookup_null_and_missing_semantics():
    foreign = [{"_id": 0}, {"_id": 1, "b": None}, {"_id": 2, "b": []}, {"_id": 3, "b": [None, 1]}]
    # local missing, null and [] look up null: missing and null foreign values, not an empty array
    assert _lookup_ids([{}, {"a": None}, {"a": []}], foreign) == [[0, 1, 3]] * 3
    # a local path that reaches only missing values in an array looks up null; one value, just it
    assert _lookup_ids([{"x": [{"y": 1}, {"y": 2}]}], foreign, "x.a") == [[0, 1, 3]]
    assert _lookup_ids([{"x": [{"y": 1}, {"a": 1}]}], foreign, "x.a") == [[3]]
    # a foreign path through an array of scalars is null there
    assert _lookup_ids([{"a": None}], [{"_id": 9, "b": [1]}], "a", "b.c") == [[9]]


def test_lookup_keeps_the_foreign_order_for_several_local_values():
    foreign = [{"_id": "p", "b": 3}, {"_id": "q", "b": 1}, {"_id": "r", "b": 2}]
    assert _lookup_ids([{"a": [2, 1, 3, 1]}], foreign) == [["p", "q", "r"]]


def test_lookup_let_variable_of_a_missing_field_is_missing():
    ctx = collections(f=[{"_id": 0}])
    out = run([{"$lookup": {"from": "f", "let": {"v": "$nope"}, "pipeline": [{"$addFields": {"x": "$$v"}}],
                            "as": "m"}}], [{"_id": 1}], ctx)
    assert out == [{"_id": 1, "m": [{"_id": 0}]}]


@pytest.mark.parametrize("spec, code, message", [
    ("x", 9, "the $lookup stage specification must be an object, but found string"),
    ({"as": "m"}, 9, "must specify 'pipeline' when 'from' is empty"),
    ({"from": 1, "as": "m", "pipeline": []}, 9, "$lookup 'from' field must be a string, but found int"),
    ({"from": "", "as": "m", "pipeline": []}, 73, "invalid $lookup namespace: db."),
    ({"from": "f", "as": "m", "pipeline": {}}, 14, "'pipeline' option must be specified as an array"),
    ({"from": "f", "as": "m", "let": 1, "pipeline": []}, 9, "$lookup argument 'let: 1' must be an object, is type int"),
    ({"from": "f", "as": 1, "pipeline": []}, 9, "$lookup argument 'as' must be a string, found as: 1: int"),
    ({"from": "f", "as": "", "pipeline": []}, 9, "must specify 'as' field for a $lookup"),
    ({"from": "f", "as": "m"}, 9, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be "
                                  "specified"),
    ({"from": "f", "as": "m", "localField": "a", "pipeline": []}, 9,
     "$lookup requires both or neither of 'localField' and 'foreignField' to be specified"),
    ({"from": "f", "as": "m", "localField": "a", "foreignField": "b", "let": {}}, 9,
     "$lookup with a 'let' argument must also specify 'pipeline'"),
    ({"from": "f", "as": "a..b", "pipeline": []}, 15998, None),
])
def test_lookup_parse_errors(spec, code, message):
    err = fails([{"$lookup": spec}])
    assert err.code == code
    if message:
        assert err.message == message


# $graphLookup ------------------------------------------------------------------------------------

def test_graph_lookup_missing_values_start_or_continue_nothing():
    foreign = [{"_id": 1, "to": 1}, {"_id": 2, "to": None, "from": 1}, {"_id": 3, "to": 2}]
    ctx = collections(f=foreign)
    spec = {"from": "f", "connectFromField": "from", "connectToField": "to", "as": "r"}
    out = run([{"$graphLookup": {**spec, "startWith": "$s"}}], [{"_id": "x"}], ctx)
    assert out == [{"_id": "x", "r": []}]  # a missing start is not null
    out = run([{"$graphLookup": {**spec, "startWith": 1}}], [{"_id": "y"}], ctx)
    assert [d["_id"] for d in out[0]["r"]] == [1]  # _id 1 has no 'from': the search stops there


def test_graph_lookup_restrict_search_reads_variables_and_refuses_text():
    ctx = collections(f=[{"_id": 1, "to": 1, "ok": True}, {"_id": 2, "to": 1, "ok": False}])
    ctx.variables = {**ctx.variables, "want": True}
    out = run([{"$graphLookup": {"from": "f", "startWith": 1, "connectFromField": "x", "connectToField": "to",
                                 "as": "r", "restrictSearchWithMatch": {"$expr": {"$eq": ["$ok", "$$want"]}}}}],
              [{"_id": 0}], ctx)
    assert [d["_id"] for d in out[0]["r"]] == [1]
    err = fails([{"$graphLookup": {"from": "f", "startWith": 1, "connectFromField": "x", "connectToField": "to",
                                   "as": "r", "restrictSearchWithMatch": {"$or": [{"$text": {"$search": "a"}}]}}}])
    assert (err.code, err.message) == (2, "Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: "
                                          "caused by :: $text is not allowed in this context")


# $redact -----------------------------------------------------------------------------------------

def test_bind_redact_variables_replaces_only_the_three_variables():
    expr = {"$cond": [{"$eq": ["$$KEEP.x", 1]}, "$$DESCEND", {"$literal": "$$PRUNE"}], "k": "$$ROOT"}
    assert _bind_redact_variables(expr) == {
        "$cond": [{"$eq": ["$$REMOVE", 1]}, {"$literal": "descend"}, {"$literal": "$$PRUNE"}], "k": "$$ROOT"}


def test_redact_descends_into_documents_and_arrays():
    doc = {"_id": 1, "level": 1, "a": {"level": 2, "b": 1}, "c": [{"level": 1, "d": 2}, {"level": 3}, 5, [{"level": 3}]]}
    out = run([{"$redact": {"$cond": [{"$lte": ["$level", 1]}, "$$DESCEND", "$$PRUNE"]}}], [doc])
    assert out == [{"_id": 1, "level": 1, "c": [{"level": 1, "d": 2}, 5, []]}]


def test_redact_root_is_the_whole_document_and_other_results_fail():
    doc = {"_id": 1, "keep": True, "s": {"x": 1}}
    out = run([{"$redact": {"$cond": ["$$ROOT.keep", "$$DESCEND", "$$PRUNE"]}}], [doc])
    assert out == [doc]
    with pytest.raises(MongoError) as e:
        run([{"$redact": "KEEP"}], [doc])
    assert e.value.code == 17053
    assert e.value.message.endswith('but returned "KEEP"')


# $facet, $unionWith, $replaceRoot, $unset, $count ------------------------------------------------

@pytest.mark.parametrize("spec, code", [
    (1, 40169), ({}, 40169), ({"a.b": [{"$limit": 1}]}, 16412), ({"$a": [{"$limit": 1}]}, 16410),
    ({"": [{"$limit": 1}]}, 15998), ({"a": [5]}, 40171), ({"a": [{"$collStats": {}}]}, 40600),
    ({"a": [{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]}, 40600),
])
def test_facet_parse_errors(spec, code):
    assert fails([{"$facet": spec}]).code == code


def test_facet_with_an_empty_sub_pipeline_passes_documents():
    assert run([{"$facet": {"all": []}}], [{"_id": 1}]) == [{"all": [{"_id": 1}]}]


@pytest.mark.parametrize("spec, code", [
    ({}, 9), ({"pipeline": [{"$match": {}}]}, 9), ({"coll": "c", "pipeline": 1}, 14),
    ({"coll": "c", "pipeline": [{"$out": "o"}]}, 31441), (5, 9),
])
def test_union_with_parse_errors(spec, code):
    assert fails([{"$unionWith": spec}]).code == code


def test_union_with_a_documents_pipeline_needs_no_collection():
    out = run([{"$unionWith": {"pipeline": [{"$documents": [{"x": 1}]}]}}], [{"_id": 0}], collections())
    assert out == [{"_id": 0}, {"x": 1}]


@pytest.mark.parametrize("stage, code", [
    ({"$replaceRoot": 1}, 40229), ({"$replaceRoot": {}}, 40414), ({"$replaceRoot": {"x": 1, "newRoot": {}}}, 40415),
    ({"$unset": 1}, 31002), ({"$unset": []}, 31119), ({"$unset": [1]}, 31120), ({"$count": "a\0b"}, 40159),
    ({"$skip": 2.0**63}, 5107200), ({"$limit": 2.0**63}, 2107201), ({"$unwind": "$"}, 40352),
])
def test_stage_shape_errors(stage, code):
    assert fails([stage]).code == code


def test_replace_with_error_names_the_replacement_document():
    with pytest.raises(MongoError) as e:
        run([{"$replaceWith": "$a"}], [{"_id": 1, "a": [1]}])
    assert e.value.message == ("'replacement document'  must evaluate to an object, but resulting value was: [1]. "
                               "Type of resulting value: 'array'. Input document: {_id: 1, a: [1]}")


# $densify, $fill ---------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, code", [
    (1, 9), ({"field": "a", "range": {"step": 1, "bounds": [2, 1]}}, 5733402),
    ({"field": "a", "range": {"step": 1, "bounds": [1, 2], "unit": "day"}}, 5733409),
    ({"field": "a", "range": {"step": 1, "bounds": ["a", "b"]}}, 5946800),
    ({"field": "a", "range": {"step": 1, "bounds": 5}}, 5733404),
    ({"field": "a", "range": {"step": 1, "bounds": "partition"}}, 5733408),
    ({"field": "a", "range": {"step": 1}}, 40414), ({"field": "a", "range": {"step": "1", "bounds": "full"}}, 14),
    ({"field": "a", "partitionByFields": [1], "range": {"step": 1, "bounds": "full"}}, 14),
    ({"field": "$a", "range": {"step": 1, "bounds": "full"}}, 16410),
])
def test_densify_parse_errors(spec, code):
    assert fails([{"$densify": spec}]).code == code


@pytest.mark.parametrize("spec, code", [
    ({"output": {"a": {"value": 1}}, "sortBy": 1}, 14), ({"output": {"a": {"value": 1}}, "partitionByFields": "x"}, 14),
    ({"output": {"a": {"value": 1}}, "partitionBy": 5}, 14),
])
def test_fill_idl_types(spec, code):
    assert fails([{"$fill": spec}]).code == code


def test_project_and_add_fields_errors_carry_the_stage_context():
    assert fails([{"$project": {"a": 1, "b": 0}}]).message.startswith("Invalid $project :: caused by :: ")
    assert fails([{"$set": {"a.$b": 1}}]).message.startswith("Invalid $set :: caused by :: FieldPath field names")
    assert fails([{"$project": {"a": {"$nope": 1}}}]).message == "Invalid $project :: caused by :: Unknown expression $nope"


def test_graph_lookup_matches_under_the_pipeline_collation():
    from tidemark.query.collation import parse_collation

    foreign = [{"_id": 1, "name": "JEREMY"}, {"_id": 2, "name": "jeremy"}]
    spec = {"from": "f", "startWith": "jeremy", "connectFromField": "x", "connectToField": "name", "as": "r"}
    ctx = collections(f=foreign)
    assert [d["_id"] for d in run([{"$graphLookup": spec}], [{"_id": 0}], ctx)[0]["r"]] == [2]
    ctx = collections(f=foreign)
    ctx.collation = parse_collation({"locale": "en_US", "strength": 2}, "collation")
    assert [d["_id"] for d in run([{"$graphLookup": spec}], [{"_id": 0}], ctx)[0]["r"]] == [1, 2]


def test_graph_lookup_narrows_a_looser_query_answer():
    """The query callback may answer under the foreign collection's default collation: without a
    pipeline collation its extra matches are dropped."""
    ctx = collections()
    ctx.query_collection = lambda db, coll, stage, variables: iter([{"_id": 1, "name": "JEREMY"}, {"_id": 2, "name": "jeremy"}])
    spec = {"from": "f", "startWith": "jeremy", "connectFromField": "x", "connectToField": "name", "as": "r"}
    assert [d["_id"] for d in run([{"$graphLookup": spec}], [{"_id": 0}], ctx)[0]["r"]] == [2]


@pytest.mark.parametrize("name", ["$search", "$searchMeta", "$vectorSearch", "$listSearchIndexes"])
@pytest.mark.parametrize("where", ["top", "lookup", "facet", "after"])
def test_atlas_search_stages_are_refused_as_a_community_mongod_refuses_them(name, where):
    """django-mongodb-backend, laravel-mongodb and MongoDB's PHP library recognise a server without
    search by this code and message (document_source.cpp: 6047401), wherever the stage stands."""
    stage = {name: {}}
    pipeline = {"top": [stage], "after": [{"$match": {}}, stage],
                "lookup": [{"$lookup": {"from": "x", "as": "y", "pipeline": [stage]}}],
                "facet": [{"$facet": {"f": [stage]}}]}[where]
    with pytest.raises(MongoError) as info:
        parse_pipeline(pipeline)
    assert (info.value.code, info.value.message) == (6047401, f"{name} stage is only allowed on MongoDB Atlas")
