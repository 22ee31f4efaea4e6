"""Differential test of the columnar $group path: TSBS-shaped pipelines on a time-series collection
answer exactly (values, BSON types, group set) what the generic path answers for the same pipeline
(the generic path is forced by a no-op ``$skip: 0`` before ``$group``)."""

import datetime as dt
import math
import random

import bson
import pytest

pytestmark = pytest.mark.commands("aggregate", "explain")

T0 = dt.datetime(2016, 1, 1)
HOSTS = [f"host_{i}" for i in range(6)]


def _rows(rng):
    rows = []
    for tick in range(5 * 360):  # 5 hours, one row per host every 10 s
        for h, host in enumerate(HOSTS):
            doc = {"time": T0 + dt.timedelta(seconds=10 * tick, milliseconds=rng.randrange(1000)),
                   "tags": {"hostname": host, "region": "eu" if h % 2 else "us"},
                   "usage_user": float(rng.randrange(100)), "usage_system": rng.random() * 100}
            if h == 1:
                doc["usage_user"] = rng.randrange(100)  # ints: the generic fallback, int result types
            if h == 2 and tick % 97 == 0:
                doc["usage_system"] = math.nan  # NaN: $max/$min semantics of the generic path
            if h == 3 and tick % 5 == 0:
                del doc["usage_user"]  # sparse column: missing values
            # integral but too large to sum exactly in any order (2**45 * 360 > 2**53), and mixed magnitudes
            doc["big"] = float(rng.randrange(-2**45, 2**45)) if h != 5 else rng.choice([1e20, 1.0, -1e20, 0.5])
            rows.append(doc)
    return rows


@pytest.fixture(scope="module")
def coll(client):
    db = client["t_ts_columnar"]
    db.drop_collection("cpu")
    db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
    db.cpu.create_index([("tags.hostname", 1), ("time", -1)])
    rows = _rows(random.Random(7))
    db.cpu.insert_many(rows, ordered=False)
    db.regular.insert_many(rows, ordered=False)  # the same measurements in a plain collection: an oracle
    yield db.cpu                                  # that shares nothing with the time-series read path
    client.drop_database("t_ts_columnar")


def _generic(pipeline):
    at = next(i for i, s in enumerate(pipeline) if "$group" in s)
    return pipeline[:at] + [{"$skip": 0}] + pipeline[at:]


def _window(start_min, minutes):
    return {"$gte": T0 + dt.timedelta(minutes=start_min), "$lt": T0 + dt.timedelta(minutes=start_min + minutes)}


def _by_minute(**acc):
    return {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "minute"}}, **acc}}


PIPELINES = {
    "single-groupby": [{"$match": {"time": _window(30, 60), "tags.hostname": {"$in": ["host_0"]}}},
                       _by_minute(m={"$max": "$usage_user"}), {"$sort": {"_id": 1}}],
    "int-column-max": [{"$match": {"time": _window(30, 60), "tags.hostname": {"$in": ["host_1", "host_0"]}}},
                       _by_minute(m={"$max": "$usage_user"}, s={"$sum": "$usage_user"}), {"$sort": {"_id": 1}}],
    "double-groupby": [{"$match": {"time": _window(10, 200)}},
                       {"$group": {"_id": {"time": {"$dateTrunc": {"date": "$time", "unit": "hour"}},
                                           "hostname": "$tags.hostname"},
                                   "a": {"$avg": "$usage_user"}, "b": {"$avg": "$usage_system"}}},
                       {"$sort": {"_id.time": 1, "_id.hostname": 1}}],
    "nan-and-missing": [{"$match": {"time": _window(0, 300)}},
                        {"$group": {"_id": "$tags.hostname", "mx": {"$max": "$usage_system"},
                                    "mn": {"$min": "$usage_system"}, "f": {"$first": "$usage_user"},
                                    "l": {"$last": "$usage_user"}, "n": {"$count": {}}, "one": {"$sum": 1},
                                    "tmax": {"$max": "$time"}, "tmin": {"$min": "$time"}}},
                        {"$sort": {"_id": 1}}],
    "measurement-filter": [{"$match": {"time": _window(0, 300), "usage_system": {"$gt": 90}}},
                           {"$group": {"_id": {"h": "$tags.hostname", "r": "$tags.region"},
                                       "c": {"$sum": 1}, "avg": {"$avg": "$usage_system"}}},
                           {"$sort": {"_id.h": 1}}],
    "orderby-limit": [{"$match": {"time": {"$lt": T0 + dt.timedelta(minutes=137)}}},
                      _by_minute(max_value={"$max": "$usage_user"}), {"$sort": {"_id": -1}}, {"$limit": 5}],
    "no-match-day": [{"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "day"}},
                                 "s": {"$sum": "$usage_system"}}}],
    "sums-exact-and-not": [{"$match": {"time": _window(20, 250)}},
                           {"$group": {"_id": {"h": "$tags.hostname",
                                               "t": {"$dateTrunc": {"date": "$time", "unit": "hour"}}},
                                       "u": {"$avg": "$usage_user"}, "su": {"$sum": "$usage_user"},
                                       "b": {"$avg": "$big"}, "sb": {"$sum": "$big"}, "n": {"$count": {}}}},
                           {"$sort": {"_id.h": 1, "_id.t": 1}}],
}


