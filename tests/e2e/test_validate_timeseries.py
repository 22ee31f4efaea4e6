"""validate on a time-series collection validates its buckets collection (mongod 6.2+) instead of
answering 166 (the checks of each bucket: test_validate_checks.py)."""

from __future__ import annotations

import datetime

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("validate", "create", "insert")


@pytest.mark.slow
def test_validate_on_a_time_series_collection_checks_its_buckets(start_server):
    server = start_server()
    client = server.client()
    db = client.t
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": base + datetime.timedelta(minutes=i), "m": i % 3, "v": i} for i in range(30)])
    client.close()
    server.restart()  # a restart closes the open buckets: they are now stored records
    db = server.client().t
    report = db.command("validate", "ts")
    assert report["ns"] == "t.system.buckets.ts" and report["valid"] is True
    assert report["nrecords"] == 3 and report["nNonCompliantDocuments"] == 0 and report["warnings"] == []
    assert db.command("validate", "system.buckets.ts")["nrecords"] == 3


def test_validate_on_a_plain_view_is_still_166(db):
    db.c.insert_one({})
    db.command("create", "v", viewOn="c", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        db.command("validate", "v")
    assert e.value.code == 166
