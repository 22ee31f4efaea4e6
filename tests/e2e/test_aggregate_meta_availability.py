"""An aggregation reading metadata its read cannot make fails 40218, as mongod's dependency analysis.

``textScore`` exists only when the pipeline opens with a ``$match`` holding ``$text``;
``geoNearDistance`` / ``geoNearPoint`` only when it opens with ``$geoNear``. mongod checks every stage
up to the first that drops the input's metadata (``$group`` and the stages made of it; ``$facet``, whose
pipelines are checked the same way) and fails with 40218 "query requires <what> metadata, but it is
not available"; a ``$lookup`` / ``$unionWith`` pipeline reads another collection and is its own read.
The property: for any opening and any sequence of stages, the aggregation fails 40218 exactly when a
stage before the first metadata-dropping one reads unavailable metadata, and otherwise runs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate")

MESSAGES = {"textScore": "text score", "geoNearDistance": "$geoNear distance", "geoNearPoint": "$geoNear point"}
OPENINGS = {
    "text": ({"$match": {"$text": {"$search": "hello"}}}, {"textScore"}),
    "text_nested": ({"$match": {"$and": [{"$text": {"$search": "hello"}}, {"_id": {"$gte": 0}}]}}, {"textScore"}),
    "geo": ({"$geoNear": {"near": [0, 0], "distanceField": "d"}}, {"geoNearDistance", "geoNearPoint"}),
    "match": ({"$match": {"_id": {"$gte": 0}}}, set()),
    "none": (None, set()),
}


def _reading(name: str):
    """Stages that read metadata ``name`` (what they read, the stage)."""
    meta = {"$meta": name}
    sort = [] if name != "textScore" else [{"$sort": {"s": meta}}]  # (a $meta sort takes textScore only)
    return st.sampled_from([{"$project": {"s": meta}}, {"$addFields": {"s": meta}},
                            {"$match": {"$expr": {"$eq": [meta, None]}}}, *sort]).map(lambda s: (name, s))


PLAIN = st.sampled_from([{"$limit": 5}, {"$skip": 0}, {"$project": {"t": 1}}, {"$addFields": {"k": 1}},
                         {"$match": {"_id": {"$gte": 0}}}, {"$unwind": {"path": "$t", "preserveNullAndEmptyArrays": True}},
                         {"$project": {"s": {"$literal": {"$meta": "textScore"}}}}]).map(lambda s: (None, s))
DROPPING = st.sampled_from([{"$group": {"_id": None, "n": {"$sum": 1}}}, {"$count": "n"},
                            {"$bucketAuto": {"groupBy": "$_id", "buckets": 2}},
                            {"$sortByCount": "$t"}]).map(lambda s: ("drop", s))
READING = st.sampled_from(sorted(MESSAGES)).flatmap(_reading)
OWN_READ = READING.map(lambda r: (None, {"$unionWith": {"coll": "other", "pipeline": [r[1]]}}))
FACET = st.lists(READING | PLAIN, max_size=3).map(lambda rs: ("facet", {"$facet": {"f": [s for _, s in rs]}}, rs))
STAGE = READING | PLAIN | DROPPING | OWN_READ | FACET


def _expected(available: set, stages: list) -> str | None:
    """The metadata the first failing read names, or None when the aggregation runs."""
    for entry in stages:
        what = entry[0]
        if what == "drop":
            return None
        if what == "facet":
            return next((w for w, _ in entry[2] if w is not None and w not in available), None)
        if what is not None and what not in available:
            return what
    return None


@pytest.fixture
def coll(db):
    c = db.c
    c.insert_many([{"_id": i, "t": "hello world" if i % 2 else "goodbye", "loc": [i, i]} for i in range(4)])
    c.create_index([("t", "text")])
    c.create_index([("loc", "2d")])
    db.other.insert_one({"_id": 0})
    return c


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opening=st.sampled_from(sorted(OPENINGS)), stages=st.lists(STAGE, max_size=4))
def test_metadata_read_without_its_source_fails_40218(coll, opening, stages):
    first, available = OPENINGS[opening]
    pipeline = ([first] if first else []) + [entry[1] for entry in stages]
    expected = _expected(available, stages)
    if expected is None:
        list(coll.aggregate(pipeline))
        return
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(pipeline))
    assert (e.value.code, e.value.details["errmsg"]) == (
        40218, f"query requires {MESSAGES[expected]} metadata, but it is not available"), pipeline


def test_a_parse_error_comes_before_the_unavailable_metadata(coll):
    """mongod parses the whole pipeline before it plans the read."""
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$project": {"s": {"$meta": "textScore"}}}, {"$limit": -1}]))
    assert e.value.code == 15958
