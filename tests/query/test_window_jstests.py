"""Window-function and n-accumulator parsing as mongod 7.0 parses it (codes, messages, the order of the
checks), and the values fixed with them: $percentile's nulls, $expMovingAvg over non-numbers, 'p' and
'n' from command variables. The end-to-end ports are tests/e2e/test_jstests_window_functions.py."""

from decimal import Decimal

import pytest
from bson.decimal128 import Decimal128

from tidemark.protocol.errors import MongoError
from tidemark.query.accumulators import fold_constant, parse_accumulator
from tidemark.query.pipeline import PipelineContext, run_pipeline
from tidemark.query.window_rates import decimal_of_double, exp_moving_avg


def run(pipeline, docs, variables=None):
    ctx = PipelineContext(variables=dict(variables or {}))
    return list(run_pipeline(pipeline, [dict(d) for d in docs], ctx))


def swf_error(spec, docs=(), variables=None) -> MongoError:
    with pytest.raises(MongoError) as e:
        run([{"$setWindowFields": spec}], list(docs), variables)
    return e.value


def acc_error(name, arg, variables=None) -> MongoError:
    with pytest.raises(MongoError) as e:
        parse_accumulator(name, arg, variables=variables)
    return e.value


# --------------------------------------------------------------------------------------------------
# n-accumulators ($group and windows share the parser)


@pytest.mark.parametrize("name,arg,code", [
    ("$minN", "x", 5787900),
    ("$maxN", 1, 5787900),
    ("$firstN", "x", 5787801),
    ("$lastN", [1], 5787801),
    ("$firstN", {"n": 2, "input": "$a", "x": 1}, 5787901),
    ("$firstN", {"input": "$a"}, 5787906),
    ("$firstN", {"n": 2}, 5787907),
    ("$maxN", {}, 5787906),  # 'n' is reported missing before 'input'
    ("$minN", {"n": "$a", "input": "$a"}, 5787902),
    ("$minN", {"n": "2", "input": "$a"}, 5787902),
    ("$minN", {"n": 2.1, "input": "$a"}, 5787903),
    ("$minN", {"n": float("inf"), "input": "$a"}, 5787903),
    ("$minN", {"n": Decimal128("2.5"), "input": "$a"}, 5787903),
    ("$lastN", {"n": 0, "input": "$a"}, 5787908),
    ("$lastN", {"n": -1.0, "input": "$a"}, 5787908),
    ("$topN", "x", 5788001),
    ("$topN", {"n": 1, "output": "$a", "sortBy": {"a": 1}, "input": 1}, 5788002),
    ("$top", {"n": 1, "output": "$a", "sortBy": {"a": 1}}, 5788002),
    ("$topN", {"output": "$a", "sortBy": {"a": 1}}, 5788003),
    ("$bottomN", {"n": 1, "sortBy": {"a": 1}}, 5788004),
    ("$bottom", {"output": "$a"}, 5788005),
    ("$topN", {"n": 1, "output": "$a", "sortBy": "a"}, 10065),
    ("$bottomN", {"n": 1.5, "output": "$a", "sortBy": {"a": 1}}, 5787903),
    ("$bottom", {"output": "$a", "sortBy": {"a": 2}}, 15975),
])
def test_n_accumulator_parse_codes(name, arg, code):
    assert acc_error(name, arg).code == code


def test_n_accumulator_messages():
    assert acc_error("$minN", "x").message == 'specification must be an object; found $minN: "x"'
    assert acc_error("$minN", {"n": 2.5, "input": "$a"}).message == \
        "Value for 'n' must be of integral type, but found 2.5"
    assert acc_error("$top", {"n": 1, "output": "$a", "sortBy": {"a": 1}}).message == "Unknown argument to $top 'n'"


def test_n_may_read_command_variables():
    spec = parse_accumulator("$firstN", {"n": "$$k", "input": "$a"}, variables={"k": 2})
    acc = spec.new()
    for v in (1, 2, 3):
        acc.process(v)
    assert acc.result() == [1, 2]
    assert acc_error("$firstN", {"n": "$$k", "input": "$a"}).code == 17276  # undefined variable


