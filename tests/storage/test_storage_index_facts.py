"""A read view takes an index's sub-database, ident and uniqueness from ``CollectionInfo.index_dbs``
(worked out once per catalog version, on the info shared by every reader of the same catalog bytes):
index DDL makes a new catalog version, so the next read reads the index as it now is — dropped and made
again under the same name with other entries, converted to unique, or gone (IndexNotFound)."""

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage.engine import open_engine
from tidemark.storage.errors import IndexNotFound
from tidemark.storage.keys import encode_key

NS = "db.c"


def _scan(engine, name="a_1"):
    with engine.read() as r:
        info = r.get_collection(NS)
        return [(key, rid) for key, rid in r.index_reader(info, name).scan(None, None)]


@settings(max_examples=10, deadline=None)
@given(first=st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True),
       second=st.lists(st.integers(10, 19), min_size=1, max_size=6, unique=True))
def test_index_ddl_changes_what_the_next_read_takes(tmp_path_factory, first, second):
    engine = open_engine(str(tmp_path_factory.mktemp("facts") / "db"))
    try:
        def make(w):
            info = w.create_collection(NS)
            for i, a in enumerate(first):
                w.insert(info, bson.encode({"_id": i, "a": a}), {"_id_": [encode_key([i])]})
            w.create_index(info, {"v": 2, "key": {"a": 1}, "name": "a_1"},
                           [(encode_key([a]), (i + 1).to_bytes(8, "big")) for i, a in enumerate(first)])

        engine.write_sync(make)
        before = engine.read()
        r = before.__enter__()
        try:
            old_info = r.get_collection(NS)
            assert old_info.index_dbs["a_1"][2] is False
        finally:
            before.__exit__(None, None, None)
        assert [key for key, _ in _scan(engine)] == sorted(encode_key([a]) for a in first)

        def remake(w):  # the same name, other entries, unique
            info = w.drop_index(w.get_collection(NS), "a_1")
            w.create_index(info, {"v": 2, "key": {"a": 1}, "name": "a_1", "unique": True},
                           [(encode_key([a]), (i + 1).to_bytes(8, "big")) for i, a in enumerate(second)])

        engine.write_sync(remake)
        with engine.read() as r:
            info = r.get_collection(NS)
            assert info is not old_info and info.index_dbs["a_1"][2] is True
            assert info.index_dbs["a_1"][1] != old_info.index_dbs["a_1"][1]  # a new ident, never reused
        assert [key for key, _ in _scan(engine)] == sorted(encode_key([a]) for a in second)
        engine.write_sync(lambda w: w.drop_index(w.get_collection(NS), "a_1"))
        with pytest.raises(IndexNotFound):
            _scan(engine)
    finally:
        engine.close()
