"""Long update/delete statements do not hold the one writer thread: a multi update or delete runs in
bounded slices (one commit each), so other clients' writes are acknowledged meanwhile, and killOp /
maxTimeMS stop it between slices — answering the interruption with what was applied (mongod fails the
whole batch on an interruption). A document is updated at most once, even when the update moves it
in the index being scanned."""

from __future__ import annotations

import threading
import time

import pytest
from pymongo import ASCENDING, UpdateMany, UpdateOne
from pymongo.errors import OperationFailure

BIG = 200_000


@pytest.fixture(scope="module")
def big(client):
    """A collection of 200,000 small documents (v: 0), shared by the tests of this module."""
    name = "t_sliced_writes_big"
    client.drop_database(name)
    coll = client[name].c
    for start in range(0, BIG, 50_000):
        coll.insert_many([{"_id": i, "v": 0} for i in range(start, start + 50_000)], ordered=False)
    yield coll
    client.drop_database(name)


def _running(client, comment: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = client.admin.command({"currentOp": 1, "command.comment": comment})["inprog"]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no running operation with comment {comment!r}")


class InThread:
    def __init__(self, fn):
        self.result = self.error = None

        def run():
            try:
                self.result = fn()
            except Exception as exc:  # noqa: BLE001 - asserted by the test
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 120) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "still running"


