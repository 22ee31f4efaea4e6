"""An accumulator's ``memory()`` is the size of what it keeps (mongod's ``_memUsageBytes``).

mongod's N accumulators (accumulator_multi.cpp) count a value when they keep it and uncount it when
they evict it; Tidemark's $group counted every value fed to $firstN/$lastN/$minN/$maxN and nothing of
$top/$bottom. Here, for any input and n, ``memory()`` equals the sizes of the values the result holds
(and, for $top*/$bottom*, of their sort keys besides), and the results are those of a plain sort.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.accumulator_state import value_size
from tidemark.query.accumulators import parse_accumulator
from tidemark.query.memory import approx_size
from tidemark.query.values import MISSING, sort_key

VALUES = st.one_of(st.none(), st.just(MISSING), st.integers(-3, 3), st.floats(-3, 3, allow_nan=False),
                   st.text(max_size=40), st.lists(st.integers(0, 3), max_size=3))
FEED = st.lists(VALUES, max_size=60)


def fed(name: str, n: int, values: list, chunks: int):
    acc = parse_accumulator(name, {"n": n, "input": "$x"}).new()
    step = max(1, len(values) // chunks)
    for start in range(0, len(values), step):  # (as $group feeds it: a chunk at a time)
        acc.process_many(values[start:start + step])
    return acc


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["$minN", "$maxN", "$firstN", "$lastN"]), n=st.integers(1, 8), values=FEED,
       chunks=st.integers(1, 5))
def test_an_n_accumulator_counts_the_values_it_keeps(name, n, values, chunks):
    acc = fed(name, n, values, chunks)
    result = acc.result()
    assert acc.memory() == sum(map(value_size, result))
    present = [v for v in values if v is not None and v is not MISSING]
    if name == "$firstN":
        assert result == [None if v is MISSING else v for v in values[:n]]
    elif name == "$lastN":
        assert result == [None if v is MISSING else v for v in values[-n:]]
    else:  # stable: equal values keep their input order
        assert result == sorted(present, key=sort_key, reverse=name == "$maxN")[:n]


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["$top", "$bottom", "$topN", "$bottomN"]), n=st.integers(1, 8),
       keys=st.lists(st.integers(-3, 3), max_size=60), direction=st.sampled_from([1, -1]))
def test_a_top_or_bottom_counts_the_outputs_it_keeps_and_their_keys(name, n, keys, direction):
    spec = {"sortBy": {"k": direction}, "output": "$o"} | ({} if name in ("$top", "$bottom") else {"n": n})
    parsed = parse_accumulator(name, spec)
    acc = parsed.new()
    docs = [{"k": k, "o": "x" * i} for i, k in enumerate(keys)]
    acc.process_many([parsed.evaluate(d, {}) for d in docs])
    kept = 1 if name in ("$top", "$bottom") else n
    # the stable sort order, earlier documents first among equal keys; $bottom* keep its tail
    if name.startswith("$bottom"):
        chosen = sorted(docs, key=lambda d: (direction * d["k"], -docs.index(d)))[-kept:]
    else:
        chosen = sorted(docs, key=lambda d: direction * d["k"])[:kept]
    result = acc.result()
    outs = [d["o"] for d in chosen]
    if name in ("$top", "$bottom"):
        assert result == (outs[0] if outs else None)
    else:
        assert result == outs
    key_sizes = sum(approx_size(parsed.evaluate(d, {})[0]) for d in chosen)
    assert acc.memory() == sum(value_size(o) for o in outs) + key_sizes
