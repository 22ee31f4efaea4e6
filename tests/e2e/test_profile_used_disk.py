"""A read that spills to disk says ``usedDisk: true`` in its profile entry and slow-query line.

mongod 7.0 sets OpDebug's usedDisk from the plan's summary statistics when a stage spilled (a $sort
or a find's sort past internalQueryMaxBlockingSortMemoryUsageBytes, a $group past
internalDocumentSourceGroupMaxMemoryBytes, inside $facet, $lookup and $unionWith sub-pipelines too)
and writes it after hasSortStage in the profile entry (OpDebug::append) and the "Slow query" line
(OpDebug::report); it stays true for the cursor's later getMores; a read that spilled nothing has no
such field (jstests/noPassthrough/use_disk.js). Tidemark never reported it (and its slow-query line
left out hasSortStage).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("profile", "find", "aggregate", "getMore", "setParameter", "getParameter",
                                  "getLog")

SORT = "internalQueryMaxBlockingSortMemoryUsageBytes"
GROUP = "internalDocumentSourceGroupMaxMemoryBytes"
MB100 = 100 * 1024 * 1024


def _limits(client, sort: int = MB100, group: int = MB100) -> None:
    client.admin.command("setParameter", 1, **{SORT: sort})
    client.admin.command("setParameter", 1, **{GROUP: group})


@pytest.fixture
def profiled(db, client):
    db.command("profile", 2)
    yield db
    db.command("profile", 0, slowms=100)
    _limits(client)


def _last(db, **flt) -> dict:
    return next(db.system.profile.find(flt).sort("$natural", -1).limit(1))


LOOKUP_SORT = {"$lookup": {"from": "f", "pipeline": [{"$sort": {"b": 1}}], "as": "same"}}
UNION_GROUP = {"$unionWith": {"coll": "f", "pipeline": [{"$group": {"_id": {"$avg": "$b"}}}]}}
PIPELINES = {
    "sort": ([{"$sort": {"a": 1}}], "sort"),
    "group": ([{"$group": {"_id": "$a"}}], "group"),
    "facet": ([{"$facet": {"x": [{"$sortByCount": "$a"}]}}], "sort"),
    "lookup": ([LOOKUP_SORT], "sort"),
    "lookup then unwind and limit": ([LOOKUP_SORT, {"$unwind": "$same"}, {"$limit": 3}], "sort"),
    "unionWith": ([UNION_GROUP], "group"),
    "match": ([{"$match": {"a": {"$gte": 2}}}], "sort"),
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(PIPELINES)), small=st.booleans())
def test_an_aggregate_reports_used_disk_when_a_stage_spilled(profiled, client, name, small):
    db = profiled
    db.c.drop()
    db.f.drop()
    db.c.insert_many([{"a": i} for i in range(10)])
    db.f.insert_many([{"b": i} for i in range(4, 18, 2)])
    pipeline, parameter = PIPELINES[name]
    _limits(client, **{parameter: 10 if small else MB100})
    list(db.c.aggregate(pipeline, allowDiskUse=True))
    entry = _last(db, **{"command.aggregate": "c"})
    if small and name != "match":
        assert entry["usedDisk"] is True
        keys = list(entry)
        assert keys.index("usedDisk") == keys.index("docsExamined") + 1 + ("hasSortStage" in entry)
    else:
        assert "usedDisk" not in entry


def test_a_find_and_its_getmores_report_used_disk(profiled, client):
    db = profiled
    db.c.insert_many([{"a": i % 7} for i in range(20)])
    _limits(client, sort=10)
    assert len(list(db.c.find().sort("a", 1).batch_size(5))) == 20
    entry = _last(db, **{"command.find": "c"})
    assert entry["hasSortStage"] is True and entry["usedDisk"] is True
    more = list(db.system.profile.find({"op": "getmore"}))
    assert len(more) >= 3 and all(e.get("usedDisk") is True for e in more)
    _limits(client)
    list(db.c.find().sort("a", 1))
    assert "usedDisk" not in _last(db, **{"command.find": "c"})


def test_the_slow_query_line_says_has_sort_stage_and_used_disk(profiled, client):
    db = profiled
    db.command("profile", 0, slowms=-1)
    db.c.insert_many([{"a": i} for i in range(10)])
    _limits(client, sort=10)
    list(db.c.aggregate([{"$sort": {"a": -1}}], comment="spilled", allowDiskUse=True))
    db.command("profile", 0, slowms=100)
    lines = [json.loads(line) for line in client.admin.command("getLog", "global")["log"]]
    attr = [line["attr"] for line in lines if line["id"] == 51803
            and line["attr"]["command"].get("comment") == "spilled"][-1]
    assert attr["hasSortStage"] is True and attr["usedDisk"] is True
    keys = list(attr)
    assert keys.index("hasSortStage") == keys.index("docsExamined") + 1
    assert keys.index("usedDisk") == keys.index("hasSortStage") + 1