@pytest.mark.slow
@pytest.mark.commands("update", "insert", "currentOp", "killOp")
def test_a_200000_document_update_many_lets_other_writes_through_and_killop_stops_it(client, server, big):
    other = server.client()
    other.t_sliced_writes_other.c.insert_one({"warm": 1})
    update = InThread(lambda: big.update_many({}, {"$inc": {"v": 1}}, comment="big-update"))
    op = _running(client, "big-update")
    assert op["op"] == "update" and op["ns"] == big.full_name
    deadline = time.monotonic() + 60  # a loaded machine may take a while over the first slice
    while _running(client, "big-update")["numYields"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(client, "big-update")["numYields"] > 0  # slices: the writer thread is let go
    # the running statement's plan (a write's facts are one per statement: currentOp once failed on them)
    assert _running(client, "big-update")["planSummary"] == "COLLSCAN"

    started = time.monotonic()
    other.t_sliced_writes_other.c.insert_one({"concurrent": 1})  # acknowledged = committed + fsynced
    latency = time.monotonic() - started
    assert update.thread.is_alive(), "the update ended before the insert was acknowledged"
    assert latency < 2.0, f"a concurrent insert waited {latency:.2f} s for the update_many"

    client.admin.command("killOp", op=op["opid"])
    update.join()
    error = update.error
    assert isinstance(error, OperationFailure) and error.code == 11601, error
    assert error.details["codeName"] == "Interrupted" and error.details["errmsg"] == "operation was interrupted"
    done = error.details["nModified"]
    assert 0 < done < BIG and error.details["n"] == done
    # what the reply says was applied is exactly what was applied, each document at most once
    assert big.count_documents({"v": 1}) == done
    assert big.count_documents({"v": 0}) == BIG - done
    assert big.count_documents({"v": {"$gt": 1}}) == 0
    big.update_many({"v": 1}, {"$set": {"v": 0}})  # reset for the module's other tests
    other.close()


@pytest.mark.slow
@pytest.mark.commands("update", "delete")
def test_max_time_ms_stops_a_long_update_or_delete_between_slices(big):
    db = big.database
    started = time.monotonic()
    with pytest.raises(OperationFailure) as err:
        db.command("update", "c", updates=[{"q": {}, "u": {"$inc": {"v": 1}}, "multi": True}], maxTimeMS=200)
    assert err.value.code == 50 and time.monotonic() - started < 20
    done = err.value.details["nModified"]  # 0 when a loaded machine ran out of time within the first slice
    assert 0 <= done < BIG and big.count_documents({"v": 1}) == done
    big.update_many({"v": 1}, {"$set": {"v": 0}})

    with pytest.raises(OperationFailure) as err:  # a delete the same way: n says what is gone
        db.command("delete", "c", deletes=[{"q": {"_id": {"$gte": BIG // 2}}, "limit": 0}], maxTimeMS=100)
    assert err.value.code == 50
    gone = err.value.details["n"]
    assert "nModified" not in err.value.details
    assert 0 <= gone < BIG // 2 and big.count_documents({}) == BIG - gone
    present = {d["_id"] for d in big.find({"_id": {"$gte": BIG // 2}}, {"_id": 1})}
    big.insert_many([{"_id": i, "v": 0} for i in range(BIG // 2, BIG) if i not in present])
    assert big.count_documents({}) == BIG


@pytest.mark.slow
@pytest.mark.commands("update")
def test_an_upsert_whose_scan_spans_slices_inserts_once(big):
    result = big.update_one({"missing": "here"}, {"$set": {"v": 7}}, upsert=True)  # scans all 200,000
    assert result.upserted_id is not None and result.matched_count == 0
    assert big.count_documents({"missing": "here"}) == 1
    again = big.update_one({"missing": "here"}, {"$inc": {"v": 1}}, upsert=True)
    assert again.upserted_id is None and again.modified_count == 1
    big.delete_one({"missing": "here"})


@pytest.mark.slow
@pytest.mark.commands("update", "delete")
def test_a_multi_update_visits_each_document_once_even_when_it_moves_it_in_the_scanned_index(db):
    coll = db.c
    n = 7_000  # several slices
    coll.create_index([("x", ASCENDING)])
    coll.insert_many([{"_id": i, "x": i, "tags": [i, i + 1]} for i in range(n)])
    coll.create_index([("tags", ASCENDING)])
    # every update moves the document past the end of the index scan: scanned again, skipped
    result = coll.update_many({"x": {"$gte": 0}}, {"$inc": {"x": 1_000_000}}, hint="x_1")
    assert result.matched_count == n and result.modified_count == n
    assert coll.count_documents({"x": {"$gte": 1_000_000, "$lt": 1_000_000 + n}}) == n
    # a multikey index: each document once although it has two entries, across slices
    result = coll.update_many({"tags": {"$gte": 0}}, {"$inc": {"hits": 1}}, hint="tags_1")
    assert result.matched_count == n and coll.count_documents({"hits": 1}) == n
    # an $or of two index ranges (overlapping: a document in both is updated once)
    expected = sum(1 for i in range(n) if i < 3_000 or i + 1 >= 2_000)
    result = coll.update_many({"$or": [{"x": {"$lt": 1_003_000}}, {"tags": {"$gte": 2_000}}]},
                              {"$inc": {"or": 1}})
    assert result.modified_count == expected == n and coll.count_documents({"or": {"$ne": 1}}) == 0
    # a bulk: short, long, short statements, in order
    bulk = coll.bulk_write([UpdateOne({"_id": 0}, {"$set": {"first": 1}}),
                            UpdateMany({"x": {"$gte": 0}}, {"$set": {"all": 1}}),
                            UpdateOne({"_id": 1}, {"$set": {"last": 1}})])
    assert bulk.matched_count == 1 + n + 1
    assert coll.count_documents({"all": 1}) == n and coll.count_documents({"last": 1}) == 1
    deleted = coll.delete_many({"x": {"$gte": 0}})
    assert deleted.deleted_count == n and coll.count_documents({}) == 0


@pytest.mark.slow
@pytest.mark.commands("insert", "killOp")
def test_a_killed_large_insert_answers_11601_with_what_it_inserted(client, db):
    docs = [{"_id": i, "pad": "x" * 100} for i in range(100_000)]  # the most one command may carry
    insert = InThread(lambda: db.command("insert", "c", documents=docs, comment="big-insert"))
    op = _running(client, "big-insert")
    deadline = time.monotonic() + 60
    while db.c.estimated_document_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)  # a first slice is committed
    client.admin.command("killOp", op=op["opid"])
    insert.join()
    error = insert.error
    assert isinstance(error, OperationFailure) and error.code == 11601, error
    assert 0 < error.details["n"] < len(docs) and db.c.count_documents({}) == error.details["n"]
