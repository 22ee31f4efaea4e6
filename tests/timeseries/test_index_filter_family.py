"""``BucketFilter.index_filter`` over the family of bucket-level conjunctions (pure): which top-level
conjuncts it keeps for the index choice and how it merges two on one path, stated as its rule (not its
code). Its one pass skips ``dict.items`` and generators (issue 23: every indexed read asks it), so the
family pins the edges such a pass can get wrong: a path met twice whose first condition is no document
(``null`` included: the first is kept, a later one ignored), conjuncts of two fields, operators no index
bounds, control paths holding no bounds document."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.timeseries.filters import BucketFilter

_BOUNDS = ("$gt", "$gte", "$lt", "$lte")
_INDEXED = frozenset({"$eq", "$in", "$gt", "$gte", "$lt", "$lte", "$regex", "$options", "$geoWithin",
                      "$geoIntersects"})
_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b"]), st.just({"k": 1}))

_CONTROL_COND = st.one_of(
    st.dictionaries(st.sampled_from(_BOUNDS), st.integers(0, 9), min_size=1, max_size=2),
    st.dictionaries(st.sampled_from([*_BOUNDS, "$eq", "$exists"]), st.integers(0, 9), min_size=1, max_size=2),
    st.integers(0, 9), st.none())
_META_COND = st.one_of(
    _VALUES,
    st.dictionaries(st.sampled_from(["$eq", "$gt", "$lte", "$in", "$exists", "$ne", "k"]),
                    st.one_of(_VALUES, st.lists(_VALUES, max_size=2)), min_size=1, max_size=2))
_PART = st.one_of(
    st.builds(lambda p, c: {p: c}, st.sampled_from(["control.min.t", "control.max.t"]), _CONTROL_COND),
    st.builds(lambda p, c: {p: c}, st.sampled_from(["meta", "meta.a"]), _META_COND),
    st.builds(lambda p, c: {p: c}, st.sampled_from(["_id", "x", "metadata"]), _VALUES),
    st.builds(lambda a, b: {"meta": a, "x": b}, _VALUES, _VALUES))


def _kept(path: str, cond: Any) -> bool:
    """The rule for one conjunct: bounds documents on control paths; on meta paths anything but a
    document holding an operator no index bounds."""
    if path.startswith("control."):
        return isinstance(cond, dict) and all(k in _BOUNDS for k in cond)
    if not path.startswith("meta"):
        return False
    return not (isinstance(cond, dict) and any(k.startswith("$") and k not in _INDEXED for k in cond))


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_PART, max_size=6), wrapped=st.booleans())
def test_index_filter_keeps_the_boundable_conjuncts_first_one_or_merged(parts: list[dict[str, Any]],
                                                                          wrapped: bool) -> None:
    mql = {"$and": parts} if wrapped or len(parts) != 1 else parts[0]
    expected: dict[str, Any] = {}
    for part in parts if mql else []:
        if len(part) != 1:
            continue
        (path, cond), = part.items()
        if not _kept(path, cond):
            continue
        if path not in expected:
            expected[path] = cond
        elif isinstance(expected[path], dict) and isinstance(cond, dict):
            expected[path] = {**expected[path], **cond}  # (both bound the path: the scan takes both)
    assert BucketFilter(mql=mql).index_filter() == (expected or None)


def test_a_null_equality_met_first_stays() -> None:
    # (a lookup that takes a missing path for a null condition would let the later range replace it)
    mql = {"$and": [{"meta.a": None}, {"meta.a": {"$gt": 1}}, {"meta.b": {"$in": [1]}}, {"meta.b": {"$lt": 5}}]}
    assert BucketFilter(mql=mql).index_filter() == {"meta.a": None, "meta.b": {"$in": [1], "$lt": 5}}
