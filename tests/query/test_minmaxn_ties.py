"""$minN/$maxN among equal values (1, NumberLong(1), 1.0, NumberDecimal("1") compare equal): mongod's
AccumulatorMinMaxN (accumulator_multi.cpp) keeps a multiset, equal values in arrival order; a full set
takes a value only strictly better than its worst — $minN's worst is the latest of its equal largest,
$maxN's the earliest of its equal smallest, and that one is evicted —; $minN outputs the set from its
start, $maxN from its end (of equal values the later first). Over a window whose lower bound moves,
WindowFunctionMinMaxN holds every value of the window and outputs the first n from the same ends.
Tidemark answered $maxN with the earlier of equal values first and evicted the later one, in $group,
windows and the expression form alike."""

from bisect import bisect_right

from bson import Decimal128, Int64
from harness.jstests import canon
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.accumulator_state import MinMaxN, WindowMaxN
from tidemark.query.values import sort_key

TYPES = [int, Int64, float, lambda i: Decimal128(str(i))]
VALUES = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(TYPES)).map(lambda p: p[1](p[0])), max_size=25)


def mongod_group(values, n, largest):
    """AccumulatorMinMaxN::_processValue / getValue, as a list kept sorted (equal keys in arrival order)."""
    kept: list = []
    for v in values:
        k = sort_key(v)
        if len(kept) == n:
            if largest:
                if not kept[0][0] < k:
                    continue
                kept.pop(0)
            elif not k < kept[-1][0]:
                continue
            else:
                kept.pop()
        kept.insert(bisect_right([e[0] for e in kept], k), (k, v))
    out = [v for _, v in kept]
    return out[::-1] if largest else out


def fed(acc, values):
    for v in values:
        acc.process(v)
    return acc.result()


@settings(max_examples=400, deadline=None)
@given(values=VALUES, n=st.integers(1, 6), largest=st.booleans())
def test_min_max_n_keep_and_order_ties_as_mongod(values, n, largest):
    assert canon(fed(MinMaxN(n, largest), values)) == canon(mongod_group(values, n, largest))


@settings(max_examples=400, deadline=None)
@given(values=VALUES, n=st.integers(1, 6))
def test_window_max_n_is_the_multisets_last_n(values, n):
    ordered = sorted(values, key=sort_key)  # (stable: equal values in arrival order)
    assert canon(fed(WindowMaxN(n), values)) == canon(ordered[::-1][:n])


def test_examples():
    one, long_one, double_one = 1, Int64(1), 1.0
    assert canon(fed(MinMaxN(3, True), [one, double_one, long_one])) == canon([long_one, double_one, one])
    assert canon(fed(MinMaxN(2, True), [one, double_one, long_one, 2])) == canon([2, double_one])
    assert canon(fed(MinMaxN(2, False), [long_one, one, double_one, 0])) == canon([0, long_one])
    assert canon(fed(WindowMaxN(2), [one, double_one, long_one])) == canon([long_one, double_one])


@settings(max_examples=300, deadline=None)
@given(values=VALUES, n=st.integers(1, 6), largest=st.booleans(), cut=st.integers(0, 25))
def test_a_merged_state_answers_as_one_fed_everything_up_to_equal_values(values, n, largest, cut):
    """A $group that spilled merges its partial states in input order: the same values, but which of
    equal values of different types stays can differ, as $maxN keeps a later equal value only by
    evicting (the partial state fed the later inputs kept its own; mongod's merge of spilled partial
    results, fed in their output order, is no more exact)."""
    first, later = MinMaxN(n, largest), MinMaxN(n, largest)
    first.process_many(values[:cut])
    later.process_many(values[cut:])
    first.merge(later)
    assert canon(first.result(), by_value=True) == canon(mongod_group(values, n, largest), by_value=True)


@settings(max_examples=300, deadline=None)
@given(values=VALUES, n=st.integers(1, 6), largest=st.booleans())
def test_the_expression_form_is_the_accumulator_fed_the_array(values, n, largest):
    """{$maxN: {n, input: [...]}} (mongod's ExpressionFromAccumulatorN: the accumulator fed the elements)"""
    from tidemark.query.expressions import compile_expression
    op = "$maxN" if largest else "$minN"
    got = compile_expression({op: {"n": n, "input": {"$literal": values}}})({}, {})
    assert canon(got) == canon(mongod_group(values, n, largest))
