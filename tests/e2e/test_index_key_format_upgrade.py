"""A data directory whose indexes hold keys of format 1 (before ``keys.KEY_FORMAT`` 2: a double keyed as its
34-digit rounding, an empty array as null) opens with the current server, which rebuilds every such index
before it listens (``core/key_format.py``) — or only stamps it when no stored key holds a null or a
number —, logs it, and then answers through the indexes exactly as the
collection scan does: a regular collection, a clustered one keyed by a double ``_id``, and a time-series
collection's bucket indexes (meta and control.min/max keys). A start-up that fails or is killed during the
rebuild leaves a dbpath that opens and rebuilds again.

Format 1 is written through the storage API (``rebuild_index(..., key_format=1)``): the keys the server
extracts, with every double replaced by the Decimal128 of its 34-digit rounding and undefined by null, are
byte for byte what format 1 stored."""

import datetime as dt
import decimal
import json
import subprocess

import pytest
from bson.decimal128 import Decimal128
from harness import PYTHON, ROOT

from tidemark.query.index_keys import keyer_for
from tidemark.storage.engine import open_engine
from tidemark.storage.keys import KEY_FORMAT, UNDEFINED, encode_key
from tidemark.storage.records import clustered_rid

pytestmark = [pytest.mark.commands("find", "count", "createIndexes", "insert")]

T0 = dt.datetime(2024, 5, 1)
DEC = Decimal128("0.1000000000000000055511151231257827")  # 0.1's exact value truncated to 34 digits
_DEC34 = decimal.Context(prec=34)
REBUILT = "Rebuilt index of an older key format"
SAME = "Index of an older key format holds the same keys in the current one"


def _format1(v):
    if type(v) is float and v == v and abs(v) != float("inf"):
        return Decimal128(_DEC34.create_decimal_from_float(v))
    if v is UNDEFINED:
        return None
    if type(v) is dict:
        return {k: _format1(x) for k, x in v.items()}
    if type(v) is list:
        return [_format1(x) for x in v]
    return v


def _downgrade_to_format_1(dbpath: str) -> None:
    """Rewrite every index (and clustered record id) of database "up" as format 1 stored it."""
    import bson

    engine = open_engine(dbpath)
    try:
        with engine.read() as r:
            infos = r.list_collections("up")

        def fn(w):
            for old in infos:
                info = w.get_collection(old.ns)
                docs = [(bytes(rid), bson.decode(raw)) for rid, raw in w.scan(info)]
                if info.clustered:  # move each record to its format-1 record id
                    for rid, _doc in docs:
                        w.delete(info, rid, {})
                    docs = [(w.insert(info, bson.encode(doc), {}, rid=clustered_rid(_format1(doc["_id"]))), doc)
                            for _, doc in docs]
                info, _ = w.rekey_records(info, key_format=1)
                for spec in info.indexes:
                    keyer = keyer_for(spec)
                    entries = {(encode_key(tuple(_format1(v) for v in values), keyer.directions), rid)
                               for rid, doc in docs for _, values in keyer.entries(doc)}
                    info = w.rebuild_index(info, spec["name"], sorted(entries), key_format=1)

        engine.write_sync(fn)
    finally:
        engine.close()


def _load(client) -> None:
    db = client.up
    db.c.insert_many([{"_id": 1, "a": 0.1}, {"_id": 2, "a": DEC}, {"_id": 3, "a": []}, {"_id": 4, "a": None},
                      {"_id": 5}, {"_id": 6, "a": [0.1, []]}, {"_id": 7, "a": 2.0 ** 53}, {"_id": 8, "a": 2 ** 53 + 1}])
    db.c.create_index("a")
    db.create_collection("k", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.k.insert_many([{"_id": 0.1, "b": 1}, {"_id": 0.25, "b": 2}, {"_id": -1 / 3, "b": 3}])
    db.k.create_index("b")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(minutes=i), "m": [0.1, DEC, [], None][i % 4], "v": [0.1, DEC, 3][i % 3]}
                       for i in range(24)])
    db.ts.create_index("m")
    db.ts.create_index("v")
    db.create_collection("tss", timeseries={"timeField": "t", "metaField": "m"})  # meta strings, no number
    db.tss.insert_many([{"t": T0 + dt.timedelta(minutes=i), "m": f"h{i % 3}", "v": 0.1} for i in range(12)])


