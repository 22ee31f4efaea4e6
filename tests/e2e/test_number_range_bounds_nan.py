"""A range below a number starts at -Infinity, so NaN is never counted in it. mongod's IndexBoundsBuilder
bounds ``{a: {$lt: 5}}`` by ``[-inf.0, 5)``, and NaN, which sorts below every number in an index, lies
outside. Tidemark showed those bounds but scanned from the start of the number bracket: a find fetched the
NaN entries and dropped them (its filter), while a count answered by a COUNT_SCAN (no filter) counted
them: ``count({a: {$lt: -1.5}})`` was 3 over documents holding NaN, Decimal128 NaN and -NaN, where find
returned none.

The family: numbers of every type (int, Int64, double, Decimal128, infinities, -0.0) and the NaNs beside
other types, upper-bounded ranges (``$lt``/``$lte``, alone, or under ``$and``), through ascending,
descending and compound indexes with an equality prefix: count == the collection scan's count."""

import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_NUMBERS = [float("nan"), Decimal128("NaN"), Decimal128("-NaN"), -math.inf, math.inf, Decimal128("-Infinity"),
            -1.5, Decimal128("-1.5"), -0.0, 0, Int64(1), 1.0, Decimal128("1.0"), 2**31, 1e300]
_VALUES = st.sampled_from([*_NUMBERS, None, "a", True])
_BOUNDS = st.sampled_from([n for n in _NUMBERS if not (isinstance(n, float) and math.isnan(n))
                           and not (isinstance(n, Decimal128) and n.to_decimal().is_nan())])


@pytest.mark.commands("count", "find", "createIndexes")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_VALUES, min_size=1, max_size=12), op=st.sampled_from(["$lt", "$lte"]), bound=_BOUNDS,
       key=st.sampled_from([[("a", 1)], [("a", -1)], [("g", 1), ("a", 1)], [("g", 1), ("a", -1)]]))
def test_a_count_below_a_number_counts_no_nan(db, values, op, bound, key):
    db.c.drop()
    db.c.insert_many([{"_id": i, "a": v, "g": 0} for i, v in enumerate(values)])
    db.c.create_index(key)
    query = {"a": {op: bound}, "g": 0} if key[0][0] == "g" else {"a": {op: bound}}
    scanned = len(list(db.c.find(query).hint({"$natural": 1})))
    assert db.command("count", "c", query=query)["n"] == scanned
    assert len(list(db.c.find(query))) == scanned


@pytest.mark.commands("count", "explain", "createIndexes")
def test_the_counted_interval_starts_at_minus_infinity(db):
    db.c.insert_many([{"a": float("nan")}, {"a": Decimal128("NaN")}, {"a": -1}, {"a": 3}])
    db.c.create_index({"a": 1})
    assert db.command("count", "c", query={"a": {"$lt": 0}})["n"] == 1
    stats = db.command("explain", {"count": "c", "query": {"a": {"$lt": 0}}}, verbosity="executionStats")
    assert stats["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "COUNT_SCAN"
    assert stats["executionStats"]["totalKeysExamined"] == 2  # -1, and the read that finds the end
    plan = db.c.find({"a": {"$lt": 0}}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexBounds"] == {"a": ["[-inf.0, 0)"]}
