"""A find whose blocking sort outgrows the memory limit answers through an index giving the order.

mongod's planner enumerates, beside the plans for the filter, a scan of an index that provides the
sort; its multi-planner drops a candidate that fails in its trial (a blocking sort past
``internalQueryMaxBlockingSortMemoryUsageBytes`` without allowDiskUse: 292), so such a find answers
(sortg.js). The property: with the limit lowered and a filter on indexed fields, a find without
allowDiskUse answers exactly what it answers with allowDiskUse when some plain index gives the sort
order, and fails 292 otherwise (when the blocking sort would outgrow the limit)."""

from __future__ import annotations

import pytest
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find")

LIMIT = 64 * 1024
PAD = "x" * 2000


@pytest.fixture
def big(db, client):
    # 120 documents of 2 KB (240 KB: past the lowered limit once most of them reach the sort)
    db.c.insert_many([{"_id": i, "a": i % 3, "b": (i * 7) % 11, "c": None if i % 2 else i, "p": PAD}
                      for i in range(120)])
    db.c.create_index("a")
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", LIMIT):
        yield db.c


def _run(coll, flt, sort, allow_disk_use):
    try:
        return [d["_id"] for d in coll.find(flt, {"p": 0}, allow_disk_use=allow_disk_use).sort(sort).batch_size(500)]
    except OperationFailure as e:
        return e.code


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=st.sampled_from([{"a": {"$gte": 0}}, {"a": {"$in": [0, 1, 2]}}, {"c": None}, {}]),
       sort=st.sampled_from([[("b", 1), ("_id", 1)], [("b", -1), ("_id", -1)], [("_id", 1)], [("_id", -1)]]),
       sort_index=st.booleans())
def test_a_sort_past_the_memory_limit_uses_an_index_giving_its_order(big, flt, sort, sort_index):
    coll = big
    if sort_index:
        coll.create_index([("b", 1), ("_id", 1)])
    else:
        coll.drop_index([("b", 1), ("_id", 1)]) if "b_1__id_1" in coll.index_information() else None
    expected = _run(coll, flt, sort, True)
    got = _run(coll, flt, sort, False)
    provided = sort[0][0] == "_id" or sort_index
    if provided:
        assert got == expected, (flt, sort)
    else:
        assert got == 292, (flt, sort, got)
