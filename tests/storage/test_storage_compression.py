"""Value compression: tagged per record, readable after switching compressors."""

import datetime
import random

import bson
import pytest
from bson.objectid import ObjectId
from storage_helpers import insert_docs

from tidemark.storage.compression import (
    TAG_RAW,
    TAG_SNAPPY,
    TAG_ZSTD,
    TAG_ZSTD_DICT,
    ValueCodec,
    train_dictionary,
)
from tidemark.storage.dictionaries import PREFIX, TRAIN_AFTER
from tidemark.storage.engine import open_engine


def tsbs_like_doc(i, rng):
    """A TSBS cpu-only row as a document, ~457 bytes of BSON."""
    tags = {"hostname": f"host_{i % 100}", "region": "eu-west-1", "datacenter": "eu-west-1a",
            "rack": str(i % 97), "os": "Ubuntu16.04LTS", "arch": "x64", "team": "NYC",
            "service": str(i % 19), "service_version": "1", "service_environment": "production"}
    fields = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
              "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
    doc = {"_id": ObjectId(), "time": datetime.datetime(2016, 1, 1) + datetime.timedelta(seconds=10 * i),
           "tags": tags}
    doc.update({f: float(rng.randint(0, 100)) for f in fields})
    return doc


@pytest.mark.parametrize("compressor", ["zstd", "snappy", "none"])
def test_pack_unpack_round_trip(compressor):
    codec = ValueCodec(compressor)
    for data in [b"", b"x", b"small doc", b"a" * 1000, bytes(range(256)) * 4]:
        packed = codec.pack(data)
        assert codec.unpack(packed) == data
        assert codec.unpacked_size(packed) == len(data)


def test_small_or_incompressible_values_are_stored_raw():
    codec = ValueCodec("zstd")
    assert codec.pack(b"x" * 40)[0] == TAG_RAW
    assert codec.pack(bytes(random.Random(1).randbytes(500)))[0] == TAG_RAW
    assert codec.pack(b"x" * 500)[0] == TAG_ZSTD
    assert ValueCodec("snappy").pack(b"x" * 500)[0] == TAG_SNAPPY
    assert ValueCodec("none").pack(b"x" * 500)[0] == TAG_RAW


def test_unknown_compressor_is_rejected():
    with pytest.raises(ValueError, match="unknown storage compressor"):
        ValueCodec("lz4")


def test_database_stays_readable_after_switching_compressor(tmp_path):
    dbpath = str(tmp_path / "db")
    rng = random.Random(7)
    written = []
    for n, compressor in enumerate(["zstd", "snappy", "none", "zstd"]):
        eng = open_engine(dbpath, compressor=compressor)
        docs = [tsbs_like_doc(n * 10 + i, rng) for i in range(10)]
        insert_docs(eng, "db.c", docs)
        written += docs
        with eng.read() as r:
            assert [bson.decode(v)["_id"] for _, v in r.scan(r.get_collection("db.c"))] == [
                d["_id"] for d in written]
        eng.close()


def test_zstd_shrinks_tsbs_like_documents():
    rng = random.Random(3)
    docs = [bson.encode(tsbs_like_doc(i, rng)) for i in range(200)]
    raw = sum(map(len, docs)) / len(docs)
    zstd = sum(len(ValueCodec("zstd").pack(d)) for d in docs) / len(docs)
    assert 420 <= raw <= 500
    assert zstd < raw * 0.8


def test_dictionary_packing_round_trips_and_needs_the_dictionary():
    rng = random.Random(5)
    docs = [bson.encode(tsbs_like_doc(i, rng)) for i in range(600)]
    codec = ValueCodec("zstd")
    codec.register_dictionary(7, train_dictionary(docs[:500]))
    packed = codec.pack(docs[550], dict_id=7)
    assert packed[0] == TAG_ZSTD_DICT and len(packed) < len(docs[550]) / 3
    assert codec.unpack(packed) == docs[550]
    assert codec.unpacked_size(packed) == len(docs[550])
    with pytest.raises(ValueError, match="dictionary 7"):
        ValueCodec("none").unpack(packed)


def stored_tags(eng, ns):
    from tidemark.storage.catalog import records_db_name

    with eng.read() as r:
        info = r.get_collection(ns)
        db = eng._published_handle(records_db_name(info.ident))
        return [v[0] for _, v in r._txn.cursor(db=db).iternext()]


def test_collection_trains_a_dictionary_and_stays_readable_everywhere(tmp_path):
    dbpath = str(tmp_path / "db")
    rng = random.Random(9)
    docs = [tsbs_like_doc(i, rng) for i in range(TRAIN_AFTER + 200)]
    eng = open_engine(dbpath, compressor="zstd")
    for start in range(0, TRAIN_AFTER, 100):  # separate groups: training happens between groups
        insert_docs(eng, "db.c", docs[start:start + 100])
    insert_docs(eng, "db.c", docs[TRAIN_AFTER:])
    tags = stored_tags(eng, "db.c")
    assert set(tags[:TRAIN_AFTER]) == {TAG_ZSTD}
    assert set(tags[TRAIN_AFTER:]) == {TAG_ZSTD_DICT}
    eng.close()
    for compressor in ("none", "zstd"):
        eng = open_engine(dbpath, compressor=compressor)
        with eng.read() as r:
            got = [bson.decode(v) for _, v in r.scan(r.get_collection("db.c"))]
            assert [d["_id"] for d in got] == [d["_id"] for d in docs]
            assert r.data_size(r.get_collection("db.c")) == sum(len(bson.encode(d)) for d in docs)
        eng.close()
    eng = open_engine(dbpath)
    with eng.read() as r:
        ident = r.get_collection("db.c").ident.encode()
        assert r._txn.get(PREFIX + ident, db=eng._meta_db) is not None
    eng.write_sync(lambda w: w.drop_collection("db.c"))
    with eng.read() as r:
        assert r._txn.get(PREFIX + ident, db=eng._meta_db) is None
    eng.close()
