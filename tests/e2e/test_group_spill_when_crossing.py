"""A $group with allowDiskUse spills when its state crosses internalDocumentSourceGroupMaxMemoryBytes, not a
chunk of documents later: mongod's DocumentSourceGroup checks its memory after every document. Tidemark
checked after each chunk of 1,024 documents, so 200 groups of a 1 KiB key against a 3,000-byte limit
spilled once, with 240 KB in memory. Each spill now holds at most the limit and about one document's
growth, whether the state grows by new groups or by what an accumulator keeps; and the answer is the
one the same $group gives with the default limit (no spill)."""

from __future__ import annotations

import bson
import pytest
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "explain", "setParameter")

PARAM = "internalDocumentSourceGroupMaxMemoryBytes"


def _group_stats(db, group: dict) -> dict:
    reply = db.command("explain", {"aggregate": "c", "pipeline": [{"$group": group}], "cursor": {},
                                   "allowDiskUse": True}, verbosity="executionStats")
    (stats,) = [s for s in reply["stages"] if "$group" in s]
    return stats


def _answer(db, group: dict) -> list[bytes]:
    return sorted(bson.encode(d) for d in db.c.aggregate([{"$group": group}], allowDiskUse=True))


def test_new_groups_spill_as_they_cross_the_limit(client, db):
    db.c.insert_many([{"k": f"{i:04d}" + "k" * 1020} for i in range(200)])
    with server_parameter(client, PARAM, 3000):
        stats = _group_stats(db, {"_id": "$k"})
    # about two groups (1 KiB key and the per-group charge) fit under 3,000 bytes: a spill every two or three
    assert stats["spills"] >= 60, stats
    assert stats["numBytesSpilledEstimate"] <= stats["spills"] * (3000 + 2 * 1300), stats


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=st.integers(1, 40), per_group=st.integers(1, 6), key_size=st.integers(0, 900),
       value_size=st.integers(0, 900), accumulator=st.sampled_from(["$push", "$addToSet", "$last", "$sum"]),
       limit=st.sampled_from([1500, 3000, 8000]))
def test_each_spill_holds_about_the_limit_and_the_answer_is_unchanged(client, db, groups, per_group, key_size,
                                                                     value_size, accumulator, limit):
    db.drop_collection("c")
    # documents of the groups interleaved, each with its own value (so that $addToSet keeps them all)
    db.c.insert_many([{"k": f"{g:03d}" + "k" * key_size, "v": f"{i:03d}{g:03d}" + "v" * value_size}
                      for i in range(per_group) for g in range(groups)])
    group = {"_id": "$k", "a": {accumulator: "$v"}}
    want = _answer(db, group)
    with server_parameter(client, PARAM, limit):
        stats = _group_stats(db, group)
        got = _answer(db, group)
    assert got == want
    growth = 200 + 2 * (64 + key_size + value_size)  # what one document may add: a group, a value kept
    assert stats["numBytesSpilledEstimate"] <= stats["spills"] * (limit + 2 * growth), stats
