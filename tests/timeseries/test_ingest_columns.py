"""Column-wise ingest (rawbatch -> ColumnBatch -> router's vectorized path) builds exactly the buckets,
sizes and statistics of inserting the same measurements one by one through the per-document parse."""

import datetime as dt
import random

import bson
import numpy as np
import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from harness.timeseries import Engine, document
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.storage import bucket_codec
from tidemark.timeseries import journal, rawbatch
from tidemark.timeseries.bucket import full_documents
from tidemark.timeseries.bucketdoc import date_ms
from tidemark.timeseries.columns import constant_bson
from tidemark.timeseries.states import State

T0 = dt.datetime(2021, 5, 18, 20, 0, 0)


def _engine(meta_field="m", **limits):
    params = {{"max_count": "timeseriesBucketMaxCount", "max_size": "timeseriesBucketMaxSize"}[k]: v
              for k, v in limits.items()}
    return Engine(params=params, metaField=meta_field)


def _raw(docs):
    encoded = [bson.encode(d, codec_options=CODEC_OPTIONS) for d in docs]
    offsets, pos = [], 0
    for e in encoded:
        offsets.append(pos)
        pos += len(e)
    return b"".join(encoded), np.asarray(offsets, np.int64)


def _contents(engine):
    out = []
    for bucket in engine.buckets():
        doc = document(bucket)
        out.append(repr((bucket.size, bucket.count, doc["control"], doc.get("meta"), doc["data"])))
    return sorted(out)


def _one_by_one(batches, meta_field="m", **limits):
    engine = _engine(meta_field, **limits)
    for batch in batches:
        for doc in batch:
            engine.put_many([doc])
    return engine


def _column_wise(batches, meta_field="m", expect_columnar=True, **limits):
    engine = _engine(meta_field, **limits)
    columnar = 0
    for batch in batches:
        columnar += engine.put_raw(batch)
    assert not expect_columnar or columnar == len(batches)
    return engine


def _tsbs(seed, series=30, ticks=400, jitter=False, shuffle=False, per_batch=None):
    rng = random.Random(seed)
    rows = []
    values = {h: [rng.randrange(100) for _ in range(4)] for h in range(series)}
    for tick in range(ticks):
        for host in range(series):
            v = values[host]
            for k in range(4):
                v[k] = min(100, max(0, v[k] + rng.choice((-1, 0, 1))))
            t = T0 + dt.timedelta(seconds=10 * tick, milliseconds=host if jitter else 0)
            rows.append({"_id": ObjectId(), "measurement": "cpu", "t": t, "a": float(v[0]), "b": float(v[1]),
                         "c": float(v[2]), "d": float(v[3]),
                         "m": {"host": f"h{host}", "rack": str(host % 7), "zone": "z"}})
    size = per_batch or series * 10
    batches = [rows[i:i + size] for i in range(0, len(rows), size)]
    if shuffle:  # neighbouring batches swapped: time goes backward across bucket boundaries
        for i in range(0, len(batches) - 1, 3):
            batches[i], batches[i + 1] = batches[i + 1], batches[i]
    return batches


def _same(batches, meta_field="m", expect_columnar=True, **limits):
    one = _one_by_one(batches, meta_field, **limits)
    many = _column_wise(batches, meta_field, expect_columnar, **limits)
    assert many.stats == one.stats
    assert _contents(many) == _contents(one)
    assert not expect_columnar or any(b.pure for b in many.buckets())
    return one.state, many.state


@pytest.mark.slow
def test_tsbs_shaped_batches_build_the_buckets_of_one_by_one_inserts():
    state, _ = _same(_tsbs(1))
    assert state.stats["numBucketsArchivedDueToTimeForward"] > 0


@pytest.mark.slow
def test_one_measurement_per_series_per_batch_and_time_jitter():
    _same(_tsbs(2, series=50, ticks=200, jitter=True, per_batch=50))


@pytest.mark.slow
def test_batches_out_of_order_archive_and_reopen_like_the_general_path():
    state, _ = _same(_tsbs(3, series=10, ticks=1200, per_batch=70, shuffle=True))
    assert state.stats["numBucketsArchivedDueToTimeBackward"] > 0
    assert state.stats["numBucketsReopened"] > 0


