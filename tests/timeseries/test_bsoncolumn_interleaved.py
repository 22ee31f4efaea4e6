"""BSONColumn interleaved mode, malformed binaries and decoding limits, on hand-built fixtures."""

from __future__ import annotations

import random
import struct

import pytest
from bsoncolumn_fixtures import EOO, blocks, dbl, doc, field, i32, ints, lit, one, rle, string, word, zz

from tidemark.timeseries.bsoncolumn import MISSING, BSONColumnError, decode_column, decode_elements
from tidemark.timeseries.bsoncolumn_encode import encode_column


def int32(x: int) -> bytes:
    return struct.pack("<i", x)


def f64(x: float) -> bytes:
    return struct.pack("<d", x)


def section(control: int, reference: bytes, *streams: bytes) -> bytes:
    return bytes((control,)) + doc(reference) + b"".join(streams) + EOO


# -- interleaved mode ----------------------------------------------------------------------------------

def test_objects_with_changing_fields():
    reference = field(0x10, "a", int32(1)) + field(0x03, "b", doc(field(0x01, "c", f64(2.5))))
    a = ints(0, 1, None, None)                                           # a: 1, 2, -, -
    c = blocks(0xA, one(0), one(None), one(zz(10)), one(None))           # c (x10): 2.5, -, 3.5, -
    data = section(0xF1, reference, a, c) + i32(7) + EOO
    assert decode_column(data) == [{"a": 1, "b": {"c": 2.5}}, {"a": 2}, {"b": {"c": 3.5}}, MISSING, 7]


def test_streams_take_controls_in_the_order_they_run_out():
    reference = field(0x10, "a", int32(0)) + field(0x10, "b", int32(0))
    a1 = blocks(0x8, word(13, 30, [zz(1), zz(1)]))  # two values: serves objects 1 and 2
    b1, b2, b3 = ints(5), ints(5), ints(5)
    a2 = ints(1)
    data = section(0xF1, reference, a1, b1, b2, a2, b3) + EOO
    assert decode_column(data) == [{"a": 1, "b": 5}, {"a": 2, "b": 10}, {"a": 3, "b": 15}]


def test_empty_sub_object_of_the_reference_is_always_kept():
    reference = field(0x10, "a", int32(1)) + field(0x03, "e", doc(b""))
    data = section(0xF1, reference, ints(0, None)) + EOO
    assert decode_column(data) == [{"a": 1, "e": {}}, {"e": {}}]


def test_sub_object_left_without_fields_is_omitted():
    reference = field(0x10, "a", int32(1)) + field(0x03, "s", doc(field(0x10, "x", int32(1))))
    data = section(0xF1, reference, ints(0, 0), ints(0, None)) + EOO
    assert decode_column(data) == [{"a": 1, "s": {"x": 1}}, {"a": 1}]


def test_arrays_are_traversed_by_0xf1():
    reference = field(0x04, "x", doc(field(0x10, "0", int32(1)) + field(0x10, "1", int32(2))))
    data = section(0xF1, reference, ints(0, 1), ints(0, None)) + EOO
    assert decode_column(data) == [{"x": [1, 2]}, {"x": [2]}]


def test_arrays_are_scalars_for_legacy_0xf0():
    array = doc(field(0x10, "0", int32(1)) + field(0x10, "1", int32(2)))
    reference = field(0x04, "x", array) + field(0x10, "n", int32(1))
    data = section(0xF0, reference, ints(0, 0), ints(0, 1)) + EOO
    assert decode_column(data) == [{"x": [1, 2], "n": 1}, {"x": [1, 2], "n": 2}]


def test_array_root_0xf2():
    reference = field(0x01, "0", f64(1.5)) + field(0x02, "1", struct.pack("<i", 2) + b"s\0")
    data = section(0xF2, reference, blocks(0xA, one(0), one(zz(1))), ints(0, None)) + EOO
    assert decode_column(data) == [[1.5, "s"], [1.6]]


