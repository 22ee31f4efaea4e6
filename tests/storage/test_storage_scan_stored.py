"""ReadView.scan_stored against a model: bounds (prefix semantics on single-component clustered ids),
direction, resume and ``limit`` (the list read in one pass), over a compacted store whose values are
partly chunked (tag 5) and more than one internal batch long."""

import os

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.storage import chunks
from tidemark.storage.engine import open_engine
from tidemark.storage.errors import StorageError
from tidemark.storage.keys import encode_key

NS = "db.system.buckets.c"
IDS = list(range(0, 600, 2))  # even ids: odd bounds fall between records


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    dbpath = str(tmp_path_factory.mktemp("scan_stored") / "db")
    engine = open_engine(dbpath, compact_on_close=False)

    def fn(w):
        info = w.create_collection(NS, clustered=True)
        for i in IDS:  # every third value too large for a leaf node: chunked by the compaction
            pad = os.urandom(3000 if i % 3 == 0 else 40)
            w.insert(info, bson.encode({"_id": i, "pad": pad}), {}, rid=encode_key([i]))

    engine.write_sync(fn)
    engine.close()
    open_engine(dbpath, compact_on_close=True).close()
    engine = open_engine(dbpath, compact_on_close=False)
    with engine.read() as r:
        info = r.get_collection(NS)
        raw = [r._txn.get(encode_key([i]), db=r._records(info)) for i in IDS]
        stored = {i: r.get_stored(info, encode_key([i])) for i in IDS}
    assert sum(chunks.is_chunked(v) for v in raw) >= 50  # the walk meets chunked values in every batch
    yield engine, stored
    engine.close()


_bound = st.none() | st.integers(-5, 605)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lo=_bound, hi=_bound, lo_inclusive=st.booleans(), hi_inclusive=st.booleans(), reverse=st.booleans(),
       resume=st.none() | st.sampled_from(IDS), limit=st.none() | st.integers(0, 400))
def test_scan_stored_matches_the_model(compacted, lo, hi, lo_inclusive, hi_inclusive, reverse, resume, limit):
    engine, stored = compacted
    expected = [i for i in IDS
                if (lo is None or (i >= lo if lo_inclusive else i > lo))
                and (hi is None or (i <= hi if hi_inclusive else i < hi))]
    if reverse:
        expected.reverse()
    if resume is not None:
        expected = [i for i in expected if (i < resume if reverse else i > resume)]
    if limit is not None:
        expected = expected[:limit]
    with engine.read() as r:
        info = r.get_collection(NS)
        got = list(r.scan_stored(info, start_after=None if resume is None else encode_key([resume]),
                                 reverse=reverse, lo=None if lo is None else encode_key([lo]),
                                 hi=None if hi is None else encode_key([hi]), lo_inclusive=lo_inclusive,
                                 hi_inclusive=hi_inclusive, limit=limit))
    assert got == [(encode_key([i]), stored[i]) for i in expected]
    assert all(not chunks.is_chunked(value) for _, value in got)


def test_a_partly_read_scan_reads_ahead_only_inside_its_block(compacted):
    engine, stored = compacted
    with engine.read() as r:
        info = r.get_collection(NS)
        scan = r.scan_stored(info)
        first = [next(scan) for _ in range(3)]
    assert first == [(encode_key([i]), stored[i]) for i in IDS[:3]]
    with engine.read() as r:  # a new block resumes after the last record taken
        rest = list(r.scan_stored(r.get_collection(NS), start_after=first[-1][0]))
    assert rest == [(encode_key([i]), stored[i]) for i in IDS[3:]]


def test_a_missing_or_short_piece_is_reported(dbpath):
    engine = open_engine(dbpath, compact_on_close=False)

    def fn(w):
        info = w.create_collection(NS, clustered=True)
        for i in range(4):
            w.insert(info, bson.encode({"_id": i, "pad": os.urandom(9000)}), {}, rid=encode_key([i]))

    engine.write_sync(fn)
    engine.close()
    open_engine(dbpath, compact_on_close=True).close()
    engine = open_engine(dbpath, compact_on_close=False)
    try:
        with engine.read() as r:
            info = r.get_collection(NS)
            heads = [r._txn.get(encode_key([i]), db=r._records(info)) for i in range(4)]
        fields = [chunks.head_fields(head) for head in heads]
        assert all(count >= 2 for _, _, count in fields)  # the later pieces are read one by one too
        (_, first, _), (_, second, count) = fields[0], fields[1]

        def damage(w):
            w._txn.delete(chunks.piece_key(first), db=engine._chunks_db)
            w._txn.put(chunks.piece_key(second + count - 1), b"x", db=engine._chunks_db)

        engine.write_sync(damage)
        with engine.read() as r:
            info = r.get_collection(NS)
            with pytest.raises(StorageError, match=f"piece {first} is missing"):
                r.get_stored(info, encode_key([0]))
            with pytest.raises(StorageError, match="bytes reassembled"):
                list(r.scan_stored(info, start_after=encode_key([0])))
            assert r.get_stored(info, encode_key([2])) is not None
    finally:
        engine.close()
