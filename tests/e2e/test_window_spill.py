"""A $setWindowFields past its memory limit spills to disk under allowDiskUse, and answers what it answers in memory.

mongod 7.0 runs $setWindowFields as a $sort on (partitionBy, sortBy) — a $sort like any other: past
internalQueryMaxBlockingSortMemoryUsageBytes it spills sorted runs under allowDiskUse, else 292 — then
$_internalSetWindowFields, which holds one partition at a time in a SpillableCache
(window_function/spillable_cache.cpp, partition_iterator.cpp): past
internalDocumentSourceSetWindowFieldsMaxMemoryBytes the cache goes to disk under allowDiskUse (true by
default since 6.0: allowDiskUseByDefault), else 5643011 "Exceeded max memory. Set 'allowDiskUse: true' to
spill to disk" (SpillableCache::addDocument); the values a window function keeps cannot spill: past the
limit 5414201 (document_source_set_window_fields.cpp). Tidemark answered 5414201 whatever allowDiskUse
said, and had no window parameter.

The family: every window function over documents and range windows (unbounded, current, numeric bounds),
with and without partitions, under a window limit, a sort limit, or both, small enough that each spills:
the answer must equal, byte for byte, the answer in memory; without allowDiskUse it is refused with
mongod's codes. Then ports of jstests/aggregation/sources/setWindowFields/memory_limit.js and
spill_to_disk.js (their byte thresholds scaled to Tidemark's size estimate: a document's BSON size, where
mongod counts its Document's in-memory size).
"""

from __future__ import annotations

import bson
import pytest
from harness.parameters import server_parameter
from harness.profiling import last_aggregate_entry, profiling
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "setParameter", "getParameter", "profile")

WINDOW_PARAM = "internalDocumentSourceSetWindowFieldsMaxMemoryBytes"
SORT_PARAM = "internalQueryMaxBlockingSortMemoryUsageBytes"
LIMIT = 4096  # a document is ~260 bytes (its pad): a partition past ~15 documents spills
PAD = "p" * 200

BOUND = st.one_of(st.integers(-4, 4), st.sampled_from(["unbounded", "current"]))


def _forward(bounds) -> bool:
    lo, hi = bounds
    a = float("-inf") if lo == "unbounded" else 0 if lo == "current" else lo
    b = float("inf") if hi == "unbounded" else 0 if hi == "current" else hi
    return a <= b


def windows():
    """No window (the whole partition), or documents / range bounds: unbounded, current, numbers."""
    bounds = st.tuples(BOUND, BOUND).filter(_forward).map(list)
    return st.one_of(st.just({}), st.builds(lambda k, b: {"window": {k: b}}, st.sampled_from(["documents", "range"]),
                                            bounds))


@st.composite
def outputs(draw):
    """1-3 window functions with their windows."""
    out = {}
    for n in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$rank",
                                   "$denseRank", "$documentNumber", "$shift", "$derivative", "$integral",
                                   "$expMovingAvg", "$covariancePop", "$locf", "$linearFill"]))
        if op in ("$rank", "$denseRank", "$documentNumber"):
            spec = {op: {}}
        elif op == "$shift":
            spec = {op: {"output": "$v", "by": draw(st.integers(-3, 3)), "default": "none"}}
        elif op == "$expMovingAvg":
            spec = {op: {"input": "$v", "N": draw(st.integers(1, 4))}}
        elif op in ("$locf", "$linearFill"):
            spec = {op: "$f"}
        elif op == "$derivative":
            spec = {op: {"input": "$v"}, "window": {"documents": [draw(st.integers(-3, 0)), draw(st.integers(0, 3))]}}
        elif op == "$integral":
            spec = {op: {"input": "$v"}, **draw(windows())}
        elif op == "$covariancePop":
            spec = {op: ["$v", "$t"], **draw(windows())}
        else:
            spec = {op: "$v", **draw(windows())}
        out[f"o{n}"] = spec
    return out


