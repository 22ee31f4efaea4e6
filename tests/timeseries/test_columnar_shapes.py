"""columnar.plan's shapes (``_shape``), pure: a ``$group`` spec's parsed accumulators and compiled ``_id``
are remembered by the spec's BSON with the time and meta fields, so specs that differ only in a type
(an int against a double), in field order or in the fields they are planned for never share one, and a
spec the columnar path declines stays declined."""

from __future__ import annotations

import datetime as dt

import pytest

from tidemark.timeseries import columnar


@pytest.fixture(autouse=True)
def _empty_shapes():
    """Each test starts with no remembered shape: the memo is emptied when it reaches ``_SHAPES_MAX``,
    and specs planned by earlier tests of the session could fill it between two plans of one test (a
    re-parse there is correct, but not what these identity checks look for)."""
    columnar._SHAPES.clear()

TRUNC = {"$dateTrunc": {"date": "$t", "unit": "minute"}}
ROW = {"t": dt.datetime(2024, 1, 2, 3, 4, 5), "m": {"h": "a"}}


def _plan(spec, tf="t", mf="m"):
    return columnar.plan(None, [{"$group": spec}], tf, mf)


def test_types_and_order_are_told_apart():
    one = _plan({"_id": {"k": 1, "t": TRUNC}, "a": {"$max": "$x"}, "b": {"$min": "$y"}})
    other = _plan({"_id": {"k": 1.0, "t": TRUNC}, "a": {"$max": "$x"}, "b": {"$min": "$y"}})
    swapped = _plan({"_id": {"k": 1, "t": TRUNC}, "b": {"$min": "$y"}, "a": {"$max": "$x"}})
    assert type(one.id_fn(ROW, {})["k"]) is int and type(other.id_fn(ROW, {})["k"]) is float
    assert [name for name, _ in one.fields] == ["a", "b"] and [name for name, _ in swapped.fields] == ["b", "a"]
    again = _plan({"_id": {"k": 1, "t": TRUNC}, "a": {"$max": "$x"}, "b": {"$min": "$y"}})
    assert again.fields is one.fields and again.id_fn is one.id_fn  # (the shape parsed once)
    assert again is not one and again.conditions == []  # (the per-query part made per query)


def test_fields_planned_for_are_part_of_the_shape():
    spec = {"_id": {"h": "$m.h", "t": TRUNC}, "a": {"$max": "$x"}}
    assert _plan(spec).id_meta
    # with another meta field, "$m.h" is a measurement path: not an _id the columnar path runs
    assert _plan(spec, mf="tags") is None
    assert _plan(spec).id_meta  # (and the first verdict stands)
    # a time-valued accumulator of the time field, and the same spec where that field is a measurement
    timed = {"_id": TRUNC, "a": {"$sum": "$t"}}
    assert _plan(timed) is None
    assert _plan({"_id": {"$dateTrunc": {"date": "$u", "unit": "minute"}}, "a": {"$sum": "$t"}}, tf="u") is not None


def test_declined_specs_stay_declined():
    bad = {"_id": TRUNC, "a": {"$push": "$x"}}
    assert _plan(bad) is None and _plan(bad) is None
    assert _plan({"_id": TRUNC, "a": {"$max": "$x"}}) is not None
    invalid = {"_id": TRUNC, "a.b": {"$max": "$x"}}  # (the generic $group reports the error)
    assert _plan(invalid) is None and _plan(invalid) is None
