"""A find's ``min``/``max`` and ``$natural`` sort checks, as mongod 7.0 makes them: the parse-time
checks of ``FindSpec`` (51176 min and max with different field names, validateFindCommandRequest; a
``$natural`` sort against another hint, parsed_find_command isValid) and the planner's checks of the
bounds against the hinted index (``_min_max_bounds``: 51174 not the key pattern's fields or a
collatable value under another collation, 51175 min not before max; query_planner.cpp)."""

from __future__ import annotations

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import given
from hypothesis import strategies as st

from tidemark import collections as access
from tidemark.protocol.errors import MongoError
from tidemark.query.collation import parse_collation

_NAMES = st.lists(st.sampled_from("abcd"), min_size=1, max_size=3, unique=True)


def _code(fn, *args) -> int:
    with pytest.raises(MongoError) as info:
        fn(*args)
    return info.value.code


def _spec(**kw) -> access.FindSpec:
    return access.FindSpec({"find": "c", **kw})


# --------------------------------------------------------------------------------------------------
# parse: min and max name the same fields
# --------------------------------------------------------------------------------------------------


@given(lo=_NAMES, hi=_NAMES)
def test_min_and_max_must_name_the_same_fields_in_order(lo, hi):
    kw = {"min": dict.fromkeys(lo, 1), "max": dict.fromkeys(hi, 2), "hint": {"a": 1}}
    if lo == hi:
        _spec(**kw)
    else:
        with pytest.raises(MongoError) as info:
            _spec(**kw)
        assert (info.value.code, info.value.message) == (51176, "min and max must have the same field names")


@pytest.mark.parametrize("kw", [{"min": {}}, {"max": {}}, {"min": {}, "max": {"a": 1}}])
def test_an_empty_min_or_max_is_no_bound(kw):
    spec = _spec(**kw)  # not compared with the other side, not a bound needing a hint
    assert spec.min == (kw.get("min") or None)
    assert spec.max == (kw.get("max") or None)


# --------------------------------------------------------------------------------------------------
# parse: a $natural sort agrees with the hint
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hint", [{"a": 1}, "a_1", {"a": -1, "b": 1}, ""])
@pytest.mark.parametrize("direction", [1, -1])
def test_a_natural_sort_refuses_an_index_hint(hint, direction):
    with pytest.raises(MongoError) as info:
        _spec(sort={"$natural": direction}, hint=hint)
    assert (info.value.code, info.value.message) == (2, "index hint not allowed with $natural sort order")


@given(sort=st.sampled_from([1, -1, 1.0, -1.0]), hint=st.sampled_from([1, -1, 1.0, -1.0]))
def test_a_natural_sort_takes_a_natural_hint_of_its_direction_only(sort, hint):
    if (sort < 0) == (hint < 0):
        assert _spec(sort={"$natural": sort}, hint={"$natural": hint}).hint == {"$natural": sort}
    else:
        with pytest.raises(MongoError) as info:
            _spec(sort={"$natural": sort}, hint={"$natural": hint})
        assert (info.value.code, info.value.message) == (
            2, "$natural hint must be in the same direction as $natural sort order")


@pytest.mark.parametrize("hint", [None, {}])
def test_a_natural_sort_without_a_hint_becomes_the_hint(hint):
    spec = _spec(sort={"$natural": -1}, **({} if hint is None else {"hint": hint}))
    assert spec.hint == {"$natural": -1} and spec.sort is None


# --------------------------------------------------------------------------------------------------
# plan: the bounds against the hinted index
# --------------------------------------------------------------------------------------------------


def _index(key: dict, **extra) -> dict:
    return {"name": "i", "key": key, **extra}


def _before(lo: list, hi: list, directions: list) -> bool:
    """``lo`` sorts before ``hi`` in an index of these directions (BSONObj::woCompare with the key
    pattern): the first differing component decides, its sign flipped on a descending field."""
    for a, b, d in zip(lo, hi, directions, strict=True):
        if a != b:
            return (a < b) == (d > 0)
    return False


@given(data=st.data(), directions=st.lists(st.sampled_from([1, -1]), min_size=1, max_size=3))
def test_min_must_come_before_max_in_the_index_order(data, directions):
    names = "abc"[:len(directions)]
    values = st.lists(st.integers(-2, 2), min_size=len(names), max_size=len(names))
    lo, hi = data.draw(values), data.draw(values)
    index = _index(dict(zip(names, directions, strict=True)))
    args = (dict(zip(names, lo, strict=True)), dict(zip(names, hi, strict=True)), index, None)
    if _before(lo, hi, directions):
        low, high = access._min_max_bounds(*args)
        assert low is not None and high is not None and low < high
    else:
        assert _code(access._min_max_bounds, *args) == 51175


@given(value=st.integers(-5, 5), direction=st.sampled_from([1, -1]), side=st.sampled_from(["min", "max"]))
def test_one_bound_alone_is_compared_with_minkey_or_maxkey(value, direction, side):
    # finishMinObj / finishMaxObj: the absent side is MinKey or MaxKey, whichever leaves a range
    bound = {"a": value}
    lo, hi = (bound, None) if side == "min" else (None, bound)
    low, high = access._min_max_bounds(lo, hi, _index({"a": direction}), None)
    assert (low is None) == (side == "max") and (high is None) == (side == "min")


def test_a_max_of_minkey_alone_leaves_nothing_before_it():
    assert _code(access._min_max_bounds, None, {"a": MinKey()}, _index({"a": 1}), None) == 51175
    assert _code(access._min_max_bounds, {"a": MaxKey()}, None, _index({"a": 1}), None) == 51175
    access._min_max_bounds(None, {"a": MinKey(), "b": 1}, _index({"a": 1, "b": 1}), None)  # shorter is less


@given(names=_NAMES, side=st.sampled_from(["min", "max"]))
def test_a_bound_not_naming_the_key_pattern_is_51174(names, side):
    key = {"a": 1, "b": -1}
    bound = dict.fromkeys(names, 1)
    lo, hi = (bound, None) if side == "min" else (None, bound)
    if names == list(key):
        access._min_max_bounds(lo, hi, _index(key), None)
    else:
        with pytest.raises(MongoError) as info:
            access._min_max_bounds(lo, hi, _index(key), None)
        assert (info.value.code, info.value.message) == (51174, "The index chosen is not compatible with min/max")


@pytest.mark.parametrize("value", ["x", {"s": 1}, [1]])
def test_a_collatable_bound_under_another_collation_is_51174(value):
    fr = {"locale": "fr"}
    assert _code(access._min_max_bounds, {"a": value}, None, _index({"a": 1}), parse_collation(fr)) == 51174
    assert _code(access._min_max_bounds, {"a": value}, None, _index({"a": 1}, collation=fr), None) == 51174
    access._min_max_bounds({"a": value}, None, _index({"a": 1}, collation=fr), parse_collation(fr))
    access._min_max_bounds({"a": 5}, None, _index({"a": 1}), parse_collation(fr))  # a number: no collator needed
