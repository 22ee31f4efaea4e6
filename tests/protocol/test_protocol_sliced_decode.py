"""tidemark.protocol.sliced_decode answers exactly what one call of the C decoder answers, while no single
C call decodes more than a slice — and refuses what the C decoder refuses."""

from __future__ import annotations

import datetime
import random
import struct

import bson
import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.errors import InvalidBSON
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from tidemark.protocol import codec, sliced_decode


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(16 if depth < 3 else 13)
    return [
        lambda: rng.random(),
        lambda: "s" * rng.randrange(40),
        lambda: rng.randrange(-2**31, 2**31),
        lambda: Int64(rng.randrange(-2**63, 2**63)),
        lambda: None,
        lambda: rng.random() < 0.5,
        lambda: datetime.datetime(2024, 1, 1) + datetime.timedelta(milliseconds=rng.randrange(10**9)),
        lambda: ObjectId(),
        lambda: Binary(bytes(rng.randrange(20)), rng.choice([0, 5, 128])),
        lambda: Regex("a.*b", "i"),
        lambda: Timestamp(rng.randrange(1, 2**31), 1),
        lambda: Decimal128("1.5"),
        lambda: rng.choice([MinKey(), MaxKey()]),
        lambda: {f"k{i}": _value(rng, depth + 1) for i in range(rng.randrange(6))},
        lambda: [_value(rng, depth + 1) for _ in range(rng.randrange(6))],
        lambda: [rng.randrange(1000) for _ in range(rng.randrange(3000))],
    ][kind]()


@pytest.fixture(autouse=True)
def small_slices(monkeypatch):
    monkeypatch.setattr(sliced_decode, "SLICE_BYTES", 2048)  # many slices on small test documents


def test_random_documents_decode_exactly_like_the_c_decoder():
    rng = random.Random(11)
    for _ in range(200):
        doc = {f"f{i}": _value(rng) for i in range(rng.randrange(1, 40))}
        data = codec.encode(doc)
        assert sliced_decode.decode(data) == codec.decode(data)
    many = b"".join(codec.encode({"i": i, "v": _value(rng)}) for i in range(2000))
    assert sliced_decode.decode_all(many) == codec.decode_all(many)


def test_huge_arrays_of_fixed_size_values_and_of_documents():
    doc = {"find": "c", "filter": {"x": {"$in": list(range(100_000))}},
           "f": [1.5] * 5000, "d": [{"k": i} for i in range(5000)], "mixed": [1, "a", 2.5, None] * 1000}
    data = codec.encode(doc)
    assert sliced_decode.decode(data) == doc


def test_no_c_call_decodes_more_than_a_slice(monkeypatch):
    largest = 0
    original = codec.decode

    def spy(data):
        nonlocal largest
        largest = max(largest, len(data))
        return original(data)

    monkeypatch.setattr(codec, "decode", spy)
    data = bson.encode({"a": list(range(50_000)), "b": {"c": ["x" * 100] * 500}})
    sliced_decode.decode(data)
    assert 0 < largest <= 2048 + 64


def test_malformed_documents_are_refused():
    good = codec.encode({"a": list(range(2000)), "b": "x" * 3000})
    for bad in (
        good[:-1] + b"\x01",  # no trailing NUL
        good[:-10] + good[-9:],  # a byte missing inside
        struct.pack("<i", len(good) + 4) + good[4:] + b"\x00\x00\x00\x00",
        good.replace(b"\x10" + b"1500\x00", b"\x2a" + b"1500\x00"),  # unknown type in the array
    ):
        with pytest.raises((InvalidBSON, ValueError, struct.error)):
            sliced_decode.decode(bad)
