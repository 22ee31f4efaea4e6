"""A time-series read returns its measurements in the same order whether the writer has stored its
buckets yet or not (server/timeseries/scan.py): an in-memory bucket sits where it will sit once stored —
by ``_id`` in a collection scan, by its index entry in an index scan. MongoDB keeps every bucket in its
collection, so its scans never see a difference; here a checkpoint (every ``syncdelay`` seconds) or a
close stores buckets between two reads of a client, and the second read used to put the buckets still
in memory after the stored ones."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

pytestmark = pytest.mark.commands("aggregate", "find", "insert", "delete", "createIndexes")

RAW = CodecOptions(document_class=RawBSONDocument)
T0 = dt.datetime(2024, 3, 1)


def _load(db):
    """An index on the meta field, then series "b" fills a bucket (1,000 measurements, mongod's count limit) from T0 + 1 h and rolls over
    into a second one: the first is closed and stored. Series "a" starts at T0: its bucket's ``_id``
    (and its meta) comes before the stored one's, and it stays in memory. Then the reads, then a direct
    write that stores every bucket, then the same reads."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    ts = db.get_collection("ts", codec_options=RAW)
    ts.create_index([("m", 1)])  # before the writes (an index build stores every bucket)
    ts.insert_many([{"t": T0 + dt.timedelta(hours=1, seconds=i), "m": "b", "v": i} for i in range(1005)])
    ts.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": "a", "v": -i} for i in range(5)])
    return ts


READS = {
    "collection scan": lambda ts: ts.find({}),
    "collection scan, filtered": lambda ts: ts.find({"v": {"$lt": 3}}),
    "aggregate, time window": lambda ts: ts.aggregate([{"$match": {"t": {"$gte": T0}}}]),
    "index scan": lambda ts: ts.find({"m": {"$in": ["a", "b"]}}).hint([("m", 1)]),
    "index scan, reverse": lambda ts: ts.find({"m": {"$in": ["a", "b"]}}).hint([("m", 1)]).sort([("m", -1)]),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_the_order_of_a_read_does_not_depend_on_what_is_stored_yet(db, read):
    ts = _load(db)
    before = [doc.raw for doc in READS[read](ts)]
    ts.delete_many({"_id": "none"})  # a direct write: every bucket of the collection stored
    after = [doc.raw for doc in READS[read](ts)]
    assert len(before) == len(after) > 0
    assert before == after
    metas = [RawBSONDocument(raw)["m"] for raw in after]
    if read.startswith("index scan"):  # the index's order: every "a" before every "b" (after, reversed)
        assert metas == sorted(metas, reverse=read.endswith("reverse"))
    else:  # _id order: the bucket of "a" (starting at T0) first
        assert metas[0] == "a"
