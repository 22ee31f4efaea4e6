"""$out with a ``timeseries`` option writes a time-series collection, as mongod 7.0.3+ does
(jstests/core/timeseries/timeseries_out_non_sharded.js): created when absent, replaced (options, TTL and
indexes kept) when it exists, refused with 7406103 / 7268700 / 7268703 / 40415."""

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate")

BASE = dt.datetime(2024, 1, 1)
TEN_YEARS = 10 * 365 * 86400


@pytest.fixture
def src(db):
    db.src.insert_many([{"time": BASE + dt.timedelta(minutes=i), "tags": {"host": f"h{i % 3}"}, "v": i}
                        for i in range(30)])
    return db.src


def out(coll, target, **ts):
    return list(coll.aggregate([{"$project": {"_id": 0}}, {"$out": {"db": coll.database.name, "coll": target,
                                                                      "timeseries": ts}}]))


def info(db, name):
    return next(c for c in db.list_collections() if c["name"] == name)


def failure(coll, pipeline):
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(pipeline))
    return e.value


def test_out_with_timeseries_creates_a_time_series_collection(db, src):
    assert out(src, "ts", timeField="time", metaField="tags") == []
    entry = info(db, "ts")
    assert entry["type"] == "timeseries"
    assert entry["options"]["timeseries"]["timeField"] == "time"
    assert entry["options"]["timeseries"]["metaField"] == "tags"
    assert sorted(d["v"] for d in db.ts.find()) == list(range(30))
    assert db.ts.count_documents({"tags.host": "h1"}) == 10
    assert db["system.buckets.ts"].count_documents({}) >= 3          # stored as buckets
    assert db.list_collection_names().count("ts") == 1
    assert not [n for n in db.list_collection_names() if n.startswith("tmp.agg_out")]


def test_out_replaces_an_existing_time_series_collection_keeping_options_and_indexes(db, src):
    out(src, "ts", timeField="time", metaField="tags")
    # a TTL the 2024 measurements outlive: the suite's TTL monitor runs every second and must not empty
    # the collection between the $out and the reads below
    db.command("collMod", "ts", expireAfterSeconds=TEN_YEARS)
    db.ts.create_index("v")
    list(src.aggregate([{"$match": {"v": {"$lt": 5}}}, {"$project": {"_id": 0}}, {"$out": "ts"}]))
    assert sorted(d["v"] for d in db.ts.find()) == [0, 1, 2, 3, 4]
    entry = info(db, "ts")
    assert entry["type"] == "timeseries" and entry["options"]["expireAfterSeconds"] == TEN_YEARS
    assert "v_1" in [i["name"] for i in db.ts.list_indexes()]
    newer = BASE + dt.timedelta(days=1)
    list(src.aggregate([{"$set": {"time": newer}}, {"$project": {"_id": 0}},
                        {"$out": {"db": db.name, "coll": "ts", "timeseries": {"timeField": "time", "metaField": "tags"}}}]))
    assert {d["time"] for d in db.ts.find()} == {newer} and db.ts.count_documents({}) == 30


def test_out_timeseries_into_another_database(client, db, src):
    other = client[db.name + "_out"]
    try:
        list(src.aggregate([{"$project": {"_id": 0}},
                            {"$out": {"db": other.name, "coll": "ts", "timeseries": {"timeField": "time"}}}]))
        assert other.ts.count_documents({}) == 30
        assert info(other, "ts")["type"] == "timeseries"
    finally:
        client.drop_database(other.name)


@pytest.mark.parametrize("ts,code", [
    ({"timeField": "v"}, 7406103),
    ({"timeField": "time", "metaField": "v"}, 7406103),
    ({"timeField": "time", "metaField": "tags", "granularity": "minutes"}, 7406103),
    ({"timeField": "time", "invalidField": 1}, 40415),
])
def test_out_timeseries_option_errors(db, src, ts, code):
    out(src, "ts", timeField="time", metaField="tags")
    e = failure(src, [{"$out": {"db": db.name, "coll": "ts", "timeseries": ts}}])
    assert e.code == code
    assert db.ts.count_documents({}) == 30     # the target is untouched


def test_out_timeseries_over_a_collection_or_a_view_is_refused(db, src):
    db.plain.insert_one({"x": 1})
    e = failure(src, [{"$out": {"db": db.name, "coll": "plain", "timeseries": {"timeField": "time"}}}])
    assert (e.code, e.details["errmsg"]) == (7268700, "Cannot create a time-series collection from a non "
                                                      "time-series collection.")
    db.command("create", "view", viewOn="plain", pipeline=[])
    e = failure(src, [{"$out": {"db": db.name, "coll": "view", "timeseries": {"timeField": "time"}}}])
    assert e.code == 7268703
    assert db.plain.count_documents({}) == 1


def test_out_timeseries_with_a_bad_measurement_leaves_the_target_untouched(db, src):
    out(src, "ts", timeField="time", metaField="tags")
    e = failure(src, [{"$project": {"_id": 0, "time": {"$cond": [{"$eq": ["$v", 7]}, "x", "$time"]}, "v": 1}},
                      {"$out": {"db": db.name, "coll": "ts", "timeseries": {"timeField": "time", "metaField": "tags"}}}])
    assert e.code == 2 and "'time' must be present and contain a valid BSON UTC datetime value" in e.details["errmsg"]
    assert db.ts.count_documents({}) == 30
    assert not [n for n in db.list_collection_names() if n.startswith("tmp.agg_out")]


def test_out_from_a_time_series_collection_to_a_time_series_collection(db, src):
    out(src, "ts", timeField="time", metaField="tags")
    list(db.ts.aggregate([{"$match": {"tags.host": "h0"}},
                          {"$out": {"db": db.name, "coll": "ts2", "timeseries": {"timeField": "time", "metaField": "tags"}}}]))
    assert db.ts2.count_documents({}) == 10 and info(db, "ts2")["type"] == "timeseries"


@pytest.mark.slow
def test_out_timeseries_survives_a_restart_and_takes_new_inserts(start_server):
    server = start_server()
    client = server.client()
    db = client.outrestart
    db.src.insert_many([{"time": BASE + dt.timedelta(minutes=i), "tags": {"h": i % 2}, "v": i} for i in range(20)])
    list(db.src.aggregate([{"$project": {"_id": 0}},
                           {"$out": {"db": "outrestart", "coll": "ts", "timeseries": {"timeField": "time",
                                                                                      "metaField": "tags"}}}]))
    db.ts.insert_one({"time": BASE + dt.timedelta(hours=5), "tags": {"h": 0}, "v": 100})
    client.close()
    server.kill()          # a crash: what $out wrote is durable, and so is the acknowledged insert
    server.restart()
    db = server.client().outrestart
    assert sorted(d["v"] for d in db.ts.find()) == [*range(20), 100]
    assert not [n for n in db.list_collection_names() if n.startswith("tmp.agg_out")]
