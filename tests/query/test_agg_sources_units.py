"""Pure units behind the aggregation-sources jstest port (tests/e2e/test_jstests_agg_sources.py): the
types $densify generates (mongod's DocGenerator adds the step to the last value seen), the order in
which its type errors are met, $documents evaluated when it runs (5858203 / 40228), a $lookup joining
a leading $documents on localField/foreignField, and $collStats' IDL checks."""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import PipelineContext, parse_pipeline, run_pipeline

D1 = dt.datetime(2021, 1, 1)


def run(pipeline, docs=()):
    return list(run_pipeline(pipeline, [dict(d) for d in docs]))


def code_of(pipeline, docs=()) -> int:
    with pytest.raises(MongoError) as info:
        run(pipeline, docs)
    return info.value.code


def densify(step, bounds="full", unit=None):
    rng = {"step": step, "bounds": bounds} | ({"unit": unit} if unit else {})
    return [{"$densify": {"field": "v", "range": rng}}, {"$sort": {"v": 1}}]


# --------------------------------------------------------------------------------------------------
# $densify: generated values take the type of the last value seen plus the step


def test_decimals_densify_as_decimals_and_a_double_document_restarts_the_chain():
    out = run(densify(1), [{"v": Decimal128("0")}, {"v": 5.0}, {"v": Decimal128("10")}])
    kinds = [type(d["v"]).__name__ for d in out]
    assert kinds == ["Decimal128"] * 5 + ["float"] * 5 + ["Decimal128"]
    assert [float(str(d["v"])) for d in out] == [float(i) for i in range(11)]


def test_a_decimal_step_makes_decimals_and_keeps_its_precision():
    step = Decimal128("0.1243568735894448377382")
    out = run(densify(step)[:1] + [{"$limit": 3}], [{"v": 0}, {"v": 1}])
    assert [str(d["v"]) for d in out] == ["0", "0.1243568735894448377382", "0.2487137471788896754764"]


def test_doubles_accumulate_the_step():
    out = run(densify(0.1), [{"v": 0.5}, {"v": 0.9}])
    assert [d["v"] for d in out] == [0.5, 0.6, 0.7, 0.7999999999999999, 0.8999999999999999, 0.9]


def test_longs_stay_longs_and_ints_stay_ints():
    assert [type(d["v"]) for d in run(densify(1), [{"v": Int64(0)}, {"v": Int64(2)}])] == [Int64, Int64, Int64]
    assert [type(d["v"]) for d in run(densify(1, [0, 3]))] == [int, int, int]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=6, unique=True), st.integers(1, 7))
def test_integer_densify_matches_a_reference_model(values, step):
    """Whole numbers: every grid value from the minimum up to the maximum, plus the documents."""
    out = run(densify(step), [{"v": v} for v in values])
    lo, hi = min(values), max(values)
    want = sorted(set(range(lo, hi + 1, step)) - set(values)) + values
    assert sorted(d["v"] for d in out) == sorted(want)


def test_a_step_lost_in_a_doubles_precision_generates_nothing_further():
    out = run(densify(1.0, [1e17, 1e17 + 64]))
    assert [d["v"] for d in out] == [1e17]


# --------------------------------------------------------------------------------------------------
# $densify: the type error of the first wrong value in the desugared $sort's order


@pytest.mark.parametrize("values, unit, code", [
    ([1, 3], "day", 6053600),
    ([D1, 1], None, 6053600),
    (["x", D1], None, 5733201),
    ([D1, "x"], None, 5733201),
    ([1, "x"], "day", 6053600),
    ([True, 1], None, 5733201),
])
def test_densify_type_errors(values, unit, code):
    assert code_of(densify(1, unit=unit), [{"v": v} for v in values]) == code


# --------------------------------------------------------------------------------------------------
# $documents


@pytest.mark.parametrize("spec, code", [
    ("string", 5858203), (None, 5858203), ({"a": 1}, 5858203), ([1], 40228), ([{"a": 1}, "x"], 40228),
])
def test_documents_errors_at_run_time(spec, code):
    assert code_of([{"$documents": spec}]) == code


def test_documents_read_lookup_variables():
    ctx = PipelineContext(variables={"docs": [{"x": 1}]}, check_variables=False)
    stages = parse_pipeline([{"$documents": "$$docs"}], ctx)
    assert list(stages[0].apply(iter(()))) == [{"x": 1}]


def test_lookup_joins_a_leading_documents_on_local_and_foreign_fields():
    out = run([{"$lookup": {"localField": "k", "foreignField": "x", "as": "m",
                            "pipeline": [{"$documents": [{"x": 1}, {"x": 2}, {"x": 2, "y": 1}]}, {"$project": {"_id": 0}}]}}],
              [{"k": 1}, {"k": 2}, {"k": 3}, {"k": [1, 2]}])
    assert [d["m"] for d in out] == [[{"x": 1}], [{"x": 2}, {"x": 2, "y": 1}], [],
                                     [{"x": 1}, {"x": 2}, {"x": 2, "y": 1}]]


