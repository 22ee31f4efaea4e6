"""Secondary indexes: maintenance on insert/update/delete, uniqueness, scans with bounds."""

import bson
import pytest

from tidemark.storage.errors import DuplicateKey, IndexExists, IndexNotFound
from tidemark.storage.keys import decode_key, encode_key

NS = "db.c"
A_SPEC = {"v": 2, "key": {"a": 1}, "name": "a_1"}
UNIQUE_B = {"v": 2, "key": {"b": 1}, "name": "b_1", "unique": True}


def keys_of(doc):
    keys = {"_id_": [encode_key([doc["_id"]])]}
    a = doc.get("a")
    keys["a_1"] = [encode_key([v]) for v in a] if isinstance(a, list) else [encode_key([a])]
    keys["b_1"] = [encode_key([doc.get("b")])] if "b" in doc else []
    return keys


@pytest.fixture
def coll(engine):
    def setup(w):
        info = w.create_collection(NS, {})
        info = w.create_index(info, A_SPEC, [])
        return w.create_index(info, UNIQUE_B, [])

    engine.write_sync(setup)
    return engine


def insert(engine, *docs):
    def fn(w):
        info = w.get_collection(NS)
        return [w.insert(info, bson.encode(d), keys_of(d)) for d in docs]

    return engine.write_sync(fn)


def scan_a(engine, *args, **kwargs):
    with engine.read() as r:
        info = r.get_collection(NS)
        return [(decode_key(k, [1])[0], rid) for k, rid in r.index_scan(info, "a_1", *args, **kwargs)]


def test_index_specs_are_listed_in_creation_order(coll):
    with coll.read() as r:
        info = r.get_collection(NS)
        assert [s["name"] for s in info.indexes] == ["_id_", "a_1", "b_1"]
        assert info.is_unique("_id_") and info.is_unique("b_1") and not info.is_unique("a_1")


def test_insert_maintains_entries_and_scan_orders_by_key_then_rid(coll):
    rids = insert(coll, {"_id": 1, "a": 5}, {"_id": 2, "a": 3}, {"_id": 3, "a": 5}, {"_id": 4, "a": [7, 3]})
    assert scan_a(coll) == [(3, rids[1]), (3, rids[3]), (5, rids[0]), (5, rids[2]), (7, rids[3])]
    assert scan_a(coll, reverse=True) == list(reversed(scan_a(coll)))


@pytest.mark.parametrize(
    ("lo", "hi", "lo_inc", "hi_inc", "expected"),
    [
        (3, 5, True, True, [3, 4, 5, 5]),
        (3, 5, False, True, [4, 5, 5]),
        (3, 5, True, False, [3, 4]),
        (3, 5, False, False, [4]),
        (5, 5, True, True, [5, 5]),
        (None, 3, True, True, [1, 3]),
        (6, None, True, True, [7]),
        (8, None, True, True, []),
    ],
)
def test_bounds_inclusive_and_exclusive(coll, lo, hi, lo_inc, hi_inc, expected):
    insert(coll, *[{"_id": i, "a": a} for i, a in enumerate([1, 3, 4, 5, 5, 7])])
    lo_key = None if lo is None else encode_key([lo])
    hi_key = None if hi is None else encode_key([hi])
    got = [v for v, _ in scan_a(coll, lo_key, hi_key, lo_inclusive=lo_inc, hi_inclusive=hi_inc)]
    assert got == expected
    rev = [v for v, _ in scan_a(coll, lo_key, hi_key, lo_inclusive=lo_inc, hi_inclusive=hi_inc, reverse=True)]
    assert rev == expected[::-1]


def test_scan_resumes_after_an_entry_in_both_directions(coll):
    insert(coll, *[{"_id": i, "a": i % 3} for i in range(9)])
    full = scan_a(coll)
    with coll.read() as r:
        info = r.get_collection(NS)
        entries = list(r.index_scan(info, "a_1"))
        assert list(r.index_scan(info, "a_1", start_after=entries[3])) == entries[4:]
        assert list(r.index_scan(info, "a_1", reverse=True, start_after=entries[3])) == entries[:3][::-1]
        lo = hi = encode_key([1])
        assert list(r.index_scan(info, "a_1", lo, hi, start_after=entries[3])) == entries[4:6]
    assert len(full) == 9


