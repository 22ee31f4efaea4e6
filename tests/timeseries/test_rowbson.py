"""The rows a read takes of one bucket (rowfilter.accepted over rowbson.Unpacked): a cursor's rows (``raw``)
come as ONE ``EncodedRun`` per bucket — no Python object per row — whose documents are byte for byte
``encode_in_order`` of the measurements the dict path gives for the same read, with their sizes; and the
dict path gives exactly ``bucketdoc.unpack_document``'s measurements the event filter accepts. Buckets of
every column form (typed columns of each fixed-width type, NaN and -0.0 included, a constant string, a
varying string, a sparse column, a meta or none), read through the stored view's unpack (typed columns
given whole, the rows taken as they are made) with a column filter that decides all of the filter, part
of it, or none."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
from bson import Int64, ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.codec import EncodedRun, encode_in_order
from tidemark.query.match import compile_node, parse_filter
from tidemark.timeseries import rowfilter
from tidemark.timeseries.bucketdoc import POS_KEYS, unpack_document
from tidemark.timeseries.stored import document_bucket

T0 = dt.datetime(2024, 3, 1)
DOUBLES = st.sampled_from([-0.0, 0.0, 1.5, 90.0, 95.5, 120.25, math.inf, -math.inf, math.nan])
FILTERS = [
    {"d": {"$gt": 90.0}},  # decided on the columns: the event filter does not run
    {"d": {"$gt": 90.0}, "t": {"$gte": T0 + dt.timedelta(seconds=3)}},
    {"i": {"$lt": 5}, "s": "cpu"},  # a string conjunct: the event filter runs on the rows kept
    {"d": {"$gte": 1.5}, "x": {"$exists": True}},
    {"b": True},  # not a term: no column filter
    {"o": {"$gt": ObjectId(b"\x01" * 12)}},
]


@st.composite
def buckets(draw):
    n = draw(st.integers(1, 40))
    keys = POS_KEYS[:n]
    data = {"t": {k: T0 + dt.timedelta(seconds=i) for i, k in enumerate(keys)}}
    columns = {
        "d": st.lists(DOUBLES, min_size=n, max_size=n),
        "i": st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n),
        "l": st.lists(st.integers(-(2**63), 2**63 - 1).map(Int64), min_size=n, max_size=n),
        "b": st.lists(st.booleans(), min_size=n, max_size=n),
        "o": st.lists(st.sampled_from([ObjectId(bytes([i]) * 12) for i in range(3)]), min_size=n, max_size=n),
        "u": st.lists(st.sampled_from([T0, dt.datetime(1960, 5, 5, 0, 0, 0, 123000)]), min_size=n, max_size=n),
        "s": st.just(["cpu"] * n),
        "v": st.lists(st.sampled_from(["", "x", "héllo"]), min_size=n, max_size=n),
    }
    for name in draw(st.permutations(list(columns))):
        if draw(st.booleans()) or name in ("d", "i"):
            data[name] = dict(zip(keys, draw(columns[name]), strict=True))
    if draw(st.booleans()):  # a sparse column
        present = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        data["x"] = {k: float(i) for i, (k, here) in enumerate(zip(keys, present, strict=True)) if here}
    doc = {"_id": ObjectId(), "control": {"version": 1, "min": {"t": T0}, "max": {"t": data["t"][keys[-1]]}}}
    meta = draw(st.sampled_from(["missing", {"h": "a", "r": 7}, "scalar"]))
    if meta != "missing":
        doc["meta"] = meta
    doc["data"] = data
    return doc


def _info():
    return {"measurementsSkipped": 0, "measurementsUnpacked": 0, "measurementsReturned": 0}


@settings(max_examples=200, deadline=None)
@given(doc=buckets(), flt=st.sampled_from(FILTERS))
def test_a_buckets_raw_rows_are_one_run_of_exactly_its_measurements_bytes(doc, flt):
    node = parse_filter(flt)
    predicate = compile_node(node)
    column_filter = rowfilter.plan(node, "t", "m")
    expected = [m for m in unpack_document(doc, "t", "m") if predicate(m)]

    measurements = list(rowfilter.accepted(document_bucket(doc), None, predicate, column_filter, _info(), "t", "m"))
    expected_bson = [encode_in_order(m) for m in expected]  # (bytes: NaN equals itself, field order counts)
    assert [encode_in_order(m) for m in measurements] == expected_bson

    info = _info()
    raw = list(rowfilter.accepted(document_bucket(doc), None, predicate, column_filter, info, "t", "m", raw=True))
    assert len(raw) == (1 if expected else 0)
    assert all(type(run) is EncodedRun for run in raw)
    docs = raw[0].docs if raw else []
    assert docs == expected_bson  # byte for byte (NaN payloads, -0.0, types)
    if raw and raw[0].sizes is not None:
        assert raw[0].sizes.tolist() == [len(d) for d in docs]
    assert info["measurementsReturned"] == len(expected)


def test_a_bool_column_writes_each_row_as_0_or_1_whatever_byte_holds_it():
    from tidemark.timeseries.columns import BOOL
    from tidemark.timeseries.rowbson import Unpacked

    held = np.frombuffer(bytes([0, 1, 2, 255]), np.uint8).view(np.bool_)
    for positions in (None, np.array([1, 2, 3])):
        rows = Unpacked(4 if positions is None else 3, positions)
        rows.typed("b", BOOL, held)
        values = [False, True, True, True][0 if positions is None else 1:]
        assert rows.documents().docs == [encode_in_order({"b": v}) for v in values]


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 60), max_size=12), sized=st.lists(st.booleans(), min_size=12, max_size=12),
       least=st.integers(1, 120))
def test_runs_are_joined_in_order_into_runs_of_at_least_the_least_documents(lengths, sized, least):
    runs, every = [], []
    for r, count in enumerate(lengths):
        docs = [encode_in_order({"r": r, "i": i, "p": "x" * (i % 5)}) for i in range(count)]
        every += docs
        runs.append(EncodedRun(docs, np.fromiter(map(len, docs), np.int64, count) if sized[r] else None))
    out = list(rowfilter.joined(iter(runs), least))
    assert [d for run in out for d in run.docs] == every
    assert all(len(run.docs) >= least for run in out[:-1]) and all(run.docs for run in out)
    assert all(run.sizes.tolist() == [len(d) for d in run.docs] for run in out)


def test_a_long_buckets_rows_are_cut_into_exactly_their_documents():
    """Rows are cut apart a piece of ``_CUT_ROWS`` at a time: every piece boundary keeps each document whole."""
    from tidemark.timeseries.columns import DATE, DOUBLE
    from tidemark.timeseries.rowbson import Unpacked

    n = 1300
    times = np.arange(n, dtype=np.int64) * 1000 + 1_700_000_000_000
    values = np.linspace(-5.0, 5.0, n)
    for positions in (None, np.arange(0, n, 2), np.arange(3, 1100)):
        rows = Unpacked(n if positions is None else len(positions), positions)
        rows.typed("t", DATE, times)
        rows.constant("m", {"h": "a"})
        rows.typed("v", DOUBLE, values)
        taken = range(n) if positions is None else positions.tolist()
        docs = rows.documents().docs
        assert len(docs) == len(taken)
        assert [m["v"] for m in map(_decoded, docs)] == [float(values[i]) for i in taken]
        assert docs == [encode_in_order(m) for m in rows.dicts()]


def _decoded(raw):
    from tidemark.protocol.codec import decode

    return decode(raw)
