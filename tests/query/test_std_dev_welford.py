"""$stdDevPop/$stdDevSamp as mongod 7.0's AccumulatorStdDev (src/mongo/db/pipeline/accumulator_std_dev.cpp):
Welford's online update of (count, mean, M2) in doubles, in input order, and the parallel algorithm to
merge partial states. Tidemark kept every value and answered the exact two-pass deviation: last bits
that differ from mongod's for most inputs, and memory growing with the group (16 bytes a value against
the $group limit, where mongod counts a fixed-size state): a $group's $stdDevPop over a few thousand
values failed with 292 under a 16 KB limit. The end-to-end check of the memory is
tests/e2e/test_group_std_dev_memory.py."""

import math

from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.accumulator_state import StdDev


def mongod_welford(values, sample):
    """AccumulatorStdDev::processInternal (not merging) and getValue, transcribed."""
    count, mean, m2 = 0, 0.0, 0.0
    for v in values:
        if type(v) is bool or not isinstance(v, (int, float, Int64, Decimal128)):
            continue
        x = float(v.to_decimal()) if type(v) is Decimal128 else float(v)
        count += 1
        delta = x - mean
        if delta != 0.0:
            mean += delta / count
            m2 += delta * (x - mean)
    adjusted = count - 1 if sample else count
    if adjusted <= 0:
        return None
    variance = m2 / adjusted
    return math.sqrt(variance) if variance >= 0 else math.nan


def same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and (a == b or (a != a and b != b)))


NUMBERS = st.one_of(st.floats(-1e6, 1e6), st.integers(-10**6, 10**6), st.integers(-10**6, 10**6).map(Int64),
                    st.sampled_from([math.inf, -math.inf, math.nan, Decimal128("2.5"), None, "s", 1e200]))


@settings(max_examples=500, deadline=None)
@given(values=st.lists(NUMBERS, max_size=40), sample=st.booleans(), batch=st.booleans())
def test_std_dev_is_mongods_welford_to_the_last_bit(values, sample, batch):
    acc = StdDev(sample)
    if batch:
        acc.process_many(values)
    else:
        for v in values:
            acc.process(v)
    assert same(acc.result(), mongod_welford(values, sample))


def test_a_deviation_whose_last_bit_the_exact_answer_gave_otherwise():
    acc = StdDev(False)
    acc.process_many([15.06, 63.49, 86.8, 52.32, 74.13])
    assert acc.result() == 24.47535495146087  # (the exact two-pass deviation: 24.475354951460865)


@settings(max_examples=300, deadline=None)
@given(first=st.lists(st.floats(-1e6, 1e6), max_size=20), later=st.lists(st.floats(-1e6, 1e6), max_size=20),
       sample=st.booleans())
def test_merge_is_mongods_parallel_algorithm(first, later, sample):
    a, b = StdDev(sample), StdDev(sample)
    a.process_many(first)
    b.process_many(later)
    a.merge(b)
    # processInternal(merging=true), transcribed
    count, mean, m2 = _state(first)
    c2, mean2, m22 = _state(later)
    if c2:
        delta = mean2 - mean
        total = count + c2
        if delta != 0.0:
            mean = (count * mean + c2 * mean2) / total
            m2 += delta * delta * (float(count) * c2 / total)
        m2 += m22
        count = total
    assert (a.count, a.mean, a.m2) == (count, mean, m2) or (a.m2 != a.m2 and m2 != m2)


def _state(values):
    count, mean, m2 = 0, 0.0, 0.0
    for x in values:
        count += 1
        delta = x - mean
        if delta != 0.0:
            mean += delta / count
            m2 += delta * (x - mean)
    return count, mean, m2


def test_merging_into_an_empty_state_keeps_a_mean_past_dbl_max_over_n():
    """A spilled $group merges its partial states into an empty one: the formula's n * mean overflowed
    for values near DBL_MAX, so a group of one repeated -1.2e308 answered NaN spilled and 0.0 in memory
    (tests/e2e/test_group_spill.py's Hypothesis family found it)."""
    values = [-1.213945667185285e308] * 8
    whole, part, merged = StdDev(False), StdDev(False), StdDev(False)
    whole.process_many(values)
    part.process_many(values)
    merged.merge(part)
    assert merged.result() == whole.result() == 0.0
    assert (merged.count, merged.mean, merged.m2) == (part.count, part.mean, part.m2)
