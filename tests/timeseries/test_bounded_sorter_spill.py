"""The bounded sorter itself (``server/timeseries/time_sort.BoundedSort``, pure): buckets offered in start
order as their BSON rows, each release before a bucket's edge, the rest at the end — under a sort memory
limit from far below one bucket to far above all of them, with allowDiskUse (the held measurements spill,
as mongod 7.0's BoundedSorter spills its heap, and releases merge the runs with what is held) or without
(292 with the sorter's message once the held measurements' BSON passes the limit). The answer is every
measurement sorted by (time, bucket ``_id``, row) — the generic stable sort over the collection scan —
both ways, with and without a skip and limit, and the held bytes are never more than the limit after an
offer."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.objectid import ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.protocol.codec import EncodedRun, decode, encode_in_order
from tidemark.protocol.errors import MongoError
from tidemark.query import spill
from tidemark.timeseries import time_sort
from tidemark.timeseries.time_sort import BoundedSort, TimeSortShape

T0 = dt.datetime(2024, 5, 1)
SPAN = 60

bucket = st.tuples(st.integers(0, 20),  # start, in spans: buckets of one start overlap entirely
                   st.lists(st.integers(0, SPAN * 1000 - 1).map(lambda ms: ms - ms % 250), min_size=1,
                            max_size=30))


def _run(start_s: int, offsets: list[int], oid: ObjectId) -> tuple[dict, EncodedRun, list[dict]]:
    docs = [{"t": T0 + dt.timedelta(seconds=start_s, milliseconds=ms), "b": str(oid), "row": i,
             "pad": "p" * (i % 7)} for i, ms in enumerate(offsets)]
    times = [d["t"] for d in docs]
    summary = {"_id": oid, "control": {"min": {"t": min(times)}, "max": {"t": max(times)}}}
    return summary, EncodedRun([encode_in_order(d) for d in docs]), docs


def _sorted(buckets: list, descending: bool, skip: int, limit: int | None, memory: int, disk: bool) -> list[dict]:
    shape = TimeSortShape(descending, skip, limit, 1)
    sorter = BoundedSort(shape, "t", SPAN, memory_limit=memory, allow_disk_use=disk)
    out: list[bytes] = []
    try:
        for summary, run, _ in buckets:
            edge = sorter.edge(sorter.control_ms(summary, "min"), "min")
            for stretch in sorter.release(edge):
                out += stretch
            if sorter.finished:
                break
            sorter.offer_bucket(summary, [run])
            assert disk or sorter.used <= memory
        else:
            for stretch in sorter.release(None):
                out += stretch
    finally:
        sorter.close()
    return [decode(d) for d in out]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=st.lists(bucket, min_size=1, max_size=25), descending=st.booleans(),
       memory=st.sampled_from([1, 300, 2000, 10_000, 10 ** 9]),
       stretch=st.sampled_from([1, 3, 1024]), skip=st.sampled_from([0, 0, 5]),
       limit=st.sampled_from([None, None, 1, 17]), disk=st.booleans())
def test_the_bounded_sorter_answers_the_stable_sort_spilled_or_not(monkeypatch, shapes, descending, memory, stretch,
                                                                   skip, limit, disk):
    monkeypatch.setattr(time_sort, "STRETCH", stretch)  # (releases handed on in stretches of 1, 3, ...)
    buckets = []
    for i, (start, offsets) in enumerate(shapes):
        oid = ObjectId((start * SPAN).to_bytes(4, "big") + i.to_bytes(8, "big"))
        buckets.append(_run(start * SPAN, offsets, oid))
    # the read's order: ascending by start (then _id); descending newest start first, as scan.newest_first
    # the read's order: by start, ascending; descending, newest start first (scan.newest_first)
    buckets.sort(key=lambda b: (-1 if descending else 1) * b[0]["control"]["min"]["t"].timestamp())
    scan = sorted(buckets, key=lambda b: b[0]["_id"])
    everything = [d for _, _, docs in scan for d in docs]
    expected = sorted(everything, key=lambda d: d["t"], reverse=descending)  # stable: ties in scan order
    end = None if limit is None else skip + limit
    try:
        got = _sorted(buckets, descending, skip, limit, memory, disk)
    except MongoError as e:
        assert not disk
        assert e.code == 292
        assert str(e) == f"Sort exceeded memory limit of {memory} bytes, but did not opt in to external sorting."
        return
    assert got == expected[skip:end]


def test_a_spilled_run_gives_back_its_documents_bytes():
    docs = [{"a": i, "s": "x" * i} for i in range(50)]
    encoded = [encode_in_order(d) for d in docs]
    run = spill.write_run(encoded[:25] + docs[25:])  # (bytes as they are, dicts encoded)
    assert list(spill.records(run)) == encoded
    with pytest.raises(ValueError):
        run.read()  # closed once read