def test_a_stream_may_load_a_literal():
    reference = field(0x10, "a", int32(1))
    data = section(0xF1, reference, string("z"), ints(0)) + EOO
    assert decode_column(data) == [{"a": "z"}, {"a": "z"}]


def test_regular_mode_resumes_from_the_last_object():
    reference = field(0x10, "a", int32(1))
    data = section(0xF1, reference, ints(0, 1)) + ints(0, None) + EOO
    assert decode_column(data) == [{"a": 1}, {"a": 2}, {"a": 2}, MISSING]
    with pytest.raises(BSONColumnError, match="invalid delta"):
        decode_column(section(0xF1, reference, ints(0)) + ints(1) + EOO)


def test_sections_between_scalars_and_back_to_back():
    reference = field(0x10, "a", int32(1))
    data = i32(5) + section(0xF1, reference, ints(0)) + section(0xF1, reference, ints(2)) + i32(6) + EOO
    assert decode_column(data) == [5, {"a": 1}, {"a": 3}, 6]


def test_nested_objects_and_skips_of_whole_sub_objects():
    reference = field(0x03, "m", doc(field(0x03, "n", doc(field(0x08, "t", b"\x01")))) + field(0x10, "k", int32(0)))
    data = section(0xF1, reference, ints(0, None, -1), ints(None, 0, 1)) + EOO
    assert decode_column(data) == [{"m": {"n": {"t": True}}}, {"k": 0}, {"m": {"n": {"t": False}}, "k": 1}]


@pytest.mark.parametrize("data,message", [
    # the second stream meets the EOO while the first still had a value for the second object
    (section(0xF1, field(0x10, "a", int32(1)) + field(0x10, "b", int32(1)), ints(0, 0), ints(0)) + EOO,
     "inside an object"),
    # the section ends while the second stream still holds a value
    (section(0xF1, field(0x10, "a", int32(1)) + field(0x10, "b", int32(1)), ints(0), ints(0, 0)) + EOO,
     "values left"),
    (section(0xF1, field(0x03, "e", doc(b"")), ints(0)) + EOO, "without scalar"),
    (bytes((0xF1,)) + doc(field(0x10, "a", int32(1))) + EOO + EOO, "no object"),
    (bytes((0xF1,)) + b"\x10\x00", "truncated"),
    (bytes((0xF1,)) + struct.pack("<i", 99) + b"\x10a\0" + int32(1) + b"\0" + EOO, "truncated"),
    (section(0xF1, field(0x10, "a", int32(1)), bytes((0xF1,)) + doc(field(0x10, "a", int32(1)))) + EOO,
     "invalid control byte"),
    (bytes((0xF1,)) + doc(field(0x10, "a", int32(1))) + ints(0) + EOO, "not terminated"),
    (bytes((0xF1,)) + doc(field(0x10, "a", int32(1))) + ints(0), "overflow"),
])
def test_malformed_interleaved_sections(data, message):
    with pytest.raises(BSONColumnError, match=message):
        decode_column(data)


def test_deeply_nested_reference_is_rejected():
    inner = doc(field(0x10, "x", int32(1)))
    for _ in range(250):
        inner = doc(field(0x03, "o", inner))
    data = bytes((0xF1,)) + inner + ints(0) + EOO + EOO
    with pytest.raises(BSONColumnError, match="nested too deeply"):
        decode_column(data)


# -- malformed binaries -------------------------------------------------------------------------------