# --------------------------------------------------------------------------------------------------
# $percentile / $median


@pytest.mark.parametrize("name,arg,code", [
    ("$percentile", "x", 7429703),
    ("$median", "x", 7436100),
    ("$median", {"input": "$a", "method": "approximate", "p": [0.5]}, 40415),
    ("$percentile", {"input": "$a", "method": "approximate", "x": 1}, 40415),
    ("$percentile", {"input": "$a", "method": "approximate"}, 40414),
    ("$median", {"method": "approximate"}, 40414),
    ("$median", {"input": "$a"}, 40414),
    ("$median", {"input": "$a", "method": 1}, 14),
    ("$median", {"input": "$a", "method": "discrete"}, 2),  # 7.0 has only 'approximate', in $group too
    ("$percentile", {"input": "$a", "p": [0.5], "method": "continuous"}, 2),
    ("$percentile", {"method": "discrete", "x": 1}, 2),  # fields are checked in order
    ("$percentile", {"input": "$a", "p": ["$a"], "method": "approximate"}, 7750300),
    ("$percentile", {"input": "$a", "p": [], "method": "approximate"}, 7750301),
    ("$percentile", {"input": "$a", "p": 0.5, "method": "approximate"}, 7750301),
    ("$percentile", {"input": "$a", "p": [0.5, "x"], "method": "approximate"}, 7750302),
    ("$percentile", {"input": "$a", "p": [1.5], "method": "approximate"}, 7750303),
    ("$percentile", {"input": "$a", "p": [float("nan")], "method": "approximate"}, 7750303),
])
def test_percentile_parse_codes(name, arg, code):
    assert acc_error(name, arg).code == code


def test_percentile_p_naming_an_undefined_variable():
    variables = {"NOW": 0}
    assert acc_error("$percentile", {"input": "$a", "p": "$$nope", "method": "approximate"}, variables).code == 17276
    assert acc_error("$percentile", {"input": "$a", "p": "$$CURRENT", "method": "approximate"}, variables).code == \
        7750300


def test_percentile_p_folds_constant_expressions_and_command_variables():
    spec = parse_accumulator("$percentile", {"input": "$a", "p": "$$ps", "method": "approximate"},
                             variables={"ps": [0.0, 1.0]})
    acc = spec.new()
    for v in (3, 1, 2):
        acc.process(v)
    assert acc.result() == [1.0, 3.0]
    spec = parse_accumulator("$percentile", {"input": "$a", "p": [{"$divide": [1, 2]}], "method": "approximate"})
    acc = spec.new()
    acc.process(7)
    assert acc.result() == [7.0]


def test_percentile_without_numbers_gives_one_null_per_p():
    acc = parse_accumulator("$percentile", {"input": "$a", "p": [0.1, 0.6], "method": "approximate"}).new()
    acc.process("x")
    assert acc.result() == [None, None]
    acc = parse_accumulator("$median", {"input": "$a", "method": "approximate"}).new()
    assert acc.result() is None


def test_fold_constant():
    assert fold_constant({"$add": [1, 2]}, None) == (True, 3)
    assert fold_constant(["$$x", 1], {"x": 5}) == (True, [5, 1])
    assert fold_constant("$$CURRENT", {"CURRENT": 1}) == (False, None)
    assert fold_constant("$a", {"a": 1}) == (False, None)
    assert fold_constant({"$let": {"vars": {"y": 1}, "in": "$$y"}}, {"x": 1}) == (False, None)


# --------------------------------------------------------------------------------------------------
# $setWindowFields: the stage, the order of checks, per-function codes


