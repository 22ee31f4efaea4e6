"""Real buckets written by the server are stored with the bucket codec (tag 4) and read back as the
exact bytes the server served while they were still open in memory."""

from __future__ import annotations

import datetime as dt

import lmdb
import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from tidemark.storage import bucket_codec
from tidemark.storage.compression import TAG_BUCKET

RAW = CodecOptions(document_class=RawBSONDocument)


def raw_buckets(client) -> list[bytes]:
    coll = client.tsdb.get_collection("system.buckets.cpu", codec_options=RAW)
    return [doc.raw for doc in coll.find({}).sort("_id", 1)]


def load(client) -> None:
    db = client.tsdb
    db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags"})
    db.cpu.create_index([("tags.hostname", 1), ("time", -1)])
    start = dt.datetime(2016, 1, 1)
    docs = []
    for i in range(1500):
        host = i % 3
        doc = {"time": start + dt.timedelta(seconds=10 * (i // 3)), "tags": {"hostname": f"host_{host}"},
               "usage_user": float(i % 100), "usage_system": i * 0.37}
        if i % 7 == 0:
            doc["note"] = {"text": "sparse", "list": [1, 2.5, None]}
        if i % 11 == 0:
            doc["count"] = i
        docs.append(doc)
    db.cpu.insert_many(docs)


@pytest.mark.slow
def test_server_buckets_are_stored_with_the_bucket_tag_and_read_back_byte_exact(start_server):
    server = start_server()
    client = server.client()
    load(client)
    before = raw_buckets(client)
    client.close()
    assert server.terminate() == 0

    server.start()
    client = server.client()
    after = raw_buckets(client)
    client.close()
    assert server.terminate() == 0
    assert after == before
    assert len(after) >= 6  # 3 hosts x at least 2 one-hour buckets
    for raw in after:
        assert bucket_codec.decode(bucket_codec.encode(raw)) == raw

    env = lmdb.open(server.dbpath, readonly=True, lock=False, max_dbs=1000)
    tags = []
    with env.begin() as txn:
        names = [k for k, _ in txn.cursor() if k.startswith(b"r:")]
    for name in names:
        db = env.open_db(name, create=False)
        with env.begin() as txn:
            tags += [bytes(v)[0] for _, v in txn.cursor(db=db)]
    env.close()
    assert tags.count(TAG_BUCKET) == len(after)
