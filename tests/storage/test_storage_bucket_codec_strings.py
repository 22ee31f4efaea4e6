"""storage/bucket_codec.py string columns (KIND_STRINGS): dense columns of strings are stored as a
table of distinct values + row indexes or as lengths + bytes, and still decode byte for byte; the
selective reader and ``encode_columns`` (the server's full writes) agree with ``encode``; values of
the previous stream version (1, string columns kept as BSON) stay readable."""

from __future__ import annotations

import datetime as dt
import random

import bson
import pytest
from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st
from test_storage_bucket_codec import random_value, tsbs_bucket

from tidemark.storage import bucket_codec
from tidemark.storage.bucket_reader import BucketReader

STRINGS = st.text(st.characters(codec="utf-8"), max_size=12)  # NULs and multi-byte characters included


@st.composite
def string_columns(draw: st.DrawFn, n: int) -> dict[str, str]:
    shape = draw(st.sampled_from(["constant", "few", "distinct", "equal-length", "empty"]))
    if shape == "constant":
        values = [draw(STRINGS)] * n
    elif shape == "few":
        pool = draw(st.lists(STRINGS, min_size=1, max_size=4))
        values = [draw(st.sampled_from(pool)) for _ in range(n)]
    elif shape == "equal-length":
        size = draw(st.integers(0, 6))
        values = [draw(st.text("ab\x00é", min_size=size, max_size=size)) for _ in range(n)]
    elif shape == "empty":
        values = [""] * n
    else:
        values = [draw(STRINGS) for _ in range(n)]
    return {str(i): v for i, v in enumerate(values)}


@st.composite
def buckets(draw: st.DrawFn) -> dict:
    n = draw(st.sampled_from([1, 2, 9, 10, 11, 101, 360]))
    doc = tsbs_bucket(n)
    for c in range(draw(st.integers(1, 3))):
        doc["data"][f"s{c}"] = draw(string_columns(n))
    if draw(st.booleans()):  # a string column with a hole, or one value of another type: not dense strings
        column = dict(draw(string_columns(n)))
        key = str(draw(st.integers(0, n - 1)))
        if draw(st.booleans()):
            del column[key]
        else:
            column[key] = random_value(random.Random(n), draw(st.sampled_from(["int", "double", "null", "object"])))
        doc["data"]["mixed"] = column
    return doc


def _columns_of(packed: bytes) -> tuple[bytes, list]:
    """The (head, columns) the server would give ``encode_columns`` for this bucket: typed columns as
    arrays, the others as their BSON."""
    reader = BucketReader(packed)
    doc = reader.document()
    columns = []
    for name in reader.column_names():
        typed = reader.column_values(name)
        if typed is not None:
            columns.append((name.encode(), typed[0], typed[1][None].copy()))
        else:
            columns.append((name.encode(), 0, reader.column_bson(name)))
    return doc[:doc.index(b"\x03data\x00") + 6], columns


@settings(max_examples=150, deadline=None)
@given(buckets())
def test_buckets_with_string_and_mixed_columns_round_trip_through_every_reader(doc):
    raw = bson.encode(doc)
    packed = bucket_codec.encode(raw)
    assert packed is not None
    assert bucket_codec.decode(packed) == raw
    reader = BucketReader(packed)
    assert reader.document() == raw
    for name, column in doc["data"].items():
        assert reader.column_bson(name) == bson.encode(column)
    head, columns = _columns_of(packed)
    assert bucket_codec.compress(bucket_codec.encode_columns([head], columns)[0]) == packed


def test_a_constant_string_column_costs_a_few_bytes():
    doc = tsbs_bucket(360)
    without = len(bucket_codec.encode(bson.encode(doc)))
    doc["data"]["measurement"] = {str(i): "cpu" for i in range(360)}
    assert len(bucket_codec.encode(bson.encode(doc))) - without < 40  # kept as BSON: ~640 bytes


def test_few_distinct_and_all_distinct_strings_are_stored_as_string_columns():
    doc = tsbs_bucket(360)
    doc["data"]["region"] = {str(i): ["eu-west-1", "us-east-1", "ap-south-1"][i % 3] for i in range(360)}
    doc["data"]["serial"] = {str(i): f"SN-{i * 7919 % 100003:06d}-{i % 13}" for i in range(360)}
    raw = bson.encode(doc)
    stream = bucket_codec.encode_raw(raw)
    assert stream is not None
    for name in ("region", "serial"):
        at = stream.rindex(name.encode() + b"\x00") + len(name) + 1
        assert stream[at] == bucket_codec.KIND_STRINGS
        assert bucket_codec.decode_column(stream, at) == bson.encode(doc["data"][name])
    assert bucket_codec.decode(bucket_codec.encode(raw)) == raw


@pytest.mark.parametrize("patch", [
    (b"\x04\x00\x00\x00cpu\x00", b"\x05\x00\x00\x00cpu\x00", 1),  # a length one past the string
    (b"cpu\x00\x02", b"cpux\x02", 1),  # a string without its final NUL
])
def test_malformed_string_columns_are_stored_as_bytes_and_round_trip(patch):
    doc = tsbs_bucket(20)
    doc["data"]["measurement"] = {str(i): "cpu" for i in range(20)}
    raw = bson.encode(doc)
    old, new, count = patch
    bad = raw.replace(old, new, count)
    assert bad != raw
    packed = bucket_codec.encode(bad)
    assert packed is None or bucket_codec.decode(packed) == bad


