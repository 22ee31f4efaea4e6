"""splitVector as a standalone mongod 7.0 answers it (src/mongo/db/s/split_vector_command.cpp,
split_vector.cpp; jstests/sharding/split_vector_*.js and jstests/core/.../splitvector.js use it on a
plain mongod): the split points of a key range, every ``keyCount``-th index entry (chunk size over
twice the average document size, capped by maxChunkObjects) that differs from the previous split
point, within [min, max), at most maxSplitPoints of them, ``force`` splitting at the middle; nothing
when the data is smaller than the chunk or the range holds one key value; its refusals (26, 27, 72,
73, 2). Tidemark answered 59 CommandNotFound.
"""

from __future__ import annotations

import pytest
from bson.codec_options import CodecOptions
from bson.min_key import MinKey
from bson.raw_bson import RawBSONDocument
from bson.son import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("splitVector")

MB = 1024 * 1024


def _expected(keys: list, key_count: int, max_split_points: int | None, force: bool) -> list:
    """split_vector.cpp's walk over the range's keys in index order (the model)."""
    if len(set(keys)) <= 1:
        return []
    if force:  # a first pass counts the range's entries, the second splits at the middle
        key_count = len(keys) // 2
    out, previous, current = [], keys[0], 0
    for key in keys:
        current += 1
        if current > key_count and key != previous:
            out.append(key)
            previous, current = key, 0
        if max_split_points and len(out) >= max_split_points:
            break
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.integers(0, 40), min_size=1, max_size=300), direction=st.sampled_from([1, -1]),
       pad=st.sampled_from([3000, 9000]), max_chunk_objects=st.one_of(st.none(), st.integers(1, 60)),
       max_split_points=st.one_of(st.none(), st.integers(0, 4)), force=st.booleans(),
       bounds=st.one_of(st.none(), st.tuples(st.integers(0, 40), st.integers(0, 40))))
def test_split_points_follow_mongod_walk(client, values, direction, pad, max_chunk_objects, max_split_points,
                                          force, bounds):
    db = client.split_vector_db
    db.drop_collection("c")
    db.c.insert_many([{"_id": i, "x": v, "pad": "p" * pad} for i, v in enumerate(values)])
    db.c.create_index([("x", direction)])
    stats = db.command("collStats", "c")
    cmd = SON([("splitVector", "split_vector_db.c"), ("keyPattern", {"x": direction}), ("maxChunkSize", 1)])
    if force:
        cmd["force"] = True
    if max_chunk_objects is not None:
        cmd["maxChunkObjects"] = max_chunk_objects
    if max_split_points is not None:
        cmd["maxSplitPoints"] = max_split_points
    keys = sorted(values, reverse=direction < 0)
    if bounds is not None:
        lo, hi = bounds
        cmd["min"], cmd["max"] = {"x": lo}, {"x": hi}
        keys = [k for k in keys if (lo <= k < hi if direction > 0 else hi < k <= lo)]
    chunk = stats["size"] if force else MB
    if stats["size"] < chunk:
        assert db.command(cmd)["splitKeys"] == []
        return
    if not keys:
        with pytest.raises(OperationFailure) as e:
            db.command(cmd)
        assert e.value.code == 96
        return
    key_count = chunk // (2 * (stats["size"] // stats["count"]))
    if max_chunk_objects is not None and max_chunk_objects < key_count:
        key_count = max_chunk_objects
    expected = _expected(keys, key_count, max_split_points, force)
    assert db.command(cmd)["splitKeys"] == [{"x": k} for k in expected]


def test_split_vector_keeps_the_documents_own_values(client):
    db = client.split_vector_db
    db.drop_collection("typed")
    db.typed.insert_many([{"a": float(i // 2), "b": "s" * (i % 3), "pad": "p" * 20000} for i in range(200)])
    db.typed.create_index([("a", 1), ("b", 1)])
    keys = db.command("splitVector", "split_vector_db.typed", keyPattern={"a": 1}, maxChunkSize=1)["splitKeys"]
    assert keys and all(type(k["a"]) is float and list(k) == ["a"] for k in keys)
    compound = db.command("splitVector", "split_vector_db.typed", keyPattern={"a": 1, "b": 1}, force=True)
    assert [list(k) for k in compound["splitKeys"]] == [["a", "b"]]


def test_split_vector_refusals(client):
    db = client.split_vector_db
    db.drop_collection("r")
    db.r.insert_one({"x": 1})
    db.r.create_index("x", sparse=True, name="sparse_x")
    db.command("create", "rv", viewOn="r", pipeline=[])

    def code(cmd) -> int | None:
        with pytest.raises(OperationFailure) as e:
            client.admin.command(cmd)
        return e.value.code

    base = [("keyPattern", {"x": 1}), ("maxChunkSize", 1)]
    assert code(SON([("splitVector", "split_vector_db.r"), *base])) == 27  # only a sparse index
    assert code(SON([("splitVector", "split_vector_db.nope"), *base])) == 26
    assert code(SON([("splitVector", "split_vector_db.rv"), *base])) == 166
    assert code(SON([("splitVector", "nodot"), *base])) == 73
    assert code(SON([("splitVector", 5), *base])) == 2
    assert code(SON([("splitVector", "split_vector_db.r"), ("keyPattern", {"_id": 1})])) == 72
    assert code(SON([("splitVector", "split_vector_db.r"), ("keyPattern", {"_id": 1}), ("maxChunkSize", 2000)])) == 72
    assert code(SON([("splitVector", "split_vector_db.r"), ("keyPattern", {"_id": 1}),
                     ("maxChunkSizeBytes", 10)])) == 72
    assert code(SON([("splitVector", "split_vector_db.r"), ("keyPattern", {"_id": 1}), ("maxChunkSize", 1),
                     ("maxChunkObjects", 0)])) == 72
    assert code(SON([("splitVector", "split_vector_db.r"), ("keyPattern", {"_id": 1}), ("maxChunkSize", 1),
                     ("min", {"_id": 0})])) is None  # min without max: errmsg alone (test_split_vector_errmsg.py)
    assert code(SON([("splitVector", "split_vector_db.r"), ("maxChunkSize", 1)])) is None  # no key pattern
    assert client.admin.command(SON([("splitVector", "split_vector_db.r"), ("keyPattern", {"_id": 1}),
                                     ("maxChunkSize", 1)]))["splitKeys"] == []
    assert code(SON([("splitVector", "split_vector_db.r"), ("keyPattern", {"_id": 1}), ("maxChunkSize", 1),
                     ("writeConcern", {"w": 1})])) == 72


def test_an_empty_arrays_split_key_is_undefined_not_null(client):
    # mongod keys an empty array as undefined (below null) and gives the key back as it is: a split
    # point between the [] documents and the null ones is {a: undefined}, never {a: null}
    db = client.split_vector_db
    db.drop_collection("undef")
    pad = "p" * 8000  # (240 documents: more than the 1 MB chunk; the first key is no split point)
    db.undef.insert_many([{"a": v, "pad": pad} for v in (MinKey(), [], None, 1) for _ in range(60)])
    db.undef.create_index("a")
    raw = client.split_vector_db.command("splitVector", "split_vector_db.undef", keyPattern={"a": 1},
                                         maxChunkSize=1, maxChunkObjects=30, codec_options=CodecOptions(RawBSONDocument))
    types = [key.raw[4] for key in raw["splitKeys"]]  # (each key's first element's BSON type)
    assert types == [0x06, 0x0A, 0x10], types  # undefined, null, a number: in key order, apart
