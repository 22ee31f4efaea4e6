"""Fields named without a ``$path`` on a time-series collection: the same answers as a regular collection.

The unpack decodes only the fields the rest of the pipeline can be proven to read. ``$getField``
without ``input``, ``$$CURRENT``/``$$ROOT`` rebinding and ``$jsonSchema`` keywords over every field name
no ``$path``: the unpack must then decode every field (it used to return ``{}`` and match nothing).
``$$CURRENT.<f>``/``$$ROOT.<f>`` in a filter's ``$expr`` name field ``f``: it is decoded (the filter
used to see missing values and match nothing). The ``sortBy`` of ``$top``/``$bottom``/``$topN``/``$bottomN`` names fields without a ``$`` too: they are
decoded (they used to be left out, and the accumulators sorted on missing values)."""

import datetime as dt

import pytest

pytestmark = pytest.mark.commands("aggregate", "find")

T0 = dt.datetime(2024, 5, 1)
DOCS = [{"_id": i, "t": T0 + dt.timedelta(minutes=i), "m": {"h": f"h{i % 2}"}, "v": i % 7, "w": {"x": i}}
        for i in range(20)]

PIPELINES = [
    [{"$project": {"_id": 1, "p": {"$getField": "v"}}}],
    [{"$project": {"_id": 1, "p": {"$getField": {"field": "v"}}}}],
    [{"$project": {"_id": 1, "p": {"$getField": {"field": "v", "input": "$$CURRENT"}}}}],
    [{"$project": {"_id": 1, "p": {"$getField": {"field": "x", "input": "$w"}}}}],
    [{"$match": {"$expr": {"$eq": [{"$getField": "v"}, 5]}}}, {"$project": {"_id": 1}}],
    [{"$sort": {"_id": 1}}, {"$match": {"$expr": {"$eq": [{"$getField": "v"}, 5]}}}, {"$project": {"_id": 1}}],
    [{"$group": {"_id": {"$getField": "v"}, "n": {"$sum": 1}}}],
    [{"$project": {"_id": 1, "p": {"$let": {"vars": {"CURRENT": "$w"}, "in": "$x"}}}}],
    [{"$project": {"_id": 1, "p": {"$unsetField": {"field": "m", "input": "$$ROOT"}}}}],
    [{"$project": {"_id": 1, "p": {"$setField": {"field": "z", "input": "$$ROOT", "value": 1}}}}],
    [{"$match": {"$jsonSchema": {"minProperties": 5}}}, {"$count": "n"}],
    # $$CURRENT.<field> / $$ROOT.<field> in a filter's $expr (found by the generated test)
    [{"$match": {"$expr": {"$in": ["$$CURRENT.v", [1, 5]]}}}, {"$project": {"_id": 1}}],
    [{"$match": {"$expr": {"$eq": ["$$ROOT.w.x", 3]}}}, {"$project": {"m": 1}}],
    # sortBy of $top/$bottom/$topN/$bottomN names its fields without a $ (found by the generated test)
    [{"$group": {"_id": "$m.h", "top": {"$topN": {"n": 2, "sortBy": {"w.x": -1}, "output": "$_id"}},
                 "low": {"$bottom": {"sortBy": {"w": -1}, "output": "$_id"}}}}],
    [{"$match": {"$jsonSchema": {"properties": {"v": {"minimum": 3}}, "additionalProperties": True}}},
     {"$project": {"_id": 1, "v": 1}}],
]


@pytest.fixture()
def pair(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many(DOCS)
    db.regular.insert_many(DOCS)
    return db.ts, db.regular


def _normal(value):
    """Field order aside (an unpacked measurement lists its fields in bucket order)."""
    if isinstance(value, dict):
        return sorted((k, _normal(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _key(doc):
    return repr(_normal(doc))


@pytest.mark.parametrize("pipeline", PIPELINES, ids=range(len(PIPELINES)))
def test_pipeline_answers_as_on_a_regular_collection(pair, pipeline):
    ts, regular = pair
    expected = sorted(_key(d) for d in regular.aggregate(pipeline))
    assert expected, "the pipeline must return something for the comparison to mean anything"
    assert sorted(_key(d) for d in ts.aggregate(pipeline)) == expected


def test_find_with_current_path_in_expr_and_projection(pair):
    ts, regular = pair
    query = {"$expr": {"$in": ["$$CURRENT.v", [2, 3]]}}
    expected = sorted(_key(d) for d in regular.find(query, {"m": 1}))
    assert len(expected) == 6
    assert sorted(_key(d) for d in ts.find(query, {"m": 1})) == expected


def test_find_with_getfield_expr_and_projection(pair):
    ts, regular = pair
    query = {"$expr": {"$gte": [{"$getField": "v"}, 5]}}
    projection = {"_id": 1, "p": {"$getField": "v"}}
    expected = sorted(_key(d) for d in regular.find(query, projection))
    assert len(expected) == 5
    assert sorted(_key(d) for d in ts.find(query, projection)) == expected
