"""Every explain carries ``serverParameters`` (mongod 7.0: explain_common.cpp
generateServerParameters, next to ``serverInfo``; jstests/core/query/explain/explain_server_params.js
requires the section with internalQueryFacetBufferSizeBytes, internalLookupStageIntermediateDocumentMaxSizeBytes,
internalDocumentSourceGroupMaxMemoryBytes, internalQueryMaxBlockingSortMemoryUsageBytes,
internalQueryProhibitBlockingMergeOnMongoS, internalQueryFacetMaxOutputDocSizeBytes,
internalQueryMaxAddToSetBytes and internalQueryFrameworkControl for an aggregate and a find, at
queryPlanner and executionStats verbosity): the query limits in force for the operation.

Tidemark answered ``serverInfo`` only. The test explains each explainable command (find, aggregates
the query layer absorbs and others, ``aggregate`` with ``explain: true``, count, distinct, update,
delete, findAndModify, a time-series read and delete, a missing collection) at each verbosity and
checks the section, and that the two limits a client can set follow setParameter."""

from __future__ import annotations

import datetime

import pytest

pytestmark = pytest.mark.commands("explain", "aggregate", "setParameter")

MIB = 1024 * 1024
VERBOSITIES = ["queryPlanner", "executionStats", "allPlansExecution"]
DEFAULTS = {
    "internalQueryFacetBufferSizeBytes": 100 * MIB,
    "internalQueryFacetMaxOutputDocSizeBytes": 100 * MIB,
    "internalLookupStageIntermediateDocumentMaxSizeBytes": 100 * MIB,
    "internalDocumentSourceGroupMaxMemoryBytes": 100 * MIB,
    "internalQueryMaxBlockingSortMemoryUsageBytes": 100 * MIB,
    "internalQueryProhibitBlockingMergeOnMongoS": 0,
    "internalQueryMaxAddToSetBytes": 100 * MIB,
    "internalDocumentSourceSetWindowFieldsMaxMemoryBytes": 100 * MIB,
    "internalQueryFrameworkControl": "trySbeRestricted",
}
EXPLAINED = {
    "find": {"find": "c", "filter": {"x": 1}},
    "find_missing_collection": {"find": "missing", "filter": {"x": 1}},
    "aggregate_absorbed": {"aggregate": "c", "pipeline": [{"$match": {"x": 1}}], "cursor": {}},
    "aggregate_group": {"aggregate": "c", "pipeline": [{"$match": {"x": 1}}, {"$group": {"_id": "$y"}}],
                        "cursor": {}},
    "aggregate_collectionless": {"aggregate": 1, "pipeline": [{"$documents": [{"a": 1}]}], "cursor": {}},
    "count": {"count": "c", "query": {"x": {"$gt": 0}}},
    "distinct": {"distinct": "c", "key": "y"},
    "update": {"update": "c", "updates": [{"q": {"x": 1}, "u": {"$set": {"y": 2}}}]},
    "delete": {"delete": "c", "deletes": [{"q": {"x": 1}, "limit": 0}]},
    "findAndModify": {"findAndModify": "c", "query": {"x": 1}, "update": {"$inc": {"y": 1}}},
    "timeseries_aggregate": {"aggregate": "ts", "pipeline": [{"$match": {"m": 1}}], "cursor": {}},
    "timeseries_delete": {"delete": "ts", "deletes": [{"q": {"m": 1}, "limit": 0}]},
}


@pytest.fixture
def explained_db(db):
    db.c.insert_many([{"x": i, "y": i % 3} for i in range(5)])
    db.c.create_index("x")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "m": 1, "v": 1})
    return db


@pytest.mark.parametrize("verbosity", VERBOSITIES)
@pytest.mark.parametrize("name", sorted(EXPLAINED))
def test_every_explain_has_the_server_parameters(explained_db, name, verbosity):
    reply = explained_db.command({"explain": EXPLAINED[name], "verbosity": verbosity})
    assert reply["serverParameters"] == DEFAULTS, reply
    assert list(reply["serverInfo"]) == ["host", "port", "version", "gitVersion"]


def test_aggregate_explain_true_has_the_server_parameters(explained_db):
    reply = explained_db.command({"aggregate": "c", "pipeline": [{"$sort": {"y": 1}}], "explain": True})
    assert reply["serverParameters"] == DEFAULTS, reply


@pytest.mark.parametrize("parameter", ["internalDocumentSourceGroupMaxMemoryBytes",
                                       "internalQueryMaxBlockingSortMemoryUsageBytes"])
def test_settable_limits_show_the_value_in_force(explained_db, parameter):
    admin = explained_db.client.admin
    try:
        admin.command({"setParameter": 1, parameter: 12345678})
        reply = explained_db.command({"explain": EXPLAINED["aggregate_group"], "verbosity": "queryPlanner"})
        assert reply["serverParameters"] == {**DEFAULTS, parameter: 12345678}
    finally:
        admin.command({"setParameter": 1, parameter: 100 * MIB})
