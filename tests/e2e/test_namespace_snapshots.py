"""A namespace resolved in a read snapshot is reused while the snapshot is the same
(``tidemark.core.namespace``): every change of the catalog or of ``system.views`` is seen by the
very next command, and two in-process servers (two engines whose LMDB transaction ids may coincide)
never see each other's resolutions."""

from __future__ import annotations

import pymongo


def test_view_redefinitions_are_seen_at_once(db):
    db.base.insert_many([{"_id": i, "x": i} for i in range(5)])
    for round_ in range(3):
        db.command("create", "v", viewOn="base", pipeline=[{"$match": {"x": {"$gte": round_}}}])
        assert [d["_id"] for d in db.v.find()] == list(range(round_, 5))
        db.command("collMod", "v", viewOn="base", pipeline=[{"$match": {"x": {"$lt": round_}}}])
        assert [d["_id"] for d in db.v.find()] == list(range(round_))
        db.v.drop()
        assert list(db.v.find()) == []
        db.v.insert_one({"_id": "plain"})  # the name is now a collection
        assert list(db.v.find()) == [{"_id": "plain"}]
        db.v.drop()


def test_time_series_view_replaced_by_a_collection(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    import datetime as dt

    db.ts.insert_one({"t": dt.datetime(2024, 1, 1), "m": 1, "v": 1})
    assert [d["v"] for d in db.ts.aggregate([{"$match": {"m": 1}}])] == [1]
    db.ts.drop()
    db.ts.insert_one({"_id": 1, "v": 2})
    assert list(db.ts.aggregate([{"$match": {}}])) == [{"_id": 1, "v": 2}]


def test_two_engines_in_one_process(tidemark_server_factory):
    a, b = tidemark_server_factory(), tidemark_server_factory()
    ca = pymongo.MongoClient(a.uri, directConnection=True)
    cb = pymongo.MongoClient(b.uri, directConnection=True)
    try:
        # the same name: a view on one server, a collection on the other, built by the same number
        # of commits so that both engines' snapshot ids move in step
        ca.d.base.insert_one({"_id": "from a's base"})
        ca.d.command("create", "n", viewOn="base", pipeline=[])
        cb.d.other.insert_one({"_id": "placeholder"})
        cb.d.n.insert_one({"_id": "b's collection"})
        for _ in range(3):
            assert list(ca.d.n.find()) == [{"_id": "from a's base"}]
            assert list(cb.d.n.find()) == [{"_id": "b's collection"}]
    finally:
        ca.close()
        cb.close()
