"""$group's parse order, _id keys and accumulator arithmetic as mongod 7.0 has them (the pure units behind
tests/e2e/test_jstests_accumulators.py): accumulated-field checks in parseAccumulationStatement's order,
lone-field ``_id`` objects, an 'n' read from the group key, 'n' beyond a long, doubles joining a decimal
sum, integers joining a double sum exactly, $avg dividing the total as a double, $bottom* keeping the tail
of the sortBy order, and $stdDev* past the double range."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.accumulator_state import Avg, MergeObjects, StdDev, Sum, WindowStdDev
from tidemark.query.accumulators import parse_accumulator
from tidemark.query.pipeline import PipelineContext, run_pipeline
from tidemark.query.stage_group import compile_group_id, parse_accumulated_fields


def group(docs, spec, **ctx):
    return list(run_pipeline([{"$group": spec}], iter([dict(d) for d in docs]), PipelineContext(**ctx)))


def code_of(fn) -> int:
    with pytest.raises(MongoError) as info:
        fn()
    return info.value.code


@pytest.mark.parametrize("spec, code", [
    ({"x": 5}, 40234),
    ({"x": {}}, 40234),
    ({"x": {"sum": 1}}, 40234),
    ({"x.y": 5}, 40234),            # the accumulator-object check comes first
    ({"x.y": {"$sum": 1}}, 40235),
    ({"$x": {"$sum": 1}}, 40236),
    ({"x": {"$sum": 1, "$avg": 1}}, 40238),
    ({"x": {"$sum": [1]}}, 40237),  # any array, one element too
    ({"x": {"$nope": [1]}}, 40237),
    ({"x": {"$nope": 1}}, 15952),
])
def test_accumulated_fields_are_checked_in_mongod_order(spec, code):
    assert code_of(lambda: parse_accumulated_fields({"_id": None, **spec}, "$group")) == code


def test_lone_field_id_turns_missing_into_null():
    fn = compile_group_id({"a": "$a"})
    assert fn({}, {}) == {"a": None} and fn({"a": 1}, {}) == {"a": 1}
    assert compile_group_id({"a": "$a", "b": "$b"})({"b": 1}, {}) == {"b": 1}
    assert group([{"a": None}, {}], {"_id": {"a": "$a"}}) == [{"_id": {"a": None}}]




@pytest.mark.parametrize("key", [{"a": 1}, {"a": True}, {"a": "$a", "b": 0.5}])
def test_inclusion_style_id_refused(key):
    assert code_of(lambda: compile_group_id(key)) == 17390


def test_n_reads_the_group_key():
    n = {"$cond": [{"$eq": ["$st", "CA"]}, 3, 1]}
    spec = parse_accumulator("$firstN", {"input": "$v", "n": n}, group_key_n=True)
    assert spec.new_for is not None
    acc = spec.new_for({"st": "CA"})
    for v in range(5):
        acc.process(v)
    assert acc.result() == [0, 1, 2]
    assert spec.new_for("CA").n == 1  # a non-object _id: the 'n' sees an empty document
    docs = [{"st": s, "v": i} for i, s in enumerate(["CA"] * 4 + ["NY"] * 4)]
    got = group(docs, {"_id": {"st": "$st"}, "r": {"$lastN": {"input": "$v", "n": n}}})
    assert got == [{"_id": {"st": "CA"}, "r": [1, 2, 3]}, {"_id": {"st": "NY"}, "r": [7]}]


def test_constant_n_is_checked_at_parse_time_and_has_no_per_group_factory():
    assert parse_accumulator("$minN", {"input": "$v", "n": 2}, group_key_n=True).new_for is None
    assert parse_accumulator("$minN", {"input": "$v", "n": "$$k"}, variables={"k": 2}, group_key_n=True).new_for is None
    assert code_of(lambda: parse_accumulator("$minN", {"input": "$v", "n": 0}, group_key_n=True)) == 5787908


def test_bucket_auto_refuses_an_n_from_the_group_key():
    ctx = PipelineContext()
    stage = [{"$bucketAuto": {"groupBy": "$v", "buckets": 2,
                              "output": {"r": {"$minN": {"input": "$v", "n": {"$add": ["$x", 1]}}}}}}]
    assert code_of(lambda: list(run_pipeline(stage, iter([{"v": 1}]), ctx))) == 4544714


@pytest.mark.parametrize("n, code", [
    (Decimal128("9223372036854775808"), 5787903),
    (2.0**63, 5787903),
    (-(2.0**64), 5787903),
    (Decimal128("9223372036854775807"), None),
    (Int64(2**63 - 1), None),
])
def test_n_must_fit_a_long(n, code):
    parse = lambda: parse_accumulator("$topN", {"n": n, "output": "$v", "sortBy": {"v": 1}})  # noqa: E731
    if code is None:
        parse()
    else:
        assert code_of(parse) == code


def test_doubles_join_a_decimal_sum_as_34_digit_values():
    s = Sum()
    s.process_many([Decimal128("0.1"), 0.2])
    assert str(s.result()) == "0.3000000000000000111022302462515654"
    a = Avg()
    a.process_many([Decimal128("0.1"), 0.2])
    assert str(a.result()) == "0.1500000000000000055511151231257827"
    s = Sum()  # 34 digits kept (not the 28 of Python's default context)
    s.process_many([Decimal128("1234567890123456789012345678901"), Decimal128("0.001"), 5])
    assert str(s.result()) == "1234567890123456789012345678906.001"


def test_integers_join_a_double_sum_exactly():
    s = Sum()
    s.process_many([Int64(2**53 + 1), 0.5])
    assert s.result() == 2.0**53 + 2


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=8))
def test_avg_of_integers_divides_the_total_as_a_double(values):
    a = Avg()
    a.process_many([Int64(v) for v in values])
    assert a.result() == float(sum(values)) / len(values)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.integers(-(2**60), 2**60), st.integers(-(2**60), 2**60).map(lambda i: i / 2**20)),
                min_size=1, max_size=10))
def test_sum_of_integers_and_doubles_is_the_correctly_rounded_total(values):
    """(Totals a double-double holds exactly — as mongod's DoubleDoubleSummation — come out correctly
    rounded, whatever the mix of integers and doubles.)"""
    s = Sum()
    s.process_many(values)
    if any(type(v) is float for v in values):
        assert s.result() == float(sum(Fraction(v) for v in values))
    else:
        assert int(s.result()) == sum(values)


def test_merge_objects_message_renders_the_value_as_mongod():
    with pytest.raises(MongoError) as info:
        MergeObjects().process("s")
    assert info.value.code == 40400
    assert info.value.message == '$mergeObjects requires object inputs, but input "s" is of type string'


def test_bottom_keeps_the_tail_of_the_sort_order_keys_as_written():
    """sortBy {"a.b": 1}: an array's key is its smallest element; $bottom* take the last documents of
    that order (not the first of the reversed order, whose keys would be the largest elements)."""
    docs = [{"s": "A", "a": [{"b": 1}, {"b": 99}]}, {"s": "A", "a": [{"b": 50}, {"b": 98}]}]
    got = group(docs, {"_id": "$s", "b": {"$bottom": {"output": "$a.b", "sortBy": {"a.b": 1}}},
                       "bd": {"$bottom": {"output": "$a.b", "sortBy": {"a.b": -1}}},
                       "bn": {"$bottomN": {"n": 2, "output": "$a.b", "sortBy": {"a.b": 1}}}})
    assert got == [{"_id": "A", "b": [50, 98], "bd": [50, 98], "bn": [[1, 99], [50, 98]]}]



@pytest.mark.parametrize("values, pop", [
    ([1.0, 3.0], 1.0),
    ([math.inf, 1.0], math.nan),
    ([math.inf, -math.inf], math.nan),
    ([1e308, -1.0], math.inf),       # (squares overflow: mongod's online algorithm decides)
    ([1e308, 1e308, 1e308], 0.0),    # (the exact sum is beyond the double range)
])
def test_std_dev_past_the_double_range_answers_as_mongod(values, pop):
    acc = StdDev(False)
    acc.process_many(values)
    got = acc.result()
    assert (math.isnan(got) and math.isnan(pop)) or got == pop


def test_std_dev_window_removes_nan():
    acc = WindowStdDev(True)
    acc.process_many([1.0, math.nan, 3.0])
    acc.remove(math.nan)
    assert acc.result() == math.sqrt(2)
