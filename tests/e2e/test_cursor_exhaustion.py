"""When a cursor is reported exhausted (id 0), as mongod 7.0 decides it.

mongod stops drawing at a full batch and keeps the cursor unless its plan executor knows it has no
more (``shouldSaveCursor`` / ``shouldSaveCursorGetMore``: ``!exec->isEOF()``). A collection or index
scan, a blocking sort's output and an aggregate's pipeline learn their end only by drawing past it,
so a batch that ends exactly at the last document leaves the cursor open and the next getMore answers
an empty batch with id 0; a LIMIT stage that is spent, an IDHACK lookup that found its document, the
EOF plan of a missing collection and the queued list of listIndexes / listCollections know at once. A
first batch of 0 draws nothing: the cursor is open (but for the EOF plan) and the read's errors come
with the first getMore (aggregation/bugs/server5932.js).

Found by pymongoarrow's own test suite (``test_find_multiple_batches``: four documents drawn two at a
time take two getMores); the property below checks the whole family of sizes against a model of
mongod's rule.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import monitoring
from pymongo.errors import OperationFailure

CURSOR_NOT_FOUND = 43


def _drain(db, first: dict, getmore_batch: int | None) -> list[tuple[int, bool]]:
    """(documents in the batch, cursor still open) of the first reply and every getMore after it."""
    reply = db.command(first)
    cursor = reply["cursor"]
    batches = [(len(cursor["firstBatch"]), cursor["id"] != 0)]
    name = first.get("find") or first.get("aggregate") or first.get("listIndexes") or first.get("listCollections")
    while cursor["id"]:
        more = {"getMore": cursor["id"], "collection": name if isinstance(name, str) else "$cmd.listCollections"}
        if getmore_batch is not None:
            more["batchSize"] = getmore_batch
        cursor = db.command(more)["cursor"]
        batches.append((len(cursor["nextBatch"]), cursor["id"] != 0))
        assert len(batches) < 100
    return batches


def _expected(available: int, first: int | None, later: int | None, knows_after: int | None) -> list[tuple[int, bool]]:
    """mongod's batches over ``available`` documents: each batch full by count stops there; the cursor
    closes on a batch that ran out before it was full, or once ``knows_after`` documents were returned
    (a plan that knows its end)."""
    out: list[tuple[int, bool]] = []
    returned = 0
    size = 101 if first is None else first
    while True:
        n = min(size, available - returned) if size is not None else available - returned
        returned += n
        ran_out = size is None or n < size
        knows = knows_after is not None and returned >= knows_after
        out.append((n, not (ran_out or knows)))
        if ran_out or knows:
            return out
        size = later


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_docs=st.integers(0, 9), first=st.one_of(st.none(), st.integers(0, 5)),
       later=st.one_of(st.none(), st.integers(1, 5)), limit=st.integers(0, 6), sort=st.booleans(),
       indexed=st.booleans(), command=st.sampled_from(["find", "aggregate"]))
def test_batches_end_as_mongod_decides(db, n_docs, first, later, limit, sort, indexed, command):
    db.c.drop()
    if n_docs:
        db.c.insert_many([{"_id": i, "a": i % 3} for i in range(n_docs)])
    else:
        db.create_collection("c")
    filt = {"a": {"$gte": 0}} if indexed else {}
    if indexed:
        db.c.create_index("a")
    if command == "find":
        cmd: dict = {"find": "c", "filter": filt}
        if sort:
            cmd["sort"] = {"a": -1, "_id": 1}
        if limit:
            cmd["limit"] = limit
        if first is not None:
            cmd["batchSize"] = first
        # mongod's find: a LIMIT stage knows when it is spent
        knows_after = limit or None
        available = min(n_docs, limit) if limit else n_docs
    else:
        pipeline: list[dict] = [{"$match": filt}]
        if sort:
            pipeline.append({"$sort": {"a": -1, "_id": 1}})
            # (a $limit after a $sort is the sort's own top-k limit in mongod, which draws to learn its
            # end; one alone may be pushed into the query layer's LIMIT stage, left out here)
            if limit:
                pipeline.append({"$limit": limit})
        else:
            limit = 0
        cmd = {"aggregate": "c", "pipeline": pipeline, "cursor": {} if first is None else {"batchSize": first}}
        knows_after = None  # an aggregate's pipeline learns its end only by drawing past it
        available = min(n_docs, limit) if limit else n_docs
    assert _drain(db, cmd, later) == _expected(available, first, later, knows_after)


def test_four_documents_two_at_a_time_take_two_getmores(db):
    """pymongoarrow's test_find_multiple_batches: pymongo's find with batch_size 2 over four documents
    sends two getMores, the second answering nothing."""
    db.c.insert_many([{"_id": i} for i in range(4)])
    started: list[str] = []

    class Listener(monitoring.CommandListener):
        def started(self, event):
            started.append(event.command_name)

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    from pymongo import MongoClient

    client = MongoClient(db.client.address[0], db.client.address[1], event_listeners=[Listener()])
    try:
        assert len(list(client[db.name].c.find({}, batch_size=2))) == 4
    finally:
        client.close()
    assert started.count("getMore") == 2


def test_an_idhack_lookup_knows_its_end(db):
    """find {_id: v} (mongod's IDHACK stage) is done once it returned its document; {_id: {$gte: v}}
    (an index scan) is not, and neither is the same lookup with a skip."""
    db.c.insert_many([{"_id": i} for i in range(3)])
    assert _drain(db, {"find": "c", "filter": {"_id": 1}, "batchSize": 1}, None) == [(1, False)]
    assert _drain(db, {"find": "c", "filter": {"_id": {"$gte": 2}}, "batchSize": 1}, None) == [(1, True), (0, False)]
    assert _drain(db, {"find": "c", "filter": {"_id": 1}, "skip": 0, "batchSize": 1, "limit": 5},
                  None) == [(1, False)]
    # a document value is looked up too; an operator document is a query
    db.c.insert_one({"_id": {"x": 1}})
    assert _drain(db, {"find": "c", "filter": {"_id": {"x": 1}}, "batchSize": 1}, None) == [(1, False)]
    assert _drain(db, {"find": "c", "filter": {"_id": {"$eq": 1}}, "batchSize": 1}, None) == [(1, True), (0, False)]


def test_a_missing_collection_is_the_eof_plan(db):
    """A find on a missing collection runs mongod's EOF plan: no cursor even for a first batch of 0,
    and explain shows the EOF stage alone (no LIMIT / SKIP / PROJECTION over it)."""
    reply = db.command({"find": "missing", "batchSize": 0})
    assert reply["cursor"]["id"] == 0 and reply["cursor"]["firstBatch"] == []
    plan = db.command({"explain": {"find": "missing", "filter": {"a": 1}, "limit": 2, "skip": 1,
                                   "projection": {"a": 1}}})["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "EOF"
    # an aggregate there is a pipeline: its empty first batch keeps a cursor, as mongod's does
    reply = db.command({"aggregate": "missing", "pipeline": [], "cursor": {"batchSize": 0}})
    assert reply["cursor"]["id"] != 0
    more = db.command({"getMore": reply["cursor"]["id"], "collection": "missing"})
    assert more["cursor"]["nextBatch"] == [] and more["cursor"]["id"] == 0


def test_an_empty_first_batch_draws_nothing(db):
    """batchSize 0: nothing runs until the first getMore, which then meets the error."""
    db.c.insert_many([{"_id": 1, "s": "x"}])
    reply = db.command({"find": "c", "filter": {"$expr": {"$add": [1, "$s"]}}, "batchSize": 0})
    assert reply["cursor"]["id"] != 0
    with pytest.raises(OperationFailure) as info:
        db.command({"getMore": reply["cursor"]["id"], "collection": "c"})
    assert info.value.code == 14  # TypeMismatch: $add of a string
    with pytest.raises(OperationFailure) as info:
        db.command({"getMore": reply["cursor"]["id"], "collection": "c"})
    assert info.value.code == CURSOR_NOT_FOUND  # the error killed the cursor


def test_listings_know_their_end(db):
    """listIndexes / listCollections answer mongod's queued data: a batch that takes the last entry
    closes the cursor."""
    db.c.create_index("a")
    assert _drain(db, {"listIndexes": "c", "cursor": {"batchSize": 2}}, None) == [(2, False)]
    assert _drain(db, {"listIndexes": "c", "cursor": {"batchSize": 1}}, 1) == [(1, True), (1, False)]
