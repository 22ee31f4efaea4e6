"""``index_bounds.build_intervals`` encodes each component's value ranges once and joins them (a key is the
concatenation of its components' encodings): the intervals are exactly those of encoding every combination of
per-component ranges separately, whatever the filter, the value types, the directions and the multikey flag."""

from __future__ import annotations

import datetime as dt
import itertools
import math

from bson import Decimal128, Int64, MaxKey, MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query import index_bounds
from tidemark.query.index_bounds import Interval, build_intervals, extract_bounds
from tidemark.storage.keys import encode_key, encode_value

PATHS = ("a", "b", "c")
VALUES = [0, 1, 5, -3, 2.5, -0.0, Int64(7), Decimal128("4"), "x", "Y", "", None, True, False,
          dt.datetime(2024, 1, 1), dt.datetime(2023, 6, 1), MinKey(), MaxKey()]


def _placeholder(v) -> bool:
    return isinstance(v, (MinKey, MaxKey))


def _one_combination(combo: tuple, directions: tuple[int, ...]) -> Interval:
    """The straightforward encoding of one combination: every component encoded on its own, the bound
    ending at the first range (a range open on one side kept inside its other side's type bracket; one open
    on both sides left out)."""
    prefix = b""
    for (vlo, vhi, vlo_incl, vhi_incl), d in zip(combo, directions, strict=False):
        if vlo is vhi and not _placeholder(vlo):
            prefix += encode_key((vlo,), (d,))
            continue
        real = vlo if not _placeholder(vlo) else (vhi if not _placeholder(vhi) else None)
        if real is None:
            break
        if _placeholder(vlo) and isinstance(real, (int, float, Decimal128)) and not isinstance(real, bool):
            vlo, vlo_incl = -math.inf, True  # numbers below a bound start at -Infinity (NaN is below it)
        tag = encode_value(real)[0]
        bracket_lo, bracket_end = (bytes([tag]), bytes([tag + 1])) if d == 1 else (bytes([255 - tag]),
                                                                                  bytes([256 - tag]))
        klo, klo_incl, khi, khi_incl = (vlo, vlo_incl, vhi, vhi_incl) if d == 1 else (vhi, vhi_incl, vlo, vlo_incl)
        lo, lo_incl = (prefix + bracket_lo, True) if _placeholder(klo) else (prefix + encode_key((klo,), (d,)),
                                                                             klo_incl)
        hi, hi_incl = (prefix + bracket_end, False) if _placeholder(khi) else (prefix + encode_key((khi,), (d,)),
                                                                               khi_incl)
        return Interval(lo, hi, lo_incl, hi_incl)
    return Interval(prefix or None, prefix or None, True, True)


def _straightforward(spec: dict, bounds: dict, multikey: bool) -> list[Interval]:
    fields = list(spec["key"])
    directions = tuple(spec["key"].values())
    per_component, bounded = [], True
    for f, d in zip(fields, directions, strict=False):
        b = bounds.get(f) if bounded else None
        per_component.append(index_bounds._component_ranges(b, d, multikey))
        if b is None or not b.is_point:
            bounded = False
    if math.prod(map(len, per_component)) > max(index_bounds.MAX_INTERVALS, *map(len, per_component)):
        per_component = [[(r[0][0], r[-1][1], True, True)] if len(r) > 1 else r for r in per_component]
    # A combination's bound ends at its first range: the combinations that differ only after it are one
    # interval (e.g. {a: MinKey, b: {$in: [0, 1]}}: a's MinKey..MinKey is a range open on both sides).
    out, seen = [], set()
    for combo in itertools.product(*per_component):
        cut = next((i for i, (lo, hi, _, _) in enumerate(combo) if not (lo is hi and not _placeholder(lo))),
                   len(combo) - 1)
        ranges = tuple(map(id, combo[:cut + 1]))
        if ranges not in seen:
            seen.add(ranges)
            out.append(_one_combination(combo, directions))
    return sorted(out, key=lambda iv: iv.lo or b"") if len(out) > 1 else out


values = st.sampled_from(VALUES)
conditions = st.one_of(
    values,
    st.builds(lambda vs: {"$in": vs}, st.lists(values, min_size=1, max_size=6)),
    st.builds(lambda op, v: {op: v}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), values),
    st.builds(lambda lo_op, lo, hi_op, hi: {lo_op: lo, hi_op: hi},
              st.sampled_from(["$gt", "$gte"]), values, st.sampled_from(["$lt", "$lte"]), values),
)
filters = st.dictionaries(st.sampled_from(PATHS), conditions, max_size=3)
keys = st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from([1, -1])), min_size=1, max_size=3,
                unique_by=lambda kv: kv[0]).map(dict)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flt=filters, key=keys, multikey=st.booleans())
def test_intervals_are_every_combination_encoded_on_its_own(flt, key, multikey):
    spec = {"v": 2, "key": key, "name": "ix", "multikey": multikey}
    bounds = extract_bounds(flt)
    intervals, _ = build_intervals(spec, bounds, multikey_default=multikey)
    assert intervals == _straightforward(spec, bounds, multikey and spec["name"] != "_id_")


def test_many_point_combinations_collapse_to_hulls_as_before():
    """More than MAX_INTERVALS combinations: each component's hull, one interval, as encoded on its own."""
    flt = {"a": {"$in": list(range(40))}, "b": {"$in": list(range(40))}}
    spec = {"v": 2, "key": {"a": 1, "b": -1}, "name": "ix"}
    bounds = extract_bounds(flt)
    intervals, _ = build_intervals(spec, bounds, multikey_default=False)
    assert len(intervals) == 1
    assert intervals == _straightforward(spec, bounds, False)


def test_each_value_range_is_encoded_once_whatever_the_combinations(monkeypatch):
    """8 points before a descending range (TSBS's 8 hosts on {meta.hostname: 1, time: -1}): the range's ends
    are encoded once, not once per point, and each point once: its deduplication's encoding is its
    interval prefix (10 encodings, where encoding every combination on its own made 32)."""
    hosts = [f"host_{i}" for i in range(8)]
    lo, hi = dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2)
    spec = {"v": 2, "key": {"h": 1, "t": -1, "u": 1}, "name": "h_1_t_-1_u_1"}
    bounds = extract_bounds({"h": {"$in": hosts}, "t": {"$gte": lo, "$lt": hi}})
    calls = []

    def counting(values, directions):
        calls.append(values)
        return encode_key(values, directions)

    monkeypatch.setattr(index_bounds, "encode_key", counting)
    intervals, desc = build_intervals(spec, bounds, multikey_default=False)
    assert len(calls) == 8 + 2
    assert [(iv.lo, iv.hi, iv.lo_incl, iv.hi_incl) for iv in intervals] == [
        (encode_key((h,), (1,)) + encode_key((hi,), (-1,)), encode_key((h,), (1,)) + encode_key((lo,), (-1,)),
         False, True) for h in hosts]
    assert desc["t"] == ["(new Date(1704153600000), new Date(1704067200000)]"]  # (dates as mongod shows them)
