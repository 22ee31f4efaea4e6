"""$setWindowFields range windows, window-bound parsing, $derivative, $integral and $linearFill as
mongod 7.0 answers them (expected values from jstests/aggregation/sources/setWindowFields/*.js)."""

import datetime as dt

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import run_pipeline

D = dt.datetime
XS = [0, 1, 1.5, 2, 3, 100, 100, 101]


def run(pipeline, docs):
    return list(run_pipeline(pipeline, [dict(d) for d in docs]))


def pushed(lower, upper, xs=XS):
    out = run([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "y": {"$push": "$x", "window": {"range": [lower, upper]}}}}}], [{"x": x, "i": i} for i, x in enumerate(xs)])
    return [d["y"] for d in out]


def error_of(pipeline, docs=()):
    with pytest.raises(MongoError) as e:
        run(pipeline, docs)
    return e.value.code, str(e.value)


def test_range_zero_includes_ties_but_current_is_the_current_document_only():
    assert pushed(-1, 0)[5:] == [[100, 100], [100, 100], [100, 100, 101]]
    assert pushed("current", "current")[5:7] == [[100], [100]]
    assert pushed("current", 1)[5:7] == [[100, 100, 101], [100, 101]]
    assert pushed(-97, "current")[5:7] == [[3, 100], [3, 100, 100]]
    assert pushed("unbounded", "current")[5:7] == [[0, 1, 1.5, 2, 3, 100], [0, 1, 1.5, 2, 3, 100, 100]]
    assert pushed(0, 0)[5:7] == [[100, 100], [100, 100]]


def test_range_windows_can_be_empty():
    assert pushed(-1, -1) == [[], [0], [], [1], [2], [], [], [100, 100]]
    assert pushed("unbounded", -99)[5:] == [[0, 1], [0, 1], [0, 1, 1.5, 2]]


@pytest.mark.parametrize("bad,code,message", [
    (None, 5429414, "Invalid range: Expected the sortBy field to be a number, but it was null"),
    ("a", 5429414, "Invalid range: Expected the sortBy field to be a number, but it was string"),
    (D(2020, 1, 1), 5429413, "Invalid range: For windows that involve date or time ranges, a unit must be provided."),
])
def test_range_window_over_a_non_numeric_sort_value(bad, code, message):
    assert error_of([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "y": {"$sum": 1, "window": {"range": [-1, 1]}}}}}], [{"x": 1}, {"x": bad}]) == (code, message)


@pytest.mark.parametrize("window,code,message", [
    ({"range": [-1.5, 0], "unit": "hour"}, 9, "With 'unit', range-based bounds must be an integer"),
    ({"range": ["a", 0]}, 9, "Window bounds must be 'unbounded', 'current', or a number."),
    ({"range": [True, 0]}, 9, "Range-based bounds expression must be a number"),
    ({"documents": [0.5, 1]}, 9, "Numeric document-based bounds must be an integer"),
    ({"documents": [{"$add": ["$a", 1]}, 1]}, 9, "Window bounds expression must be a constant."),
    ({"documents": ["$a", 1]}, 9, "Window bounds must be 'unbounded', 'current', or a number."),
    ({"documents": [1, 0]}, 5339900, "Lower bound must not exceed upper bound: [1, 0]"),
    ({"range": ["current", -1]}, 5339900, "Lower bound must not exceed upper bound: [0, -1]"),
    ({"documents": [0, 1], "range": [0, 1]}, 9, "Window bounds can specify either 'documents' or 'unit', not both."),
    ({"documents": [0, 1], "unit": "day"}, 9, "Window bounds can only specify 'unit' with range-based bounds."),
    ({"range": [0, 1], "unit": "fortnight"}, 9, "unknown time unit value: fortnight"),
    ({"range": [0, 1], "unit": 5}, 9, "'unit' must be a string"),
    ({"foo": 1}, 9, "'window' field can only contain 'documents' as the only argument or 'range' with an "
                    "optional 'unit' field"),
])
def test_window_bound_errors(window, code, message):
    assert error_of([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "y": {"$sum": 1, "window": window}}}}]) == (code, message)


