"""listCollections beside an invalid view definition: 182 for every filter but the collections-only one.

mongod iterates its view catalog for any listCollections filter except exactly
``{$or: [{type: "collection"}, {type: {$exists: false}}]}`` (ListCollectionsFilter::
makeTypeCollectionFilter), and the iteration refuses while the catalog holds a definition it cannot
load (InvalidViewDefinition, 182): a filter pinning ``name`` (to a time-series collection, a plain
collection, a view or a missing name; by equality, ``$eq`` or ``$in``) is no exception. Without the
invalid definition every such filter lists what it matches."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("listCollections")

COLLECTIONS_ONLY = {"$or": [{"type": "collection"}, {"type": {"$exists": False}}]}
NAMES = st.sampled_from(["ts", "plain", "v", "missing"])
FILTERS = st.one_of(
    NAMES.map(lambda n: {"name": n}),
    NAMES.map(lambda n: {"name": {"$eq": n}}),
    st.lists(NAMES, min_size=1, max_size=3).map(lambda ns: {"name": {"$in": ns}}),
    st.sampled_from([{}, {"type": "timeseries"}, {"type": "view"}, {"type": "collection"}, COLLECTIONS_ONLY]),
)


@pytest.fixture
def catalog(db):
    db.create_collection("ts", timeseries={"timeField": "time"})
    db.create_collection("plain")
    db.command("create", "v", viewOn="plain", pipeline=[])
    return db


def _listed(db, flt):
    try:
        return sorted(e["name"] for e in db.command("listCollections", 1, filter=flt)["cursor"]["firstBatch"])
    except OperationFailure as e:
        return e.code


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=FILTERS)
def test_only_the_collections_only_filter_skips_an_invalid_view(catalog, flt):
    db = catalog
    valid = _listed(db, flt)
    assert isinstance(valid, list)
    db.system.views.insert_one({"_id": "invalid", "pipeline": "invalid"})
    try:
        got = _listed(db, flt)
    finally:
        db.system.views.delete_one({"_id": "invalid"})
    if flt == COLLECTIONS_ONLY:
        assert got == valid
    else:
        assert got == 182, (flt, got)
