"""Unpacking a bucket counts each column as a unit of interruptible work.

mongod reads a bucket in C++ and yields between documents; a measurement may hold hundreds of thousands
of fields (up to the 16 MB bucket), so here the columns of one bucket are where the time goes. Before,
unpacking checked nothing until the document was made: a find of one measurement of 400,000 fields,
judged cheap (one bucket, one row) and run inline on the event loop, held the loop 8 s (every other
client's ping waited), and killOp/maxTimeMS could not stop it. Now each column taken ticks
``interrupt.tick``, so an inline run past its budget moves to the pool at its next check and killOp,
maxTimeMS and shutdown reach it, for a bucket in memory and a stored one (stored buckets are v1: `bucket_compression.stored_bucket`).
"""

from __future__ import annotations

import datetime as dt
import functools

import pytest
from harness.timeseries import Engine, document
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query import interrupt
from tidemark.timeseries.bucketview import LiveBucket
from tidemark.timeseries.stored import document_bucket


class _Counting:
    """An operation that counts its real checks (and can stop the work at the k-th)."""

    def __init__(self, stop_at: int | None = None):
        self.ticks = interrupt.TICKS_PER_CHECK
        self.checks = 0
        self.stop_at = stop_at

    def check(self) -> None:
        self.checks += 1
        if self.stop_at is not None and self.checks >= self.stop_at:
            raise KeyboardInterrupt("stopped")  # (any exception: what killOp raises is the server's)


def _wide_bucket(fields: int):
    engine = Engine(params={"timeseriesBucketMaxSize": 64 << 20})
    row = {"t": dt.datetime(2024, 1, 1), "m": "a", **{f"f{i}": (i if i % 3 else f"s{i}") for i in range(fields)}}
    bucket = engine.put(row)
    engine.commit_all()
    return bucket


def _forms(bucket):
    stored = document(bucket)
    yield "in memory", LiveBucket(bucket)
    yield "stored", document_bucket(stored)


@settings(max_examples=12, deadline=None)
@given(fields=st.integers(min_value=0, max_value=3000))
def test_unpacking_checks_once_per_ticks_worth_of_columns(fields):
    bucket = _wide_bucket(fields)
    for form, view in _forms(bucket):
        op = _Counting()
        rows = interrupt.running(op, functools.partial(view.unpack, time_field="t", meta_field="m"))
        assert rows.count == 1, form
        assert op.checks >= (fields + 2) // interrupt.TICKS_PER_CHECK, (form, fields, op.checks)


@pytest.mark.parametrize("form", ["in memory", "stored"])
def test_a_check_stops_the_unpacking_of_a_wide_bucket_midway(form):
    bucket = _wide_bucket(20_000)
    view = dict(_forms(bucket))[form]
    op = _Counting(stop_at=3)
    with pytest.raises(KeyboardInterrupt):
        interrupt.running(op, lambda: view.unpack(time_field="t", meta_field="m"))
    assert op.checks == 3  # stopped at the third check, long before the 20,000 columns' 78