@pytest.mark.parametrize("data,message", [
    (b"", "empty"),
    (i32(1), "not terminated"),
    (i32(1) + EOO + EOO, "after its EOO"),
    (b"\x10\x00\x01\x02", "truncated"),
    (b"\x10a\x00" + int32(1) + EOO, "empty field name"),
    (b"\x14\x00" + EOO, "invalid BSON type"),
    (i32(1) + bytes((0xE0,)) + bytes(8) + EOO, "invalid control byte"),
    (i32(1) + bytes((0x70,)) + bytes(8) + EOO, "invalid control byte"),
    (i32(1) + blocks(0x8, one(0)), "overflow"),
    (i32(1) + bytes((0x81,)) + bytes(8) + EOO, "overflow"),
    (lit(0x0A, b"") + ints(1) + EOO, "invalid delta"),
    (lit(0x03, doc(b"")) + ints(1) + EOO, "invalid delta"),
    (dbl(float("nan")) + blocks(0x9, one(zz(1))) + EOO, "invalid double"),
    (dbl(0.123) + blocks(0x9, one(zz(1))) + EOO, "invalid double"),
    (lit(0x05, struct.pack("<i", 20) + b"\x00" + bytes(20)) + ints(1) + EOO, "BinData"),
    (lit(0x02, struct.pack("<i", 0)) + EOO, "string length"),
    (lit(0x02, struct.pack("<i", 3) + b"\xff\xfe\0") + EOO, "invalid BSON value"),
    (lit(0x03, struct.pack("<i", 8) + b"\x10a\0\0") + EOO, "invalid BSON value"),
    (lit(0x0B, b"abc") + EOO, "regular expression"),
])
def test_malformed_binaries_raise_a_clear_error(data, message):
    with pytest.raises(BSONColumnError, match=message):
        decode_column(data)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        decode_column(b"\x99")


def test_random_corruption_only_ever_raises_bsoncolumn_errors():
    rng = random.Random(20261124)
    samples = [
        encode_column([{"a": i, "b": {"c": i / 4, "d": "x" * (i % 3)}} for i in range(40)]),
        encode_column([1.5, 2.25, None, "abc", "abd", 7, 8, 9] * 10),
        i32(1) + blocks(0x8, rle(3), word(2, 2, [0, 1, 2] * 10)) + EOO,
        section(0xF2, field(0x01, "0", f64(1.5)) + field(0x04, "1", doc(field(0x10, "0", int32(1)))),
                blocks(0xA, one(0), one(zz(1))), ints(0, None)) + EOO,
    ]
    outcomes = {"ok": 0, "error": 0}
    for _ in range(3000):
        data = bytearray(rng.choice(samples))
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            if op < 0.6 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif op < 0.8 and data:
                del data[rng.randrange(len(data)):]
            else:
                data.insert(rng.randrange(len(data) + 1), rng.randrange(256))
        try:
            decode_column(bytes(data), max_size=1 << 20)
            outcomes["ok"] += 1
        except BSONColumnError:
            outcomes["error"] += 1
    assert outcomes["error"] > 1000 and outcomes["ok"] > 0


# -- limits: nothing decodes without bound ---------------------------------------------------------------

RLE_BOMB = i32(1) + blocks(0x8, *[rle(16)] * 16) * 400 + EOO  # 12 MiB of zero deltas from 52 kB


def test_rle_bomb_stops_at_the_size_limit():
    with pytest.raises(BSONColumnError, match="size limit"):
        decode_elements(RLE_BOMB, max_size=1 << 20)
    with pytest.raises(BSONColumnError, match="size limit"):  # the default limit holds it too
        decode_elements(RLE_BOMB)


def test_max_values_limits_the_rows():
    assert len(decode_column(i32(1) + blocks(0x8, rle(1)) + EOO, max_values=121)) == 121
    with pytest.raises(BSONColumnError, match="more values"):
        decode_column(i32(1) + blocks(0x8, rle(1)) + EOO, max_values=120)


def test_interleaved_streams_are_charged_when_they_decode_a_control():
    reference = b"".join(field(0x0A, str(k), b"") for k in range(2000))  # 2000 null streams
    streams = blocks(0x8, *[rle(16)] * 16) * 2000
    with pytest.raises(BSONColumnError, match="size limit"):
        decode_column(section(0xF1, reference, streams) + EOO, max_size=8 << 20)
