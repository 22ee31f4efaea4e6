"""Per-collection bucket dictionaries (storage/dictionaries.py, tag-4 values): trained on a
collection's first bucket streams, stored in ``_meta``, named by every zstd frame compressed with it;
values written before and after stay readable by every reader, across restarts, compressors and the
compaction; a drop removes the dictionary."""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from storage_helpers import insert_docs
from test_storage_bucket_codec import tsbs_bucket

from tidemark.storage import bucket_codec
from tidemark.storage.bucket_reader import BucketReader
from tidemark.storage.catalog import records_db_name
from tidemark.storage.compression import TAG_BUCKET, ValueCodec
from tidemark.storage.dictionaries import (
    BUCKET_DICT_BASE,
    BUCKET_PREFIX,
    BUCKET_TRAIN_AFTER,
    POOL_PREFIX,
    dict_id_of,
)
from tidemark.storage.engine import open_engine

N = BUCKET_TRAIN_AFTER + 30


def buckets() -> list[dict]:
    out = []
    for i in range(N):
        doc = tsbs_bucket(60, start=dt.datetime(2016, 1, 1) + dt.timedelta(hours=i))
        doc["data"]["measurement"] = {str(j): "cpu" for j in range(60)}
        out.append(doc)
    return out


def stored_values(eng, ns: str) -> list[bytes]:
    with eng.read() as r:
        info = r.get_collection(ns)
        db = eng._published_handle(records_db_name(info.ident))
        return [bytes(v) for _, v in r._txn.cursor(db=db).iternext()]


def test_buckets_get_a_collection_dictionary_and_stay_readable_everywhere(tmp_path):
    dbpath = str(tmp_path / "db")
    docs = buckets()
    eng = open_engine(dbpath, compressor="zstd", compact_on_close=False)
    for start in range(0, N, 16):  # separate groups: training happens between groups
        insert_docs(eng, "db.b", docs[start:start + 16])
    values = stored_values(eng, "db.b")
    assert {v[0] for v in values} == {TAG_BUCKET}
    with eng.read() as r:
        ident = r.get_collection("db.b").ident
    frames = [bucket_codec.frame_dictionary(v[5:]) for v in values]
    assert set(frames[:BUCKET_TRAIN_AFTER]) == {0}
    assert set(frames[BUCKET_TRAIN_AFTER + 16:]) == {BUCKET_DICT_BASE + dict_id_of(ident)}
    # smaller with the dictionary than without
    plain = [len(bucket_codec.encode(bson.encode(d))) for d in docs[-20:]]
    assert sum(len(v) - 5 for v in values[-20:]) < 0.9 * sum(plain)
    with pytest.raises(ValueError, match="dictionary"):
        ValueCodec("zstd").unpack(values[-1])  # a codec that does not know the dictionary refuses
    eng.close()
    raws = [bson.encode(d) for d in docs]
    for compressor, compact in (("none", False), ("snappy", True), ("zstd", False)):
        eng = open_engine(dbpath, compressor=compressor, compact_on_close=compact)
        with eng.read() as r:
            assert [v for _, v in r.scan(r.get_collection("db.b"))] == raws
            opener = r.stored_opener()
        for stored, raw in zip(stored_values(eng, "db.b"), raws, strict=True):
            if stored[0] == TAG_BUCKET:
                reader = opener(stored)
                assert isinstance(reader, BucketReader) and reader.document() == raw
        eng.close()
    eng = open_engine(dbpath)
    with eng.read() as r:
        assert r._txn.get(BUCKET_PREFIX + ident.encode(), db=eng._meta_db) is not None
    eng.write_sync(lambda w: w.drop_collection("db.b"))
    with eng.read() as r:
        assert r._txn.get(BUCKET_PREFIX + ident.encode(), db=eng._meta_db) is None
    eng.close()


def test_no_bucket_dictionary_without_compression(tmp_path):
    eng = open_engine(str(tmp_path / "db"), compressor="none")
    docs = buckets()
    for start in range(0, N, 16):
        insert_docs(eng, "db.b", docs[start:start + 16])
    with eng.read() as r:
        ident = r.get_collection("db.b").ident
        assert r._txn.get(BUCKET_PREFIX + ident.encode(), db=eng._meta_db) is None
    eng.close()


