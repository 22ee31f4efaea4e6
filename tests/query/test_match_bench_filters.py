"""The filters timed by bench/filter_rate.py select exactly what plain Python says they should."""

from bench.filter_rate import FILTERS, make_docs, reference_count
from tidemark.query.match import compile_filter


def test_bench_filters_count_like_plain_python():
    docs = make_docs(3000, seed=7)
    for name, flt in FILTERS.items():
        pred = compile_filter(flt)
        assert sum(1 for d in docs if pred(d)) == reference_count(name, docs), name