def test_encode_columns_gives_none_for_a_string_column_that_does_not_read_back(monkeypatch):
    doc = tsbs_bucket(30)
    doc["data"]["measurement"] = {str(i): "cpu" for i in range(30)}
    doc["data"]["host"] = {str(i): f"host_{i % 4}" for i in range(30)}
    head, columns = _columns_of(bucket_codec.encode(bson.encode(doc)))
    assert bucket_codec.encode_columns([head], columns) != [None]
    real = bucket_codec._strings_document

    def corrupt(n, table, index):
        return real(n, [t.upper() for t in table], index)

    monkeypatch.setattr(bucket_codec, "_strings_document", corrupt)
    bucket_codec._constant_strings.cache_clear()
    try:
        assert bucket_codec.encode_columns([head, head], columns) == [None, None]
    finally:
        bucket_codec._constant_strings.cache_clear()


# written by the codec before string columns (stream version 1: strings kept as their BSON bytes)
VERSION_1_VALUE = bytes.fromhex(
    "28b52ffd60c600ad05005249202880356a0c603861065696c0099310b4be2d4dac9d995d2a888c696b46b68aa05818bd45c4"
    "7f6f9902ef220b3d4ec32cca3b49debb6fa4fa21c7fdd464f5428fd3308b92ec7b534c7f60e4fd9d763fb178c56cd3a4783510"
    "ff1800018e075f20e8f1b2265c97a644c17f1d939696c585e13f9c90d9c4e404f568ca8a04af8f46031a286053057a1034813"
    "00ffbffdf01a3631186111c06b11b823c52c453899b7783ecce944756bc321470fc6e802ee8952f")


def test_values_of_stream_version_1_stay_readable():
    doc = {"_id": ObjectId("5f0000000000000000000001"), "control": {"version": 1},
           "data": {"time": {str(i): dt.datetime(2016, 1, 1, 0, 0, i) for i in range(12)},
                    "measurement": {str(i): "cpu" for i in range(12)},
                    "host": {str(i): f"h{i % 3}" for i in range(12)}}}
    raw = bson.encode(doc)
    assert bucket_codec.decompress(VERSION_1_VALUE)[0] == 1
    assert bucket_codec.decode(VERSION_1_VALUE) == raw
    reader = BucketReader(VERSION_1_VALUE)
    assert reader.column_bson("host") == bson.encode(doc["data"]["host"])
    assert reader.document() == raw
    assert bucket_codec.decode(bucket_codec.encode(raw)) == raw


@pytest.mark.parametrize(("n", "make"), [
    (100, lambda i: "x" * 1000),  # a constant column too large for the cache of constant columns
    (1000, lambda i: f"{i:04d}" * 300),  # equal lengths, all distinct: wider than any cached template
    (1000, lambda i: "é" * (i % 7)),  # unequal lengths, few distinct
])
def test_large_string_columns_round_trip(n, make):
    doc = tsbs_bucket(n)
    doc["data"]["s"] = {str(i): make(i) for i in range(n)}
    raw = bson.encode(doc)
    packed = bucket_codec.encode(raw)
    assert packed is not None and bucket_codec.decode(packed) == raw
    assert BucketReader(packed).column_bson("s") == bson.encode(doc["data"]["s"])
    assert all(len(t) <= bucket_codec._TEMPLATE_CACHED_BYTES for _, t in bucket_codec._templates.values())


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 400_000), data=st.data())
def test_a_column_skeleton_costs_at_most_the_column_or_the_kept_template(width, data):
    """The skeleton of a dense column (its element headers: equal-length strings are a fixed-width
    column of their own width) is cut from a template of at least 1,024 positions only when that
    template is small enough to keep for later columns; otherwise it has the column's positions. A
    single 130 KB string read back built 1,024 positions of it, 133 MB, on every read of its bucket
    (0.13 s for a find of three buckets, and an insert that closed it 0.25 s)."""
    n = data.draw(st.integers(1, max(1, min(2_000, 4_000_000 // width))))
    template = bucket_codec._template(0x02, width, n)
    column = bucket_codec._dense_length(width, n) - 5  # (its headers and values, without length and NUL)
    assert len(template) >= column
    assert len(template) <= max(column, bucket_codec._TEMPLATE_CACHED_BYTES)


@pytest.mark.parametrize(("n", "length"), [(1, 130_000), (3, 600_000), (40, 50_000)])
def test_long_equal_length_strings_round_trip(n, length):
    doc = tsbs_bucket(n)
    doc["data"]["s"] = {str(i): chr(ord("a") + i % 26) * length for i in range(n)}
    raw = bson.encode(doc)
    packed = bucket_codec.encode(raw)
    assert packed is not None and bucket_codec.decode(packed) == raw
    assert BucketReader(packed).column_bson("s") == bson.encode(doc["data"]["s"])
    assert BucketReader(packed).document() == raw
