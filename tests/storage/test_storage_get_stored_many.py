"""ReadView.get_stored_many (a chunk of records read by one C-level pass) against its model, one
``get_stored`` per record id: any list of ids — present, absent, repeated, in any order, over-long (kept
under a compact key), their values partly chunked (tag 5) — gives each present one's stored value, in
the order asked."""

import os

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.storage import chunks
from tidemark.storage.engine import open_engine
from tidemark.storage.keys import encode_key

NS = "db.system.buckets.c"
IDS = [*range(0, 60, 2), "k" * 600, "k" * 700]  # even numbers (odd ones absent), two over-long ids


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    dbpath = str(tmp_path_factory.mktemp("get_stored_many") / "db")
    engine = open_engine(dbpath, compact_on_close=False)

    def fn(w):
        info = w.create_collection(NS, clustered=True)
        for n, i in enumerate(IDS):  # every third value too large for a leaf node: chunked by the compaction
            w.insert(info, bson.encode({"_id": i, "pad": os.urandom(3000 if n % 3 == 0 else 40)}), {},
                     rid=encode_key([i]))

    engine.write_sync(fn)
    engine.close()
    open_engine(dbpath, compact_on_close=True).close()
    engine = open_engine(dbpath, compact_on_close=False)
    with engine.read() as r:
        info = r.get_collection(NS)
        raw = [r._txn.get(encode_key([i]), db=r._records(info)) for i in range(0, 60, 2)]
    assert sum(chunks.is_chunked(v) for v in raw if v is not None) >= 5
    yield engine
    engine.close()


_ids = st.one_of(st.integers(-2, 62), st.sampled_from(IDS[-2:]), st.just("k" * 650))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(_ids, max_size=40))
def test_get_stored_many_is_get_stored_of_each(compacted, ids):
    rids = [encode_key([i]) for i in ids]
    with compacted.read() as r:
        info = r.get_collection(NS)
        expected = [(rid, stored) for rid in rids if (stored := r.get_stored(info, rid)) is not None]
        assert r.get_stored_many(info, rids) == expected
    assert all(isinstance(v, bytes) for _, v in expected)
