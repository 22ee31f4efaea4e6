"""An aggregate whose $match follows its leading $sort stages runs the $match first, as mongod's
pushMatchBefore does, so the plan can use an index for it: ``[$sort {qty: 1}, $match {...}, ...]``
scanned the whole index in the sort order and filtered afterwards (30 keys for 6 matches in the Perl
driver's collection.t; explain already showed the rewritten pipeline, the read did not).

The family: generated documents, indexes and pipelines ``[$sort..., $match, ($sort), ($limit)]`` give
the model's documents (filter, then the sorts as written: a stable sort of the filtered documents is
the filter of the sorted ones), and with an index on the matched field no more documents are examined
than match (the pipeline's own $match included).
"""

from __future__ import annotations

import operator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "explain")

OPS = {"$eq": operator.eq, "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$in": None}


def test_the_match_after_a_sort_uses_the_index(db):
    db.c.insert_many([{"_id": i, "category": "cake" if i % 2 else "pie", "type": f"t{i % 7:02}",
                       "qty": 10 if i < 12 else i} for i in range(30)])
    db.c.create_index([("qty", 1), ("type", 1)])
    db.c.create_index([("qty", 1), ("category", 1)])
    pipeline = [{"$sort": {"qty": 1}}, {"$match": {"category": "cake", "qty": 10}}, {"$sort": {"type": -1}}]
    assert [d["_id"] for d in db.c.aggregate(pipeline)] == [5, 11, 3, 9, 1, 7]
    stats = db.command({"explain": {"aggregate": "c", "pipeline": pipeline, "cursor": {}},
                        "verbosity": "executionStats"})["executionStats"]
    assert stats["totalDocsExamined"] == 6 and stats["totalKeysExamined"] == 6


def test_text_and_geo_matches_stay_where_they_are(db):
    """A $text $match is placed as written (17313 when it is not the first stage), even after a $sort
    (it ran: the $sort the _id index answers was dropped before the rest of the pipeline was parsed)."""
    db.c.insert_one({"_id": 1, "t": "hello"})
    db.c.create_index([("t", "text")])
    from pymongo.errors import OperationFailure

    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{"$sort": {"_id": 1}}, {"$match": {"$text": {"$search": "hello"}}}]))
    assert info.value.code == 17313


DOCS = st.lists(st.fixed_dictionaries({"a": st.integers(0, 4), "c": st.integers(0, 3)}), max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS, first=st.sampled_from([1, -1]), op=st.sampled_from(sorted(OPS)), value=st.integers(0, 4),
       then=st.sampled_from([None, 1, -1]), limit=st.sampled_from([None, 1, 3]), indexed=st.booleans())
def test_match_after_sort_family(db, docs, first, op, value, then, limit, indexed):
    db.drop_collection("c")
    docs = [{"_id": i, **d} for i, d in enumerate(docs)]
    if docs:
        db.c.insert_many(docs)
    if indexed:
        db.c.create_index("a")
    operand = [value, (value + 2) % 5] if op == "$in" else value
    pipeline = [{"$sort": {"_id": first}}, {"$match": {"a": {op: operand}}}]
    if then is not None:
        pipeline.append({"$sort": {"c": then, "_id": 1}})
    if limit is not None:
        pipeline.append({"$limit": limit})

    def keep(d):
        return d["a"] in operand if op == "$in" else OPS[op](d["a"], value)

    expected = sorted((d for d in docs if keep(d)), key=lambda d: d["_id"], reverse=first < 0)
    if then is not None:
        expected = sorted(expected, key=lambda d: (d["c"] * then, d["_id"]))
    if limit is not None:
        expected = expected[:limit]
    assert [d["_id"] for d in db.c.aggregate(pipeline)] == [d["_id"] for d in expected]
    if indexed and limit is None:
        stats = db.command({"explain": {"aggregate": "c", "pipeline": pipeline, "cursor": {}},
                            "verbosity": "executionStats"})["executionStats"]
        assert stats["totalDocsExamined"] == len(expected), pipeline


def test_time_series_match_after_sort_uses_the_bucket_index(db):
    """On a time-series collection too (timeseries_index_use.js's sort-then-match shapes): the $match on the
    meta field leads, the buckets come from the meta/time index in time order and the sort is bounded;
    it unpacked every bucket and sorted all measurements before."""
    import datetime as dt

    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    base = dt.datetime(2024, 1, 1)
    db.c.insert_many([{"t": base + dt.timedelta(minutes=i), "m": f"s{i % 10}", "v": i} for i in range(2000)])
    pipeline = [{"$sort": {"t": 1}}, {"$match": {"m": "s3"}}, {"$limit": 3}]
    assert [d["v"] for d in db.c.aggregate(pipeline)] == [3, 13, 23]
    explained = db.command({"explain": {"aggregate": "c", "pipeline": pipeline, "cursor": {}},
                            "verbosity": "executionStats"})
    names = [next(iter(stage)) for stage in explained["stages"]]
    assert names.count("$_internalBoundedSort") == 1 and "$sort" not in names, names
    assert "IXSCAN" in str(explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"])