def test_count_and_size_limits_close_buckets_at_the_same_measurement():
    state, _ = _same(_tsbs(4, series=5, ticks=700, per_batch=37), max_count=100)
    assert state.stats["numBucketsClosedDueToCount"] > 0
    state, _ = _same(_tsbs(5, series=5, ticks=300, per_batch=23), max_size=9000)
    assert state.stats["numBucketsClosedDueToSize"] > 0


def test_large_measurements_keep_a_young_bucket_open():
    rows = [{"_id": ObjectId(), "t": T0 + dt.timedelta(seconds=i), "m": "x", "s": "y" * 3000, "v": float(i)}
            for i in range(60)]
    state, _ = _same([rows[i:i + 7] for i in range(0, 60, 7)], max_size=10_000)
    assert state.stats["numBucketsKeptOpenDueToLargeMeasurements"] > 0
    assert state.stats["numBucketsClosedDueToSize"] > 0


def test_layout_changes_convert_buckets_and_keep_the_general_path_results():
    rng = random.Random(6)
    batches = []
    for tick in range(60):
        batch = []
        for host in range(8):
            doc = {"_id": ObjectId(), "t": T0 + dt.timedelta(seconds=tick), "m": {"h": host}, "v": float(tick)}
            batch.append(doc)
        if tick % 10 == 3:  # one batch of another layout (an int among the doubles: same type class)
            for doc in batch:
                doc["v"] = int(doc["v"])
        if tick % 10 == 7:  # a new field, and a schema change for one series
            for doc in batch:
                doc["w"] = "new"
            batch[0]["v"] = "text"
        rng.shuffle(batch)
        batches.append(batch)
    _same(batches, expect_columnar=False)


def test_value_types_nan_signed_zeros_and_every_meta_kind():
    rng = random.Random(7)
    specials = [float("nan"), -0.0, 0.0, 1.5, -2.25, float("inf"), float("-inf")]
    for meta in ({"k": 1, "a": [1, 2]}, "plain", 42, Int64(7), 2.5, True, None, ObjectId(), [1, "x"], "MISSING"):
        batches = []
        for tick in range(12):
            batch = []
            for i in range(9):
                doc = {"t": T0 + dt.timedelta(seconds=tick * 9 + i), "_id": ObjectId(), "f": rng.choice(specials),
                       "i": rng.randrange(-5, 5), "l": Int64(rng.randrange(1 << 40)), "b": rng.random() < 0.5,
                       "d": T0 - dt.timedelta(days=rng.randrange(40000)), "o": ObjectId(), "n": None,
                       "s": "const"}
                if meta != "MISSING":
                    doc["m"] = meta
                batch.append(doc)
            batches.append(batch)
        _same(batches)


def test_collections_without_meta_field():
    batches = [[{"t": T0 + dt.timedelta(seconds=tick * 5 + i), "_id": ObjectId(), "v": float(i)} for i in range(5)]
               for tick in range(300)]
    _same(batches, meta_field=None)


def test_measurements_without_id_get_consecutive_object_ids_first():
    batches = [[{"t": T0 + dt.timedelta(seconds=tick), "m": h, "v": float(tick)} for h in range(4)]
               for tick in range(20)]
    engine = _column_wise(batches)
    docs = engine.documents()
    assert all(list(d["data"]) == ["t", "_id", "v"] for d in docs)
    ids = [oid for d in docs for oid in d["data"]["_id"].values()]
    assert len(set(ids)) == 80 and all(type(oid) is ObjectId for oid in ids)
    assert all(d["control"]["min"]["_id"] == min(d["data"]["_id"].values()) for d in docs)


def test_document_bytes_equal_the_encoded_per_document_path_document():
    batches = _tsbs(8, series=4, ticks=50)
    one = _one_by_one(batches)
    many = _column_wise(batches)
    by_id = {}
    for bucket in one.buckets():
        by_id[(bucket.start_s, repr(bucket.meta))] = bson.encode(document(bucket), codec_options=CODEC_OPTIONS)
    for bucket in many.buckets():
        raw = bucket.document_parts(bucket.count).bson()
        expected = by_id[(bucket.start_s, repr(bucket.meta))]
        # bucket ids differ (random): everything but the leading _id element is byte-identical
        assert raw[:4] == expected[:4] and raw[21:] == expected[21:]