QUERIES = [
    ("c", {"a": {"$gt": DEC}}, "a_1"), ("c", {"a": {"$gte": DEC}}, "a_1"), ("c", {"a": {"$lte": DEC}}, "a_1"),
    ("c", {"a": DEC}, "a_1"), ("c", {"a": 0.1}, "a_1"), ("c", {"a": None}, "a_1"), ("c", {"a": []}, "a_1"),
    ("c", {"a": {"$gt": 2.0 ** 53}}, "a_1"), ("c", {}, "a_1"),
    ("k", {"_id": 0.1}, None), ("k", {"_id": {"$gt": DEC}}, None), ("k", {"b": {"$gte": 1}}, "b_1"),
    ("ts", {"m": {"$gt": DEC}}, "m_1"), ("ts", {"m": DEC}, "m_1"), ("ts", {"m": None}, "m_1"),
    ("ts", {"v": {"$gt": DEC}}, "v_1"), ("ts", {"v": {"$lte": DEC}}, "v_1"),
    ("tss", {"m": "h1"}, "m_1_t_1"), ("tss", {"m": {"$gte": "h1"}, "t": {"$gt": T0}}, "m_1_t_1"),
]


def _check_answers(client) -> None:
    db = client.up
    for coll, flt, index in QUERIES:
        natural = sorted(str(d) for d in db[coll].find(flt).hint({"$natural": 1}))
        indexed = sorted(str(d) for d in (db[coll].find(flt).hint(index) if index else db[coll].find(flt)))
        assert indexed == natural, (coll, flt)
        assert db[coll].count_documents(flt, hint=index or {"$natural": 1}) == len(natural), (coll, flt)
    in_index_order = [d["_id"] for d in db.c.find({}, sort=[("a", 1)]).hint("a_1")]
    assert in_index_order == [d["_id"] for d in db.c.find({}, sort=[("a", 1)]).hint({"$natural": 1})]
    assert in_index_order.index(3) < in_index_order.index(4)  # [] (undefined) before null
    assert [d["_id"] for d in db.k.find().sort("_id", 1)] == [-1 / 3, 0.1, 0.25]


def test_a_format_1_dbpath_is_rebuilt_at_start_up_and_answers_like_the_collection_scan(start_server):
    proc = start_server()
    with proc.client() as client:
        _load(client)
        _check_answers(client)
    assert proc.terminate() == 0
    _downgrade_to_format_1(proc.dbpath)

    proc.start()
    log = proc.log_text()
    rebuilt = {(entry["attr"]["namespace"], entry["attr"]["index"])
               for entry in map(json.loads, log.splitlines()) if entry["msg"] == REBUILT}
    stamped = {(entry["attr"]["namespace"], entry["attr"]["index"])
               for entry in map(json.loads, log.splitlines()) if entry["msg"] == SAME}
    # every index holding a null or a number; k's records moved first; the buckets' default index too
    assert rebuilt == {("up.c", "_id_"), ("up.c", "a_1"), ("up.k", "b_1"), ("up.system.buckets.ts", "m_1_t_1"),
                       ("up.system.buckets.ts", "m_1"), ("up.system.buckets.ts", "v_1")}, log[-3000:]
    # string keys (and dates) were stored alike: only stamped, no document read
    assert stamped == {("up.system.views", "_id_"), ("up.system.buckets.tss", "m_1_t_1")}, log[-3000:]
    assert '"Moved records to the record ids of the current key format"' in log
    with proc.client() as client:
        _check_answers(client)
    assert proc.terminate() == 0

    before = len(proc.log_text())
    proc.start()  # every format was stamped: nothing to rebuild the next time
    assert REBUILT not in proc.log_text()[before:] and SAME not in proc.log_text()[before:]
    with proc.client() as client:
        _check_answers(client)


