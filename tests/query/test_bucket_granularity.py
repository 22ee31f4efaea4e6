"""$bucketAuto ``granularity`` (mongod's GranularityRounder) and $bucket's output order.

The rounders are checked as a family: for every preferred-number series and POWERSOF2, over positive
doubles, integers and decimals, roundUp is the least boundary strictly above a value and roundDown
the greatest strictly below; the stage's buckets are then contiguous and cover every value.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from bson.decimal128 import Decimal128
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import PipelineContext, run_pipeline
from tidemark.query.stage_group import _SERIES, _Rounder

_NAMES = sorted(_SERIES)


def run(pipeline, docs, ctx=None):
    return list(run_pipeline(pipeline, [dict(d) for d in docs], ctx))


def _boundaries_near(name: str, x: float) -> list[float]:
    """The series numbers (member x 10**k) around ``x``, exactly as decimals."""
    k = math.floor(math.log10(x))
    return sorted(Decimal(v) * Decimal(10) ** e for v in _SERIES[name] for e in range(k - 4, k + 2))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_NAMES), st.floats(min_value=1e-6, max_value=1e12, allow_nan=False, allow_infinity=False))
def test_preferred_numbers_bracket_a_value(name, x):
    rounder = _Rounder(name)
    up, down = rounder.up(x), rounder.down(x)
    assert type(up) is float and type(down) is float
    assert down < x < up
    # no series number lies strictly between (up to the double rounding of member x 10**k)
    near = [float(b) for b in _boundaries_near(name, x)]
    assert not [b for b in near if down * (1 + 1e-12) < b < x * (1 - 1e-12)]
    assert not [b for b in near if x * (1 + 1e-12) < b < up * (1 - 1e-12)]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_NAMES), st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("1e9"), places=4))
def test_preferred_numbers_round_decimals_in_decimal(name, d):
    rounder = _Rounder(name)
    up, down = rounder.up(Decimal128(d)), rounder.down(Decimal128(d))
    assert type(up) is Decimal128 and type(down) is Decimal128
    assert down.to_decimal() < d < up.to_decimal()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(1, 2**62), st.floats(min_value=1e-300, max_value=1e300)))
def test_powers_of_two_bracket_a_value(x):
    rounder = _Rounder("POWERSOF2")
    up, down = rounder.up(x), rounder.down(x)
    assert down < x < up
    assert up / 2 <= x <= down * 2
    for p in (up, down):
        assert float(p) == 2.0 ** round(math.log2(float(p)))


def test_rounder_edges():
    r80 = _Rounder("R80")
    assert (r80.down(4.940656484124654e-324), r80.up(4.940656484124654e-324)) == (0.0, 1.02e-321)  # SERVER-57091
    assert r80.up(0) == 0 and type(r80.up(0)) is int
    assert r80.up(math.inf) == math.inf
    e6 = _Rounder("E6")
    assert (e6.up(0.8), e6.down(0.8)) == (1.0, 0.68)
    assert str(e6.up(Decimal128("0.8"))) == "1.00000000000000"  # mongod's 15-digit Decimal128(double)
    two = _Rounder("POWERSOF2")
    assert (two.up(4), two.down(4), two.up(5), two.down(5)) == (8, 2, 8, 4)
    assert type(two.up(4)) is int and type(two.up(4.0)) is int and type(two.up(0.3)) is float


def test_bucket_auto_granularity_documentation_example():
    out = run([{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "R20"}}],
              [{"_id": i} for i in range(100)])
    assert out == [{"_id": {"min": 0, "max": 20.0}, "count": 20}, {"_id": {"min": 20.0, "max": 40.0}, "count": 20},
                   {"_id": {"min": 40.0, "max": 63.0}, "count": 23}, {"_id": {"min": 63.0, "max": 90.0}, "count": 27},
                   {"_id": {"min": 90.0, "max": 100.0}, "count": 10}]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_NAMES + ["POWERSOF2"]), st.integers(1, 6),
       st.lists(st.one_of(st.integers(0, 10**6), st.floats(min_value=0, max_value=1e6)), min_size=1, max_size=40))
def test_bucket_auto_granular_buckets_are_contiguous_and_cover_every_value(name, n, values):
    out = run([{"$bucketAuto": {"groupBy": "$v", "buckets": n, "granularity": name}}], [{"v": v} for v in values])
    assert 1 <= len(out) <= n
    assert sum(b["count"] for b in out) == len(values)
    for a, b in zip(out, out[1:], strict=False):
        assert a["_id"]["max"] == b["_id"]["min"]
    lo, hi = out[0]["_id"]["min"], out[-1]["_id"]["max"]
    assert all(lo <= v for v in values) and all(v < hi or v == hi == 0 for v in values)


@pytest.mark.parametrize("spec, code", [
    ({"granularity": 5}, 40261), ({"granularity": "R7"}, 40257), ({"granularity": "r5"}, 40257),
])
def test_bucket_auto_granularity_argument_errors(spec, code):
    with pytest.raises(MongoError) as info:
        run([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, **spec}}], [{"v": 1}])
    assert info.value.code == code


@pytest.mark.parametrize("value, code", [("a", 40258, ), (None, 40258), (math.nan, 40259), (-1, 40260)])
def test_bucket_auto_granularity_refuses_keys_it_cannot_round(value, code):
    docs = [{"v": 1}, {"v": value}] if value is not None else [{"v": 1}, {}]
    with pytest.raises(MongoError) as info:
        run([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "E12"}}], docs)
    assert info.value.code == code


def test_bucket_sorts_the_default_among_the_boundary_buckets():
    """mongod runs $bucket as $group + $sort on _id: a default below the boundaries comes first, one of
    another type takes its type's place in BSON order."""
    docs = [{"v": v} for v in (1, 5, 15, "x")]
    spec = {"groupBy": "$v", "boundaries": [4, 10, 20]}
    assert [b["_id"] for b in run([{"$bucket": {**spec, "default": 0}}], docs)] == [0, 4, 10]
    assert [b["_id"] for b in run([{"$bucket": {**spec, "default": "z"}}], docs)] == [4, 10, "z"]
    assert [b["_id"] for b in run([{"$bucket": {**spec, "default": None}}], docs)] == [None, 4, 10]
    ctx = PipelineContext()
    assert [b["_id"] for b in run([{"$bucket": {**spec, "default": 30}}], docs, ctx)] == [4, 10, 30]