@pytest.mark.parametrize("docs", [
    [{"t": T0, "v": 1.0}, {"t": T0, "v": 2}],  # a type differs
    [{"t": T0, "v": 1.0}, {"v": 1.0, "t": T0}],  # order differs
    [{"t": T0, "v": 1.0, "s": "a"}, {"t": T0, "v": 1.0, "s": "b"}],  # a string differs
    [{"t": T0, "v": 1.0}, {"t": T0, "v": 1.0, "w": 1}],  # a field more
    [{"t": T0, "m": {"a": 1}}, {"t": T0, "m": "x"}],  # meta type differs
    [{"t": "not a date", "v": 1.0}],
    [{"v": 1.0}],
    [{"t": T0, "x": {"sub": 1}}],  # an object outside the meta field
    [{"t": T0, "x": [1, 2]}],
])
def test_batches_without_one_layout_are_refused(docs):
    buffer, offsets = _raw(docs)
    assert rawbatch.parse(buffer, offsets, "t", "m") is None


def test_parse_reads_values_like_bson_decode():
    docs = [{"_id": ObjectId(), "a": float(i) / 3, "t": T0 + dt.timedelta(milliseconds=i * 7), "m": {"x": "y" * i},
             "i": -i, "l": Int64(i << 33), "b": i % 2 == 0, "z": None, "s": "ü"} for i in range(50)]
    buffer, offsets = _raw(docs)
    batch = rawbatch.parse(buffer, offsets, "t", "m")
    assert batch is not None and batch.n == 50
    assert batch.columns["a"].tolist() == [d["a"] for d in docs]
    assert batch.times.tolist() == [date_ms(d["t"]) for d in docs]
    assert batch.columns["i"].tolist() == [d["i"] for d in docs]
    assert batch.columns["l"].tolist() == [int(d["l"]) for d in docs]
    assert batch.columns["b"].tolist() == [d["b"] for d in docs]
    assert [bytes(v) for v in batch.columns["_id"]] == [d["_id"].binary for d in docs]
    assert batch.layout.constants == {"z": None, "s": "ü"}
    assert batch.metas is not None and batch.meta_index is not None
    assert [batch.metas[i] for i in batch.meta_index] == [bson.encode(d["m"]) for d in docs]
    assert batch.metas == list(dict.fromkeys(bson.encode(d["m"]) for d in docs))


def test_a_bool_byte_other_than_0_or_1_is_refused():
    buffer, offsets = _raw([{"t": T0, "b": True}, {"t": T0, "b": False}])
    assert rawbatch.parse(buffer, offsets, "t", None) is not None
    corrupt = bytearray(buffer)
    corrupt[buffer.rfind(b"\x08b\x00") + 3] = 7  # the second document's bool value
    assert rawbatch.parse(bytes(corrupt), offsets, "t", None) is None


def test_invalid_meta_bson_makes_the_batch_take_the_per_document_parse():
    buffer, offsets = _raw([{"t": T0, "m": {"a": "x"}, "v": 1.0}])
    position = buffer.find(b"\x02a\x00") + 3  # the string's length prefix inside the meta document
    corrupt = bytearray(buffer)
    corrupt[position] = 99
    engine = _engine()
    batch = rawbatch.parse(bytes(corrupt), offsets, "t", "m")
    assert batch is not None  # the skeleton matches: the meta's inside is checked by its decode
    assert engine.state.series.sids_of_raw(batch.layout.meta_kind, batch.metas, batch.n) is None
    assert not engine.state.live


def test_column_bson_is_the_bson_of_a_dense_column():
    for values, kind in ((np.array([1.5, -0.0, float("nan")]), 0x01), (np.arange(12, dtype="<i8"), 0x12),
                         (np.array([True, False]), 0x08), (np.arange(1500, dtype="<i4"), 0x10)):
        expected = bson.encode({str(i): (v.item() if kind != 0x12 else Int64(v)) for i, v in enumerate(values)})
        assert bucket_codec.dense_column(kind, values) == expected


