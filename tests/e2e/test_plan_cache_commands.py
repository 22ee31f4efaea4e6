"""The plan cache and index filter commands as a standalone mongod 7.0 answers them for a collection
whose plan cache is empty (Tidemark keeps none; it answered 59 CommandNotFound to each):

- planCacheClear / planCacheClearFilters: ok; with a query shape, the shape is checked as
  plan_cache_commands::canonicalize checks it (2 "required field query must be an object", "optional
  field sort must be an object"..., then the filter, sort, projection and collation as a find parses
  them); sort/projection/collation without query: 2 "sort, projection, or collation provided without
  query"; a missing collection: ok without any check (plan_cache_clear_command.cpp,
  index_filter_commands.cpp); a view: 166; a collection name that is no string: 73.
- planCacheListFilters: ``filters: []``.
- planCacheSetFilter: refused with 115 (an index filter Tidemark's planner would not honour).
Privileges: tests/e2e/test_auth_commands_lib.py.
"""

from __future__ import annotations

import pytest
from bson.son import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("planCacheClear", "planCacheClearFilters", "planCacheListFilters",
                                  "planCacheSetFilter")
CLEARS = ("planCacheClear", "planCacheClearFilters")
NOT_OBJECT = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans(), st.none(),
                       st.lists(st.integers(-5, 5), max_size=2))


@pytest.fixture
def coll(db):
    db.c.insert_many([{"a": i} for i in range(3)])
    return db.c


def _error(db, cmd) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        db.command(cmd)
    return info.value


@pytest.mark.parametrize("name", CLEARS)
@pytest.mark.parametrize("shape", [{}, {"query": {}}, {"query": {"a": 1}, "sort": {"a": -1}},
                                   {"query": {"a": {"$gt": 1}}, "projection": {"a": 1, "_id": 0},
                                    "collation": {"locale": "fr"}}])
def test_clearing_an_empty_cache_is_ok(coll, name, shape):
    assert coll.database.command(SON([(name, "c"), *shape.items()])) == {"ok": 1.0}


@pytest.mark.parametrize("name", CLEARS)
def test_a_shape_without_query_is_refused(coll, name):
    for field in ("sort", "projection", "collation"):
        error = _error(coll.database, SON([(name, "c"), (field, {})]))
        assert (error.code, error.details["errmsg"]) == (2, "sort, projection, or collation provided without query")


@pytest.mark.parametrize("name", CLEARS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NOT_OBJECT, field=st.sampled_from(["query", "sort", "projection", "collation"]))
def test_shape_fields_must_be_objects(coll, name, value, field):
    shape = {"query": value} if field == "query" else {"query": {}, field: value}
    error = _error(coll.database, SON([(name, "c"), *shape.items()]))
    expected = "required field query must be an object" if field == "query" else f"optional field {field} must be an object"
    assert (error.code, error.details["errmsg"]) == (2, expected)


@pytest.mark.parametrize("name", CLEARS)
def test_the_shape_parses_as_a_find_would(coll, name):
    db = coll.database
    assert _error(db, SON([(name, "c"), ("query", {"$bogus": 1})])).code == 2
    assert _error(db, SON([(name, "c"), ("query", {}), ("sort", {"a": "up"})])).code == 15974
    assert _error(db, SON([(name, "c"), ("query", {}), ("projection", {"a": 1, "b": 0})])).code == 31254
    assert _error(db, SON([(name, "c"), ("query", {}), ("collation", {"locale": "nope"})])).code == 2
    # a missing collection has no cache: nothing is looked at
    assert db.command(SON([(name, "missing"), ("query", {"$bogus": 1}), ("sort", 5)])) == {"ok": 1.0}


@pytest.mark.parametrize("name", [*CLEARS, "planCacheListFilters", "planCacheSetFilter"])
def test_names_and_views(coll, name):
    db = coll.database
    assert _error(db, SON([(name, 5)])).code == 73
    db.create_collection("v", viewOn="c", pipeline=[])
    if name != "planCacheSetFilter":
        error = _error(db, SON([(name, "v")]))
        assert (error.code, error.details["errmsg"]) == (166, f"Namespace {db.name}.v is a view, not a collection")


def test_no_index_filters(coll):
    db = coll.database
    for target in ("c", "missing"):
        assert db.command("planCacheListFilters", target) == {"filters": [], "ok": 1.0}
    coll.create_index("a")
    error = _error(db, SON([("planCacheSetFilter", "c"), ("query", {"a": 1}), ("indexes", [{"a": 1}])]))
    assert error.code == 115 and error.details["codeName"] == "CommandNotSupported"
    assert db.command("planCacheListFilters", "c") == {"filters": [], "ok": 1.0}
