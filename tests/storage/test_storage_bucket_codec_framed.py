"""storage/bucket_codec.py's stored stream versions 5 and 6: ``u8 5 | varint dictionary | a magicless
zstd frame without a dictionary id`` instead of a zstd frame with its 4-byte magic and the dictionary's
id; version 6 the same with a pool coded with the collection's static Huffman code (``PoolCode``).
Values stored before (version 4 and earlier, what main stored, with and without a dictionary) still
read back; version-5/6 values round-trip byte for byte with and without a dictionary and a pool code,
and every reader (``decode``, ``ValueCodec.unpack``, ``BucketReader``) agrees."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import zlib

import bson
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_storage_bucket_codec import tsbs_bucket
from test_storage_bucket_codec_control import control_bucket
from test_storage_bucket_codec_pool import buckets, fixed_bucket, stored_version

from tidemark.storage import bucket_codec
from tidemark.storage.bucket_reader import BucketReader
from tidemark.storage.compression import TAG_BUCKET, ValueCodec

# What main (stream version 4: a zstd frame with its magic) stored for ``control_bucket()``
# (``bucket_codec.encode``, no dictionary), and the SHA-256 of the BSON it must decode to.
OLD_V4_PACKED = base64.b64decode(
    "KLUv/WDJFYwJAAaQOjZQjdIYRASoVgBQRc1GZIaUxc30endsm6wJvS+b27JtsmjTvgFr/9tTQVCu"
    "+56IGSWHabLlTgExACoAKQAT2lYzbQQFKNakCgCg4L7H5lX9SYRBYA2ZCAMEBtElU/Dlx2gsB4tl"
    "T5XtDjAoFBMVkcJNh0AfT4ez0SgkXFIicqX374HkAuQlndX6O84mhf870ya3yQqCfxkHIiMcT347"
    "6y3prAO/Y40Y/M9VOY30V0sas8pppP0xxyopXNg8SjRAFgH7du8dAn08Hc5Gs2/3ShQj+N5ur5mk"
    "citxUdIr1cf+qLer3ti8ZsjvRh8gQAOjQjYDhzzOwRxy3IO5I9EG5EAWnQZSsGRVmoxqtozw4Icw"
    "LLRxATnT6OEFGRGWCLmEIYIcYUckJIjZsyBZ0WZH/SIAdEQFwUlhAgAQBMHeuQRESJ6oQAkKUBEF"
    "yIhAqrZMOwWb602b6qNLvRa7mm6a0VJ241QWxo1jyEvsnpKNuNy1sXS9je6Qe+dmd2u2qdedzFJn"
    "OYkdYorsiyIz1de6vszRaQY0eb4ZrjdJYnNTKyxa6pt7iN1MosTUrk+RM1TtnNzu6nOD1FyuLDdh"
    "QnYN85qmvRw7ObsUbG2tUnOMmzZGTmO25/xsTlpuSustpyWxYsiqi6L47BKuO4mMS6TGJ4W2NNdr"
    "tFhnNiNkyqSzmiNyd4qkpV3ndlvSRrHPlSNdlItqZU3dyFqb1rtTb2ZZ7aGGU9Zo23E94JoOWxqx"
    "5as8ynF2RYoW7owgDboO49NlPZ9U31oJycPagbxElDUediK5+ObWRkYHAADwO893BXHVdSrXRi1n"
    "LBkA4BFlXauTiwSLMif4pl0UanfcDSl2wXaioMtQOi2zpFuSHWHXApNz5GJGepGuTuyTwjkb0yhr"
    "ty2X67SjtYwtx8Zhd8uJSiI7dPWWpj2JoiWQtS0b6S7Excp1pzuja9sy7nZskzSJUgevVmiu7nqe"
    "7qRb4tNsC3QWeJrv1srJmUMxXaJd1vhUPe1Ae4d2Jy3rtkp2jfG4y53SIiVpnO7cUyNNuWZ1fXO4"
    "VrkLrZVddJf4Qhi1fefdLZl7xa6W5dadsWmd2E1pLQPoYh06ANAFL5WznYpwT3cAYpkjbcvmKK3d"
    "c7Urkemt1cLkIPdsI9Y62aVphLWhxLvNO2+Z47u9ks7brHmM+VqywbXn05pt3Nntjbq05GbZmRo5"
    "nKcmnqdbdXFqifM4Ou/s7nrFNni18bwbnVF3S6Oy9Lqbc1Zd59xcR6ZOmQf24k4emdU7ZbetKzhF"
    "HhxtSpfdgMN3VrzdEmHdsbPw4sz0Fs8sOSHJSSjntoeiNRGTnXHpAqRZe/YmufRuuzXvVkuV4ppk"
    "vevubsXSii9s3WLWngixmzTnbXPSLqc1ndWG6DbOjhRFvXa7W5BPZtNVjKtGErKi09DYNel8m2wN"
    "AODOCTXqtc1wjR2k6xywc7OvjA6EmoudS3KTXVeHpOyukkg7dkl1Nw2f/iTVyTSNXO/m6nooqU7Y"
    "V2XO9aQORXfHbmojFrwiJZdGrSyluCqD7c5RVV/PpCZsqqRYyJw7lqU6nK1u2HzibhQuNTJN54Ji"
    "C3odO1jatNf2lJDmrLo+5PQAUO1It1Pm4ouWAXbscOm5u6XHqG2dxa5XS8rWq4zHUmlcm4JIc7uM"
    "XObhnQ7xofFhy1p32W6Z6qV0JImqW6WTfIlYY0xQe/V8WgllW6YTAAAAYHUXOHH4d11zpI3sXrNO"
    "6HabL8nS0vPNk6+zbroRpVexDDmLcskRl3OSYik6eQI4HSgyPqLzdUrTMl/Oy4p8hYsjVa5HT0il"
    "V0++bSfWbNaNRTlUIosIgBMAHMiqdg052SdqQ8/xnCxTrmRtcjf3mgnODd7V+wIHMEWwIitWdVEk"
    "6szlcdScgdow6JgC"
)
OLD_V4_SHA256 = "a90a65b0f6883953eb4da54499f17039e31434baf5c6c418c6da6499f71d597c"

# What main stored (``ValueCodec.pack``, tag 4, stream version 4) for a 360-row ``tsbs_bucket`` with a
# 2 KiB bucket dictionary of id 2**20 + 7 (trained on 64 other buckets' streams; below as stored in
# ``_meta``), and the SHA-256 of the BSON it must decode to: the frame's header names the dictionary.
OLD_V4_DICT_SHA256 = "d5efc1089096583b7058f69ac6bf4a919fad7054bed16a07c61c0c657f1ebabb"
OLD_V4_DICTIONARY = base64.b64decode(
    "KLUv/WAAB9UMADQSN6Qw7AcAEAAJEBDfMDMzs3cKM/F4PB6Px+PP87z31EJBoVAoFAqFQqIoiqIoSil9dOGe53nvAQEAAAAEAAAA"
    "CABfaWQAAQfoAgAECDhrp2cFmyLWyHVzYWdlXzAAAQHoAgACMTIzNDU2Nzg5BJQICt086AIOnAMUFGAJMkkOTwAADEwAPQBkKF4e"
    "HCtgJVQLkd4AAAdrEU2Cs9O1nCRJwfYDY29udHJvbAC4AQAAEHZlcnNpb24AAQNtaW4AzgAAAAl0aW1lAIB3/gFSAfUBAANtYXjw"
    "PjUCSk4x0ADE6v1Rz3CLIf5RCwADbWV0YQAwAAAAAmhvc3RuYW1lAAcAAAACcmVnCmV1LXdlc3QtMQAAA2RhAQAMAQnoAgAACACI"
    "1fujMiDAakRk5DF+BSaVeFoYcoAGtwYDYgeAwMFATUKih5RJHiBZeE2BbHBPDBpNmITDBSYugHGBjguIXODkAiwXiLkAmy3wAo8N"
    "eAWRMHpFAEQxe9z7YA/5uAfzEMd5MHCE8EHhoFvdsFyrqqgt890GY4FGAWcM"
)
OLD_V4_DICT_VALUE = base64.b64decode(
    "BJHeAAAotS/9YwcAEACcIVwFALQGBJQICt086AIOnAMUFGAJMkkOTwAADEwAPQBkKF4eHCtgJVQLkd4AAAdfaWQAaxFNgrPTtZwk"
    "ScIwfDcIUsIvQ25KTmv4bhCkAgAA36kEXoSTSMgAAAAB6AIAAjEyMzQ1Njc4OQABAegCAAIZIDADo5JCdYc4zsEc8riDOQSeGza0"
    "mlOEyv4/l6E+uEobbuPDHCsw2CkKkE/DMMFIioNHMithaYqARNEeR6EgAAXBsRFFVxVFMa19z3/jiHHsEiiCaomJHLk6pH9gqzxv"
    "Va131lq9xt79dtZyj56164fO7LfNvK2MBgeveqXtcGI4S24xWQxmQ9LWamfrxLa3gmljgFbMzbsY5AZzg+rNtZdVyw817rKx2dqN"
    "d0JmsSz22+/SaGSk1mANu9qneWv959SMbtYWVmtbTZlba1krLy81vXZ5G05k3eVM6pkUq8fPE63q2vbsStvempm0J8a97Tzx5qg3"
    "WbeRti3GnLXeft33B9vyzkjmbViy85Wl0ySDZcq2sGvktifPI2cmazRXXrdnZmUTy3V/E1swbVwv8951VcvdXm1KS9Iba7ilTCG6"
    "0p34lKzL0HyBZ6eqZUtqy7RjT9vbFm8F2naY5VUNGszstlYLvJ0mZq/VXHt2osDGyG9uaHvN8paFs3TVuHe3Z0ErmXtvcJvBXOzP"
    "9DqH3l4MNuUyzJi9jAdu95Qn02ys9rwrBUw2bzFnVQ7ntu46sw0QzcRpa+7JGsx0uTH0ybCUE2zzdO3iPF69mRS0rupkWuGw8Q4L"
    "9pO7RjWXWdi72WPe3jvNzJtn1rVt92z/Ri894KZ1NyfTKMvPemvXs+1N27aDrTJdm3vpB7n2hlb2lVD3WoMTg7H33J48ywa11qnt"
    "WdQqs5+aJKtHYt7huvYmHnxNp5UBPVlhWWxf1/gEA49HrmR17WBYXbSbu3tnzpuXKX9pdK5LfLfXWOdG295sWeZirq7GOqAz1Grt"
    "HuxJZZqGZt22Z+/p673WrDFPK482exoBZtmYtjtrl716mtq8DNJeLVvWNt6ctk023kzr7B4ustzetiYtbZt4e7tmZzfPgnaLlryZ"
    "7JZp3f+q9t4yb4FLrXafEn3O/K7dom61QScXI6ezuHVqelvHupSH1qU9wmbzWrXUsndbMyu+iFk/vd179L6uPfeNvZunSe15Y91a"
    "Q+zMurVfXSNaq7WXNEJbTBu83xTcdkLbspRZlPheK69tvjr+hHlpL8trt7FrwOxEZcNpIHOqSkSVNdNufa2mbdp5GcZh06aOStte"
    "Xcs2271rq3YzHCO5JM5hk7tXtudtm724vW2qXbuHsNcar7ybmmOzGVv7yrrygNbexmomWP3WIGb1tJA96b80wOSK2lNy25O3bXe/"
    "rnXVQxstDNpT57I2QpW2l6p3YuDCbH3mNjFbe+nhk3qpU2qTRxlMurbW1UzeeFot9mxOS6qxFotzoyKNTff+mDOLjqDpdaWXZjqP"
    "oe60d5q1tO1tW+ZfrXVuUhuvE13Z2INnb1prfsM2mU3avNpaXlMabzSxXDqPNatZIGPvsrds9qyvF7BtNLWyYgGOtq2GTHPPMm3c"
    "y7aUWBqRB6yJSyaw8czGyF1je5PHW6R8hbPtcduy/NR+39b/AQ=="
)

DICT_ID = bucket_codec.DICT_ID_BASE + 7


def test_a_version_4_value_stored_before_still_decodes_and_reads():
    assert OLD_V4_PACKED[:4] == b"\x28\xb5\x2f\xfd" and stored_version(OLD_V4_PACKED) == bucket_codec.PACKED_VERSION
    doc = bucket_codec.decode(OLD_V4_PACKED)
    assert hashlib.sha256(doc).hexdigest() == OLD_V4_SHA256 and doc == bson.encode(control_bucket())
    assert bucket_codec.frame_dictionary(OLD_V4_PACKED) == 0
    reader = BucketReader(OLD_V4_PACKED)
    assert reader.document() == doc
    assert reader.column_bson("usage_3") == bson.encode(control_bucket()["data"]["usage_3"])


def test_a_version_4_value_with_a_dictionary_stored_before_still_decodes_and_reads():
    codec = ValueCodec("zstd")
    assert codec.register_bucket_dictionary(OLD_V4_DICTIONARY) == DICT_ID
    packed = OLD_V4_DICT_VALUE[5:]
    assert OLD_V4_DICT_VALUE[0] == TAG_BUCKET and bucket_codec.frame_dictionary(packed) == DICT_ID
    doc = codec.unpack(OLD_V4_DICT_VALUE)
    assert hashlib.sha256(doc).hexdigest() == OLD_V4_DICT_SHA256
    zd = codec.bucket_decompressor(packed)
    assert bucket_codec.decompress(packed, zd)[0] == bucket_codec.PACKED_VERSION
    assert bucket_codec.decode(packed, zd) == doc == BucketReader(packed, zd).document()
    # the same document stored now: version 5, shorter by the magic and the dictionary id's bytes
    again = codec.pack(doc, bucket_dict=DICT_ID)
    assert again[5] == bucket_codec.FRAMED_VERSION and again[6] == 8  # varint d = 7 + 1
    assert codec.unpack(again) == doc and bucket_codec.frame_dictionary(again[5:]) == DICT_ID
    assert len(again) <= len(OLD_V4_DICT_VALUE) - 5


def test_version_5_values_name_their_dictionary_in_two_bytes():
    doc = bson.encode(control_bucket())
    packed = bucket_codec.encode(doc)
    assert packed is not None and packed[:2] == bytes((bucket_codec.FRAMED_VERSION, 0))
    assert bucket_codec.frame_dictionary(packed) == 0 and stored_version(packed) == bucket_codec.PACKED_VERSION
    assert bucket_codec.frame_format(packed) == zstandard.FORMAT_ZSTD1_MAGICLESS
    assert bucket_codec.decode(packed) == doc and BucketReader(packed).document() == doc
    assert len(packed) == len(OLD_V4_PACKED) - 2  # the same frame without magic (4 B) behind a 2-byte header


def test_a_dictionary_id_below_the_base_is_refused():
    data = zstandard.ZstdCompressionDict(dictionary_of_trained(5))
    with pytest.raises(ValueError, match="dictionary ids"):
        bucket_codec.make_compressor(data)


def sample_streams(n: int = 360) -> list[bytes]:
    docs = [bson.encode(tsbs_bucket(n, start=dt.datetime(2016, 1, 1) + dt.timedelta(hours=i))) for i in range(64)]
    return [bucket_codec.stream(bucket_codec.encode(d)) for d in docs]


def dictionary_of_trained(dict_id: int) -> bytes:
    return bucket_codec.train_dictionary(sample_streams(60), dict_id)


@pytest.fixture(scope="module")
def dictionaries() -> ValueCodec:
    """Dictionaries of header ids 1 (with a static pool code) and 200 (none: a collection whose
    samples had no pool)."""
    codec = ValueCodec("zstd")
    code = bucket_codec.train_pool_code(sample_streams())
    assert code is not None
    codec.register_pool_code(bucket_codec.DICT_ID_BASE + 1, code)
    for n in (1, 200):  # header varints of one and two bytes
        codec.register_bucket_dictionary(dictionary_of_trained(bucket_codec.DICT_ID_BASE + n))
    return codec


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(buckets())
def test_random_buckets_round_trip_with_and_without_a_dictionary(dictionaries, raw):
    doc = bson.encode(raw)
    for n in (None, 1, 200):
        dict_id = None if n is None else bucket_codec.DICT_ID_BASE + n
        value = dictionaries.pack(doc, bucket_dict=dict_id)
        assert value[0] == TAG_BUCKET
        allowed = (bucket_codec.FRAMED_VERSION, bucket_codec.STATIC_POOL_VERSION) if n == 1 else (
            bucket_codec.FRAMED_VERSION,)
        assert value[5] in allowed
        packed = value[5:]
        assert bucket_codec.frame_dictionary(packed) == (dict_id or 0)
        assert dictionaries.unpack(value) == doc
        zd = dictionaries.bucket_decompressor(packed)
        assert (zd is None) == (dict_id is None)
        reader = BucketReader(packed, zd)
        for name, column in raw["data"].items():
            assert reader.column_bson(name) == bson.encode(column)
        assert reader.document() == doc


def test_tsbs_pools_take_the_static_code_and_need_it_to_read(dictionaries):
    dict_id = bucket_codec.DICT_ID_BASE + 1
    doc = bson.encode(tsbs_bucket(360, start=dt.datetime(2016, 2, 1)))
    value = dictionaries.pack(doc, bucket_dict=dict_id)
    assert value[5] == bucket_codec.STATIC_POOL_VERSION and dictionaries.unpack(value) == doc
    packed = value[5:]
    stream = bucket_codec.decompress(packed, dictionaries.bucket_decompressor(packed))
    assert bucket_codec._unpool(stream) == bucket_codec.encode_raw(doc)
    # the same stream with the pool's own deflate block (version 5) is longer
    own = ValueCodec("zstd")
    own.register_bucket_dictionary(dictionaries._bucket_dicts[dict_id].as_bytes())  # the same dictionary
    dynamic = own.pack(doc, bucket_dict=dict_id)
    assert dynamic[5] == bucket_codec.FRAMED_VERSION and own.unpack(dynamic) == doc
    assert len(value) < len(dynamic)
    with pytest.raises(ValueError, match="pool code"):
        own.unpack(value)  # a codec without the collection's pool code refuses


def test_a_pool_the_static_code_does_not_suit_keeps_its_own_tree(dictionaries):
    raw = fixed_bucket(360)
    for name in list(raw["data"])[3:]:
        raw["data"][name] = {k: 7.0 for k in raw["data"][name]}  # constant gauges: all-zero deltas
    doc = bson.encode(raw)
    value = dictionaries.pack(doc, bucket_dict=bucket_codec.DICT_ID_BASE + 1)
    assert value[5] == bucket_codec.FRAMED_VERSION and dictionaries.unpack(value) == doc


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=3000), min_size=1, max_size=4), st.binary(max_size=5000),
       st.sampled_from([3, 4]))
def test_pool_codes_give_deflate_blocks_zlib_reads(samples, values, version):
    """Whatever the training pools' frequencies, the code codes every byte value: ``encode`` is,
    behind the header's whole bytes, a deflate block of exactly ``values``."""
    streams = []
    for sample in samples:
        co = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_HUFFMAN_ONLY)
        block = co.compress(sample) + co.flush()
        stream = bytearray((version,))
        bucket_codec._put_varint(stream, len(block))
        streams.append(bytes(stream) + b"rest" + block)
    stored = bucket_codec.train_pool_code(streams)
    assert stored is not None
    code = bucket_codec.PoolCode(stored)
    coded = code.encode(values)
    stream = bytearray((version,))
    bucket_codec._put_varint(stream, len(coded))
    whole = code.whole(bytes(stream) + b"rest" + coded)
    size, pos = bucket_codec._get_varint(whole, 1)
    assert whole[pos:len(whole) - size] == b"rest"
    assert zlib.decompress(whole[len(whole) - size:], -15) == values


def test_no_pool_code_without_pools():
    assert bucket_codec.train_pool_code(sample_streams(60)) is None  # 600 small integers: never pooled
    for stored in (b"\x03\x00\x03", b"\x03\x00\x05", b"\x10\x00\xff\xff"):  # fixed Huffman, cut short
        with pytest.raises(ValueError):
            bucket_codec.PoolCode(stored)
