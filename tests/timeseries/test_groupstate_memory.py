"""The columnar ``$group``'s state holds memory in proportion to its groups, never to the series or runs it
read: a grouping of very many series into few groups (``$dateTrunc`` by day over a million hosts) keeps,
once a batch is fed, only the metas its groups need (``groupbatch._Batch._compact``), one run token per
group (``DenseGroups._slot_tokens``), and caches by run token cut back past twice the groups
(``TOKENS_SLACK``); the generic ``$group`` holds nothing per series either
(``document_source_group.cpp``: its memory is its groups').

Measured over the state object itself (tracemalloc, what the batch holds once flushed), for each way the
groups are held: NumPy totals matched as arrays (every ``_id`` a template), by the dicts (a ``_id``
without a template), and generic accumulators (a ``$sum`` of a constant); with a ``_id`` that reads a
meta path and one that reads none. The answers are those of a plain Python grouping of the same rows."""

from __future__ import annotations

import gc
import tracemalloc

import bson
import numpy as np
import pytest

from tidemark.query.pipeline import PipelineContext
from tidemark.timeseries import columnar
from tidemark.timeseries.groupbatch import METAS_SLACK, _Batch

DAY = 86_400_000
DAYS = 4  # truncated times
GROUPS_OF_META = 3  # values of m.g
SHAPES = {
    # every _id a template, read no meta: one meta stands for all (``_run_slots``)
    "day": ({"$dateTrunc": {"date": "$t", "unit": "day"}}, {"n": {"$count": {}}, "s": {"$sum": "$v"}}),
    # a template per meta, few distinct parts
    "day-g": ({"d": {"$dateTrunc": {"date": "$t", "unit": "day"}}, "g": "$m.g"},
              {"n": {"$count": {}}, "mx": {"$max": "$v"}}),
    # no template (a time part inside a sub-document): the dicts, ``_loop``
    "nested": ({"a": {"d": {"$dateTrunc": {"date": "$t", "unit": "day"}}}, "g": "$m.g"},
               {"n": {"$count": {}}, "s": {"$sum": "$v"}}),
    # a constant $sum: generic accumulators (no NumPy totals)
    "generic": ({"d": {"$dateTrunc": {"date": "$t", "unit": "day"}}, "g": "$m.g"},
                {"one": {"$sum": 1}, "s": {"$sum": "$v"}}),
}


def _info():
    return {"measurementsUnpacked": 0, "measurementsReturned": 0, "bucketsUnpacked": 0}


def _feed(batch, first, last, per_flush):
    """Series ``first`` .. ``last - 1``, a bucket of 2 rows each (one run), flushed every ``per_flush``."""
    for i in range(first, last):
        meta = {"id": i, "g": i % GROUPS_OF_META}
        t0 = (i % DAYS) * DAY + (i % 1000) * 1000
        times = np.array([t0, t0 + 1], dtype=np.int64)
        arrays = {"v": np.array([float(i % 7), 1.0])}
        batch.add((times, arrays, None, None, bson.encode({"m": meta}), meta, None, None))
        if (i + 1) % per_flush == 0:
            batch.flush()
    batch.flush()


def _expected(id_spec, n):
    groups: dict = {}
    for i in range(n):
        day, g = i % DAYS, i % GROUPS_OF_META
        key = day if "$dateTrunc" in id_spec else (day, g)
        groups.setdefault(key, []).extend([float(i % 7), 1.0])
    return groups


def _held(shape, series, per_flush):
    """(bytes the batch holds once every series is fed, its results)."""
    id_spec, accumulators = SHAPES[shape]
    plan = columnar.plan(None, [{"$group": {"_id": id_spec, **accumulators}}], "t", "m")
    assert plan is not None
    gc.collect()
    tracemalloc.start()
    try:
        batch = _Batch(plan, PipelineContext(), _info())
        _feed(batch, 0, series, per_flush)
        gc.collect()
        with_batch = tracemalloc.get_traced_memory()[0]
        results = list(batch.results())
        del batch
        gc.collect()
        held = with_batch - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return held, results


HELD_BOUND = 768 * 1024  # ~METAS_SLACK + a batch's metas (~300 bytes each: a meta, its token, index)


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_state_of_few_groups_over_many_series_is_bounded(shape):
    """Whatever the series (and runs), the same 4-12 groups: what the state holds stays under one bound
    (it grew by ~250-600 bytes a series: a meta, its token and template, 24 bytes a run)."""
    for series in (2 * METAS_SLACK, 8 * METAS_SLACK):
        held, results = _held(shape, series, 256)
        assert held < HELD_BOUND, (series, held)
    id_spec = SHAPES[shape][0]
    want = _expected(id_spec, series)
    assert len(results) == len(want)
    for doc in results:
        idv = doc["_id"]
        if shape == "day":
            key = int((idv - columnar._EPOCH).total_seconds() * 1000) // DAY
        else:
            day = idv["a"]["d"] if shape == "nested" else idv["d"]
            key = (int((day - columnar._EPOCH).total_seconds() * 1000) // DAY, idv["g"])
        values = want[key]
        if "n" in doc:
            assert doc["n"] == len(values)
        if "one" in doc:
            assert doc["one"] == len(values)
        if "s" in doc:
            assert doc["s"] == sum(values)
        if "mx" in doc:
            assert doc["mx"] == max(values)
