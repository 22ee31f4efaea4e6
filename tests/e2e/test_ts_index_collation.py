"""Index collations (issue 25 item 6; mongod's jstests/core/timeseries/timeseries_index_collation.js):
an index created without a collation inherits the collection's default — listIndexes shows it, fully
expanded, on the view and on the buckets collection — and one created with its own collation orders by
it (a hinted read returns the buckets in that index's order), on time-series and regular collections
alike; an explicit simple collation stores none."""

import datetime as dt

import pytest

NUMERIC = {"locale": "en_US", "numericOrdering": True}
LEXICAL = {"locale": "en_US", "numericOrdering": False}
METAS = ["8", "16", "64", "128"]
T0 = dt.datetime(2024, 1, 1)


def _numeric_ts(db):
    db.create_collection("ts", timeseries={"timeField": "tm", "metaField": "mm"}, collation=NUMERIC)
    db.ts.insert_many([{"_id": i, "tm": T0, "mm": m} for i, m in enumerate(METAS)])
    assert db["system.buckets.ts"].count_documents({}) == len(METAS)  # one bucket per meta
    return db.ts


def _by_name(coll):
    return {ix["name"]: ix for ix in coll.list_indexes()}


@pytest.mark.commands("createIndexes", "find", "listIndexes")
def test_time_series_indexes_order_by_their_own_or_the_inherited_collation(db):
    coll = _numeric_ts(db)
    coll.create_index("mm", name="index_numeric")  # the collection's default: numeric
    coll.create_index("mm", name="index_string", collation=LEXICAL)

    assert [d["mm"] for d in coll.find().hint("index_numeric")] == ["8", "16", "64", "128"]
    assert [d["mm"] for d in coll.find().hint("index_string")] == ["128", "16", "64", "8"]

    shown = _by_name(coll)
    assert shown["index_numeric"]["collation"]["numericOrdering"] is True
    assert shown["index_string"]["collation"]["numericOrdering"] is False
    assert shown["mm_1_tm_1"]["collation"]["numericOrdering"] is True  # the default index inherits too
    expanded = shown["index_numeric"]["collation"]
    assert expanded["locale"] == "en_US" and expanded["strength"] == 3 and expanded["version"] == "57.1"

    buckets = _by_name(db["system.buckets.ts"])
    assert buckets["index_numeric"]["collation"] == expanded
    assert "originalSpec" not in buckets["index_numeric"]  # a meta index keeps none (7.0)
    assert buckets["index_string"]["collation"]["numericOrdering"] is False

    # a measurement index keeps its originalSpec, which carries the inherited collation and comes last
    coll.create_index("v", name="index_measurement")
    on_buckets = _by_name(db["system.buckets.ts"])["index_measurement"]
    assert on_buckets["originalSpec"]["collation"] == expanded
    assert list(on_buckets)[-2:] == ["collation", "originalSpec"]


@pytest.mark.commands("createIndexes", "find", "listIndexes")
def test_hinted_read_returns_buckets_in_the_index_order_descending_too(db):
    coll = _numeric_ts(db)
    coll.create_index([("mm", -1)], name="mm_desc", collation=LEXICAL)
    assert [d["mm"] for d in coll.find().hint("mm_desc")] == ["8", "64", "16", "128"]
    assert [d["mm"] for d in coll.find().hint([("mm", -1)])] == ["8", "64", "16", "128"]


@pytest.mark.commands("createIndexes")
def test_creating_the_same_inheriting_index_again_is_a_no_op(db):
    coll = _numeric_ts(db)
    coll.create_index("mm", name="index_numeric")
    reply = db.command("createIndexes", "ts", indexes=[{"key": {"mm": 1}, "name": "index_numeric"}])
    assert reply.get("note") == "all indexes already exist"
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"]


@pytest.mark.commands("createIndexes", "listIndexes")
def test_simple_collations_store_no_collation(db):
    coll = _numeric_ts(db)
    coll.create_index("mm", name="binary", collation={"locale": "simple"})
    assert "collation" not in _by_name(coll)["binary"]
    assert [d["mm"] for d in coll.find().hint("binary")] == ["128", "16", "64", "8"]
    db.create_collection("plain", timeseries={"timeField": "tm", "metaField": "mm"})
    db.plain.create_index("mm", name="m")
    assert all("collation" not in ix for ix in db.plain.list_indexes())


@pytest.mark.commands("createIndexes", "find", "listIndexes")
def test_regular_collection_indexes_order_by_their_own_or_the_inherited_collation(db):
    db.create_collection("r", collation=NUMERIC)
    db.r.insert_many([{"_id": i, "mm": m} for i, m in enumerate(METAS)])
    db.r.create_index("mm", name="index_numeric")
    db.r.create_index("mm", name="index_string", collation=LEXICAL)
    assert [d["mm"] for d in db.r.find().hint("index_numeric")] == ["8", "16", "64", "128"]
    assert [d["mm"] for d in db.r.find().hint("index_string")] == ["128", "16", "64", "8"]
    shown = _by_name(db.r)
    assert shown["index_numeric"]["collation"]["numericOrdering"] is True
    assert shown["index_string"]["collation"]["numericOrdering"] is False