def test_journal_records_round_trip_the_rows_of_every_bucket():
    batches = _tsbs(9, series=6, ticks=30)
    engine = _column_wise(batches)
    table = next(iter(engine.state.tables.values()))
    buckets = [b for b in engine.buckets() if b.pure]
    slots = np.array([b.slot for b in buckets])
    lo = np.array([1 if i % 2 else 0 for i in range(len(buckets))])
    hi = table.count[slots].copy()
    segment = journal.Segment.of_table(table, buckets, slots, lo, hi)
    header, entries = journal.parse(segment.encode(engine.state.ns, "t", "m"))
    assert header["ns"] == engine.state.ns and header["fields"] == list(table.order)
    for bucket, (bucket_id, start, stop, new, rows), first in zip(buckets, entries, lo, strict=True):
        assert bucket_id == bucket.id and (start, stop) == (first, bucket.count)
        assert (new is not None) == (first == 0)
        if new is not None:
            assert new["start"] == bucket.start_s and new["meta"] == bucket.meta
        assert rows == bucket.rows(bucket.count)[first:]


def test_journal_records_carry_object_columns_and_missing_values():
    engine = _engine()
    bucket = None
    for i in range(6):
        row = {"t": T0 + dt.timedelta(seconds=i), "m": "s", "v": float(i)}
        if i % 2:
            row["o"] = {"k": [i, "x"]}
        if i == 4:
            del row["v"]
        bucket = engine.put(row)
    assert not bucket.pure
    segment = journal.Segment.of_bucket(bucket, 2, bucket.count)
    _, ((bucket_id, start, stop, new, rows),) = journal.parse(segment.encode(engine.state.ns, "t", "m"))
    assert (bucket_id, start, stop, new) == (bucket.id, 2, 6, None)
    assert rows == bucket.rows(6)[2:]
    assert "v" not in rows[2] and rows[1]["o"] == {"k": [3, "x"]}


def test_a_journal_record_is_trimmable_once_every_bucket_in_it_is_stored():
    class B:
        def __init__(self):
            self.stored_count = 0
            self.state = State.OPEN

    a, b, c = B(), B(), B()
    log = journal.CommitLog("db.system.buckets.c")
    log.add(11, [a, b], [5, 3])
    log.add(12, [b, c], [6, 2])
    assert log.trimmable() is None
    a.stored_count = 5
    assert log.trimmable() is None
    b.stored_count = 3
    assert log.trimmable() == (11, 1)  # the second still needs b's rows 3..6 and c's
    assert len(log.records) == 2  # nothing forgotten until the trim's commit succeeded
    c.state = State.FROZEN  # a dropped bucket: nothing of it is ever replayed
    b.stored_count = 6
    assert log.trimmable() == (12, 2)
    log.trimmed(2)
    assert not log.records


def test_memory_threshold_closes_idle_column_wise_buckets_least_recently_used_first():
    engine = Engine(memory_threshold=60_000)
    for series in range(40):
        batch = [{"_id": ObjectId(), "t": T0 + dt.timedelta(seconds=i), "m": series, "v": float(i)} for i in range(5)]
        assert engine.put_raw(batch)
        engine.commit_all()  # as a commit would: rows durable, nothing pending
    closed = engine.stats["numBucketsClosedDueToMemoryThreshold"]
    opened = [b for b in engine.buckets() if b.state is State.OPEN]
    assert closed > 0 and len(opened) == 40 - closed
    assert sorted(b.meta for b in opened) == list(range(closed, 40))  # least recently used first
    assert all(b.needs_full for b in engine.buckets() if b.state is State.CLOSED)


def test_codec_form_built_from_columns_equals_encoding_the_document():

    rng = random.Random(10)
    specials = [float("nan"), -0.0, 0.0, 1.5, -2.25, float("inf"), 3.0, 1e300]
    batches = []
    for tick in range(40):
        batch = []
        for host in range(6):
            batch.append({"t": T0 + dt.timedelta(seconds=tick * 7 + host), "m": {"h": host}, "f": rng.choice(specials),
                          "g": float(rng.randrange(100)), "i": rng.randrange(-9, 9), "l": Int64(rng.randrange(1 << 50)),
                          "b": rng.random() < 0.5, "d": T0 - dt.timedelta(days=rng.randrange(30000)),
                          "o": ObjectId(), "n": None, "s": "text"})
        batches.append(batch)
    engine = _column_wise(batches)
    checked = 0
    for bucket in engine.buckets():
        parts = bucket.document_parts(bucket.count)
        raw = parts.bson()
        control = bson.decode(raw, codec_options=CODEC_OPTIONS)["control"]
        assert bson.encode(control) == bson.encode(parts.summary["control"])
        assert parts.codec_form()() == bucket_codec.encode(raw) is not None
        checked += 1
    assert checked == 6


