"""A full disk answers mongod's 14031 OutOfDiskSpace wherever storage meets it — a commit, an index build, a
time-series journal append, map growth — never 8 UnknownError nor 1 InternalError, and nothing of the
failed write is applied. Failures are injected by storage (``failStorageCommitsForTest: {times, errno, at}``,
storage/faults.py): no root, tmpfs or full device needed."""

import datetime as dt
import errno

import pytest
from pymongo.errors import PyMongoError

pytestmark = [pytest.mark.commands("insert", "createIndexes", "setParameter")]


def fail_next(client, times, at, kind="ENOSPC"):
    client.admin.command("setParameter", 1, failStorageCommitsForTest={"times": times, "errno": kind, "at": at})


def expect_out_of_disk_space(fn):
    with pytest.raises(PyMongoError) as info:
        fn()
    details = getattr(info.value, "details", None) or {}
    assert getattr(info.value, "code", None) == 14031, info.value
    assert details.get("codeName") == "OutOfDiskSpace" or "OutOfDiskSpace" in str(details), details


@pytest.fixture
def client(start_server):
    proc = start_server(params={"enableTestCommands": 1})
    with proc.client(retryWrites=False) as client:
        yield client


def test_a_commit_on_a_full_disk_answers_out_of_disk_space(client):
    fail_next(client, 1, "commit")
    expect_out_of_disk_space(lambda: client.db.c.insert_one({"_id": 1}))
    assert client.db.c.count_documents({}) == 0
    client.db.c.insert_one({"_id": 1})
    assert client.db.c.count_documents({}) == 1


def test_an_index_build_on_a_full_disk_answers_out_of_disk_space_and_leaves_no_index(client):
    client.db.c.insert_many([{"a": i} for i in range(10)])
    fail_next(client, 1, "index")
    expect_out_of_disk_space(lambda: client.db.c.create_index("a"))
    assert [ix["name"] for ix in client.db.c.list_indexes()] == ["_id_"]
    client.db.c.create_index("a")
    assert [ix["name"] for ix in client.db.c.list_indexes()] == ["_id_", "a_1"]


def test_a_time_series_journal_append_on_a_full_disk_answers_out_of_disk_space(client):
    client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    t0 = dt.datetime(2024, 1, 1)
    client.db.ts.insert_one({"t": t0, "m": 1, "v": 0})  # an open bucket: later inserts append to its journal
    fail_next(client, 1, "journal")
    expect_out_of_disk_space(lambda: client.db.ts.insert_one({"t": t0 + dt.timedelta(seconds=1), "m": 1, "v": 1}))
    assert [d["v"] for d in client.db.ts.find()] == [0]
    client.db.ts.insert_one({"t": t0 + dt.timedelta(seconds=2), "m": 1, "v": 2})
    assert sorted(d["v"] for d in client.db.ts.find()) == [0, 2]


@pytest.mark.slow
def test_eio_still_answers_unknown_error(client):
    fail_next(client, 1, "commit", kind="EIO")
    with pytest.raises(PyMongoError) as info:
        client.db.c.insert_one({"_id": 1})
    assert info.value.code == 8


def test_a_full_disk_outside_the_engine_answers_out_of_disk_space():
    """E.g. a ``$sort`` spilling to ``<dbpath>/_tmp`` when the disk is full: dispatch maps the OSError."""
    from tidemark.dispatch import error_reply

    reply = error_reply(OSError(errno.ENOSPC, "No space left on device"))
    assert (reply["code"], reply["codeName"]) == (14031, "OutOfDiskSpace")
    assert "No space left on device" in reply["errmsg"]
