"""Differential tests of the lastpoint read (``$sort {<meta paths>, time: -1}`` -> ``$group`` of ``$first``):
the fast path (latest buckets per series through the buckets index, latest rows only) answers exactly
what the generic sort + group answers (forced by a leading ``$skip: 0``), with live buckets and after a
restart (every bucket stored), for metas the index cannot tell apart (numbers of different types, null
vs missing), array metas, ties between series, sparse columns and buckets rewritten between reads."""

import datetime as dt
import random

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64

pytestmark = pytest.mark.commands("aggregate", "explain")

T0 = dt.datetime(2016, 1, 1)
FIELDS = ["usage_user", "usage_system"]


def _tsbs_rows(rng, hosts=6, hours=5):
    rows = []
    for tick in range(hours * 360):
        for h in range(hosts):
            doc = {"time": T0 + dt.timedelta(seconds=10 * tick), "tags": {"hostname": f"host_{h}", "region": "eu"},
                   "usage_user": float(rng.randrange(100)), "usage_system": float(rng.randrange(100))}
            if h == 2 and tick % 7 == 0:
                del doc["usage_system"]  # a sparse column: whole buckets, no latest-row restriction
            if h == 3 and tick > hours * 360 - 40:
                continue  # host_3 stops early: its latest bucket is older than the others'
            rows.append(doc)
    # host_4 appears twice: same hostname, another region, same latest time (a tie between series)
    rows.append({"time": T0 + dt.timedelta(seconds=10 * (hours * 360 - 1)),
                 "tags": {"hostname": "host_4", "region": "us"}, "usage_user": -1.0, "usage_system": -2.0})
    return rows


ODD_METAS = [1, 1.0, Int64(1), Decimal128("1.0"), None, "missing", "a", {"x": 2}, {"x": 2.0}, {"x": Int64(2)}]
ARRAY_METAS = ["a", ["b", "c"], ["a"], "b"]
ONE_ELEMENT_ARRAY_METAS = ["b", ["a"], "a"]  # ["a"] is indexed like "a"; its latest bucket is older


def _odd_meta_rows(metas=tuple(ODD_METAS)):
    """Series whose metas share one index key (numbers of several types; null, missing), each with
    measurements hours apart, the older ones in buckets of their own."""
    rows = []
    for i, meta in enumerate(metas):
        for hour in range(len(metas)):
            if (hour + i) % 3 == 0:
                continue  # every series skips some hours, so their latest buckets differ
            for minute in (0, 5, 50):
                doc = {"time": T0 + dt.timedelta(hours=hour, minutes=minute, seconds=i), "v": float(hour * 100 + i)}
                if meta != "missing":
                    doc["tags"] = meta
                rows.append(doc)
    return rows


