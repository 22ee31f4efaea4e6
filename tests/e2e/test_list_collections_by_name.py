"""listCollections with a filter pinning ``name`` looks the names up instead of listing every entry
(a driver's ``create_collection`` asks for its one name first: each create cost O(collections), 2.5 ms
at the first and 23 ms at the 3,000th). The property: for any collections, views and time-series
collections and any filter, the entries are exactly those of the same filter inside an ``$or`` (which
pins no name: every entry is listed and the filter decides)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("listCollections", "create", "drop", "dropDatabase")

NAMES = ("a", "b", "a.b", "system.buckets.a", "system.buckets.t", "t", "v", "ü")
names = st.sampled_from(NAMES + ("missing", "system.views"))
name_conditions = st.one_of(
    names, st.builds(lambda n: {"$eq": n}, names), st.builds(lambda ns: {"$in": ns}, st.lists(names, max_size=3)),
    st.just({"$regex": "^a"}), st.builds(lambda n: {"$ne": n}, names), st.builds(lambda n: {"$gt": n}, names))
filters = st.one_of(
    st.builds(lambda c: {"name": c}, name_conditions),
    st.builds(lambda c, k: {"name": c, "type": k}, name_conditions, st.sampled_from(["collection", "view", "timeseries"])),
    st.builds(lambda a, b: {"$and": [{"name": a}, {"name": b}]}, name_conditions, name_conditions),
    st.builds(lambda a: {"$and": [{"name": a}], "options.timeseries.timeField": "t"}, name_conditions),
    st.builds(lambda a: {"$or": [{"name": a}]}, name_conditions),
)


def _names(db, flt: dict, **kwargs) -> list[tuple[str, str]]:
    cursor = db.command("listCollections", filter=flt, **kwargs)["cursor"]
    return [(e["name"], e["type"]) for e in cursor["firstBatch"]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.dictionaries(st.sampled_from(["a", "b", "a.b", "t", "v", "ü"]),
                             st.sampled_from(["collection", "view", "timeseries"]), max_size=5),
       queries=st.lists(filters, min_size=1, max_size=5), name_only=st.booleans())
def test_a_filter_on_name_lists_what_the_same_filter_in_a_disjunction_lists(db, kinds, queries, name_only):
    db.client.drop_database(db.name)
    for name, kind in kinds.items():
        if kind == "collection":
            db.create_collection(name)
        elif kind == "timeseries":
            db.create_collection(name, timeseries={"timeField": "t"})
        else:
            db.command("create", name, viewOn="src", pipeline=[])
    for flt in queries:
        listed = _names(db, flt, nameOnly=name_only)
        assert listed == _names(db, {"$or": [flt, {"never": 1}]}, nameOnly=name_only), flt
        assert len(set(listed)) == len(listed)


def test_a_name_lookup_finds_a_time_series_collection_its_buckets_and_a_view(db):
    db.create_collection("t", timeseries={"timeField": "t", "metaField": "m"})
    db.command("create", "v", viewOn="t", pipeline=[])
    db.create_collection("c")
    ts_entry = db.command("listCollections", filter={"name": "t"})["cursor"]["firstBatch"]
    assert [(e["name"], e["type"], e["options"]["timeseries"]["metaField"]) for e in ts_entry] == [("t", "timeseries", "m")]
    assert _names(db, {"name": "system.buckets.t"}) == [("system.buckets.t", "collection")]
    assert _names(db, {"name": {"$in": ["v", "c", "nope"]}}) == [("c", "collection"), ("v", "view")]
    assert _names(db, {"name": "c", "type": "view"}) == []
