"""Lastpoint's kept facts against the real storage engine (no server): after any sequence of bucket
records inserted, rewritten and deleted, ``latest_buckets`` yields exactly the buckets holding each
series' latest time (as a pass over every stored bucket finds them), and it read only the records
changed since the previous read — never every bucket again (``factsRebuilt``)."""

import datetime as dt

import bson
from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage.engine import open_engine
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import lastpoint
from tidemark.timeseries.bucketdoc import meta_key

NS = "db.system.buckets.c"
T0 = dt.datetime(2024, 1, 1)


class _NoLiveBuckets:
    collections: dict = {}  # (read by scan.live_views: no collection has buckets in memory)

    def get(self, ns):
        return None

    def live_buckets(self, ns, alternatives=None):
        return []


class _Server:
    def __init__(self, engine):
        self.engine, self.bucket_catalog = engine, _NoLiveBuckets()


def _bucket(n, meta, minute):
    t = T0 + dt.timedelta(minutes=minute)
    return {"_id": ObjectId(n.to_bytes(12, "big")), "control": {"version": 1, "min": {"t": t}, "max": {"t": t}},
            "meta": meta, "data": {"t": {"0": t}}}


def _latest(server):
    stats = {}
    found = sorted((view.view.summary()["_id"], view.view.summary()["control"]["max"]["t"])
                   for chunk in lastpoint.latest_buckets(server, NS, "t", stats) for view in chunk)
    return found, stats


def _expected(buckets):
    newest = {}
    for doc in buckets.values():
        key = meta_key(doc["meta"])
        newest[key] = max(newest.get(key, doc["control"]["max"]["t"]), doc["control"]["max"]["t"])
    return sorted((doc["_id"], doc["control"]["max"]["t"]) for doc in buckets.values()
                  if doc["control"]["max"]["t"] == newest[meta_key(doc["meta"])])


steps = st.lists(st.tuples(st.sampled_from(["insert", "rewrite", "delete", "read"]), st.integers(0, 11),
                           st.sampled_from(["a", "b", "c", 1, 1.0, ["a"]]), st.integers(0, 5)),
                 min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(steps=steps)
def test_kept_facts_find_what_a_pass_over_every_bucket_finds(tmp_path_factory, steps):
    engine = open_engine(str(tmp_path_factory.mktemp("lastpoint-facts") / "db"), compact_on_close=False)
    try:
        server = _Server(engine)
        info = engine.write_sync(lambda w: w.create_collection(NS, clustered=True))
        buckets = {}
        first = True
        changed: set[int] = set()
        for op, n, meta, minute in steps:
            doc = _bucket(n, meta, minute)
            rid = clustered_rid(doc["_id"])
            if op == "insert" and n not in buckets:
                engine.write_sync(lambda w, doc=doc, rid=rid: w.insert(info, bson.encode(doc), rid=rid))
            elif op == "rewrite" and n in buckets:  # e.g. a meta update or rows deleted
                engine.write_sync(lambda w, doc=doc, rid=rid: w.update(info, rid, bson.encode(doc)))
            elif op == "delete" and n in buckets:
                engine.write_sync(lambda w, rid=rid: w.delete(info, rid))
                del buckets[n]
                changed.add(n)
                continue
            else:
                found, stats = _latest(server)
                assert found == _expected(buckets)
                assert stats["factsRebuilt"] is first
                assert stats["factsBucketsRead"] == (len(buckets) if first else len(changed))
                first, changed = False, set()
                continue
            buckets[n] = doc
            changed.add(n)
        found, stats = _latest(server)
        assert found == _expected(buckets)
        assert stats["factsRebuilt"] is first
    finally:
        engine.close()


def test_facts_of_a_reopened_engine_are_derived_again(tmp_path):
    path = str(tmp_path / "db")
    for reopened in (False, True):
        engine = open_engine(path, compact_on_close=False)
        try:
            if not reopened:
                info = engine.write_sync(lambda w: w.create_collection(NS, clustered=True))
                for n in range(3):
                    doc = _bucket(n, "a", n)
                    engine.write_sync(lambda w, doc=doc, info=info: w.insert(info, bson.encode(doc), rid=clustered_rid(doc["_id"])))
            found, stats = _latest(_Server(engine))
            assert [t for _, t in found] == [T0 + dt.timedelta(minutes=2)]
            assert stats["factsRebuilt"] is True and stats["factsBucketsRead"] == 3
        finally:
            engine.close()
