"""A read view looks a collection's records handle and compact keys up once per transaction (a read of
n buckets did it n times), and only a read view: a write transaction's handles come and go with its
nested scopes, so it looks them up every time. Records read through either are the same."""

import bson
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage.engine import open_engine
from tidemark.storage.keys import encode_key

NS = "db.system.buckets.c"


def _counting(engine, monkeypatch):
    calls = []
    published = engine._published_handle

    def counted(name):
        calls.append(name)
        return published(name)

    monkeypatch.setattr(engine, "_published_handle", counted)
    return calls


def test_a_read_resolves_a_collections_records_once(engine, monkeypatch):
    def fill(w):
        info = w.create_collection(NS, clustered=True)
        for i in range(5):
            w.insert(info, bson.encode({"_id": i}), {}, rid=encode_key([i]))

    engine.write_sync(fill)
    calls = _counting(engine, monkeypatch)
    with engine.read() as r:
        info = r.get_collection(NS)
        got = [bson.decode(r.get(info, encode_key([i]))) for i in range(5)]
        assert r.get_stored(info, encode_key([9])) is None
        assert len(list(r.scan_stored(info))) == 5
    assert got == [{"_id": i} for i in range(5)]
    assert len(calls) == 1  # the first get; the others took it from the view
    with engine.read() as r:  # a new read looks it up again (a view's memo dies with it)
        r.get(r.get_collection(NS), encode_key([0]))
    assert len(calls) == 2


def test_a_write_transaction_does_not_memoize_handles(engine, monkeypatch):
    engine.write_sync(lambda w: w.create_collection(NS, clustered=True))
    calls = _counting(engine, monkeypatch)

    def reads(w):
        info = w.get_collection(NS)
        w.insert(info, bson.encode({"_id": 1}), {}, rid=encode_key([1]))
        return [w.get(info, encode_key([1])) for _ in range(3)]

    assert [bson.decode(b) for b in engine.write_sync(reads)] == [{"_id": 1}] * 3
    assert len(calls) >= 3


@settings(max_examples=25, deadline=None)
@given(ids=st.lists(st.integers(0, 50), min_size=1, max_size=20, unique=True),
       asked=st.lists(st.integers(0, 60), max_size=30))
def test_reads_through_the_memo_match_the_records(tmp_path_factory, ids, asked):
    engine = open_engine(str(tmp_path_factory.mktemp("stores") / "db"))
    try:
        def fill(w):
            info = w.create_collection(NS, clustered=True)
            for i in ids:
                w.insert(info, bson.encode({"_id": i, "x": i * 2}), {}, rid=encode_key([i]))

        engine.write_sync(fill)
        with engine.read() as r:
            info = r.get_collection(NS)
            got = [r.get(info, encode_key([i])) for i in asked]
        assert [None if b is None else bson.decode(b) for b in got] == \
            [{"_id": i, "x": i * 2} if i in ids else None for i in asked]
    finally:
        engine.close()
