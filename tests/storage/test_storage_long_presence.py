"""Index reads skip the compact-key seek while the engine's side sub-database holds no full key
(longkeys.Presence), and only then: a long key written since the open (in this engine, after a read
began, or before a restart) is found by every later read, through the same index reader path a
time-series read takes (``ReadView.index_reader``)."""

import bson
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage.engine import open_engine
from tidemark.storage.keys import encode_key

NS = "db.c"
SPEC = {"v": 2, "key": {"a": 1}, "name": "a_1"}


def _entries(engine):
    with engine.read() as r:
        info = r.get_collection(NS)
        return list(r.index_reader(info, "a_1").scan(None, None))


def _insert(engine, values):
    def fill(w):
        info = w.get_collection(NS)
        for i, value in values:
            w.insert(info, bson.encode({"_id": i, "a": value}), {"_id_": [encode_key([i])], "a_1": [encode_key([value])]})

    engine.write_sync(fill)


@settings(max_examples=15, deadline=None)
@given(short=st.lists(st.text(alphabet="ab", max_size=8), max_size=5),
       long=st.lists(st.text(alphabet="ab", min_size=1, max_size=8).map(lambda s: "x" * 600 + s), min_size=1,
                     max_size=4))
def test_long_keys_written_after_the_open_or_before_a_restart_are_read(tmp_path_factory, short, long):
    path = str(tmp_path_factory.mktemp("presence") / "db")
    engine = open_engine(path)
    try:
        engine.write_sync(lambda w: w.create_index(w.create_collection(NS), SPEC, []))
        _insert(engine, list(enumerate(short)))
        assert engine._long_keys.presence.possible is False  # nothing long yet: reads skip the seek
        assert [key for key, _ in _entries(engine)] == sorted(encode_key([v]) for v in short)
        before = engine.read()
        r = before.__enter__()  # a read begun before the long keys: its snapshot has none
        try:
            _insert(engine, [(100 + i, v) for i, v in enumerate(long)])
            assert engine._long_keys.presence.possible is True
            old = [key for key, _ in r.index_reader(r.get_collection(NS), "a_1").scan(None, None)]
        finally:
            before.__exit__(None, None, None)
        assert old == sorted(encode_key([v]) for v in short)
        expected = sorted(encode_key([v]) for v in short + long)
        assert [key for key, _ in _entries(engine)] == expected  # full keys, in full-key order
    finally:
        engine.close()
    engine = open_engine(path)  # reopened: the side sub-database holds keys, so reads look
    try:
        assert engine._long_keys.presence.possible is True
        assert [key for key, _ in _entries(engine)] == expected
    finally:
        engine.close()
