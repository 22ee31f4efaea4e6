"""A view over a time-series collection: the raw length limit (7749501) counts the read's stages, the
unpack stage mongod puts in front, and the view's own stages, whose shape is checked too — also when
aggregate's parse checked the read's own stages already (``open_read(shape_checked=True)`` checks only
the stages in front of them and the whole length)."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure


@pytest.fixture
def over_ts(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "p"})
    db.ts.insert_many([{"t": datetime.datetime(2024, 1, 1, 0, i), "p": i % 2, "a": i} for i in range(3)])
    return db


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(view_len=st.integers(0, 5), slack=st.integers(-2, 2))
def test_the_whole_length_counts_the_view_and_the_unpack(over_ts, view_len, slack):
    name = f"v{view_len}_{slack + 2}"
    if name not in over_ts.list_collection_names():
        over_ts.create_collection(name, viewOn="ts", pipeline=[{"$match": {}}] * view_len)
    mine = 1000 - view_len - 1 + slack  # the read's stages: whole = mine + view_len + 1
    try:
        docs = list(over_ts[name].aggregate([{"$match": {}}] * mine + [{"$group": {"_id": None, "n": {"$sum": 1}}}]))
    except OperationFailure as exc:
        assert mine + 1 + view_len + 1 > 1000, exc
        assert exc.code == 7749501
    else:
        assert mine + 1 + view_len + 1 <= 1000
        assert docs == [{"_id": None, "n": 3}]


def test_a_malformed_view_stage_is_refused(over_ts):
    over_ts.create_collection("v", viewOn="ts", pipeline=[])
    # a definition no create would take, written straight into system.views
    over_ts["system.views"].update_one({"_id": f"{over_ts.name}.v"},
                                       {"$set": {"pipeline": [{"$match": {}, "$limit": 1}]}})
    with pytest.raises(OperationFailure) as err:
        list(over_ts.v.aggregate([{"$match": {}}]))
    assert err.value.code == 40323
