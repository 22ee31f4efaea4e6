"""``$planCacheStats`` as a standalone mongod 7.0 answers it for a collection whose plan cache is empty
(Tidemark keeps none; it refused the stage with 224 "not supported by Tidemark").

mongod (DocumentSourcePlanCacheStats::createFromBson, CommonMongodProcessInterface::
getMatchingPlanCacheEntryStats): the spec is an object (9 "$planCacheStats value must be an object.
Found: <type>") holding at most ``allHosts`` (9 "... may contain only 'allHosts' field. Found: <f>", 9
"... may contain at most one field."); ``allHosts: true`` only through a mongos (4503200); first stage
only (40602), not in a $facet (40600); a collection is required (73 for ``aggregate: 1``) and must exist
(50933 "collection '<ns>' does not exist"); an existing collection's empty cache yields no document.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate")


def _error(db, target, pipeline) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        db.command("aggregate", target, pipeline=pipeline, cursor={})
    return info.value


@pytest.fixture
def coll(db):
    db.c.insert_many([{"a": i} for i in range(3)])
    db.c.create_index("a")
    list(db.c.find({"a": {"$gt": 0}}))  # a query a plan cache would remember
    return db.c


@pytest.mark.parametrize("spec", [{}, {"allHosts": False}])
@pytest.mark.parametrize("rest", [[], [{"$match": {"isActive": True}}], [{"$project": {"queryHash": 1}}]])
def test_an_empty_plan_cache_has_no_entries(coll, spec, rest):
    assert list(coll.aggregate([{"$planCacheStats": spec}, *rest])) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans(), st.none(),
                      st.lists(st.integers(-5, 5), max_size=2)))
def test_the_spec_must_be_an_object(coll, spec):
    error = _error(coll.database, "c", [{"$planCacheStats": spec}])
    assert error.code == 9 and error.details["errmsg"].startswith("$planCacheStats value must be an object. Found: ")


def test_the_spec_holds_only_all_hosts(coll):
    db = coll.database
    error = _error(db, "c", [{"$planCacheStats": {"x": 1}}])
    assert (error.code, error.details["errmsg"]) == (
        9, "$planCacheStats parameters object may contain only 'allHosts' field. Found: x")
    error = _error(db, "c", [{"$planCacheStats": {"allHosts": False, "x": 1}}])
    assert (error.code, error.details["errmsg"]) == (9, "$planCacheStats parameters object may contain at most one field.")
    assert _error(db, "c", [{"$planCacheStats": {"allHosts": True}}]).code == 4503200


def test_where_the_stage_may_stand(coll):
    db = coll.database
    assert _error(db, "c", [{"$match": {}}, {"$planCacheStats": {}}]).code == 40602
    assert _error(db, "c", [{"$facet": {"f": [{"$planCacheStats": {}}]}}]).code == 40600
    assert _error(db, 1, [{"$planCacheStats": {}}]).code == 73
    error = _error(db, "missing", [{"$planCacheStats": {}}])
    assert (error.code, error.details["errmsg"]) == (50933, f"collection '{db.name}.missing' does not exist")
