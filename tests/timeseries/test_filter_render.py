"""``filters.render`` gives every parsed filter an MQL form that selects what the filter selects (explain
shows it, updates and deletes of measurements parse it back), or raises ``NoMqlForm`` ($near): generated
filters of every node kind (``harness.meta_predicates``) round-trip on documents of every shape."""

import pytest
from bson.regex import Regex
from harness.meta_predicates import measurements, mixed_filters
from hypothesis import given, settings

from tidemark.query.match import compile_filter, parse_filter
from tidemark.timeseries.filters import NoMqlForm, derive, render

DOCS = measurements()


def selected(flt):
    match = compile_filter(flt)
    return [d["_id"] for d in DOCS if match(d)]


@pytest.mark.slow
@settings(max_examples=800, deadline=None, database=None)
@given(flt=mixed_filters)
def test_the_mql_form_of_a_filter_selects_what_the_filter_selects(flt):
    try:
        expected = selected(flt)
    except Exception:  # invalid generated input: the parser's error is another test's business
        return
    assert selected(render(parse_filter(flt))) == expected, flt


@pytest.mark.parametrize("flt", [
    {"m.s": {"$in": [Regex("^A", "i"), 3]}},
    {"m.s": {"$nin": [Regex("^b$", "m")]}},
    {"m.s": {"$all": [Regex("B", "i")]}},
    {"m.arr": {"$elemMatch": {"$eq": 5}}},
    {"m.arr": {"$not": {"$elemMatch": {"$eq": 5}}}},
    {"m.a": {"$not": {"$gt": 1, "$lt": 3}}},
    {"m.loc": {"$within": {"$box": [[0, 0], [3, 3]]}}},
    # two conditions wanting one operator key: the $within alias, or one document per condition
    {"m.loc": {"$elemMatch": {"$geoWithin": {"$box": [[0, 0], [3, 3]]}, "$within": {"$center": [[0, 0], 1]}}}},
    {"$and": [{"m.a": {"$gt": 1}}, {"m.a": {"$gt": 2}}]},
])
def test_regexes_elem_match_and_geo_keep_their_meaning(flt):
    assert selected(render(parse_filter(flt))) == selected(flt)


def test_near_has_no_mql_form_and_stays_with_the_per_measurement_filter():
    node = parse_filter({"m.loc": {"$near": [0, 0]}, "m.a": 1})
    with pytest.raises(NoMqlForm):
        render(node)
    bucket_filter = derive(node, "t", "m", 3600)
    assert bucket_filter.mql == {"meta.a": 1} and not bucket_filter.exact
