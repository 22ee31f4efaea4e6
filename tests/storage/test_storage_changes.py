"""The engine's ChangeLog (storage/changes.py): the records each commit changed, by the snapshot id that
first sees them, so a reader brings what it derived from a collection forward without reading it all."""

import bson
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage.changes import ChangeLog
from tidemark.storage.keys import encode_key


def _snapshot(engine):
    with engine.read() as r:
        return r.snapshot_id()


def _insert(w, ns, _id):
    info = w.get_collection(ns)
    return w.insert(info, bson.encode({"_id": _id}), {"_id_": [encode_key([_id])]})


def test_inserts_updates_and_deletes_are_noted_under_the_snapshot_that_sees_them(engine):
    engine.write_sync(lambda w: (w.create_collection("db.c", {}), w.create_collection("db.other", {})))
    ident = engine.write_sync(lambda w: w.get_collection("db.c").ident)
    start = _snapshot(engine)
    assert engine.changes.changed(ident, start, start) == set()

    a = engine.write_sync(lambda w: _insert(w, "db.c", 1))
    after_insert = _snapshot(engine)
    assert engine.changes.changed(ident, start, after_insert) == {a}
    assert engine.changes.changed(ident, after_insert, after_insert) == set()

    engine.write_sync(lambda w: _insert(w, "db.other", 1))  # another collection: not this one's
    b = engine.write_sync(lambda w: _insert(w, "db.c", 2))
    engine.write_sync(lambda w: w.update(w.get_collection("db.c"), a, bson.encode({"_id": 1, "x": 1})))
    engine.write_sync(lambda w: w.delete(w.get_collection("db.c"), b, {"_id_": [encode_key([2])]}))
    now = _snapshot(engine)
    assert engine.changes.changed(ident, after_insert, now) == {a, b}
    assert engine.changes.changed(ident, start, now) == {a, b}
    assert engine.changes.changed(ident, start, after_insert) == {a}  # later commits are not seen there


def test_a_commit_without_record_changes_notes_nothing(engine):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    ident = engine.write_sync(lambda w: w.get_collection("db.c").ident)
    start = _snapshot(engine)
    engine.write_sync(lambda w: w.journal_append(b"stream", b"payload"))
    assert _snapshot(engine) > start
    assert engine.changes.changed(ident, start, _snapshot(engine)) == set()


def test_changes_before_the_engine_opened_are_not_known(dbpath):
    from tidemark.storage.engine import open_engine

    with open_engine(dbpath) as engine:
        engine.write_sync(lambda w: w.create_collection("db.c", {}))
        engine.write_sync(lambda w: _insert(w, "db.c", 1))
    with open_engine(dbpath) as engine:
        ident = engine.write_sync(lambda w: w.get_collection("db.c").ident)
        now = _snapshot(engine)
        assert engine.changes.changed(ident, 0, now) is None
        assert engine.changes.changed(ident, now, now) == set()


@settings(max_examples=60, deadline=None)
@given(commits=st.lists(st.dictionaries(st.sampled_from(["a", "b"]),
                                        st.sets(st.binary(min_size=1, max_size=2), min_size=1, max_size=6),
                                        min_size=1, max_size=2), max_size=30),
       bound=st.integers(1, 20), data=st.data())
def test_the_log_answers_every_known_range_with_a_superset_and_unknown_ranges_with_none(commits, bound, data):
    log = ChangeLog(floor=10)
    log.MAX_RIDS = bound  # type: ignore[misc]
    for i, notes in enumerate(commits):
        log.add(11 + i, {ident: set(rids) for ident, rids in notes.items()})
    last = 10 + len(commits)
    after = data.draw(st.integers(0, last))
    upto = data.draw(st.integers(after, last))
    got = log.changed("a", after, upto)
    if got is None:
        assert after < log.floor
        return
    expected = set().union(*(notes.get("a", set()) for i, notes in enumerate(commits) if after < 11 + i <= upto))
    assert got == expected
    total = sum(len(rids) for notes in commits for rids in notes.values())
    if total <= bound:
        assert log.floor == 10  # nothing evicted while within the bound
