"""Index keys longer than LMDB's 511-byte key limit (storage/longkeys.py): mongod has no index key size
limit since 4.2 (SERVER-36278), so no write is refused with 17280 KeyTooLong. A property against a Python
model: random documents whose indexed values are around and far above 511 bytes (strings, sub-documents,
compound keys, long shared prefixes) answer finds through the index (equality, ranges, hint, sort),
unique violations, updates and deletes exactly as the model says."""

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError, OperationFailure

from tidemark.storage.keys import encode_key

pytestmark = pytest.mark.commands("insert", "find", "update", "delete", "createIndexes")

# shared prefixes longer than a compact form's head (431 bytes) and than the LMDB limit
_PREFIXES = ["", "k" * 420, "k" * 431, "k" * 505, "k" * 900, "z" * 3000]
_strings = st.builds(lambda p, s: p + s, st.sampled_from(_PREFIXES),
                     st.text(alphabet="abc", max_size=6) | st.sampled_from(["b" * 90, "c" * 600]))
_values = st.one_of(_strings, st.builds(lambda s, n: {"name": s, "n": n}, _strings, st.integers(0, 2)),
                    st.integers(0, 3))


def _order(value):
    return encode_key([value])  # MongoDB's BSON order (storage/keys.py, tested on its own)


def _docs(draw_list):
    return [{"_id": i, "s": s, "p": p, "q": q, "u": f"{u}-{i}"} for i, (s, p, q, u) in enumerate(draw_list)]


_doc_fields = st.tuples(_values, _values, _values, _strings)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(rows=st.lists(_doc_fields, min_size=1, max_size=14), data=st.data())
def test_long_index_keys_answer_like_the_model(db, rows, data):
    db.drop_collection("c")
    coll = db.c
    coll.create_index([("s", ASCENDING)], name="s_1")
    coll.create_index([("p", ASCENDING), ("q", DESCENDING)], name="p_q")
    coll.create_index([("u", ASCENDING)], name="u_1", unique=True)
    model = {d["_id"]: d for d in _docs(rows)}
    coll.insert_many(list(model.values()))

    # updates (to other long values) and deletes
    for _id in data.draw(st.lists(st.sampled_from(sorted(model)), max_size=4, unique=True)):
        new = data.draw(_values)
        coll.update_one({"_id": _id}, {"$set": {"s": new}})
        model[_id]["s"] = new
    for _id in data.draw(st.lists(st.sampled_from(sorted(model)), max_size=3, unique=True)):
        coll.delete_one({"_id": _id})
        del model[_id]

    def ids(cursor):
        return sorted(d["_id"] for d in cursor)

    # sort order through each index
    got = [d["s"] for d in coll.find({}, {"s": 1}).sort("s", 1).hint("s_1")]
    assert [_order(v) for v in got] == sorted(_order(d["s"]) for d in model.values())
    got = [(d["p"], d["q"]) for d in coll.find({}, {"p": 1, "q": 1}).sort([("p", 1), ("q", -1)]).hint("p_q")]
    assert [encode_key(list(k), [1, -1]) for k in got] == sorted(encode_key([d["p"], d["q"]], [1, -1])
                                                                 for d in model.values())
    got = [d["s"] for d in coll.find({}, {"s": 1}).sort("s", -1).hint("s_1")]
    assert [_order(v) for v in got] == sorted((_order(d["s"]) for d in model.values()), reverse=True)

    # equality and ranges through the index
    for probe in data.draw(st.lists(_values, min_size=1, max_size=3)) + [d["s"] for d in list(model.values())[:2]]:
        want = ids(d for d in model.values() if d["s"] == probe)
        assert ids(coll.find({"s": probe}).hint("s_1")) == want
        if isinstance(probe, str):
            want = ids(d for d in model.values() if isinstance(d["s"], str) and d["s"] >= probe)
            assert ids(coll.find({"s": {"$gte": probe}}).hint("s_1")) == want
            want = ids(d for d in model.values() if isinstance(d["s"], str) and d["s"] < probe)
            assert ids(coll.find({"s": {"$lt": probe}}).hint("s_1")) == want
        want = ids(d for d in model.values() if d["p"] == probe)
        assert ids(coll.find({"p": probe}).hint("p_q")) == want
    # small batches: the cursor resumes inside groups of keys sharing a long prefix
    got = [d["_id"] for d in coll.find({}, {"_id": 1}).sort("s", 1).hint("s_1").batch_size(2)]
    assert sorted(got) == sorted(model) and len(got) == len(model)

    # unique violations report the full long key
    if model:
        taken = next(iter(model.values()))["u"]
        with pytest.raises(DuplicateKeyError) as info:
            coll.insert_one({"_id": "dup", "u": taken})
        assert info.value.code == 11000 and info.value.details["keyValue"] == {"u": taken}
    coll.insert_one({"_id": "fresh", "u": "k" * 2000 + "fresh"})  # the index holds every other long key
    assert coll.find_one({"u": "k" * 2000 + "fresh"}, hint="u_1")["_id"] == "fresh"


def test_a_long_unique_key_is_freed_by_delete_and_update(db):
    coll = db.c
    coll.create_index("u", unique=True)
    long = "u" * 5000
    coll.insert_one({"_id": 1, "u": long})
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": 2, "u": long})
    coll.update_one({"_id": 1}, {"$set": {"u": long + "x"}})
    coll.insert_one({"_id": 2, "u": long})
    coll.delete_one({"_id": 2})
    coll.insert_one({"_id": 3, "u": long})
    assert [d["_id"] for d in coll.find({"u": {"$gte": long}}).sort("u", 1).hint("u_1")] == [3, 1]