def test_lookup_joins_a_documents_reading_let_variables():
    out = run([{"$lookup": {"localField": "k", "foreignField": "x", "as": "m", "let": {"base": "$base"},
                            "pipeline": [{"$documents": [{"x": "$$base"}, {"x": 7}]}]}}],
              [{"k": 7, "base": 7}, {"k": 5, "base": 5}])
    assert [d["m"] for d in out] == [[{"x": 7}, {"x": 7}], [{"x": 5}]]


# --------------------------------------------------------------------------------------------------
# $collStats


@pytest.mark.parametrize("spec, code", [
    ({"count": 1}, 14), ({"latencyStats": "x"}, 14), ({"storageStats": []}, 14), ({"count": {"a": 1}}, 31170),
    ({"queryExecStats": {"a": 1}}, 31170), ({"other": {}}, 40415), ("x", 5447000),
])
def test_coll_stats_spec_errors(spec, code):
    with pytest.raises(MongoError) as info:
        parse_pipeline([{"$collStats": spec}])
    assert info.value.code == code


# --------------------------------------------------------------------------------------------------
# find's $elemMatch projection is a computed field


@pytest.mark.parametrize("spec, keys", [
    ({"b": {"$elemMatch": {"v": 2}}, "c": 1}, ["_id", "c", "b"]),
    ({"c": 1, "b": {"$elemMatch": {"v": 2}}}, ["_id", "c", "b"]),
    ({"b": {"$elemMatch": {"v": 2}}, "a": 1, "c": 1}, ["_id", "a", "c", "b"]),
    ({"b": {"$elemMatch": {"v": 2}}}, ["_id", "b"]),
    ({"b": {"$elemMatch": {"v": 2}}, "_id": 0, "c": 1}, ["c", "b"]),
])
def test_elem_match_projection_comes_after_the_included_fields(spec, keys):
    from tidemark.query.project import compile_projection

    doc = {"_id": 1, "b": [{"v": 1}, {"v": 2}], "a": 0, "c": 3}
    out = compile_projection(spec)(doc)
    assert list(out) == keys and out["b"] == [{"v": 2}]


def test_elem_match_projection_without_a_match_sets_nothing():
    from tidemark.query.project import compile_projection

    assert compile_projection({"b": {"$elemMatch": {"v": 9}}, "c": 1})({"_id": 1, "b": [{"v": 1}], "c": 3}) == \
        {"_id": 1, "c": 3}


# --------------------------------------------------------------------------------------------------
# $median / $percentile as expressions (mongod 7.0's ExpressionFromAccumulatorQuantile)


@pytest.mark.parametrize("value, median, percentiles", [
    ([3, 1, "x", 2], 2.0, [1.0, 3.0]),
    (5, 5.0, [5.0, 5.0]),
    (Int64(7), 7.0, [7.0, 7.0]),
    ("x", None, [None, None]),
    ([], None, [None, None]),
    (None, None, [None, None]),
    ([[1, 2]], None, [None, None]),
])
def test_quantile_expressions(value, median, percentiles):
    from tidemark.query.expressions import evaluate

    doc = {"a": value}
    assert evaluate({"$median": {"input": "$a", "method": "approximate"}}, doc) == median
    assert evaluate({"$percentile": {"input": "$a", "p": [0.1, 1], "method": "approximate"}}, doc) == percentiles


@pytest.mark.parametrize("spec, code", [
    ({"$median": {"input": "$a"}}, 40414),
    ({"$median": {"input": "$a", "method": "continuous"}}, 2),
    ({"$median": 1}, 7436100),
    ({"$percentile": {"input": "$a", "p": "$b", "method": "approximate"}}, 7750300),
    ({"$percentile": {"input": "$a", "p": [2], "method": "approximate"}}, 7750303),
    ({"$percentile": {"input": "$a", "method": "approximate", "x": 1}}, 40415),
])
def test_quantile_expression_errors(spec, code):
    from tidemark.query.expressions import compile_expression

    with pytest.raises(MongoError) as info:
        compile_expression(spec)
    assert info.value.code == code


# --------------------------------------------------------------------------------------------------
# output paths of stages: mongod's setNestedField replaces any non-document on the way


def test_lookup_dotted_as_replaces_an_array_parent():
    out = run([{"$lookup": {"as": "a.b", "pipeline": [{"$documents": []}]}}],
              [{"_id": 1, "a": [{"d": 5}]}, {"_id": 2, "a": 3}, {"_id": 3, "a": {"d": 1}}])
    assert [d["a"] for d in out] == [{"b": []}, {"b": []}, {"d": 1, "b": []}]


def test_unwind_dotted_index_replaces_a_non_document():
    out = run([{"$unwind": {"path": "$x", "includeArrayIndex": "a.i"}}], [{"x": [7], "a": [1, 2]}, {"x": [8], "a": 5}])
    assert [d["a"] for d in out] == [{"i": 0}, {"i": 0}]


def test_set_nested_field_builds_missing_documents():
    from tidemark.query.stages import set_nested_field

    assert set_nested_field({"a": [1]}, ["a", "b", "c"], 1) == {"a": {"b": {"c": 1}}}
    assert set_nested_field({"a": {"b": 2, "z": 0}}, ["a", "b", "c"], 1) == {"a": {"b": {"c": 1}, "z": 0}}
    assert set_nested_field({}, ["x"], None) == {"x": None}
