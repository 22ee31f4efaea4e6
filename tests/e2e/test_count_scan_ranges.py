"""A count answered from the index alone (COUNT_SCAN: one interval, no document fetched) counts what the
find of the same filter returns. The family: ranges of one or two bounds over numbers of every type and
over strings, including the empty ones (``{$gt: 5, $lt: 5}``, ``{$gte: 5, $lt: 5}``, ``{$gt: "", $lt: ""}``,
crossed bounds), on a plain ascending and a descending index and on ``_id``; a COUNT_SCAN counted the
empty range whose two ends are one value (its start key) as one document."""

from __future__ import annotations

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_NUMBERS = [0, 1, 5, 5.0, Int64(5), Decimal128("5"), 5.5, -1, 7]
_STRINGS = ["", "a", "b", "ab"]
_LOWER, _UPPER = ["$gt", "$gte"], ["$lt", "$lte"]


def _range(values):
    one = st.builds(lambda op, v: {op: v}, st.sampled_from(_LOWER + _UPPER), values)
    two = st.builds(lambda lo, a, hi, b: {lo: a, hi: b}, st.sampled_from(_LOWER), values, st.sampled_from(_UPPER), values)
    return st.one_of(one, two, two)


@pytest.mark.commands("count", "find", "explain", "createIndexes")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cond=st.one_of(_range(st.sampled_from(_NUMBERS)), _range(st.sampled_from(_STRINGS))),
       field=st.sampled_from(["a", "d", "_id"]))
def test_a_count_from_the_index_counts_what_the_find_returns(db, cond, field):
    if "c" not in db.list_collection_names():
        docs = [{"_id": v, "a": v, "d": v} for v in _STRINGS] + [
            {"_id": i, "a": v, "d": v} for i, v in enumerate([0, 1, 5, 5.0, Int64(5), 5.5, -1, 7, 6])]
        db.c.insert_many(docs)
        db.c.create_index("a")
        db.c.create_index([("d", -1)])
    flt = {field: cond}
    expected = len(list(db.c.find(flt, hint={"$natural": 1})))
    assert db.command("count", "c", query=flt)["n"] == expected, flt
    assert db.c.count_documents(flt) == expected, flt


@pytest.mark.commands("count", "explain")
@pytest.mark.parametrize("flt", [{"_id": {"$gt": "", "$lt": ""}}, {"a": {"$gt": 5, "$lt": 5}},
                                 {"a": {"$gte": 5, "$lt": 5}}, {"d": {"$gt": 5, "$lte": 5}}])
def test_an_empty_range_counts_nothing(db, flt):
    db.c.insert_many([{"_id": "", "a": 5, "d": 5}, {"_id": "x", "a": 5.0, "d": 5}])
    db.c.create_index("a")
    db.c.create_index([("d", -1)])
    assert db.command("count", "c", query=flt)["n"] == 0