def _docs(draw_rows):
    return [{"_id": i, "t": t, "v": v, "f": f, "pad": PAD, **({} if p == "<missing>" else {"p": p})}
            for i, (p, t, v, f) in enumerate(draw_rows)]


ROWS = st.lists(st.tuples(st.sampled_from([1, 2.0, "a", "A", None, "<missing>"]), st.integers(0, 40),
                          st.one_of(st.integers(-50, 50), st.floats(-10, 10, allow_nan=False)),
                          st.one_of(st.none(), st.integers(0, 9))),
                min_size=40, max_size=110)


def _answer(coll, pipeline, allow_disk_use, collation=None):
    options = {"collation": collation} if collation else {}
    return [bson.encode(d) for d in coll.aggregate(pipeline, allowDiskUse=allow_disk_use, **options)]


def _code(coll, pipeline, **kwargs) -> OperationFailure:
    with pytest.raises(OperationFailure) as err:
        list(coll.aggregate(pipeline, **kwargs))
    return err.value


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, output=outputs(), partitioned=st.booleans(), descending=st.booleans(),
       limits=st.sampled_from(["window", "sort", "both"]), collated=st.booleans())
def test_a_spilled_window_answers_as_one_in_memory(client, db, rows, output, partitioned, descending, limits, collated):
    """(A case-insensitive collation puts "a" and "A" in one partition, in memory and on disk alike.)"""
    collation = {"locale": "en", "strength": 2} if collated else None
    docs = _docs(rows)
    if any(next(iter(o)) == "$linearFill" for o in output.values()):  # needs a sortBy unique per partition
        for d in docs:
            d["t"] = d["_id"] * (-1 if descending else 1)
    db.drop_collection("c")
    db.c.insert_many(docs)
    stage = {"sortBy": {"t": -1 if descending else 1}, "output": output}
    if partitioned:
        stage["partitionBy"] = "$p"
    pipeline = [{"$setWindowFields": stage}]
    try:
        in_memory = _answer(db.c, pipeline, True, collation)
    except OperationFailure as e:  # a spec the data refuses (a range over no number...): same refusal
        event(f"refused in memory: {e.code}")
        spilled_error = None
        with server_parameter(client, WINDOW_PARAM, LIMIT):
            try:
                _answer(db.c, pipeline, True, collation)
            except OperationFailure as again:
                spilled_error = again.code
        assert spilled_error == e.code
        return
    if limits == "window" and partitioned:
        # (only a partition past the limit is refused: the largest must be well past it, ~260 bytes a document)
        sizes: dict = {}
        for d in docs:
            p = d.get("p")
            key = (type(p) is str, p.lower() if collated and type(p) is str else p)
            sizes[key] = sizes.get(key, 0) + 1
        assume(max(sizes.values()) >= 20)
    window = LIMIT if limits != "sort" else 100 << 20
    sort = LIMIT * 2 if limits != "window" else 100 << 20
    with server_parameter(client, WINDOW_PARAM, window), server_parameter(client, SORT_PARAM, sort):
        refused = _code(db.c, pipeline, allowDiskUse=False, **({"collation": collation} if collation else {}))
        if limits == "window":
            assert refused.code in (5643011, 5414201), refused.details
        else:
            assert refused.code == 292, refused.details
            assert refused.details["errmsg"] == (f"Sort exceeded memory limit of {sort} bytes, but did not opt in "
                                                 "to external sorting.")
        with profiling(db):
            spilled = _answer(db.c, pipeline, True, collation)
    assert spilled == in_memory
    event(f"spilled under the {limits} limit")
    entry = last_aggregate_entry(db, "c")
    assert entry["usedDisk"] is True