@pytest.mark.parametrize("spec,code", [
    ("x", 9),
    ({"sortBy": "x"}, 14),  # the type of sortBy is checked before output is found missing
    ({"output": []}, 14),
    ({"output": {}, "x": 1}, 40415),
    ({"sortBy": None}, 40414),
    ({"output": None}, 40414),  # null counts as absent
    ({"output": {"a": {"$sum": 1}, "a.b": {"$sum": 1}}}, 6307900),
    ({"output": {"a.b": {"$sum": 1}, "a": {"$nope": 1}}}, 6307900),  # conflicts before the function
    ({"output": {"a": {"$sum": 1}}, "partitionBy": [1, 2]}, 14),  # a constant array, even with no document
])
def test_stage_parse_codes(spec, code):
    assert swf_error(spec).code == code


def test_stage_type_messages():
    assert swf_error({"sortBy": "x"}).message == \
        "BSON field '$setWindowFields.sortBy' is the wrong type 'string', expected type 'object'"
    assert swf_error("x").message == "the $setWindowFields stage specification must be an object, found string"


@pytest.mark.parametrize("output,message", [
    ({"a": 1}, "The field 'a' must be an object"),
    ({"a": {}}, "Expected a $-prefixed window function"),
    ({"a": {"b": {"$sum": 1}}}, "Expected a $-prefixed window function, b"),
    ({"a": {"window": {"documents": [-1, 1]}, "$summ": 1}}, "Unrecognized window function, $summ"),
    ({"a": {"$sum": 1, "windoww": {}}}, "Window function found an unknown argument: windoww"),
    ({"a": {"$sum": 1, "$avg": 1}}, "Cannot specify two functions in window function spec"),
    ({"a": {"$count": {}, "$avg": 1}}, "Cannot specify multiple functions in window function spec"),
    ({"a": {"$count": 1}}, "$count only accepts an empty object as input"),
    ({"a": {"$first": 1, "x": 1}}, "$first got unexpected argument: x"),
    ({"a": {"$minN": {"n": 1, "input": 1}, "x": 1}}, "$minN got unexpected argument: x"),
    ({"a": {"$locf": 1, "window": {}}}, "'window' field is not allowed in $locf"),
    ({"a": {"$shift": {"by": 1, "output": 1}, "window": {}}}, "$shift does not accept a 'window' field"),
    ({"a": {"$mergeObjects": "$a"}}, "Unrecognized window function, $mergeObjects"),
])
def test_output_parse_messages(output, message):
    err = swf_error({"sortBy": {"t": 1}, "output": output})
    assert (err.code, err.message) == (9, message)


def test_function_is_named_before_the_window_is_read():
    # {$summ, window} without a sortBy: the unknown name (9), not the window's need of a sortBy (5339901)
    assert swf_error({"output": {"a": {"$summ": 1, "window": {"documents": [-1, 1]}}}}).code == 9
    # and an argument error comes before a later window error, in field order
    assert swf_error({"output": {"a": {"$sum": {"$nope": 1}, "window": {"documents": [-1, 1]}}}}).code == 168
    assert swf_error({"output": {"a": {"window": {"documents": [-1, 1]}, "$sum": {"$nope": 1}}}}).code == 5339901


@pytest.mark.parametrize("output,sort,code", [
    ({"$rank": {}, "window": {}}, {"t": 1}, 5371601),
    ({"$denseRank": {}, "x": 1}, {"t": 1}, 5371601),
    ({"$rank": "$t"}, {"t": 1}, 5371603),
    ({"$documentNumber": {"a": 1}}, {"t": 1}, 5371603),
    ({"$rank": {}}, None, 5371602),
    ({"$documentNumber": {}}, {"t": 1, "u": 1}, 5371602),
    ({"$shift": {"by": 1, "output": "$t"}}, None, 9),
    ({"$shift": {"by": 1, "output": "$t", "default": "$t"}}, {"t": 1}, 9),
    ({"$shift": {"by": 2**31, "output": "$t"}}, {"t": 1}, 9),
    ({"$shift": {"by": 1.5, "output": "$t"}}, {"t": 1}, 9),
    ({"$shift": {"output": "$t"}}, {"t": 1}, 9),
    ({"$shift": {"by": 1}}, {"t": 1}, 9),
    ({"$shift": {"by": 1, "output": "$t", "x": 1}}, {"t": 1}, 9),
    ({"$expMovingAvg": {"input": "$t", "N": 2}, "window": {}}, {"t": 1}, 9),
    ({"$expMovingAvg": {"input": "$t", "N": 2.5}}, {"t": 1}, 9),
    ({"$expMovingAvg": {"input": "$t", "alpha": 1}}, {"t": 1}, 9),
    ({"$expMovingAvg": {"input": "$t", "x": 1}}, {"t": 1}, 9),
])
def test_window_function_codes(output, sort, code):
    spec = {"output": {"a": output}}
    if sort is not None:
        spec["sortBy"] = sort
    assert swf_error(spec).code == code


