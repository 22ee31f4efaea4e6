"""Differential test (acceptance 3): the same random measurements in a time-series collection and in a
regular collection answer hundreds of random finds and aggregations identically."""

import datetime as dt
import random

import pytest

pytestmark = pytest.mark.commands("find", "aggregate", "count", "distinct")

T0 = dt.datetime(2024, 2, 1)
SPAN_SECONDS = 2 * 86400
HOSTS = [f"h{i}" for i in range(8)]
REGIONS = ["eu", "us", "ap"]


def random_measurement(rng, i):
    doc = {"_id": i, "t": T0 + dt.timedelta(milliseconds=rng.randrange(SPAN_SECONDS * 1000))}
    kind = rng.random()
    if kind < 0.8:
        doc["meta"] = {"host": rng.choice(HOSTS), "region": rng.choice(REGIONS)}  # sorted keys
    elif kind < 0.9:
        doc["meta"] = rng.choice(["scalar-a", "scalar-b", None])
    doc["cpu"] = round(rng.random() * 100, 3)
    doc["mem"] = rng.randrange(1000)
    if rng.random() < 0.5:
        doc["status"] = rng.choice(["ok", "warn", "fail"])
    if rng.random() < 0.3:
        doc["nested"] = {"a": rng.randrange(10), "b": rng.choice(["x", "y"])}
    if rng.random() < 0.1:
        doc["tags"] = [rng.randrange(5) for _ in range(rng.randrange(1, 4))]
    return doc


def random_time(rng):
    return T0 + dt.timedelta(seconds=rng.randrange(-3600, SPAN_SECONDS + 3600))


def random_predicate(rng):
    choice = rng.randrange(12)
    if choice == 0:
        lo = random_time(rng)
        return {"t": {"$gte": lo, "$lt": lo + dt.timedelta(minutes=rng.choice([1, 10, 90, 600]))}}
    if choice == 1:
        return {"t": {rng.choice(["$gt", "$gte", "$lt", "$lte"]): random_time(rng)}}
    if choice == 2:
        return {"meta.host": rng.choice(HOSTS)}
    if choice == 3:
        return {"meta.host": {"$in": rng.sample(HOSTS, 3)}, "meta.region": rng.choice(REGIONS)}
    if choice == 4:
        return {"meta": rng.choice(["scalar-a", None, {"host": "h1", "region": "eu"}])}
    if choice == 5:
        return {"cpu": {rng.choice(["$gt", "$lt", "$gte", "$lte"]): rng.random() * 100}}
    if choice == 6:
        return {"mem": {"$in": [rng.randrange(1000) for _ in range(20)]}}
    if choice == 7:
        return {"status": rng.choice(["ok", "warn", {"$exists": False}, {"$ne": "ok"}])}
    if choice == 8:
        return {"nested.a": {"$gte": rng.randrange(10)}}
    if choice == 9:
        return {"$or": [random_predicate(rng), random_predicate(rng)]}
    if choice == 10:
        return {"tags": rng.randrange(5)}
    return {"_id": {"$lt": rng.randrange(3000)}}


def random_filter(rng):
    n = rng.choice([0, 1, 1, 2, 3])
    flt = {}
    clauses = [random_predicate(rng) for _ in range(n)]
    if len(clauses) > 1:
        return {"$and": clauses}
    for clause in clauses:
        flt.update(clause)
    return flt


@pytest.fixture(scope="module")
def collections(client):
    rng = random.Random(20240201)
    database = client["ts_differential"]
    client.drop_database("ts_differential")
    database.create_collection("ts", timeseries={"timeField": "t", "metaField": "meta"})
    docs = [random_measurement(rng, i) for i in range(3000)]
    for start in range(0, len(docs), 250):
        batch = docs[start:start + 250]
        database.ts.insert_many([dict(d) for d in batch])
        database.reg.insert_many([dict(d) for d in batch])
    yield database.ts, database.reg
    client.drop_database("ts_differential")


def by_id(docs):
    return sorted(docs, key=lambda d: d["_id"])


@pytest.mark.slow
def test_random_finds_match_a_regular_collection(collections):
    ts, reg = collections
    rng = random.Random(7)
    nonempty = 0
    for _ in range(200):
        flt = random_filter(rng)
        projection = rng.choice([None, {"_id": 0}, {"cpu": 1, "t": 1}, {"_id": 0, "mem": 1}, {"nested": 0, "tags": 0}, {"meta.host": 1, "mem": 1}])
        if rng.random() < 0.4:
            sort = [("t", rng.choice([1, -1])), ("_id", 1)]
            limit = rng.choice([0, 5, 50])
            expected = list(reg.find(flt, projection).sort(sort).limit(limit))
            got = list(ts.find(flt, projection).sort(sort).limit(limit))
            assert got == expected, (flt, projection, sort, limit)
        else:
            key = (lambda d: repr(sorted(d.items()))) if projection and "_id" in projection else (lambda d: d["_id"])
            expected = sorted(reg.find(flt, projection), key=key)
            got = sorted(ts.find(flt, projection), key=key)
            assert got == expected, (flt, projection)
            assert ts.count_documents(flt) == len(expected), flt
        nonempty += bool(expected)
    assert nonempty > 100


@pytest.mark.slow
def test_random_aggregations_match_a_regular_collection(collections):
    ts, reg = collections
    rng = random.Random(11)
    for _ in range(100):
        flt = random_filter(rng)
        unit = rng.choice(["minute", "hour", "day"])
        group_key = rng.choice([{"$dateTrunc": {"date": "$t", "unit": unit}}, "$meta.host", "$status",
                                {"h": "$meta.host", "d": {"$dateTrunc": {"date": "$t", "unit": "day"}}}])
        pipeline = [{"$match": flt},
                    {"$group": {"_id": group_key, "n": {"$sum": 1}, "mem": {"$sum": "$mem"},
                                "maxCpu": {"$max": "$cpu"}, "first": {"$min": "$t"}}},
                    {"$sort": {"_id": 1}}]
        assert list(ts.aggregate(pipeline)) == list(reg.aggregate(pipeline)), pipeline


def test_distinct_matches_a_regular_collection(collections):
    ts, reg = collections
    for field in ("meta.host", "status", "nested.a"):
        assert sorted(map(str, ts.distinct(field))) == sorted(map(str, reg.distinct(field)))


def test_lastpoint_and_time_sorted_groups_match_a_regular_collection(collections):
    ts, reg = collections
    pipelines = [
        [{"$sort": {"meta.host": 1, "t": -1}},
         {"$group": {"_id": "$meta.host", "t": {"$first": "$t"}, "cpu": {"$first": "$cpu"},
                     "status": {"$first": "$status"}}},
         {"$sort": {"_id": 1}}],
        [{"$sort": {"meta.region": -1, "meta.host": 1, "t": -1}},
         {"$group": {"_id": {"r": "$meta.region"}, "t": {"$first": "$t"}, "mem": {"$first": "$mem"}}},
         {"$sort": {"_id.r": 1}}],
        [{"$sort": {"meta": 1, "t": -1}}, {"$group": {"_id": "$meta", "last": {"$first": "$_id"}}},
         {"$sort": {"last": 1}}],
    ]
    for pipeline in pipelines:
        assert list(ts.aggregate(pipeline)) == list(reg.aggregate(pipeline)), pipeline