def test_compound_index_prefix_bounds_match_leading_field(engine):
    def fn(w):
        info = w.create_collection(NS, {})
        entries = []
        for i, (x, y) in enumerate([(1, "a"), (1, "b"), (2, "a"), (2, "z"), (3, "a")]):
            rid = w.insert(info, bson.encode({"_id": i, "x": x, "y": y}), {"_id_": [encode_key([i])]})
            entries.append((encode_key([x, y], [1, -1]), rid))
        info = w.create_index(info, {"v": 2, "key": {"x": 1, "y": -1}, "name": "x_1_y_-1"}, entries)
        two = encode_key([2])
        return [decode_key(k, [1, -1]) for k, _ in w.index_scan(info, "x_1_y_-1", two, two)]

    assert engine.write_sync(fn) == [(2, "z"), (2, "a")]


def test_unique_violation_raises_and_leaves_nothing(coll):
    insert(coll, {"_id": 1, "a": 1, "b": "x"})

    def fn(w):
        info = w.get_collection(NS)
        with pytest.raises(DuplicateKey) as caught:
            w.insert(info, bson.encode({"_id": 2, "a": 9, "b": "x"}), keys_of({"_id": 2, "a": 9, "b": "x"}))
        assert caught.value.index_name == "b_1" and decode_key(caught.value.key, [1]) == ("x",)
        assert caught.value.ns == NS
        return w.count(info), w.index_entries(info, "a_1"), w.index_entries(info, "_id_")

    assert coll.write_sync(fn) == (1, 1, 1)