def test_window_bounds_may_be_constant_expressions_and_an_empty_window_is_unbounded():
    out = run([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "a": {"$sum": "$x", "window": {"documents": [{"$subtract": [0, 1]}, 0]}},
        "b": {"$sum": "$x", "window": {}}}}}], [{"x": 1}, {"x": 2}, {"x": 4}])
    assert [(d["a"], d["b"]) for d in out] == [(1, 7), (3, 7), (6, 7)]


def derivative(docs, window, unit=None, sort=1):
    arg = {"input": "$y", **({"unit": unit} if unit else {})}
    out = run([{"$setWindowFields": {"sortBy": {"time": sort}, "output": {
        "dy": {"$derivative": arg, "window": window}}}}, {"$sort": {"time": 1}}], docs)
    return [d["dy"] for d in out]


def test_derivative_uses_the_first_and_last_documents_of_the_window():
    docs = [{"time": t, "y": y} for t, y in enumerate([100, 105, 108, 108, 115, 115, 118, 118])]
    expected = [5, 8 / 2, 8 / 3, 15 / 4, 10 / 4, 10 / 4, 10 / 4, 3 / 3]
    assert derivative(docs, {"documents": [-3, 1]}) == expected
    assert derivative(docs, {"documents": [-1, 3]}, sort=-1) == expected
    assert derivative(docs, {"documents": [-1, 0]})[0] is None   # one document: a zero run


def test_derivative_with_range_bounds_and_units():
    docs = [{"time": t, "y": y} for t, y in [(0, 10), (10, 12), (11, 15), (12, 19), (13, 24), (20, 30)]]
    assert derivative(docs, {"range": [-10, 0]}) == [None, 0.2, 3.0, 3.5, 4.0, 1.8]
    dated = [{"time": D(2020, 1, 1) + dt.timedelta(milliseconds=i), "y": y} for i, y in enumerate([5, 4, 6, 5])]
    assert derivative(dated, {"documents": [-1, 0]}, "minute") == [None, -60000.0, 120000.0, -60000.0]


@pytest.mark.parametrize("times,unit,code", [
    ([0, 1], "millisecond", 5624900),
    ([D(2020, 1, 1), D(2020, 1, 2)], None, 5624901),
    (["a", "b"], None, 5624902),
])
def test_derivative_sort_value_errors(times, unit, code):
    docs = [{"time": t, "y": 1} for t in times]
    with pytest.raises(MongoError) as e:
        derivative(docs, {"documents": [-1, 0]}, unit)
    assert e.value.code == code


def test_derivative_of_a_missing_input_is_an_error():
    with pytest.raises(MongoError) as e:
        derivative([{"time": 0, "y": 1}, {"time": 1}], {"documents": [-1, 0]})
    assert e.value.code == 5624903


@pytest.mark.parametrize("op", ["$derivative", "$integral"])
@pytest.mark.parametrize("arg,sort,window,code,message", [
    ({"input": "$y", "unit": "month"}, {"t": 1}, {"documents": [-1, 0]}, 5490710, "unit must be 'week' or smaller"),
    ({"input": "$y", "unit": "year"}, {"t": 1}, {"documents": [-1, 0]}, 5490710, "unit must be 'week' or smaller"),
    ({"input": "$y"}, None, {"documents": [-1, 0]}, 9, "{op} requires a sortBy"),
    ({"input": "$y"}, {"t": 1, "u": 1}, {"documents": [-1, 0]}, 9, "{op} requires a non-compound sortBy"),
    ({"unit": "hour"}, {"t": 1}, {"documents": [-1, 0]}, 9, "{op} requires an 'input' expression"),
    ({"input": "$y", "x": 1}, {"t": 1}, {"documents": [-1, 0]}, 9, "{op} got unexpected argument: x"),
    ("$y", {"t": 1}, {"documents": [-1, 0]}, 9, '{op} expects an object, but got a string: {op}: "$y"'),
])
def test_rate_function_parse_errors(op, arg, sort, window, code, message):
    spec = {"output": {"r": {op: arg, "window": window}}, **({"sortBy": sort} if sort else {})}
    assert error_of([{"$setWindowFields": spec}]) == (code, message.format(op=op))