def _writers(batches, writers, mode):
    """The batches as ``writers`` concurrent loaders would send them, their turns alternating: ``ranges``
    (writer i has the i-th contiguous share: a parallel backfill) or ``interleaved`` (batches i, i+n, ...;
    writer i lags i * 5 turns behind: writers drift apart under load)."""
    n = len(batches)
    if mode == "ranges":
        shares = [batches[n * i // writers:n * (i + 1) // writers] for i in range(writers)]
        lags = [0] * writers
    else:
        shares = [batches[i::writers] for i in range(writers)]
        lags = [5 * i for i in range(writers)]
    out = []
    for turn in range(max(len(s) + lag for s, lag in zip(shares, lags, strict=True))):
        out += [s[turn - lag] for s, lag in zip(shares, lags, strict=True) if 0 <= turn - lag < len(s)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ranges", "interleaved"])
def test_concurrent_writers_alternate_between_buckets_like_one_by_one(mode):
    """Issue 15 item 4: series written by several writers at distant times at once — each alternation
    archives one bucket and reopens another, vectorized, with the statistics of one by one."""
    batches = _writers(_tsbs(6, series=20, ticks=1500, per_batch=100), 4, mode)
    state, _ = _same(batches)
    assert state.stats["numBucketsReopened"] > (100 if mode == "ranges" else 10)
    assert state.stats["numBucketsArchivedDueToTimeBackward"] > 0


@pytest.mark.parametrize("writers", [8, 12])
def test_a_parallel_backfill_of_many_writers_routes_vectorized_like_one_by_one(writers, monkeypatch):
    """Issue 23: the bench's parallel backfill (8 connections, each a contiguous share of the day) keeps
    8 live buckets per series that every batch switches between. Each series' hot list must hold them
    all: with 4 hot slots every batch missed them and nearly every row took the row-by-row rules path
    (ranges cost 2x ordered in server CPU). The rows the rules path takes are counted: only a series'
    first rows and a share's crossings into the next bucket go there."""

    batches = _writers(_tsbs(7, series=20, ticks=2400, per_batch=100), writers, "ranges")
    one = _one_by_one(batches)
    slow = _counting_rules_path(monkeypatch)
    many = _column_wise(batches)
    assert many.stats == one.stats
    assert _contents(many) == _contents(one)
    assert one.stats["numBucketsReopened"] > 1000
    total = sum(len(b) for b in batches)
    assert sum(slow) < 0.1 * total, (sum(slow), total)


def test_a_series_whose_open_bucket_of_another_layout_holds_the_time_is_not_switched():
    """The open bucket (another layout) holds the row's time: one by one appends there, so the
    vectorized path must not reopen the archived bucket of the batch's layout."""
    def rows(start_s, n, extra):
        return [{"_id": ObjectId(), "t": T0 + dt.timedelta(seconds=start_s + 10 * i), "m": "s", "a": float(i), **extra}
                for i in range(n)]
    batches = [rows(900, 5, {}), rows(0, 5, {"b": 1.0}), rows(950, 5, {})]
    _same(batches, expect_columnar=False)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), series=st.integers(1, 4), writers=st.integers(2, 6), per_batch=st.integers(1, 12),
       turns=st.integers(4, 40), step_s=st.sampled_from([1, 10, 60, 300, 1800]))
def test_writers_whose_buckets_overlap_in_time_route_like_one_by_one(data, series, writers, per_batch, turns,
                                                                      step_s):
    """Writers each continuing a time line of their own, their turns drawn; a batch is one writer's next
    rows of every series. Their starts are drawn to the minute: with the default granularity a bucket
    starts at a minute and spans an hour, so one writer's buckets overlap another's in time or not.
    Column-wise routing looks a series' bucket up among its hot ones once per batch, for its first row
    the open bucket does not hold (router._later_candidates): with overlapping buckets a later row may
    lie in several, and it must still build one by one's buckets, sizes and statistics."""
    clocks = [60 * m for m in data.draw(st.lists(st.integers(0, 300), min_size=writers, max_size=writers))]
    batches, made = [], 0
    for _ in range(turns):
        w = data.draw(st.integers(0, writers - 1))
        rows = []
        for _ in range(per_batch):
            for host in range(series):
                made += 1
                rows.append({"_id": ObjectId(f"{made:024x}"), "t": T0 + dt.timedelta(seconds=clocks[w]),
                             "m": {"host": host}, "v": float(clocks[w] % 97)})
            clocks[w] += step_s
        batches.append(rows)
    _same(batches)


@pytest.mark.parametrize("n", [0, 1, 10, 11, 100, 101, 1000, 5000])
@pytest.mark.parametrize("value", [0.0, "abc", None, {"a": 1}, [1, 2], Int64(5), True])
def test_constant_columns_encode_exactly_as_bson(n, value):
    assert constant_bson(value, n) == bson.encode({str(i): value for i in range(n)}, codec_options=CODEC_OPTIONS)


_FIELD_VALUES = {
    "double": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, float("nan")]),
                        st.integers(-100, 100).map(float)),
    "int": st.integers(-(2 ** 31), 2 ** 31 - 1),
    "long": st.integers(-(2 ** 63), 2 ** 63 - 1).map(Int64),
    "bool": st.booleans(),
    "oid": st.binary(min_size=12, max_size=12).map(ObjectId),
    "date": st.integers(-(2 ** 40), 2 ** 40).map(lambda ms: T0 + dt.timedelta(milliseconds=ms)),
}


