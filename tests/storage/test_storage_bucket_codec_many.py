"""storage/bucket_codec.py for many buckets at once (the server's full writes, issue 23.4):
``columns_documents`` and ``encode_columns`` take k buckets of one column layout, each fixed-width
column as one k x n array, and give for each bucket exactly the document BSON and the stored form that
encoding that document alone gives (``encode``), whatever values each bucket holds: each row picks its
own value codec and width; a bucket whose column does not read back is None, the others are kept."""

from __future__ import annotations

import math
import struct

import bson
import numpy as np
import pytest
from bson import ObjectId
from bson.datetime_ms import DatetimeMS
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage import bucket_codec

DOUBLES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2 ** 53), 2 ** 53).map(float),
    st.integers(0, 100).map(float),
    st.sampled_from([-0.0, 0.0, math.nan, 2.0 ** 63, -(2.0 ** 63), 5e-324]),
)
VALUES = {
    0x01: DOUBLES,
    0x10: st.integers(-(2 ** 31), 2 ** 31 - 1),
    0x12: st.integers(-(2 ** 63), 2 ** 63 - 1).map(Int64),
    0x09: st.integers(-(2 ** 63), 2 ** 63 - 1).map(DatetimeMS),
    0x08: st.booleans(),
    0x07: st.binary(min_size=12, max_size=12).map(ObjectId),
}
DTYPES = {0x01: "<f8", 0x10: "<i4", 0x12: "<i8", 0x09: "<i8", 0x08: "?", 0x07: "V12"}


def _raw(btype: int, value) -> bytes:
    return bson.encode({"": value})[6:-1]


@st.composite
def layouts(draw: st.DrawFn) -> tuple[int, list[tuple[str, int, str | None]]]:
    """(n, columns): each column a name, a fixed-width BSON type, or a constant string (type 0)."""
    n = draw(st.sampled_from([1, 2, 9, 10, 11, 100, 101, 360]))
    count = draw(st.integers(1, 6))
    columns = []
    for c in range(count):
        if draw(st.integers(0, 5)) == 0:
            columns.append((f"s{c}", 0, draw(st.text(max_size=5))))
        else:
            columns.append((f"f{c}", draw(st.sampled_from(sorted(VALUES))), None))
    return n, columns


@st.composite
def bucket_sets(draw: st.DrawFn) -> tuple[list[dict], list[bytes], list[tuple[bytes, int, object]]]:
    """k v1-shaped documents of one layout with their heads and columns as a full write gives them."""
    n, layout = draw(layouts())
    k = draw(st.integers(1, 5))
    docs = []
    for i in range(k):
        data = {}
        for name, btype, constant in layout:
            if btype == 0:
                data[name] = {str(r): constant for r in range(n)}
                continue
            shape = draw(st.sampled_from(["random", "walk", "equal"]))
            if shape == "equal":
                values = [draw(VALUES[btype])] * n
            elif shape == "walk" and btype in (0x01, 0x10, 0x12, 0x09):
                start = draw(st.integers(-1000, 1000))
                steps = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
                ints = np.cumsum([start, *steps[1:]]).tolist()
                wrap = {0x01: float, 0x10: int, 0x12: Int64, 0x09: DatetimeMS}[btype]
                values = [wrap(v) for v in ints]
            else:
                values = [draw(VALUES[btype]) for _ in range(n)]
            data[name] = {str(r): v for r, v in enumerate(values)}
        docs.append({"_id": ObjectId(bytes(11) + bytes((i,))), "control": {"version": 1},
                     "meta": {"host": "h" * i}, "data": data})
    raws = [bson.encode(doc) for doc in docs]
    heads = [raw[:raw.index(b"\x03data\x00") + 6] for raw in raws]
    columns: list[tuple[bytes, int, object]] = []
    for name, btype, _constant in layout:
        if btype == 0:
            columns.append((name.encode(), 0, bson.encode(docs[0]["data"][name])))
            continue
        rows = [b"".join(_raw(btype, v) for v in doc["data"][name].values()) for doc in docs]
        values = np.frombuffer(b"".join(rows), DTYPES[btype]).reshape(k, n)
        columns.append((name.encode(), btype, values))
    return raws, heads, columns


@settings(max_examples=200, deadline=None)
@given(bucket_sets())
def test_many_buckets_at_once_give_each_bucket_its_own_document_and_stored_form(case):
    raws, heads, columns = case
    assert bucket_codec.columns_documents(columns, heads, b"\x00") == raws
    streams = bucket_codec.encode_columns(heads, columns)
    for raw, stream in zip(raws, streams, strict=True):
        assert stream is not None
        packed = bucket_codec.compress(stream)
        assert packed == bucket_codec.encode(raw)  # what encoding the document alone stores
        assert bucket_codec.decode(packed) == raw


def _tsbs_like(k: int, n: int):
    rng = np.random.default_rng(k * 1000 + n)
    times = (1_451_606_400_000 + 10_000 * np.arange(n, dtype=np.int64))[None].repeat(k, axis=0)
    walk = np.clip(rng.normal(0, 1, (k, n)).cumsum(axis=1) + 50, 0, 100).astype(np.int64).astype("<f8")
    fraction = walk / 3
    fraction[k // 2:] = walk[k // 2:]  # some buckets integral, some not: each row its own codec
    columns = [(b"t", 0x09, times), (b"f", 0x01, fraction), (b"g", 0x01, walk)]
    body = b"\x07_id\x00" + bytes(11)
    size = 4 + len(body) + 1 + 6 + bucket_codec.columns_length(columns, k) + 1
    heads = [struct.pack("<i", size) + body + bytes((i,)) + b"\x03data\x00" for i in range(k)]
    return heads, columns


@pytest.mark.parametrize("btype", [0x09, 0x10, 0x01, 0x07])
def test_a_bucket_whose_column_does_not_read_back_is_none_and_the_others_are_kept(monkeypatch, btype):
    k, n = 3, 20
    rng = np.random.default_rng(btype)
    if btype == 0x07:
        values = rng.integers(0, 256, (k, n * 12), dtype=np.uint8).view("V12")
    elif btype == 0x01:
        values = rng.integers(-50, 50, (k, n)).astype("<f8")
    else:
        values = rng.integers(-1000, 1000, (k, n)).astype(DTYPES[btype])
    heads = [b"\x00\x00\x00\x00\x07_id\x00" + bytes(12) + b"\x03data\x00"] * k
    columns = [(b"v", btype, values)]
    good = bucket_codec.encode_columns(heads, columns)
    assert None not in good
    real = bucket_codec._unzigzag

    def corrupt(z):
        back = real(z)
        if back.ndim == 2 and len(back) == k:
            back = back.copy()
            back[1, -1] ^= 1  # the second bucket's last value reads back wrong
        return back

    monkeypatch.setattr(bucket_codec, "_unzigzag", corrupt)
    assert bucket_codec.encode_columns(heads, columns) == [good[0], None, good[2]]


def test_tsbs_like_buckets_mixing_integral_and_fractional_doubles_round_trip():
    heads, columns = _tsbs_like(8, 360)
    docs = bucket_codec.columns_documents(columns, heads, b"\x00")
    for doc, stream in zip(docs, bucket_codec.encode_columns(heads, columns), strict=True):
        assert stream is not None
        assert bucket_codec.decode(bucket_codec.compress(stream)) == doc
        assert bucket_codec.compress(stream) == bucket_codec.encode(doc)
