"""Every rollover reason (``rules.Rollover``) provoked through the wire: the statistic its member names
is what collStats ``timeseries`` and serverStatus ``bucketCatalog`` report for it.

A provocation per member: a reason added to the enum without one fails
``test_every_rollover_reason_has_a_provocation``."""

from __future__ import annotations

import datetime as dt

import pytest

from tidemark.timeseries.rules import Rollover

pytestmark = pytest.mark.commands("insert", "collStats", "serverStatus", "setParameter", "getParameter")

T0 = dt.datetime(2024, 5, 1, 12, 0)
THRESHOLD = "timeseriesIdleBucketExpiryMemoryUsageThreshold"


def _time_forward(db, client):
    db.c.insert_one({"t": T0, "m": 1})
    db.c.insert_one({"t": T0 + dt.timedelta(hours=2), "m": 1})


def _time_backward(db, client):
    db.c.insert_one({"t": T0, "m": 1})
    db.c.insert_one({"t": T0 - dt.timedelta(minutes=10), "m": 1})


def _count(db, client):
    db.c.insert_many([{"t": T0 + dt.timedelta(milliseconds=i), "m": 1} for i in range(1001)])


def _schema_change(db, client):
    db.c.insert_one({"t": T0, "m": 1, "v": 1.5})
    db.c.insert_one({"t": T0, "m": 1, "v": "text"})


def _size(db, client):  # 128,000 bytes at most once the bucket holds 10 measurements
    db.c.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": 1, "s": "x" * 10_000} for i in range(20)])


def _kept_open(db, client):  # over the size with fewer than 10 measurements: the bucket takes it
    db.c.insert_one({"t": T0, "m": 1, "s": "x"})
    db.c.insert_one({"t": T0, "m": 1, "s": "x" * 200_000})


def _memory_threshold(db, client):
    """Above the threshold each new bucket first closes idle ones (the session server's too, least
    recently used first): new series until one of this collection's idle buckets was closed."""
    previous = client.admin.command("getParameter", 1, **{THRESHOLD: 1})[THRESHOLD]
    client.admin.command("setParameter", 1, **{THRESHOLD: 1})
    try:
        for m in range(200):
            db.c.insert_one({"t": T0, "m": m})
            if db.command("collStats", "c")["timeseries"]["numBucketsClosedDueToMemoryThreshold"]:
                return
    finally:
        client.admin.command("setParameter", 1, **{THRESHOLD: previous})


PROVOKE = {
    Rollover.TIME_FORWARD: _time_forward, Rollover.TIME_BACKWARD: _time_backward, Rollover.COUNT: _count,
    Rollover.SCHEMA_CHANGE: _schema_change, Rollover.SIZE: _size, Rollover.KEPT_OPEN: _kept_open,
    Rollover.MEMORY_THRESHOLD: _memory_threshold,
}


def test_every_rollover_reason_has_a_provocation():
    assert set(PROVOKE) == set(Rollover)


@pytest.mark.parametrize("reason", list(Rollover), ids=lambda r: r.name)
def test_each_rollover_is_reported_under_its_statistic(db, client, reason):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    before = client.admin.command("serverStatus").get("bucketCatalog", {})  # (absent before any insert)
    PROVOKE[reason](db, client)
    stats = db.command("collStats", "c")["timeseries"]
    assert stats[reason.statistic] >= 1, (reason, stats)
    others = {r.statistic: stats[r.statistic] for r in Rollover if r is not reason and stats[r.statistic]}
    assert not others  # each provocation rolls over for its reason only
    after = client.admin.command("serverStatus")["bucketCatalog"]
    assert after[reason.statistic] >= before.get(reason.statistic, 0) + stats[reason.statistic]