@st.composite
def _layout_batches(draw):
    """Batches of one layout (every document the same fields and types) over a few series, with values
    that exercise each typed column's min/max rules (NaN, signed zeros, ObjectId order, ...)."""
    kinds = draw(st.lists(st.sampled_from(sorted(_FIELD_VALUES)), min_size=1, max_size=5))
    series = draw(st.integers(1, 6))
    ticks = draw(st.integers(1, 30))
    rows = []
    for tick in range(ticks):
        for host in range(series):
            doc = {"_id": draw(_FIELD_VALUES["oid"]), "t": T0 + dt.timedelta(seconds=tick), "m": {"h": host},
                   "k": "const"}
            for i, kind in enumerate(kinds):
                doc[f"f{i}"] = draw(_FIELD_VALUES[kind])
            rows.append(doc)
    size = draw(st.integers(1, 40))
    return [rows[i:i + size] for i in range(0, len(rows), size)]


@settings(max_examples=60, deadline=None)
@given(_layout_batches())
def test_documents_built_together_equal_each_built_alone_and_one_by_one_inserts(batches):
    """full_documents groups the buckets of one layout and row count: each document and stored form is
    what building that bucket alone gives, and its control is the one-by-one insert's."""
    engine = _column_wise(batches, expect_columnar=False)
    buckets = engine.buckets()
    together = full_documents([(b, b.count, b.columns, b.table.data) for b in buckets])
    one = {b.id: None for b in buckets}
    for bucket, part in zip(buckets, together, strict=True):
        alone = bucket.document_parts(bucket.count)
        raw = part.bson()
        assert raw == alone.bson()
        assert bson.encode(part.summary) == bson.encode(alone.summary)  # (NaN != NaN as values)
        assert part.codec_form()() == alone.codec_form()() == bucket_codec.encode(raw)
        one[bucket.id] = bson.decode(raw, codec_options=CODEC_OPTIONS)
    reference = _one_by_one(batches)
    assert sorted(repr((d["control"], d["meta"], d["data"])) for d in one.values()) == sorted(
        repr((d["control"], d["meta"], d["data"])) for d in reference.documents())


def test_full_documents_build_a_table_s_buckets_of_one_row_count_as_one_group():
    engine = _column_wise(_tsbs(5, series=12, ticks=30))
    buckets = engine.buckets()
    assert len(buckets) == 12 and len({b.count for b in buckets}) == 1
    parts = full_documents([(b, b.count, b.columns, b.table.data) for b in buckets])
    assert len({id(part.group) for part in parts}) == 1
    assert [part.bson() for part in parts] == [b.document_parts(b.count).bson() for b in buckets]


