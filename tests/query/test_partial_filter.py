"""query/partial_filter.py: the filters mongod 7.0 lets a partial index have, and its errors for the rest."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.partial_filter import check_partial_filter

ACCEPTED = [
    {"a": 1}, {"a": None}, {"a": {"$gt": 1, "$lte": 5}}, {"a": {"$exists": True}}, {"a": {"$type": "string"}},
    {"a": {"$in": [1, 2]}}, {"$and": [{"a": 1}, {"b": {"$lt": 2}}]}, {"$or": [{"a": 1}, {"b": {"$gt": 2}}]},
    {"$and": [{"$or": [{"a": 1}, {"b": 2}]}, {"c": {"$exists": True}}]}, {"a.b": {"$eq": 3}}, {},
    {"loc": {"$geoWithin": {"$centerSphere": [[0, 0], 0.1]}}},
]
REFUSED = [  # (filter, code, the expression's debug form that ends the message)
    ({"a": {"$ne": None}}, 67, "$not\n    a $eq null\n"),
    ({"a": {"$exists": False}}, 67, "$not\n    a exists\n"),
    ({"a": {"$nin": [1]}}, 67, None),
    ({"$nor": [{"a": 1}]}, 67, "$nor\n    a $eq 1\n"),
    ({"a": {"$regex": "x"}}, 67, None),
    ({"a": {"$mod": [2, 0]}}, 67, "a mod 2 % x == 0\n"),
    ({"a": {"$size": 2}}, 67, "a $size : 2\n"),
    ({"a": {"$elemMatch": {"$gt": 1}}}, 67, None),
    ({"a": {"$elemMatch": {"$ne": None}}}, 67, None),
    ({"a": {"$all": [1]}}, 67, None),
    ({"$or": [{"a": {"$ne": 1}}]}, 67, "$not\n    a $eq 1\n"),
    ({"$expr": {"$eq": ["$a", 1]}}, 224, None),
    ({"$and": [{"$expr": {"$eq": ["$a", 1]}}]}, 224, None),
    ({"$where": "1"}, 2, None),
]


@pytest.mark.parametrize("flt", ACCEPTED)
def test_accepted(flt):
    check_partial_filter(flt)


@pytest.mark.parametrize(("flt", "code", "debug"), REFUSED)
def test_refused(flt, code, debug):
    with pytest.raises(MongoError) as refused:
        check_partial_filter(flt)
    assert refused.value.code == code
    if code == 67:
        assert refused.value.message.startswith("Expression not supported in partial index: ")
    if debug is not None:
        assert refused.value.message.endswith(debug)