def test_update_moves_entries_and_checks_uniqueness_first(coll):
    rids = insert(coll, {"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2})

    def move(w):
        info = w.get_collection(NS)
        old, new = {"_id": 1, "a": 1, "b": 1}, {"_id": 1, "a": 10, "b": 11}
        w.update(info, rids[0], bson.encode(new), keys_of(old), keys_of(new))

    coll.write_sync(move)
    assert scan_a(coll) == [(2, rids[1]), (10, rids[0])]

    def clash(w):
        info = w.get_collection(NS)
        old, new = {"_id": 2, "a": 2, "b": 2}, {"_id": 2, "a": 20, "b": 11}
        w.update(info, rids[1], bson.encode(new), keys_of(old), keys_of(new))

    with pytest.raises(DuplicateKey):
        coll.write_sync(clash)
    assert scan_a(coll) == [(2, rids[1]), (10, rids[0])]
    with coll.read() as r:
        assert bson.decode(r.get(r.get_collection(NS), rids[1]))["b"] == 2


def test_delete_removes_entries(coll):
    rids = insert(coll, {"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2})
    coll.write_sync(lambda w: w.delete(w.get_collection(NS), rids[0], keys_of({"_id": 1, "a": 1, "b": 1})))
    assert scan_a(coll) == [(2, rids[1])]
    with coll.read() as r:
        assert r.index_entries(r.get_collection(NS), "b_1") == 0


def test_create_index_with_duplicate_entries_leaves_no_index(engine):
    def fn(w):
        info = w.create_collection(NS, {})
        entries = [(encode_key([1]), b"\x00" * 7 + b"\x01"), (encode_key([1]), b"\x00" * 7 + b"\x02")]
        with pytest.raises(DuplicateKey):
            w.create_index(info, UNIQUE_B, entries)
        return w.get_collection(NS)

    info = engine.write_sync(fn)
    assert [s["name"] for s in info.indexes] == ["_id_"]


def test_create_index_twice_raises_index_exists(coll):
    with pytest.raises(IndexExists):
        coll.write_sync(lambda w: w.create_index(w.get_collection(NS), A_SPEC, []))


def test_drop_index_and_set_index_options(coll):
    insert(coll, {"_id": 1, "a": 1})
    coll.write_sync(lambda w: w.set_index_options(w.get_collection(NS), "a_1", {"hidden": True}))
    with coll.read() as r:
        assert r.get_collection(NS).index_spec("a_1") == {**A_SPEC, "hidden": True}
    coll.write_sync(lambda w: w.set_index_options(w.get_collection(NS), "a_1", {"hidden": None}))
    coll.write_sync(lambda w: w.drop_index(w.get_collection(NS), "a_1"))
    with coll.read() as r:
        info = r.get_collection(NS)
        assert [s["name"] for s in info.indexes] == ["_id_", "b_1"]
        with pytest.raises(IndexNotFound):
            list(r.index_scan(info, "a_1"))
    with pytest.raises(IndexNotFound):
        coll.write_sync(lambda w: w.drop_index(w.get_collection(NS), "a_1"))
    # a new index with the old name starts empty
    coll.write_sync(lambda w: w.create_index(w.get_collection(NS), A_SPEC, []))
    assert scan_a(coll) == []


def test_unknown_index_name_in_keys_fails_before_writing(coll):
    def fn(w):
        info = w.get_collection(NS)
        with pytest.raises(IndexNotFound):
            w.insert(info, bson.encode({"_id": 1}), {"_id_": [encode_key([1])], "nope": [b"x"]})
        return w.count(info)

    assert coll.write_sync(fn) == 0


def test_keys_longer_than_lmdb_holds_are_stored_scanned_in_order_and_deleted(coll):
    # long values sharing a prefix longer than a compact form's head: one tie group, resumed in chunks
    docs = [{"_id": i, "a": "x" * 600 + "yz"[i % 2] * (i % 7)} for i in range(20)]
    insert(coll, *docs)
    expected = sorted((encode_key([d["a"]]), d["_id"]) for d in docs)
    with coll.read() as r:
        info = r.get_collection(NS)
        got = [(key, bson.decode(r.get(info, rid))["_id"]) for key, rid in r.index_scan(info, "a_1")]
        one = encode_key([docs[5]["a"]])
        hits = [bson.decode(r.get(info, rid))["_id"] for _, rid in r.index_scan(info, "a_1", one, one)]
    assert got == expected
    assert sorted(hits) == sorted(d["_id"] for d in docs if d["a"] == docs[5]["a"])
    streamed = list(coll.index_scan_stream(NS, "a_1", chunk=3))
    assert [k for k, _ in streamed] == [k for k, _ in expected]
    assert [k for k, _ in coll.index_scan_stream(NS, "a_1", reverse=True, chunk=4)] == [k for k, _ in reversed(expected)]

    def delete_all(w):
        info = w.get_collection(NS)
        for _, rid in list(w.index_scan(info, "a_1")):
            doc = bson.decode(w.get(info, rid))
            assert w.delete(info, rid, keys_of(doc))
        return list(w.index_scan(info, "a_1")), w.index_entries(info, "a_1")

    assert coll.write_sync(delete_all) == ([], 0)


def test_index_scan_stream_chunks_match_a_single_scan(coll):
    insert(coll, *[{"_id": i, "a": i % 5} for i in range(23)])
    with coll.read() as r:
        expected = list(r.index_scan(r.get_collection(NS), "a_1", encode_key([1]), encode_key([3])))
    got = list(coll.index_scan_stream(NS, "a_1", encode_key([1]), encode_key([3]), chunk=4))
    assert got == expected and len(got) == 14
    assert list(coll.index_scan_stream(NS, "a_1", reverse=True, chunk=3))[0][0] == encode_key([4])


def test_sizes_for_stats(coll):
    insert(coll, *[{"_id": i, "a": i} for i in range(100)])
    with coll.read() as r:
        info = r.get_collection(NS)
        assert r.count(info) == 100
        assert r.index_entries(info, "a_1") == 100
        assert r.index_size(info, "a_1") >= 4096
        assert r.total_index_size(info) >= 2 * 4096
        assert r.storage_size(info) >= 4096
