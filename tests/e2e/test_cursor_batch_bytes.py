"""A getMore batch of many small documents fits in one reply: the batch's size counts each document's
array element whole (type byte, index key, NUL), as mongod's builder does. Counting the documents alone,
~40,000 documents of ~400 bytes (a TSBS high-cpu query over every host) filled 16 MiB - 64 KiB with
~280 KB of keys on top, and the reply failed with 10334 BSONObjectTooLarge."""

from __future__ import annotations

import pytest
from bson.raw_bson import RawBSONDocument

pytestmark = pytest.mark.commands("aggregate", "find", "getMore", "insert")


def test_a_batch_of_many_small_documents_fits_in_one_reply(db):
    pad = "x" * 960
    db["c"].insert_many([{"_id": i, "pad": pad} for i in range(18_000)])  # ~17.6 MB, ~1 KB each
    raw = db.get_collection("c", codec_options=db.codec_options.with_options(document_class=RawBSONDocument))
    for cursor in (raw.find({}, batch_size=0), raw.aggregate([{"$match": {}}])):
        seen = 0
        for doc in cursor:
            assert doc["_id"] == seen
            seen += 1
        assert seen == 18_000
