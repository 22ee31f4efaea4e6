"""Index entries and clustered record keys longer than LMDB's 511-byte key limit (storage/longkeys.py):
every layout (unique, plain non-unique, split non-unique, records) answers scans exactly like a Python
model over the full keys, with random bounds, directions and resume points, after adds and removes."""

import bson
import lmdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.storage import indexes, records
from tidemark.storage.engine import open_engine
from tidemark.storage.errors import DuplicateKey
from tidemark.storage.keys import encode_key
from tidemark.storage.longkeys import LongKeys, compact
from tidemark.storage.ranges import raw_range

MAX_KEY = 511
# long shared prefixes: ties on the compact form's head (431 bytes) must still sort by full key
_PREFIXES = ["", "p" * 300, "p" * 430, "p" * 431, "p" * 500, "p" * 700, "q" * 1200]
_strings = st.builds(lambda p, s: p + s, st.sampled_from(_PREFIXES),
                     st.text(alphabet="\x00abz", max_size=40) | st.sampled_from(["", "a" * 80, "z" * 200]))
_values = st.one_of(_strings, st.integers(-3, 3), st.builds(lambda s: {"m": s, "n": 1}, _strings))
_keys = st.tuples(_values, _values).map(lambda vs: encode_key(list(vs), [1, -1]))
_rids = st.one_of(st.integers(1, 40).map(lambda n: n.to_bytes(8, "big")),
                  _strings.map(lambda s: encode_key([s])))


def _model_scan(fulls, lo, hi, lo_inclusive, hi_inclusive, reverse, resume):
    bounds = raw_range(lo, hi, lo_inclusive, hi_inclusive)
    if bounds is None:
        return []
    start, end = bounds
    out = sorted(x for x in fulls if (start is None or x >= start) and (end is None or x < end))
    if reverse:
        out.reverse()
    if resume is not None:
        out = [x for x in out if (x < resume if reverse else x > resume)]
    return out


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    env = lmdb.open(str(tmp_path_factory.mktemp("env")), max_dbs=8, map_size=1 << 30)
    dbs = {"side": env.open_db(b"_longkeys"), "plain": env.open_db(b"plain"),
           "split": env.open_db(b"split", dupsort=True), "unique": env.open_db(b"unique")}
    yield env, dbs
    env.close()


_bound = st.one_of(st.none(), _keys, _keys.map(lambda k: k[:len(k) // 2]), _keys.map(lambda k: k[:440]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(_keys, _rids), min_size=1, max_size=40, unique=True),
       removed=st.sets(st.integers(0, 39), max_size=10),
       scans=st.lists(st.tuples(_bound, _bound, st.booleans(), st.booleans(), st.booleans(), st.integers(0, 100)),
                      min_size=1, max_size=8))
def test_long_index_entries_scan_in_full_key_order(env, entries, removed, scans):
    env, dbs = env
    txn = env.begin(write=True)
    try:
        side = dbs["side"]
        layouts = {"plain": dbs["plain"], "split": dbs["split"]}
        longs = {name: LongKeys(side, name, MAX_KEY) for name in layouts}
        for name, db in layouts.items():
            indexes.bulk_add(txn, db, longs[name], "db.c", "i", iter(entries), False)
        gone = [entries[i] for i in removed if i < len(entries)]
        for name, db in layouts.items():
            for key, rid in gone:
                indexes.remove(txn, db, longs[name], [key], rid, False, split=name == "split")
        live = [e for e in entries if e not in gone]
        fulls = {indexes.entry_key(k, r): (k, r) for k, r in live}
        for lo, hi, lo_inc, hi_inc, reverse, pick in scans:
            expected = _model_scan(fulls, lo, hi, lo_inc, hi_inc, reverse, None)
            resume = fulls[expected[pick % len(expected)]] if expected else None
            expected_after = _model_scan(fulls, lo, hi, lo_inc, hi_inc, reverse,
                                         None if resume is None else indexes.entry_key(*resume))
            for name, db in layouts.items():
                kw = {"lo_inclusive": lo_inc, "hi_inclusive": hi_inc, "reverse": reverse}
                got = list(indexes.scan(txn, db, longs[name], False, lo, hi, **kw))
                assert got == [fulls[x] for x in expected], name
                got = list(indexes.scan(txn, db, longs[name], False, lo, hi, start_after=resume, **kw))
                assert got == [fulls[x] for x in expected_after], name
        # every remaining long entry keeps exactly one full key beside it; removed ones left nothing
        side_entries = txn.stat(side)["entries"]
        assert side_entries == 2 * sum(len(x) > MAX_KEY for x in fulls)
    finally:
        txn.abort()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(_keys, min_size=1, max_size=30, unique=True), dup=st.integers(0, 29),
       scans=st.lists(st.tuples(_bound, _bound, st.booleans(), st.booleans(), st.booleans()), max_size=6))
def test_long_unique_keys_detect_duplicates_and_scan_in_order(env, keys, dup, scans):
    env, dbs = env
    txn = env.begin(write=True)
    try:
        side, db = dbs["side"], dbs["unique"]
        long = LongKeys(side, "u", MAX_KEY)
        owners = {key: i.to_bytes(8, "big") for i, key in enumerate(keys)}
        indexes.bulk_add(txn, db, long, "db.c", "u", iter(owners.items()), True)
        taken = keys[dup % len(keys)]
        with pytest.raises(DuplicateKey) as info:
            indexes.check_unique(txn, db, long, "db.c", "u", [taken], b"other")
        assert info.value.key == taken  # the full key: the server decodes keyValue from it
        indexes.check_unique(txn, db, long, "db.c", "u", [taken], owners[taken])  # its own key is fine
        indexes.remove(txn, db, long, [taken], owners[taken], True)
        indexes.check_unique(txn, db, long, "db.c", "u", [taken], b"other")  # gone: free again
        del owners[taken]
        for lo, hi, lo_inc, hi_inc, reverse in scans:
            expected = _model_scan(owners, lo, hi, lo_inc, hi_inc, reverse, None)
            got = list(indexes.scan(txn, db, long, True, lo, hi, lo_inclusive=lo_inc, hi_inclusive=hi_inc,
                                    reverse=reverse))
            assert got == [(k, owners[k]) for k in expected]
    finally:
        txn.abort()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 150), intruders=st.lists(st.sampled_from(["", "m", "mm" * 40, "n" * 300]), max_size=3),
       scans=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200), st.booleans(), st.booleans(),
                                st.booleans(), st.integers(0, 3), st.integers(0, 200)), min_size=1, max_size=6))