def test_derivative_requires_explicit_bounds():
    assert error_of([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"r": {"$derivative": {"input": "$y"}}}}}]) \
        == (9, "$derivative requires explicit window bounds")


def integral(docs, window, unit=None):
    arg = {"input": "$y", **({"unit": unit} if unit else {})}
    out = run([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "v": {"$integral": arg, "window": window}}}}], docs)
    return [d["v"] for d in out]


def test_integral_documented_results():
    docs = [{"x": x, "y": y} for x, y in [(0, 1), (1, 2), (2, 1), (3, 4)]]
    assert integral(docs, {"documents": [-1, 0]}) == [0, 1.5, 1.5, 2.5]
    timed = [{"x": D(2020, 1, 1) + dt.timedelta(seconds=s), "y": y} for s, y in [(0, 0.0), (4, 2.4), (10, 5.6), (18, 6.8)]]
    assert integral(timed, {"range": [-1, -1], "unit": "second"}, "second") == [None] * 4
    assert integral(timed, {"range": [-2, 0], "unit": "second"}, "second") == [0] * 4
    assert integral(timed, {"range": [-6, 6], "unit": "second"}, "second") == pytest.approx([4.8, 28.8, 24.0, 0.0])


@pytest.mark.parametrize("docs,unit,code", [
    ([{"x": 0, "y": 1}, {"x": D(2020, 1, 1), "y": 1}], "second", 5423901),
    ([{"x": 0, "y": 1}, {"x": D(2020, 1, 1), "y": 1}], None, 5423902),
    ([{"x": 0, "y": 1}, {"x": 1, "y": None}], None, 5423900),
    ([{"x": 0, "y": 1}, {"y": 1}], None, 5423900),
])
def test_integral_value_errors(docs, unit, code):
    with pytest.raises(MongoError) as e:
        integral(docs, {"documents": [-1, 0]}, unit)
    assert e.value.code == code


def linear(docs, sort=None):
    spec = {"output": {"v": {"$linearFill": "$v"}}, **({"sortBy": sort} if sort is not None else {})}
    return [d["v"] for d in run([{"$setWindowFields": spec}], docs)]


def test_linear_fill_interpolates_between_known_points():
    docs = [{"t": t, **({"v": v} if v is not None else {})} for t, v in [(1, 0), (2, None), (4, None), (5, 8), (6, None)]]
    assert linear(docs, {"t": 1}) == [0, 2.0, 6.0, 8, None]
    dated = [{"t": D(2021, 3, 8, h), "v": v} for h, v in [(9, 500), (10, None), (11, 515)]]
    assert linear(dated, {"t": 1}) == [500, 507.5, 515]


@pytest.mark.parametrize("docs,code,message", [
    ([{"t": 1, "v": 1}, {"t": 1, "v": 2}], 6050106, "There can be no repeated values in the sort field"),
    ([{"t": 1, "v": 1}, {"t": D(2020, 1, 1), "v": 2}], 14,
     "Conflicting sort value types, previously received type int, but found date"),
    ([{"t": 1, "v": 1}, {"t": None, "v": 2}], 14, "Value of the sortBy field must be numeric or a date, but found null"),
    ([{"v": 1}], 14, "Value of the sortBy field must be numeric or a date, but found missing"),
    ([{"t": 1, "v": "a"}], 14, "Value to be filled must be numeric or nullish, but found string"),
])
def test_linear_fill_errors(docs, code, message):
    assert error_of([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$linearFill": "$v"}}}}], docs) \
        == (code, message)


def test_linear_fill_needs_a_single_sort_field():
    assert error_of([{"$setWindowFields": {"output": {"v": {"$linearFill": "$v"}}}}])[0] == 605001
    assert error_of([{"$setWindowFields": {"sortBy": {"a": 1, "b": 1}, "output": {"v": {"$linearFill": "$v"}}}}])[0] \
        == 605001


def test_range_bounds_of_any_numeric_type():
    from bson import Decimal128, Int64

    assert pushed(Decimal128("-1"), Int64(0))[5:] == [[100, 100], [100, 100], [100, 100, 101]]
