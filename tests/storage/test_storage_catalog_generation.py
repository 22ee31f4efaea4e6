"""Engine.catalog_generation: bumped by every commit that changes the catalog or a ``system.views``
record, by no other commit, and never ahead of what a read transaction begun after reading it sees."""

import bson
from storage_helpers import insert_docs

from tidemark.storage.keys import encode_key


def _bumps(engine, fn) -> int:
    before = engine.catalog_generation
    engine.write_sync(fn)
    return engine.catalog_generation - before


def test_catalog_changes_bump_the_generation(engine):
    assert _bumps(engine, lambda w: w.create_collection("a.x")) == 1
    assert _bumps(engine, lambda w: w.set_options("a.x", {"validator": {"v": 1}})) == 1
    spec = {"v": 2, "key": {"k": 1}, "name": "k_1"}
    assert _bumps(engine, lambda w: w.create_index(w.get_collection("a.x"), spec)) == 1
    assert _bumps(engine, lambda w: w.set_index_options(w.get_collection("a.x"), "k_1", {"hidden": True})) == 1
    assert _bumps(engine, lambda w: w.drop_index(w.get_collection("a.x"), "k_1")) == 1
    assert _bumps(engine, lambda w: w.rename_collection("a.x", "a.y")) == 1
    assert _bumps(engine, lambda w: w.drop_collection("a.y")) == 1


def test_view_definitions_bump_it_other_records_do_not(engine):
    insert_docs(engine, "a.plain", [{"_id": 1}])
    assert _bumps(engine, lambda w: w.insert(w.get_collection("a.plain"), bson.encode({"_id": 2}),
                                             {"_id_": [encode_key([2])]})) == 0
    engine.write_sync(lambda w: w.create_collection("a.system.views"))

    def define(w):
        w.insert(w.get_collection("a.system.views"), bson.encode({"_id": "a.v", "viewOn": "plain", "pipeline": []}),
                 {"_id_": [encode_key(["a.v"])]})

    assert _bumps(engine, define) == 1


def test_a_view_begun_before_a_catalog_change_carries_the_older_generation(engine):
    insert_docs(engine, "a.x", [{"_id": 1}])
    with engine.read() as r:
        engine.write_sync(lambda w: w.drop_collection("a.x"))
        assert r.get_collection("a.x") is not None  # its snapshot is older than the drop
        assert r.catalog_generation < engine.catalog_generation
    with engine.read() as r:
        assert r.get_collection("a.x") is None
        assert r.catalog_generation == engine.catalog_generation