def test_a_series_crossing_a_bucket_boundary_routes_its_leading_rows_vectorized(monkeypatch):
    """Issue 23: in a time-ordered load every series crosses into a new bucket once per span, in the
    middle of a batch. The rows before the crossing fit the open bucket and go vectorized; only the
    rows from the crossing on take the rules path (all of the series' rows in that batch did)."""

    batches = _tsbs(11, series=10, ticks=1500, per_batch=70)  # 7 rows per series per batch, 10 s apart
    one = _one_by_one(batches)
    slow = _counting_rules_path(monkeypatch)
    many = _column_wise(batches)
    assert many.stats == one.stats
    assert _contents(many) == _contents(one)
    crossings = one.stats["numBucketsArchivedDueToTimeForward"]
    assert crossings >= 30
    # each crossing's rows from the boundary on (the series' first batch: all of its rows)
    rows_after = sum(slow) - 10 * 7
    assert rows_after < 5 * crossings, (rows_after, crossings)  # all 7 of the batch's rows went there


@st.composite
def _crossing_batches(draw):
    """Batches of a few series whose times step forward (and sometimes back) across bucket spans and
    count limits inside a batch: series crossing a boundary part way through a batch."""
    series = draw(st.integers(1, 5))
    steps = draw(st.lists(st.sampled_from([1, 10, 600, 1800, 3599, 3600, 7200, -3600, -5]), min_size=1, max_size=60))
    rows, t = [], 0
    for i, step in enumerate(steps):
        t = max(0, t + step)
        for host in draw(st.lists(st.integers(0, series - 1), min_size=1, max_size=series, unique=True)):
            rows.append({"_id": ObjectId(), "measurement": "cpu", "t": T0 + dt.timedelta(seconds=t),
                         "a": float(i), "b": float(host * 1000 + i), "m": {"host": f"h{host}"}})
    size = draw(st.integers(1, 40))
    return [rows[i:i + size] for i in range(0, len(rows), size)], draw(st.sampled_from([None, 3, 7, 50]))


@settings(max_examples=80, deadline=None)
@given(_crossing_batches())
def test_series_crossing_rules_part_way_through_a_batch_build_the_buckets_of_one_by_one(drawn):
    batches, max_count = drawn
    limits = {} if max_count is None else {"max_count": max_count}
    _same(batches, **limits)


def _counting_rules_path(monkeypatch):
    """The rows each call of the row-by-row rules path takes (router._route_series)."""
    from tidemark.timeseries import router

    slow = []
    route_series = router._route_series

    def counting(catalog, state, batch, sid, rows, limits, loader):
        slow.append(len(rows))
        return route_series(catalog, state, batch, sid, rows, limits, loader)

    monkeypatch.setattr(router, "_route_series", counting)
    return slow


def test_a_batch_starting_at_a_bucket_boundary_opens_its_buckets_in_bulk(monkeypatch):
    """Issue 23.4: a time-ordered load's batch that starts at a bucket boundary (every series opens a
    new bucket at its first row) opens the buckets by the rules for all series, then appends the rows
    vectorized: no row takes the row-by-row rules path (on main every row of such a batch did: 800
    here), and the buckets, sizes and statistics are one by one's."""
    batches = _tsbs(8, series=20, ticks=1440, per_batch=200)  # 10 ticks a batch: 36 batches an hour
    one = _one_by_one(batches)
    slow = _counting_rules_path(monkeypatch)
    many = _column_wise(batches)
    assert many.stats == one.stats
    assert _contents(many) == _contents(one)
    assert one.stats["numBucketsArchivedDueToTimeForward"] == 3 * 20
    assert sum(slow) == 0  # the first batch too: each new series opens its first bucket


def test_bucket_boundaries_in_bulk_keep_bucket_ids_in_opening_order():
    """The new buckets' ``_id``s (consecutive counters) come in the order one by one opens them: the
    series' first appearance in the batch."""
    batches = _tsbs(9, series=12, ticks=720, per_batch=120)
    rank = {f"h{h}": r for r, h in enumerate(random.Random(9).sample(range(12), 12))}
    for batch in batches:  # each tick's hosts in another order: first appearance is not series order
        batch.sort(key=lambda doc: (doc["t"], rank[doc["m"]["host"]]))
    one = _one_by_one(batches)
    many = _column_wise(batches)

    def ids(engine):
        return [(b.start_s, b.key, b.id.binary[9:]) for b in sorted(engine.buckets(), key=lambda b: b.id)]

    assert [i[:2] for i in ids(many)] == [i[:2] for i in ids(one)]


