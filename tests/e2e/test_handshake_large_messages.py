"""Large frames arrive in many TCP chunks; the connection reassembles them (up to the 48 MB limit)."""

from __future__ import annotations

import pytest


@pytest.mark.commands("insert", "count")
def test_near_16mb_document_round_trips(db):
    big = {"_id": 1, "blob": "x" * (16 * 1024 * 1024 - 100)}
    db.big.insert_one(big)
    assert db.command("count", "big")["n"] == 1
    assert len(db.big.find_one({"_id": 1})["blob"]) == len(big["blob"])


@pytest.mark.commands("insert")
def test_insert_batch_split_near_the_48mb_message_limit(db):
    docs = [{"_id": i, "blob": "y" * (4 * 1024 * 1024)} for i in range(14)]  # ~56 MB: pymongo splits it
    result = db.many.insert_many(docs)
    assert len(result.inserted_ids) == 14
    assert db.many.count_documents({}) == 14