def test_shift_default_may_be_a_constant_expression_or_a_command_variable():
    docs = [{"t": 1}, {"t": 2}]
    out = run([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "a": {"$shift": {"by": 1, "output": "$t", "default": {"$add": [1, 1]}}},
        "b": {"$shift": {"by": -1, "output": "$t", "default": "$$d"}}}}}], docs, {"d": "none"})
    assert [(d["a"], d["b"]) for d in out] == [(2, "none"), (2, 1)]


def test_percentile_window_from_let_variable_and_empty_window():
    docs = [{"t": i, "v": i} for i in range(3)]
    out = run([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "p": {"$percentile": {"input": "$v", "p": "$$ps", "method": "approximate"},
              "window": {"documents": ["unbounded", -1]}}}}}], docs, {"ps": [0.0, 1.0]})
    assert [d["p"] for d in out] == [[None, None], [0.0, 0.0], [0.0, 1.0]]


def test_array_argument_is_an_array_expression_in_windows():
    out = run([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "p": {"$push": ["$t", "$t"]}, "s": {"$sum": ["$t"]}}}}], [{"t": 1}, {"t": 2}])
    assert [(d["p"], d["s"]) for d in out] == [([[1, 1], [2, 2]], 0)] * 2


# --------------------------------------------------------------------------------------------------
# $expMovingAvg


def test_exp_moving_avg_skips_what_is_not_a_number():
    assert exp_moving_avg([None, "x", 4, None, 8, True, 12], Decimal("0.5")) == [None, None, 4.0, 4.0, 6.0, 6.0, 9.0]


def test_exp_moving_avg_with_decimals_computes_in_decimal128():
    got = exp_moving_avg([1, Decimal128("2"), 4.5, "x"], Decimal("0.5"))
    assert got == [1.0, Decimal128("1.5"), Decimal128("3.000000000000000"), Decimal128("3.000000000000000")]
    assert type(got[0]) is float


def test_decimal_of_double_keeps_fifteen_digits():
    assert str(decimal_of_double(0.1)) == "0.100000000000000"
    assert str(decimal_of_double(4.5)) == "4.50000000000000"


def test_exp_moving_avg_window_output():
    docs = [{"t": i, "v": v} for i, v in enumerate([None, 10, "s", 20])]
    out = run([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "e": {"$expMovingAvg": {"input": "$v", "N": 3}}}}}], docs)
    assert [d["e"] for d in out] == [None, 10.0, 10.0, 15.0]


def test_group_reads_n_and_p_from_the_commands_variables():
    """$group's 'n' and $percentile 'p' may be the command's let variables (fixed for the command),
    as in windows: $group passes them to the accumulators' parse."""
    from tidemark.query.pipeline import PipelineContext, run_pipeline

    docs = [{"g": 1, "v": i} for i in range(5)]
    ctx = PipelineContext(variables={"k": 2, "ps": [0.5]})
    out = list(run_pipeline([{"$group": {"_id": "$g", "top": {"$maxN": {"input": "$v", "n": "$$k"}},
                                         "p": {"$percentile": {"input": "$v", "p": "$$ps", "method": "approximate"}}}}],
                            [dict(d) for d in docs], ctx))
    assert out == [{"_id": 1, "top": [4, 3], "p": [2.0]}]