def test_bucket_boundaries_near_the_memory_threshold_take_the_rules_path(monkeypatch):
    """Opening every bucket of a boundary first changes what the memory rule sees at each open: under
    a threshold the batch could reach, the rules path opens them one by one (same closes)."""
    batches = _tsbs(10, series=20, ticks=1080, per_batch=200)
    one = Engine(memory_threshold=400_000, metaField="m")
    for batch in batches:
        one.put_many(batch)  # the rules path for every row, one route per batch
        one.commit_all()
    slow = _counting_rules_path(monkeypatch)
    many = Engine(memory_threshold=400_000, metaField="m")
    for batch in batches:
        assert many.put_raw(batch)
        many.commit_all()
    assert one.stats["numBucketsClosedDueToMemoryThreshold"] > 0
    assert many.stats == one.stats
    assert _contents(many) == _contents(one)
    assert sum(slow) > 20 * 10


@settings(max_examples=30, deadline=None)
@given(series=st.integers(1, 8), ticks_per_batch=st.integers(1, 30), max_count=st.sampled_from([1000, 50, 7, 1]),
       max_size=st.sampled_from([125_000, 3000, 700]), span=st.sampled_from([None, 600, 3600]),
       seed=st.integers(0, 1000))
def test_bucket_boundaries_build_one_by_ones_buckets(series, ticks_per_batch, max_count, max_size, span, seed):
    """Hypothesis: boundaries inside and at the start of batches, count and size limits (rows that do
    not all fit a new bucket, a first row over the size limit), shorter spans: one by one's buckets."""
    batches = _tsbs(seed, series=series, ticks=400, per_batch=series * ticks_per_batch)
    params = {"timeseriesBucketMaxCount": max_count, "timeseriesBucketMaxSize": max_size}
    spec = {"bucketMaxSpanSeconds": span, "bucketRoundingSeconds": span} if span else {}
    one = Engine(params=params, metaField="m", **spec)
    many = Engine(params=params, metaField="m", **spec)
    for batch in batches:
        for doc in batch:
            one.put_many([doc])
        assert many.put_raw(batch)
    assert many.stats == one.stats
    assert _contents(many) == _contents(one)


def _distinct_by_dict(buffer, starts, lengths):
    index = {}
    codes = [index.setdefault(buffer[a:a + n], len(index)) for a, n in zip(starts, lengths, strict=True)]
    return list(index), codes


_META_VALUES = st.one_of(
    st.text(max_size=12), st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
    st.fixed_dictionaries({"host": st.sampled_from(["a", "b", "ab", "ba", "c" * 9])}),
    st.fixed_dictionaries({"hosz": st.sampled_from(["a", "b"]), "k": st.integers(0, 3)}),  # same length, other key
    st.fixed_dictionaries({"host": st.sampled_from(["a", "b"]), "k": st.sampled_from([1, 1.0, True])}),
    st.text(min_size=1000, max_size=1100))  # over DISTINCT_ROW_BYTES: the dict of slices


@settings(max_examples=200, deadline=None)
@given(st.lists(_META_VALUES, min_size=1, max_size=60), st.booleans())
def test_distinct_meta_values_are_the_dict_of_slices(values, collide):
    """rawbatch._distinct (hashes, one sort, every value compared) gives the distinct values in first-seen
    order and each one's index, exactly as a dict of the byte slices does — also when every hash is the
    same (``collide``: the verification finds different values and takes the dict)."""
    pieces = [bson.encode({"m": v})[4:-1] for v in values]  # elements: type, name, value
    buffer = b"".join(pieces)
    starts, lengths, pos = [], [], 0
    for piece in pieces:
        starts.append(pos + 3)  # the value after "\x??m\x00"
        lengths.append(len(piece) - 3)
        pos += len(piece)
    data = np.frombuffer(buffer, np.uint8)
    multipliers = rawbatch._MULTIPLIERS
    try:
        if collide:
            rawbatch._MULTIPLIERS = np.zeros_like(multipliers)
        metas, index = rawbatch._distinct(buffer, data, np.asarray(starts, np.int64), np.asarray(lengths, np.int64))
    finally:
        rawbatch._MULTIPLIERS = multipliers
    expected, codes = _distinct_by_dict(buffer, starts, lengths)
    assert metas == expected
    assert index.tolist() == codes
