"""The catalog records the key format of every index (and of a clustered collection's record ids);
``rebuild_index`` and ``rekey_records`` bring older ones to ``keys.KEY_FORMAT`` atomically."""

import decimal
import math

import bson
import pytest
from bson.decimal128 import Decimal128

from tidemark.storage.errors import CommitFailed
from tidemark.storage.keys import KEY_FORMAT, encode_key
from tidemark.storage.records import clustered_rid


def _format1_number(f: float) -> Decimal128:
    """The value whose current key is format 1's key of the double ``f`` (its 34-digit rounding)."""
    return Decimal128(decimal.Context(prec=34).create_decimal_from_float(f))


def test_new_collections_and_indexes_carry_the_current_format(engine):
    def fn(w):
        info = w.create_collection("db.c")
        info = w.create_index(info, {"v": 2, "key": {"a": 1}, "name": "a_1"}, [])
        info = w.set_index_unique(info, "a_1", True)  # (moves the entries: the format goes with them)
        w.rename_collection("db.c", "db.d")
        return w.get_collection("db.d")

    info = engine.write_sync(fn)
    assert info.key_format == KEY_FORMAT
    assert info.index_formats == {"_id_": KEY_FORMAT, "a_1": KEY_FORMAT}


def test_rebuild_index_replaces_the_entries_and_stamps_the_format_atomically(engine):
    old_key, new_key = encode_key([_format1_number(0.1)]), encode_key([0.1])

    def setup(w):
        info = w.create_collection("db.c")
        rid = w.insert(info, bson.encode({"_id": 1, "a": 0.1}), {"_id_": [encode_key([1])]})
        info = w.create_index(info, {"v": 2, "key": {"a": 1}, "name": "a_1"}, [(old_key, rid)])
        return w.rebuild_index(info, "a_1", [(old_key, rid)], key_format=1), rid

    info, rid = engine.write_sync(setup)
    assert info.index_formats["a_1"] == 1

    engine.faults.fail_next(1, "EIO")  # the commit of the rebuild is refused: nothing of it is written
    with pytest.raises(CommitFailed):
        engine.write_sync(lambda w: w.rebuild_index(w.get_collection("db.c"), "a_1", [(new_key, rid)]))
    with engine.read() as r:
        info = r.get_collection("db.c")
        assert info.index_formats["a_1"] == 1
        assert [k for k, _ in r.index_scan(info, "a_1")] == [old_key]

    info = engine.write_sync(lambda w: w.rebuild_index(w.get_collection("db.c"), "a_1", [(new_key, rid)],
                                                       {"multikey": True}))
    assert info.index_formats["a_1"] == KEY_FORMAT and info.index_spec("a_1")["multikey"] is True
    with engine.read() as r:
        assert list(r.index_scan(r.get_collection("db.c"), "a_1")) == [(new_key, rid)]


def test_rekey_records_moves_clustered_records_whose_id_the_format_keys_otherwise(engine):
    docs = [{"_id": 0.1, "v": 1}, {"_id": {"x": -0.1}, "v": 2}, {"_id": 5, "v": 3}, {"_id": "s", "v": 4}]
    old_ids = [_format1_number(0.1), {"x": _format1_number(-0.1)}, 5, "s"]

    def setup(w):
        info = w.create_collection("db.k", clustered=True)
        for doc, old_id in zip(docs, old_ids, strict=True):
            w.insert(info, bson.encode(doc), rid=clustered_rid(old_id))
        return w.rekey_records(info, key_format=1)

    info, moved = engine.write_sync(setup)
    assert info.key_format == 1 and moved == 0
    info, moved = engine.write_sync(lambda w: w.rekey_records(w.get_collection("db.k")))
    assert info.key_format == KEY_FORMAT and moved == 2
    with engine.read() as r:
        for doc in docs:
            assert bson.decode(r.get(info, clustered_rid(doc["_id"])))["v"] == doc["v"]
        assert r.count(info) == 4 and r.data_size(info) == sum(len(bson.encode(d)) for d in docs)


def test_only_keys_without_null_or_numbers_read_the_same_in_format_1():
    from bson.objectid import ObjectId

    from tidemark.storage.keyspan import reads_the_same_as_format_1

    same = [["a", ObjectId()], [{"host": "h", "tags": ["x", True]}, "b"], [math.nan, -math.inf], [0, 0.0]]
    differs = [[None], ["a", 0.1], [{"m": {"x": [1]}}], [["a", None]], [5]]
    for values in same:
        for directions in ([1] * len(values), [-1] * len(values)):
            assert reads_the_same_as_format_1(encode_key(values, directions) + b"rid", len(values)), values
    for values in differs:
        for directions in ([1] * len(values), [-1] * len(values)):
            assert not reads_the_same_as_format_1(encode_key(values, directions), len(values)), values
