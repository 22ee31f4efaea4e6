"""Accumulators: type rules, null/missing handling, the N-variants and errors (mongod's documented behaviour)."""

import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.errors import MongoError
from tidemark.query.accumulators import make_accumulator, parse_accumulator
from tidemark.query.values import MISSING


def run(name, values, arg="$x"):
    acc = make_accumulator(name, arg)
    for v in values:
        acc.process(v)
    return acc.result()


@pytest.mark.parametrize("name,values,expected", [
    ("$sum", [1, 2, 3], 6),
    ("$sum", [], 0),
    ("$sum", [1, "a", None, MISSING, True], 1),               # non-numbers are ignored
    ("$sum", [2147483647, 1], Int64(2147483648)),             # int overflow -> long
    ("$sum", [1, Int64(2)], Int64(3)),
    ("$sum", [1, 2.5], 3.5),
    ("$sum", [1, Decimal128("2.5")], Decimal128("3.5")),
    ("$avg", [1, 2, 3, 4], 2.5),
    ("$avg", [1, "x"], 1.0),
    ("$avg", [None, "x"], None),                              # no numbers -> null
    ("$avg", [Decimal128("1"), 2], Decimal128("1.5")),
    ("$min", [3, None, 1, MISSING, 2], 1),                    # null/missing ignored
    ("$max", [3, "a", 1], "a"),                               # BSON order: strings above numbers
    ("$min", [None, MISSING], None),
    ("$first", [MISSING, 2], None),                           # first keeps missing as null
    ("$first", [5, 2], 5),
    ("$last", [1, MISSING], None),
    ("$push", [1, MISSING, None, 2], [1, None, 2]),
    ("$addToSet", [1, 1.0, Int64(1), 2, MISSING], [1, 2]),
    ("$stdDevPop", [2, 4, 4, 4, 5, 5, 7, 9], 2.0),
    ("$stdDevSamp", [1], None),
    ("$stdDevPop", ["x"], None),
    ("$mergeObjects", [{"a": 1}, None, {"a": 2, "b": 3}], {"a": 2, "b": 3}),
])
def test_simple_accumulators(name, values, expected):
    result = run(name, values)
    assert result == expected and type(result) is type(expected), (result, expected)


def test_std_dev_samp():
    assert math.isclose(run("$stdDevSamp", [1, 2, 3, 4]), 1.2909944487358056)


def test_count_counts_documents():
    acc = make_accumulator("$count", {})
    for _ in range(3):
        acc.process(1)
    assert acc.result() == 3


def _feed(spec, docs):
    acc = spec.new()
    for d in docs:
        acc.process(spec.evaluate(d, {}))
    return acc.result()


SCORES = [{"p": "a", "s": 31}, {"p": "b", "s": 33}, {"p": "c", "s": 99}, {"p": "d", "s": 1}, {"p": "e"}]


@pytest.mark.parametrize("name,arg,expected", [
    ("$top", {"sortBy": {"s": -1}, "output": ["$p", "$s"]}, ["c", 99]),
    ("$bottom", {"sortBy": {"s": -1}, "output": ["$p", "$s"]}, ["e", None]),  # missing sorts lowest
    ("$topN", {"n": 2, "sortBy": {"s": -1}, "output": "$p"}, ["c", "b"]),
    ("$bottomN", {"n": 2, "sortBy": {"s": -1}, "output": "$p"}, ["d", "e"]),
    ("$firstN", {"n": 2, "input": "$s"}, [31, 33]),
    ("$lastN", {"n": 2, "input": "$s"}, [1, None]),
    ("$maxN", {"n": 2, "input": "$s"}, [99, 33]),
    ("$minN", {"n": 2, "input": "$s"}, [1, 31]),
    ("$median", {"input": "$s", "method": "approximate"}, 31.0),
    ("$percentile", {"input": "$s", "p": [0.5, 0.9], "method": "approximate"}, [31.0, 99.0]),
])
def test_n_and_sorted_accumulators(name, arg, expected):
    assert _feed(parse_accumulator(name, arg), SCORES) == expected


@pytest.mark.parametrize("name,arg,code", [
    ("$foo", "$x", 15952),
    ("$sum", ["$a", "$b"], 40237),
    ("$topN", {"n": 0, "sortBy": {"a": 1}, "output": "$a"}, 5787908),
    ("$firstN", {"input": "$a"}, 5787906),
    ("$count", "$x", 14),
    ("$accumulator", {}, 4544707),
])
def test_accumulator_parse_errors(name, arg, code):
    with pytest.raises(MongoError) as e:
        parse_accumulator(name, arg)
    assert e.value.code == code
    if code == 15952:
        assert e.value.message == "unknown group operator '$foo'"


def test_sum_and_avg_can_slide_by_removing_values():
    acc = make_accumulator("$avg", "$x")
    for v in (1, 2, 3):
        acc.process(v)
    acc.remove(1)
    assert acc.result() == 2.5


def test_double_sum_does_not_depend_on_input_order():
    import random
    values = [1e16, 1.0, -1e16, 0.1, 0.2, 0.3] * 50
    shuffled = values[:]
    random.Random(5).shuffle(shuffled)
    assert run("$sum", values) == run("$sum", shuffled) == math.fsum(values)
    assert run("$avg", values) == math.fsum(values) / len(values)


@pytest.mark.parametrize("name", ["$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$count"])
@pytest.mark.parametrize("values", [
    [3.5, 1.0, 2.0],
    [3, 1.5, Int64(7), float("nan"), 2],
    [float("nan"), float("nan")],
    [None, MISSING, "x", 4, True, [1], {"a": 1}],
    [float("inf"), float("-inf"), 1.0],
    [],
])
def test_batch_feeding_matches_one_by_one(name, values):
    one = parse_accumulator(name, {} if name == "$count" else "$x").new()
    for v in values:
        one.process(v)
    batch = parse_accumulator(name, {} if name == "$count" else "$x").new()
    batch.process_many(list(values))
    a, b = one.result(), batch.result()
    assert type(a) is type(b)
    assert a == b or (a != a and b != b) or (isinstance(a, list) and repr(a) == repr(b))


def test_nan_is_the_smallest_number_for_min_and_max():
    assert math.isnan(run("$min", [1.0, float("nan"), 2.0]))
    assert run("$max", [1.0, float("nan"), 2.0]) == 2.0
