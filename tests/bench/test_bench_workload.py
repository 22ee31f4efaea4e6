"""The generator and the pre-encoded messages: the exact TSBS cpu-only shape, seeded, byte-exact BSON."""

from __future__ import annotations

import datetime as dt

import bson
import numpy as np
import pytest

from bench.generator import FIELDS, REGIONS, START_MS, TAG_NAMES, generate, parse_duration
from bench.messages import (
    BATCH,
    DocumentEncoder,
    build_cache,
    document_dict,
    frame_offsets,
    insert_message,
    op_msg_sections,
    open_frames,
)


def test_same_seed_generates_identical_rows_and_tags():
    a, b = generate(7, 600, 42), generate(7, 600, 42)
    assert a.tags == b.tags
    assert np.array_equal(a.values, b.values)
    c = generate(7, 600, 43)
    assert not np.array_equal(a.values, c.values)


def test_rows_are_one_per_host_every_ten_seconds():
    ds = generate(4, 3600, 1)
    assert ds.ticks == 360 and ds.rows == 1440
    assert ds.end_ms == START_MS + 3600 * 1000
    rows = list(ds.iter_rows(0, 9))
    assert [(ms - START_MS, h) for ms, h, _ in rows] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (10_000, 0), (10_000, 1), (10_000, 2), (10_000, 3), (20_000, 0)
    ]  # fmt: skip


def test_fields_are_integer_valued_random_walks_clamped_to_0_100():
    ds = generate(20, 86400 // 4, 5)
    v = ds.values.astype(int)
    assert v.min() >= 0 and v.max() <= 100
    steps = np.abs(np.diff(v, axis=0))
    assert steps.max() <= 7  # Normal(0, 1) steps, truncated: a jump of 7 is a >6-sigma event
    assert steps.mean() < 1.5 and steps.mean() > 0.3
    assert ds.values.shape[2] == len(FIELDS) == 10


def test_tags_come_from_the_tsbs_domains():
    tags = generate(50, 60, 9).tags
    assert [t["hostname"] for t in tags] == [f"host_{i}" for i in range(50)]
    for t in tags:
        assert tuple(t) == TAG_NAMES
        assert t["datacenter"] in REGIONS[t["region"]]
        assert 0 <= int(t["rack"]) < 100 and 0 <= int(t["service"]) < 20
        assert t["service_version"] in ("0", "1") and t["arch"] in ("x64", "x86")
        assert t["os"] in ("Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10")
        assert t["team"] in ("SF", "NYC", "LON", "CHI")
        assert t["service_environment"] in ("production", "staging", "test")


@pytest.mark.parametrize("text,seconds", [("1d", 86400), ("12h", 43200), ("30m", 1800), ("600", 600)])
def test_durations_parse(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1w", "15s", "-1h", "0"])
def test_bad_durations_are_rejected(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_packed_documents_equal_bson_encode_of_the_dict():
    ds = generate(12, 600, 3)
    docs = DocumentEncoder(ds).encode_tick(17, range(12))
    for h in range(12):
        assert docs[h] == bson.encode(document_dict(ds, 17, h))
    d = bson.decode(docs[5])
    assert list(d) == ["measurement", "time", *FIELDS, "tags"]
    assert d["time"] == dt.datetime(2016, 1, 1, 0, 2, 50)
    assert all(isinstance(d[f], float) for f in FIELDS)


def test_batches_cover_every_row_in_load_order_across_tick_boundaries():
    ds = generate(7, 3000, 3)  # 300 ticks x 7 hosts = 2100 rows: batches straddle ticks
    batches = list(DocumentEncoder(ds).iter_batches(BATCH))
    assert [len(b) for b in batches] == [1000, 1000, 100]
    flat = [bson.decode(d) for b in batches for d in b]
    keys = [(d["time"], int(d["tags"]["hostname"][5:])) for d in flat]
    assert keys == sorted(keys) and len(set(keys)) == ds.rows


def test_insert_frame_is_an_op_msg_with_body_and_document_sequence():
    ds = generate(3, 60, 3)
    docs = DocumentEncoder(ds).encode_tick(0, range(3))
    frame = insert_message(docs, request_id=77)
    length, request_id, response_to, opcode = np.frombuffer(frame[:16], "<i4")
    assert (length, request_id, response_to, opcode) == (len(frame), 77, 0, 2013)
    body, seqs = op_msg_sections(frame)
    assert bson.decode(body) == {"insert": "cpu", "ordered": False, "$db": "benchmark"}
    assert [bytes(d) for d in seqs["documents"]] == docs


def test_cache_file_is_written_once_and_walked_by_frame_lengths(tmp_path):
    ds = generate(5, 3600, 8)
    path = build_cache(ds, tmp_path)
    stamp = path.stat().st_mtime_ns
    assert build_cache(ds, tmp_path) == path and path.stat().st_mtime_ns == stamp
    mm, offsets = open_frames(path)
    try:
        assert len(offsets) == 2
        counts = [len(op_msg_sections(mm[o : o + n])[1]["documents"]) for o, n in offsets]
        assert counts == [1000, 800]
    finally:
        mm.close()


def test_a_truncated_cache_file_is_detected(tmp_path):
    ds = generate(5, 600, 8)
    data = build_cache(ds, tmp_path).read_bytes()
    with pytest.raises(ValueError, match="corrupt"):
        frame_offsets(data[:-10])