def test_dictionaries_are_stored_packed_and_raw_ones_stored_before_still_read(tmp_path):
    """A trained dictionary is stored as one zstd frame (16 KiB of bucket dictionary: ~2 KB, no
    overflow pages); a database whose dictionary was stored raw (before) reads the same."""
    import zstandard

    dbpath = str(tmp_path / "db")
    docs = buckets()
    eng = open_engine(dbpath, compressor="zstd", compact_on_close=False)
    for start in range(0, N, 16):
        insert_docs(eng, "db.b", docs[start:start + 16])
    with eng.read() as r:
        ident = r.get_collection("db.b").ident
        key = BUCKET_PREFIX + ident.encode()
        stored = bytes(r._txn.get(key, db=eng._meta_db))
    assert stored[:4] == b"\x28\xb5\x2f\xfd" and len(stored) < 4096
    raw = zstandard.ZstdDecompressor().decompress(stored)
    assert zstandard.ZstdCompressionDict(raw).dict_id() == BUCKET_DICT_BASE + dict_id_of(ident)
    eng.write_sync(lambda w: w._txn.put(key, raw, db=eng._meta_db))  # as stored before
    eng.close()
    raws = [bson.encode(d) for d in docs]
    eng = open_engine(dbpath, compressor="zstd", compact_on_close=False)
    with eng.read() as r:
        assert [v for _, v in r.scan(r.get_collection("db.b"))] == raws
    insert_docs(eng, "db.b", [{**docs[0], "_id": bson.ObjectId()}])  # new values use the raw one
    values = stored_values(eng, "db.b")
    assert bucket_codec.frame_dictionary(values[-1][5:]) == BUCKET_DICT_BASE + dict_id_of(ident)
    eng.close()


@pytest.mark.parametrize("data", [b"", b"\x37\xa4\x30\xec" + bytes(range(256)) * 8, b"\x28\xb5\x2f\xfd" * 3])
def test_stored_dictionary_round_trips(data):
    from tidemark.storage.compression import dictionary_of_stored, stored_dictionary

    assert dictionary_of_stored(stored_dictionary(data)) == data


def test_collections_with_pools_get_a_static_pool_code_read_after_a_restart(tmp_path):
    """360-row buckets have pools: the dictionary's training also stores the collection's pool code
    (``bpool:``), later values code their pools with it (stored version 6), every value reads back
    after a restart (the code is loaded with the dictionary) and the drop deletes it."""
    dbpath = str(tmp_path / "db")
    docs = []
    for i in range(BUCKET_TRAIN_AFTER + 8):
        doc = tsbs_bucket(360, start=dt.datetime(2016, 1, 1) + dt.timedelta(hours=i))
        doc["data"]["measurement"] = {str(j): "cpu" for j in range(360)}
        docs.append(doc)
    eng = open_engine(dbpath, compressor="zstd", compact_on_close=False)
    for start in range(0, len(docs), 16):
        insert_docs(eng, "db.b", docs[start:start + 16])
    values = stored_values(eng, "db.b")
    with eng.read() as r:
        ident = r.get_collection("db.b").ident
        assert r._txn.get(POOL_PREFIX + ident.encode(), db=eng._meta_db) is not None
    assert {v[5] for v in values[:BUCKET_TRAIN_AFTER]} == {bucket_codec.FRAMED_VERSION}
    assert {v[5] for v in values[-8:]} == {bucket_codec.STATIC_POOL_VERSION}
    eng.close()
    raws = [bson.encode(d) for d in docs]
    eng = open_engine(dbpath, compressor="zstd", compact_on_close=True)
    with eng.read() as r:
        assert [v for _, v in r.scan(r.get_collection("db.b"))] == raws
        opener = r.stored_opener()
        for stored, raw in zip(stored_values(eng, "db.b"), raws, strict=True):
            reader = opener(stored)
            assert isinstance(reader, BucketReader) and reader.document() == raw
    eng.write_sync(lambda w: w.drop_collection("db.b"))
    with eng.read() as r:
        assert r._txn.get(POOL_PREFIX + ident.encode(), db=eng._meta_db) is None
    eng.close()