def test_an_index_built_over_long_values_holds_them_all(db):
    coll = db.c
    values = ["v" * 700 + str(n % 4) for n in range(12)] + [{"doc": "d" * 900, "n": n} for n in range(3)]
    coll.insert_many([{"_id": n, "a": v} for n, v in enumerate(values)])
    coll.create_index("a")
    got = [d["a"] for d in coll.find({}, {"a": 1}).sort("a", 1).hint("a_1")]
    assert [_order(v) for v in got] == sorted(_order(v) for v in values)
    assert sorted(d["_id"] for d in coll.find({"a": "v" * 700 + "1"}).hint("a_1")) == [1, 5, 9]
    with pytest.raises(OperationFailure) as info:  # a unique build meets two equal long keys
        coll.create_index([("a", -1)], unique=True)
    assert info.value.code == 11000 and "v" * 700 in str(info.value)
    coll.create_index([("a", 1), ("_id", 1)], unique=True)
    assert [d["_id"] for d in coll.find({"a": "v" * 700 + "2"}).hint("a_1__id_1")] == [2, 6, 10]


T0 = dt.datetime(2024, 1, 1)


def _long_metas():
    # (fields in sorted order: a stored meta is normalized so, spec §3.6)
    return ["m" * 600, "m" * 600 + "b", "q" * 3000, {"host": "h1", "rack": "x" * 250, "region": "r" * 300},
            {"host": "h2", "rack": "x" * 250, "region": "r" * 300}, {"tags": ["t" * 200, "u" * 400]}]


@pytest.mark.slow
def test_time_series_long_metas_insert_find_and_survive_restarts(start_server):
    proc = start_server()
    metas = _long_metas()
    docs = [{"t": T0 + dt.timedelta(minutes=k), "m": meta, "v": i * 100 + k}
            for i, meta in enumerate(metas) for k in range(30)]

    def check(client):
        ts = client.q.ts
        assert ts.count_documents({}) == len(docs)
        for i, meta in enumerate(metas):
            got = [d["v"] for d in ts.find({"m": meta, "v": {"$gte": 0}}).sort("t", 1)]
            assert got == [i * 100 + k for k in range(30)]
            window = {"m": meta, "t": {"$gte": T0 + dt.timedelta(minutes=10), "$lt": T0 + dt.timedelta(minutes=20)}}
            assert sorted(d["v"] for d in ts.find(window)) == [i * 100 + k for k in range(10, 20)]
        # through the {meta, time} index, in (meta, time) order
        got = [(d["m"], d["t"]) for d in ts.find({}).sort([("m", 1), ("t", 1)]).hint([("m", 1), ("t", 1)])]
        assert [encode_key([m, t]) for m, t in got] == sorted(encode_key([d["m"], d["t"]]) for d in docs)

    with proc.client() as client:
        client.q.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        client.q.ts.create_index([("m", 1), ("t", 1)])
        client.q.ts.insert_many(docs[::2])
        client.q.ts.insert_many(docs[1::2])  # the open buckets of long metas continue
        check(client)
    proc.kill()  # SIGKILL: the journal holds the open buckets
    proc.start()
    with proc.client() as client:
        check(client)
        # series continue after the restart: their buckets are reopened by a query on the meta index
        later = [dict(d, t=d["t"] + dt.timedelta(minutes=30), v=-d["v"] - 1) for d in docs]
        client.q.ts.insert_many(later)
        docs += later
        for meta in metas:
            assert client.q.ts.count_documents({"m": meta}) == 60
    assert proc.terminate() == 0  # clean shutdown (and compaction of the long keys' table)
    proc.start()
    with proc.client() as client:
        check(client)
        assert "tidemark.quarantine.ts" not in client.q.list_collection_names()


def test_a_clustered_collection_takes_a_2kb_id(db):
    db.create_collection("c", clusteredIndex={"key": {"_id": 1}, "unique": True})
    coll = db.c
    ids = ["i" * 2048 + suffix for suffix in ("", "a", "b", "ba")] + ["i" * 10, "j" * 2048]
    coll.insert_many([{"_id": i, "n": n} for n, i in enumerate(ids)])
    with pytest.raises(DuplicateKeyError) as info:
        coll.insert_one({"_id": ids[1]})
    assert info.value.details["keyValue"] == {"_id": ids[1]}
    assert [d["_id"] for d in coll.find()] == sorted(ids)
    assert coll.find_one({"_id": ids[2]})["n"] == 2
    assert [d["_id"] for d in coll.find({"_id": {"$gt": ids[0], "$lt": "j"}})] == sorted(ids[1:4])
    assert [d["_id"] for d in coll.find().sort("_id", -1)] == sorted(ids, reverse=True)
    coll.update_one({"_id": ids[3]}, {"$set": {"n": 30}})
    assert coll.find_one({"_id": ids[3]})["n"] == 30
    coll.delete_one({"_id": ids[0]})
    assert [d["_id"] for d in coll.find()] == sorted(ids[1:])
    coll.insert_one({"_id": ids[0], "n": 0})  # the deleted long _id is free again
    assert coll.count_documents({}) == len(ids)
