"""The buckets index a time-series read chooses is remembered per shape (``view._CHOSEN``: the indexes'
catalog version, the time field, which paths the bounds bound and whether with points), with whether the
choice reads only that: reads of one shape with other values each get their own answer and index
accesses ($indexStats), and an index created, hidden or dropped changes the next read's choice."""

import datetime as dt
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T0 = dt.datetime(2024, 1, 1)
PIPELINE_GROUP = {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "v": {"$max": "$v"}}}


def _ts(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    coll = db.ts
    coll.insert_many([{"t": T0 + dt.timedelta(minutes=7 * i + h), "m": {"h": f"h{h}"}, "v": i * 10 + h}
                      for i in range(40) for h in range(4)])
    return coll


def _pipeline(host, lo, minutes):
    return [{"$match": {"t": {"$gte": T0 + dt.timedelta(minutes=lo),
                              "$lt": T0 + dt.timedelta(minutes=lo + minutes)}, "m.h": {"$in": [host]}}},
            PIPELINE_GROUP, {"$sort": {"_id": 1}}]


def _ops(coll, name):
    return {d["name"]: d["accesses"]["ops"] for d in coll.aggregate([{"$indexStats": {}}])}[name]


def _plan_index(db, pipeline):
    """The name of the buckets index the read scans (None: the clustered scan)."""
    out = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}})
    found = re.findall(r"'indexName': '([^']*)'", repr(out))
    return found[0] if found else None


@pytest.mark.commands("aggregate", "createIndexes")
def test_reads_of_one_shape_each_answer_for_their_own_values(db):
    coll = _ts(db)
    coll.create_index([("m.h", 1), ("t", -1)], name="h_t")

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
    @given(host=st.sampled_from(["h0", "h1", "h2", "h3", "h9"]), lo=st.integers(-30, 300),
           minutes=st.integers(1, 120))
    def check(host, lo, minutes):
        before = _ops(coll, "h_t")
        got = list(coll.aggregate(_pipeline(host, lo, minutes)))
        assert _ops(coll, "h_t") == before + 1  # this read's own access
        # the answer from the collection scan (no index chosen)
        want = list(coll.aggregate(_pipeline(host, lo, minutes), hint={"$natural": 1}))
        assert got == want

    check()


@pytest.mark.commands("aggregate", "createIndexes", "dropIndexes", "collMod")
def test_index_ddl_changes_the_next_reads_choice(db):
    coll = _ts(db)
    pipeline = _pipeline("h1", 0, 60)
    want = list(coll.aggregate(pipeline, hint={"$natural": 1}))
    assert list(coll.aggregate(pipeline)) == want
    default = _plan_index(db, pipeline)
    assert default is None  # no index on the meta field yet: the clustered scan
    coll.create_index([("m.h", 1), ("t", 1)], name="h_t")
    assert list(coll.aggregate(pipeline)) == want
    assert _ops(coll, "h_t") == 1
    assert _plan_index(db, pipeline) == "h_t"  # bounds two paths of it with points: the better one
    db.command("collMod", "ts", index={"name": "h_t", "hidden": True})
    assert list(coll.aggregate(pipeline)) == want
    assert _plan_index(db, pipeline) == default  # hidden: not chosen
    db.command("collMod", "ts", index={"name": "h_t", "hidden": False})
    assert _plan_index(db, pipeline) == "h_t"
    coll.drop_index("h_t")
    assert list(coll.aggregate(pipeline)) == want
    assert _plan_index(db, pipeline) == default