def test_a_window_spills_by_default_and_the_answer_is_mongods(client, db):
    """allowDiskUse absent: allowDiskUseByDefault (true) lets the partition spill."""
    db.c.insert_many([{"_id": i, "k": i % 3, "pad": PAD} for i in range(90)])
    pipeline = [{"$setWindowFields": {"partitionBy": "$k", "sortBy": {"_id": 1},
                                      "output": {"n": {"$documentNumber": {}},
                                                 "s": {"$sum": "$_id", "window": {"documents": [-1, 0]}}}}}]
    with server_parameter(client, WINDOW_PARAM, LIMIT):
        docs = list(db.c.aggregate(pipeline))
    assert [(d["_id"], d["n"], d["s"]) for d in docs] == [
        (i, i // 3 + 1, i + (i - 3 if i >= 3 else 0)) for k in range(3) for i in range(k, 90, 3)]


def _explained(db, pipeline) -> tuple[dict, dict]:
    reply = db.command("explain", {"aggregate": "c", "pipeline": pipeline, "cursor": {}, "allowDiskUse": True},
                       verbosity="executionStats")
    sort, window = reply["stages"][1:]
    return sort, window


def test_explain_tells_which_of_the_sort_and_the_partition_spilled(client, db):
    """mongod shows the $sort it puts in front of $_internalSetWindowFields with its own statistics
    (what it sorted, usedDisk, spills); the window stage's usedDisk is its partition's spill. Tidemark
    showed only nReturned on the $sort and one usedDisk for both on the window stage."""
    db.c.insert_many([{"_id": i, "k": i % 3, "pad": PAD} for i in range(90)])
    pipeline = [{"$setWindowFields": {"partitionBy": "$k", "sortBy": {"_id": 1},
                                      "output": {"s": {"$sum": "$_id", "window": {"documents": [-1, 1]}}}}}]
    sort, window = _explained(db, pipeline)  # the default limits: nothing spills
    assert (sort["usedDisk"], sort["spills"], window["usedDisk"]) == (False, 0, False)
    assert sort["nReturned"] == window["nReturned"] == 90 and sort["totalDataSizeSortedBytesEstimate"] > 90 * 200
    assert list(sort)[1:5] == ["totalDataSizeSortedBytesEstimate", "usedDisk", "spills", "spilledDataStorageSize"]
    with server_parameter(client, WINDOW_PARAM, LIMIT):  # each partition (30 documents) spills, not the sort
        sort, window = _explained(db, pipeline)
    assert (sort["usedDisk"], sort["spills"], window["usedDisk"]) == (False, 0, True)
    with server_parameter(client, SORT_PARAM, LIMIT):  # the sort spills; each partition fits
        sort, window = _explained(db, pipeline)
    assert sort["usedDisk"] is True and sort["spills"] >= 1 and sort["spilledDataStorageSize"] > 0
    assert window["usedDisk"] is False and sort["totalDataSizeSortedBytesEstimate"] > 90 * 200


# jstests/aggregation/sources/setWindowFields/memory_limit.js ---------------------------------------------


def test_memory_limit_js(client, db):
    coll = db.c
    coll.insert_many([{"_id": i, "partitionKey": 1, "largeStr": "," * 1024} for i in range(10)])
    one = [{"$setWindowFields": {"sortBy": {"partitionKey": 1}, "output": {"val": {"$sum": "$_id"}}}}]
    with server_parameter(client, WINDOW_PARAM, 1200):
        refused = _code(coll, one, allowDiskUse=False)
        assert (refused.code, refused.details["errmsg"]) == (
            5643011, "Exceeded max memory. Set 'allowDiskUse: true' to spill to disk")
        assert [d["val"] for d in coll.aggregate(one)] == [45] * 10  # allowDiskUseByDefault: spilled
    per_doc = 1200
    strings = [{"$setWindowFields": {"sortBy": {"partitionKey": 1}, "output": {"val": {"$sum": "$largeStr"}}}}]
    with server_parameter(client, WINDOW_PARAM, per_doc * 10 * 3 + 1024):
        assert [d["val"] for d in coll.aggregate(strings, allowDiskUse=False)] == [0] * 10
        coll.insert_many([{"_id": i, "partitionKey": 2, "largeStr": "," * 1024} for i in range(10, 20)])
        partitioned = [{"$setWindowFields": {"sortBy": {"partitionKey": 1}, "partitionBy": "$partitionKey",
                                             "output": {"val": {"$sum": "$largeStr"}}}}]
        assert len(list(coll.aggregate(partitioned, allowDiskUse=False))) == 20
    # a window function that keeps the documents' strings: the jstest's $max keeps one string, which mongod
    # counts beside two copies of each document; Tidemark counts one, so $push (ten strings) goes past it
    keeps = [{"$setWindowFields": {"sortBy": {"partitionKey": 1}, "partitionBy": "$partitionKey",
                                   "output": {"val": {"$push": "$largeStr", "window": {"documents": [-9, 9]}}}}}]
    with server_parameter(client, WINDOW_PARAM, per_doc * 10 + 1024):
        assert _code(coll, keeps, allowDiskUse=False).code in (5643011, 5414201)


# jstests/aggregation/sources/setWindowFields/spill_to_disk.js --------------------------------------------


def _used_disk(db) -> bool:
    entry = db.system.profile.find_one({"command.pipeline.$setWindowFields": {"$exists": True}},
                                       sort=[("$natural", -1)])
    return entry.get("usedDisk", False) is True


def test_spill_to_disk_js(client, db):
    coll = db.c
    coll.insert_many([{"_id": i, "val": i, "partition": 1} for i in range(6)])
    coll.insert_many([{"_id": i + 6, "val": i, "partition": 2} for i in range(21)])
    doc_size = 79  # Tidemark's estimate of these documents (mongod's: 274)

    def run(output):
        return list(coll.aggregate([{"$setWindowFields": {"partitionBy": "$partition", "sortBy": {"partition": 1},
                                                          "output": output}}, {"$sort": {"_id": 1}}],
                                   allowDiskUse=True))

    db.command("profile", 2)
    try:
        with server_parameter(client, WINDOW_PARAM, doc_size * 6 + 1):  # the small partition fits
            out = run({"sum": {"$sum": "$val", "window": {"documents": [-21, 21]}}})
            assert [d["sum"] for d in out] == [15] * 6 + [210] * 21
            assert _used_disk(db)
        with server_parameter(client, WINDOW_PARAM, doc_size * 21 * 2):
            run({"arr": {"$sum": "$val", "window": {"documents": [0, 0]}}})
            assert not _used_disk(db)
        with server_parameter(client, WINDOW_PARAM, doc_size * 6 + 1):
            out = run({"arr": {"$push": "$val", "window": {"documents": [-25, 25]}}})
            assert [d["arr"] for d in out] == [list(range(6))] * 6 + [list(range(21))] * 21
            assert _used_disk(db)
        # the values $push keeps cannot spill: past the limit, 5414201 though the partition spilled
        # (mongod's $push of 21 values is ~950 bytes against 750; Tidemark's 336 against 300)
        with server_parameter(client, WINDOW_PARAM, 300):
            refused = _code(coll, [{"$setWindowFields": {
                "partitionBy": "$partition", "sortBy": {"partition": 1},
                "output": {"arr": {"$push": "$val", "window": {"documents": [-21, 21]}}}}}], allowDiskUse=True)
            assert refused.code == 5414201
            assert refused.details["errmsg"].startswith("Exceeded memory limit in DocumentSourceSetWindowFields, used ")
            assert refused.details["errmsg"].endswith(" bytes but max allowed is 300")
        coll.drop()
        coll.insert_many([{"_id": n, "val": n, "partition": 1} for n in range(1111)])
        with server_parameter(client, WINDOW_PARAM, 1000 * doc_size):
            out = list(coll.aggregate([{"$setWindowFields": {
                "sortBy": {"partition": 1}, "output": {"arr": {"$sum": "$val", "window": {"documents": [-1111, 1111]}}}}},
                {"$sort": {"_id": 1}}], allowDiskUse=True))
            assert [d["arr"] for d in out] == [616605] * 1111
            assert _used_disk(db)
    finally:
        db.command("profile", 0)
