"""Journal: durable (stream, seq) appends for open time-series buckets; scan and trim."""

import pytest

from tidemark.storage.engine import open_engine


def test_append_returns_increasing_seqs_per_stream(engine):
    def fn(w):
        return [w.journal_append(b"b1", b"p1"), w.journal_append(b"b2", b"q1"), w.journal_append(b"b1", b"p2")]

    assert engine.write_sync(fn) == [1, 1, 2]
    with engine.read() as r:
        assert list(r.journal_scan(b"b1")) == [(b"b1", 1, b"p1"), (b"b1", 2, b"p2")]
        assert list(r.journal_scan(b"b1", after_seq=1)) == [(b"b1", 2, b"p2")]
        assert [(s, q) for s, q, _ in r.journal_scan()] == [(b"b1", 1), (b"b1", 2), (b"b2", 1)]


def test_stream_that_is_a_prefix_of_another_is_kept_apart(engine):
    engine.write_sync(lambda w: [w.journal_append(b"ab", b"1"), w.journal_append(b"a", b"2"),
                                 w.journal_append(b"abc", b"3")])
    with engine.read() as r:
        assert [p for _, _, p in r.journal_scan(b"a")] == [b"2"]
        assert [p for _, _, p in r.journal_scan(b"ab")] == [b"1"]


def test_large_payload_round_trips_compressed(engine):
    payload = b"measurement " * 1000
    engine.write_sync(lambda w: w.journal_append(b"s", payload))
    with engine.read() as r:
        assert list(r.journal_scan(b"s")) == [(b"s", 1, payload)]


def test_trim_deletes_up_to_seq_and_seqs_keep_increasing_after_restart(dbpath):
    eng = open_engine(dbpath)
    eng.write_sync(lambda w: [w.journal_append(b"s", bytes([i])) for i in range(5)])
    assert eng.write_sync(lambda w: w.journal_trim(b"s", 3)) == 3
    with eng.read() as r:
        assert [q for _, q, _ in r.journal_scan(b"s")] == [4, 5]
    assert eng.write_sync(lambda w: w.journal_trim(b"s", 5)) == 2
    eng.close()
    eng = open_engine(dbpath)
    try:
        assert eng.write_sync(lambda w: w.journal_append(b"s", b"x")) == 6
        assert eng.write_sync(lambda w: w.journal_drop(b"s")) == 1
        with eng.read() as r:
            assert list(r.journal_scan()) == []
    finally:
        eng.close()


def test_rolled_back_append_leaves_nothing(engine):
    def fn(w):
        w.journal_append(b"s", b"lost")
        raise RuntimeError("fail")

    with pytest.raises(RuntimeError):
        engine.write_sync(fn)
    seq = engine.write_sync(lambda w: w.journal_append(b"s", b"kept"))
    with engine.read() as r:
        assert [(q, p) for _, q, p in r.journal_scan(b"s")] == [(seq, b"kept")]


def test_invalid_stream_id_is_rejected(engine):
    with pytest.raises(ValueError):
        engine.write_sync(lambda w: w.journal_append(b"", b"x"))


def test_trim_with_a_huge_bound_keeps_seqs_small_across_restart(dbpath):
    eng = open_engine(dbpath)
    eng.write_sync(lambda w: [w.journal_append(b"s", b"x") for _ in range(3)])
    assert eng.write_sync(lambda w: w.journal_trim(b"s", 2**62)) == 3
    eng.close()
    eng = open_engine(dbpath)
    try:
        assert eng.write_sync(lambda w: w.journal_append(b"s", b"y")) == 4
    finally:
        eng.close()