def _encoded(docs):
    return [bson.encode(d) for d in docs]  # exact: field order, BSON types and float bits


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_columnar_group_answers_exactly_what_the_generic_group_answers(coll, name):
    pipeline = PIPELINES[name]
    columnar = list(coll.aggregate(pipeline))
    generic = list(coll.aggregate(_generic(pipeline)))
    assert columnar, "the pipeline should produce groups"
    if not any("$sort" in s for s in pipeline):
        columnar.sort(key=lambda d: d["_id"])
        generic.sort(key=lambda d: d["_id"])
    assert _encoded(columnar) == _encoded(generic)
    regular = list(coll.database.regular.aggregate(pipeline))
    if not any("$sort" in s for s in pipeline):
        regular.sort(key=lambda d: d["_id"])
    assert _encoded(columnar) == _encoded(regular)


def test_tsbs_shaped_group_takes_the_columnar_path_over_stored_buckets(coll):
    explained = coll.database.command("explain", {"aggregate": "cpu", "pipeline": PIPELINES["double-groupby"],
                                                  "cursor": {}}, verbosity="executionStats")
    plan = explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    assert plan["timeseries"].get("columnarGroup") is True
    assert plan["timeseries"].get("bucketsColumnar", 0) > 0  # arrays, not a dict per measurement


def test_group_on_an_unsupported_expression_keeps_the_generic_path(coll):
    pipeline = [{"$group": {"_id": {"$hour": "$time"}, "m": {"$max": "$usage_user"}}}]
    explained = coll.database.command("aggregate", "cpu", pipeline=pipeline, explain=True)
    plan = explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    assert "columnarGroup" not in plan["timeseries"]
    assert sorted(d["_id"] for d in coll.aggregate(pipeline)) == [0, 1, 2, 3, 4]


def _explain_ts(coll, pipeline):
    explained = coll.database.command("explain", {"aggregate": coll.name, "pipeline": pipeline, "cursor": {}},
                                      verbosity="executionStats")
    return explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]


def test_newest_groups_with_a_limit_read_only_the_newest_buckets(coll):
    """Doubles without ties of different values read the newest buckets only; usage_user's maxima tie
    between host_1's ints and the other hosts' doubles (99 and 99.0), which the generic order decides
    (the older bucket's): that read answers again in the generic order."""
    pipeline = [PIPELINES["orderby-limit"][0], _by_minute(max_value={"$max": "$usage_system"}),
                *PIPELINES["orderby-limit"][2:]]
    newest = _explain_ts(coll, pipeline)
    everything = _explain_ts(coll, _generic(pipeline))
    assert newest.get("newestFirst") == 5 and "newestFirstAbandoned" not in newest
    assert 0 < newest["bucketsScanned"] < everything["bucketsScanned"]
    assert _explain_ts(coll, PIPELINES["orderby-limit"]).get("newestFirstAbandoned") is True


def test_lastpoint_from_the_latest_rows_equals_the_generic_sort_and_group(coll):
    group = {"_id": "$tags.hostname", "time": {"$first": "$time"}, "u": {"$first": "$usage_user"},
             "doc": {"$first": "$$ROOT"}}
    pipeline = [{"$sort": {"tags.hostname": 1, "time": -1}}, {"$group": group}, {"$sort": {"_id": 1}}]
    fast = list(coll.aggregate(pipeline))
    generic = list(coll.aggregate([{"$skip": 0}, *pipeline]))
    assert len(fast) == len(HOSTS)
    assert _encoded(fast) == _encoded(generic)
