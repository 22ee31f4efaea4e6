"""The fsync lock holds back an aggregate that writes (a final ``$out`` or ``$merge``, its explain too)
as it holds back the write commands, and lets every other aggregate read on (the writing aggregate
waits in its handler, once parsed: commands/aggregate.py)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

_READS = st.sampled_from([{"$match": {"a": {"$gte": 0}}}, {"$project": {"a": 1}}, {"$sort": {"a": 1}},
                          {"$addFields": {"b": 1}}, {"$limit": 5}])
_WRITES = st.sampled_from([None, {"$out": "copy_out"}, {"$merge": {"into": "copy_merge"}},
                           {"$merge": {"into": {"db": "fsync_agg_other", "coll": "m"}}}])


@pytest.fixture
def locked(start_server):
    srv = start_server()
    client = srv.client()
    client.fsync_agg.src.insert_many([{"a": i} for i in range(10)])
    client.admin.command({"fsync": 1, "lock": True})
    try:
        yield client
    finally:
        client.admin.command("fsyncUnlock")
        client.close()


@pytest.mark.slow
@pytest.mark.commands("fsync", "fsyncUnlock", "aggregate")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reads=st.lists(_READS, max_size=3), write=_WRITES, explain=st.booleans())
def test_under_the_fsync_lock_a_writing_aggregate_waits_and_a_reading_one_runs(locked, reads, write, explain):
    pipeline = [*reads, *([write] if write is not None else [])]
    cmd: dict = {"aggregate": "src", "pipeline": pipeline, "maxTimeMS": 100}
    if explain:
        cmd["explain"] = True
    else:
        cmd["cursor"] = {}
    if write is None:
        reply = locked.fsync_agg.command(cmd)
        assert reply["ok"] == 1.0
        return
    with pytest.raises(OperationFailure) as err:
        locked.fsync_agg.command(cmd)
    assert err.value.code == 50  # MaxTimeMSExpired: it waited for the lock
    assert "copy_out" not in locked.fsync_agg.list_collection_names()