@pytest.mark.slow
def test_a_start_up_that_fails_or_is_killed_during_the_rebuild_opens_and_rebuilds_again(start_server):
    proc = start_server(params={"enableTestCommands": 1})
    with proc.client() as client:
        _load(client)
    assert proc.terminate() == 0
    _downgrade_to_format_1(proc.dbpath)

    argv = [PYTHON, "-m", "tidemark", "--port", str(proc.port), "--dbpath", proc.dbpath,
            "--setParameter", "enableTestCommands=1"]
    # the first commit of the upgrade is refused (as by a failing disk): start-up stops, exit 100
    failed = subprocess.run([*argv, "--setParameter", "failStorageCommitsForTest=1:EIO"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert failed.returncode == 100, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stdout + failed.stderr
    # SIGKILL as soon as the first index is logged rebuilt (each is logged once its transaction committed):
    # the others are still of format 1, or being rebuilt
    killed = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in killed.stdout:
        if REBUILT in line:
            killed.kill()
            break
    killed.wait(timeout=30)
    killed.stdout.close()
    with_kill = open_engine(proc.dbpath)  # (not asserted: the kill may come after a later commit)
    try:
        with with_kill.read() as r:
            formats = [f for info in r.list_collections("up") for f in info.index_formats.values()]
    finally:
        with_kill.close()
    print("index formats after the kill:", formats)

    proc.start()
    with proc.client() as client:
        _check_answers(client)
    assert proc.terminate() == 0
    before = len(proc.log_text())
    proc.start()
    assert REBUILT not in proc.log_text()[before:]


def _downgrade_to_format_2(dbpath: str) -> None:
    """Rewrite every index of database "up" as format 2 stored it: a wildcard index's empty array keyed as
    the array itself (the others' keys are the same)."""
    import bson

    engine = open_engine(dbpath)
    try:
        with engine.read() as r:
            infos = r.list_collections("up")

        def fn(w):
            for old in infos:
                info = w.get_collection(old.ns)
                docs = [(bytes(rid), bson.decode(raw)) for rid, raw in w.scan(info)]
                info, _ = w.rekey_records(info, key_format=2)
                for spec in info.indexes:
                    keyer = keyer_for(spec)
                    entries = {(encode_key(tuple([] if v is UNDEFINED else v for v in values), keyer.directions), rid)
                               for rid, doc in docs for _, values in keyer.entries(doc)}
                    info = w.rebuild_index(info, spec["name"], sorted(entries), key_format=2)

        engine.write_sync(fn)
    finally:
        engine.close()


def test_a_format_2_wildcard_index_is_rebuilt_with_its_empty_arrays_keyed_undefined(start_server):
    # mongod's WildcardKeyGenerator keys an empty array as undefined, as a btree index does (format 3); the
    # other indexes' keys did not change: they are only stamped, no document read
    proc = start_server()
    docs = [{"_id": 1, "a": []}, {"_id": 2, "a": [[]]}, {"_id": 3, "a": {"0": []}}, {"_id": 4, "a": None},
            {"_id": 5, "a": [1, []]}, {"_id": 6}]
    with proc.client() as client:
        client.up.w.insert_many(docs)
        client.up.w.create_index([("$**", 1)], name="wc")
        client.up.w.create_index("a")
    assert proc.terminate() == 0
    _downgrade_to_format_2(proc.dbpath)

    proc.start()
    log = [json.loads(line) for line in proc.log_text().splitlines()]
    rebuilt = {e["attr"]["index"] for e in log if e["msg"] == REBUILT}
    assert rebuilt == {"wc"}, rebuilt
    with proc.client() as client:
        db = client.up
        for flt in ({"a": []}, {"a.0": []}, {"a": {"$exists": True}}, {"a": 1}):
            expected = sorted(d["_id"] for d in db.w.find(flt).hint({"$natural": 1}))
            assert sorted(d["_id"] for d in db.w.find(flt).hint("wc")) == expected, flt
        explained = db.command("explain", {"find": "w", "filter": {"a": []}, "hint": "wc"}, verbosity="queryPlanner")
        scan = explained["queryPlanner"]["winningPlan"]["inputStage"]
        assert scan["indexBounds"]["a"] == ["[undefined, undefined]", "[[], []]"], scan
        shown = list(db.w.find({"a": []}, return_key=True, hint="wc"))  # (undefined reads as None)
        assert {"$_path": "a", "a": None} in shown and {"$_path": "a", "a": []} in shown, shown
    assert proc.terminate() == 0
    engine = open_engine(proc.dbpath)
    try:
        with engine.read() as r:
            info = r.get_collection("up.w")
            assert set(info.index_formats.values()) == {KEY_FORMAT}
            keys = [bytes(k) for k, _rid in engine.index_scan_stream("up.w", "wc")]
    finally:
        engine.close()
    assert encode_key(("a", UNDEFINED), (1, 1)) in {k[:len(encode_key(("a", UNDEFINED), (1, 1)))] for k in keys}
