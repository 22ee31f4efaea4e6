"""filemd5's resumable MD5 (server/commands/gridfs.py): the digest of any split of any bytes equals
hashlib's, across an export and import of mongod's 88-byte md5_state_t; the chunk and number readers
answer mongod's codes."""

from __future__ import annotations

import hashlib
import struct

import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.commands.gridfs import STATE_SIZE, Md5State, _chunk_bytes, _number_int, chunks_namespace
from tidemark.protocol.errors import MongoError


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=6), st.integers(min_value=0, max_value=6))
def test_resumed_digest_equals_hashlib(parts, cut):
    state = Md5State()
    for i, part in enumerate(parts):
        if i == cut:  # hand the state over, as mongos does between shards
            raw = state.to_bytes()
            assert len(raw) == STATE_SIZE
            state = Md5State.from_bytes(raw)
        state.update(part)
    assert state.hexdigest() == hashlib.md5(b"".join(parts)).hexdigest()  # noqa: S324


def test_digest_leaves_the_state_unchanged_and_counts_bits_low_word_first():
    state = Md5State()
    state.update(b"test")
    assert state.hexdigest() == state.hexdigest() == "098f6bcd4621d373cade4e832627b4f6"
    low, high = struct.unpack_from("<2I", state.to_bytes())
    assert (low, high) == (32, 0)
    assert Md5State().hexdigest() == hashlib.md5(b"").hexdigest()  # noqa: S324


@pytest.mark.parametrize("chunk, expected", [
    ({"data": b"abc"}, b"abc"),
    ({"data": Binary(b"abc", 5)}, b"abc"),
    ({"data": Binary(b"\x03\x00\x00\x00abc", 2)}, b"abc"),  # the old binary subtype: its inner length goes
])
def test_chunk_data_is_the_clean_bindata(chunk, expected):
    assert _chunk_bytes(chunk) == expected


@pytest.mark.parametrize("chunk, code, word", [
    ({}, 50848, "misisng"),
    ({"data": 5}, 50849, "type of int found"),
    ({"data": "x"}, 50849, "type of string found"),
    ({"data": None}, 50849, "type of null found"),
])
def test_chunk_without_bindata_is_refused(chunk, code, word):
    with pytest.raises(MongoError) as info:
        _chunk_bytes(chunk)
    assert info.value.code == code and word in str(info.value)


@pytest.mark.parametrize("value, expected", [
    (3, 3), (Int64(2**32 + 5), 5), (2.9, 2), (-2.9, -2), (float("nan"), 0), (1e300, 2**31 - 1),
    (Decimal128("4"), 4), ("7", 0), (None, 0), (True, 0),
])
def test_number_int_is_mongods(value, expected):
    assert _number_int(value) == expected


def test_root_names_the_chunks_collection():
    assert chunks_namespace({"filemd5": 1}) == "fs.chunks"
    assert chunks_namespace({"filemd5": 1, "root": ""}) == "fs.chunks"
    assert chunks_namespace({"filemd5": 1, "root": "photos"}) == "photos.chunks"
    with pytest.raises(MongoError) as info:
        chunks_namespace({"filemd5": 1, "root": 5})
    assert info.value.code == 73