def test_a_series_under_a_long_meta_streams_in_order(env, n, intruders, scans):
    """The buckets of one long meta (keys meta + min + max, one tie group differing only in the tail) are
    one run: streamed and placed exactly (no buffering); a group with intruders (other metas sharing the
    head) is sorted. Either way: the model's answer, with bounds inside the group and resume points."""
    env, dbs = env
    meta = {"host": "h" * 700}
    keys = [encode_key([meta, t, t + 5]) for t in range(n)]
    keys += [encode_key([{"host": "h" * 700 + extra}, 3, 4]) for extra in intruders]
    entries = [(k, (i + 1).to_bytes(8, "big")) for i, k in enumerate(keys)]
    txn = env.begin(write=True)
    try:
        for name in ("plain", "split"):
            db, long = dbs[name], LongKeys(dbs["side"], name, MAX_KEY)
            indexes.bulk_add(txn, db, long, "db.c", "i", iter(entries), False)
            fulls = {indexes.entry_key(k, r): (k, r) for k, r in entries}
            for a, b, lo_inc, hi_inc, reverse, cut, pick in scans:
                lo = encode_key([meta, a]) if cut else encode_key([meta, a, a + 5])
                hi = encode_key([meta, b]) if cut < 2 else None
                if cut == 3:
                    lo = None
                expected = _model_scan(fulls, lo, hi, lo_inc, hi_inc, reverse, None)
                kw = {"lo_inclusive": lo_inc, "hi_inclusive": hi_inc, "reverse": reverse}
                assert list(indexes.scan(txn, db, long, False, lo, hi, **kw)) == [fulls[x] for x in expected]
                if expected:
                    after = fulls[expected[pick % len(expected)]]
                    want = _model_scan(fulls, lo, hi, lo_inc, hi_inc, reverse, indexes.entry_key(*after))
                    got = list(indexes.scan(txn, db, long, False, lo, hi, start_after=after, **kw))
                    assert got == [fulls[x] for x in want]
    finally:
        txn.abort()


def test_a_key_that_fits_is_stored_exactly_as_before():
    fits = encode_key(["x" * 400])
    assert compact(fits, MAX_KEY) is fits
    long_key = encode_key(["x" * 600])
    stored = compact(long_key, MAX_KEY)
    assert len(stored) <= MAX_KEY and stored[:400] == long_key[:400] and not long_key.startswith(stored)


def test_clustered_records_with_long_ids_scan_get_update_delete(tmp_path):
    engine = open_engine(str(tmp_path), compressor="none")
    try:
        info = engine.write_sync(lambda w: w.create_collection("db.c", clustered=True))
        ids = ["i" * 2048 + str(n) for n in range(5)] + ["i" * 300, "short", "i" * 2048]
        for doc_id in ids:
            engine.write_sync(lambda w, d=doc_id: w.insert(w.get_collection("db.c"), bson.encode({"_id": d})))
        with pytest.raises(DuplicateKey):
            engine.write_sync(lambda w: w.insert(w.get_collection("db.c"), bson.encode({"_id": ids[0]})))
        rid = records.clustered_rid(ids[2])
        engine.write_sync(lambda w: w.update(w.get_collection("db.c"), rid, bson.encode({"_id": ids[2], "v": 1})))
        assert engine.write_sync(lambda w: w.delete(w.get_collection("db.c"), records.clustered_rid(ids[3])))
        with engine.read() as r:
            got = [(rid_, bson.decode(doc)) for rid_, doc in r.scan(info)]
            assert bson.decode(r.get(info, rid)) == {"_id": ids[2], "v": 1}
            lo = records.clustered_rid("i" * 2048)
            bounded = [bson.decode(d)["_id"] for _, d in r.scan(info, lo=lo, reverse=True)]
        expected = sorted((i for i in ids if i != ids[3]), key=lambda i: records.clustered_rid(i))
        assert [d["_id"] for _, d in got] == expected
        assert [rid_ for rid_, _ in got] == [records.clustered_rid(i) for i in expected]
        assert bounded == [i for i in reversed(expected) if records.clustered_rid(i) >= lo]
        long_keys = engine._env.open_db(b"_longkeys")  # drop forgets the full keys with the collection
        engine.write_sync(lambda w: w.drop_collection("db.c"))
        with engine._env.begin() as txn:
            assert txn.stat(long_keys)["entries"] == 0
    finally:
        engine.close()
