"""``$listCatalog`` (mongod 6.0+, DocumentSourceListCatalog): the catalog's entries.

``{aggregate: 1}`` on admin lists every collection of every database (``type: "collection"``, with
``md.options.uuid`` and the create options, ``md.indexes`` specs) and every view (``type: "view"``, or
``"timeseries"`` for a time-series collection's view); on a collection it lists that collection's entry
alone. The spec must be an empty object (6200600), a collectionless run must be on
admin (73), and the stage must come first (40602). The property compares, for any mix of collections,
views and time-series collections, its entries of the database with what listCollections shows."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate")

KINDS = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["collection", "view", "timeseries"]),
                        min_size=1, max_size=4)


def _admin_entries(db):
    return list(db.client.admin.aggregate([{"$listCatalog": {}}, {"$match": {"db": db.name}}]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=KINDS)
def test_list_catalog_lists_what_list_collections_shows(db, kinds):
    for name in db.list_collection_names():
        db.drop_collection(name)
    for name, kind in sorted(kinds.items()):
        if kind == "collection":
            db.create_collection(name)
            db[name].create_index("x")
        elif kind == "view":
            db.command("create", name, viewOn="elsewhere", pipeline=[{"$match": {"x": 1}}])
        else:
            db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
    listed = {e["name"]: e for e in db.command("listCollections", 1)["cursor"]["firstBatch"]}
    entries = {e["name"]: e for e in _admin_entries(db)}
    assert set(entries) == set(listed)
    for name, entry in entries.items():
        assert entry["db"] == db.name
        assert entry["type"] == listed[name]["type"], (name, entry)
        if entry["type"] == "collection":
            assert entry["md"]["ns"] == f"{db.name}.{name}"
            assert entry["md"]["options"]["uuid"] == listed[name]["info"]["uuid"]
            names = sorted(i["spec"]["name"] for i in entry["md"]["indexes"])
            assert names == sorted(i["name"] for i in db[name].list_indexes())
            assert list(db[name].aggregate([{"$listCatalog": {}}])) == [entry]
        elif entry["type"] == "view":
            assert (entry["viewOn"], entry["pipeline"]) == ("elsewhere", [{"$match": {"x": 1}}])
        else:
            assert entry["viewOn"] == f"system.buckets.{name}"


@pytest.mark.parametrize("target,pipeline,code", [
    ("coll", [{"$listCatalog": {"x": 1}}], 6200600),
    ("coll", [{"$listCatalog": 1}], 6200600),
    ("coll", [{"$match": {}}, {"$listCatalog": {}}], 40602),
    ("db", [{"$listCatalog": {}}], 73),
])
def test_list_catalog_refusals(db, target, pipeline, code):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as e:
        if target == "db":
            db.command("aggregate", 1, pipeline=pipeline, cursor={})
        else:
            list(db.c.aggregate(pipeline))
    assert e.value.code == code