@pytest.fixture(scope="module")
def server_proc(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from harness import ServerProcess

    base = tmp_path_factory.mktemp("lastpoint")
    proc = ServerProcess(base / "db", log_path=base / "tidemark.log").start()
    client = proc.client()
    db = client["lp"]
    for name, rows in (("cpu", _tsbs_rows(random.Random(11))), ("odd", _odd_meta_rows()),
                       ("arrays", _odd_meta_rows(ARRAY_METAS)), ("one", _odd_meta_rows(ONE_ELEMENT_ARRAY_METAS))):
        db.create_collection(name, timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
        db[name].insert_many(rows, ordered=False)
    client.close()
    yield proc
    proc.terminate()


def _both(coll, pipeline):
    fast = list(coll.aggregate(pipeline))
    generic = list(coll.aggregate([{"$skip": 0}, *pipeline]))
    return fast, generic


def _encoded(docs):
    return [bson.encode(d) for d in docs]


def _explain(coll, pipeline):
    explained = coll.database.command("explain", {"aggregate": coll.name, "pipeline": pipeline, "cursor": {}},
                                      verbosity="executionStats")
    return explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]


TSBS = [{"$sort": {"tags.hostname": 1, "time": -1}},
        {"$group": {"_id": "$tags.hostname", "time": {"$first": "$time"},
                    **{f: {"$first": f"${f}"} for f in FIELDS}}},
        {"$sort": {"_id": 1}}]
TSBS_UNSORTED = TSBS[:2]  # group output order = first-seen order: sensitive to the order buckets arrive in
BY_META = [{"$sort": {"tags": 1, "time": -1}},
           {"$group": {"_id": {"type": {"$type": "$tags"}, "m": "$tags"}, "t": {"$first": "$time"},
                       "v": {"$first": "$v"}, "tags": {"$first": "$tags"}}}]
BY_TYPE = [{"$sort": {"tags": 1, "time": -1}},
           {"$group": {"_id": {"$type": "$tags"}, "t": {"$first": "$time"}, "v": {"$first": "$v"},
                       "tags": {"$first": "$tags"}}}]


@pytest.mark.slow
@pytest.mark.parametrize("restarted", [False, True], ids=["live-buckets", "after-restart"])
@pytest.mark.parametrize("name,pipeline", [("cpu", TSBS), ("cpu", TSBS_UNSORTED), ("odd", BY_META),
                                           ("odd", BY_TYPE), ("arrays", BY_META), ("one", BY_META)],
                         ids=["tsbs", "tsbs-unsorted", "by-meta", "by-type", "arrays", "one-element-array"])
def test_lastpoint_answers_exactly_what_the_generic_sort_and_group_answers(server_proc, restarted, name, pipeline):
    if restarted:
        server_proc.restart()  # a restart closes every bucket: all of them stored
    with server_proc.client() as client:
        coll = client["lp"][name]
        fast, generic = _both(coll, pipeline)
        assert fast, "the pipeline should produce groups"
        if pipeline is BY_META or pipeline is BY_TYPE:
            fast.sort(key=lambda d: bson.encode({"k": d["_id"]}))
            generic.sort(key=lambda d: bson.encode({"k": d["_id"]}))
        assert _encoded(fast) == _encoded(generic)
        assert _explain(coll, pipeline).get("lastpoint") is True
        assert _encoded(list(coll.aggregate(pipeline))) == _encoded(list(coll.aggregate(pipeline)))  # cached


@pytest.mark.slow
def test_lastpoint_unpacks_only_the_rows_at_each_series_latest_time(server_proc):
    server_proc.restart()
    with server_proc.client() as client:
        coll = client["lp"]["cpu"]
        fast = _explain(coll, TSBS)
        generic = _explain(coll, [{"$skip": 0}, *TSBS])
    assert fast["bucketsUnpacked"] == 7 < generic["bucketsUnpacked"]  # one bucket per series (7 series)
    # only the rows at each bucket's latest time, except host_2's whole bucket (its sparse column)
    assert fast["measurementsUnpacked"] <= 360 + 2 * 7


@pytest.mark.slow
def test_lastpoint_sees_buckets_rewritten_between_reads(server_proc):
    """Decoded summaries are reused across reads only for identical stored bytes: a meta update and a
    measurement delete rewrite buckets in place, and the next lastpoint answers from the new content."""
    server_proc.restart()
    with server_proc.client() as client:
        coll = client["lp"]["odd"]
        before, _ = _both(coll, BY_META)
        coll.update_many({"tags": "a"}, {"$set": {"tags": ["a"]}})
        coll.delete_many({"tags": {"x": 2}, "time": {"$gte": T0 + dt.timedelta(hours=6)}})
        fast, generic = _both(coll, BY_META)
        assert sorted(_encoded(fast)) == sorted(_encoded(generic))
        # both paths read through the decoded-bucket cache: check the new content itself
        assert {"type": "string", "m": "a"} in [d["_id"] for d in before]
        ids = [d["_id"] for d in fast]
        assert {"type": "string", "m": "a"} not in ids and {"type": "array", "m": ["a"]} in ids
        latest_x2 = next(d for d in fast if d["_id"] == {"type": "object", "m": {"x": 2}})
        assert latest_x2["t"] < T0 + dt.timedelta(hours=6)
