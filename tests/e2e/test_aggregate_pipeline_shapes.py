"""A pipeline's shape is checked alike for ``aggregate: 1`` and for a collection, as a family: whatever
its elements (any BSON type, empty or many-field documents, stages that need a collection or none),
the command answers with a MongoDB error code, never 1 InternalError, explained or not. A malformed
element fails both with the same code (14 for an element that is not an object, 40323 for a stage of
other than one field), before any stage is looked at: before a standalone refuses ``$changeStream``
(40573) or a collection refuses ``$listLocalSessions`` (73), as mongod's command parse does. Found by the wire fuzzer: ``{aggregate: 1, pipeline: [0]}`` answered 1
InternalError ("'int' object is not iterable") where a collection's aggregate answers 14."""

import datetime as dt

import pytest
from bson import Decimal128, Int64, ObjectId, Regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate")

SCALARS = st.sampled_from([0, 1, -1, 2.5, True, False, None, "", "$match", "x", Int64(7), Decimal128("1"),
                           ObjectId("65a000000000000000000001"), dt.datetime(2024, 1, 1), Regex("^a"), b"\x00"])
STAGES = st.sampled_from([{}, {"$match": {}}, {"$limit": 1}, {"$documents": [{"a": 1}]}, {"$currentOp": {}},
                          {"$match": {}, "$limit": 1}, {"$project": {"a": 1}}, {"$unknownStage": {}},
                          {"$documents": 5}, {"notAStage": 1}, {"$group": {"_id": None}},
                          {"$changeStream": {}}, {"$listLocalSessions": {}}])
ELEMENTS = st.one_of(SCALARS, STAGES, st.lists(SCALARS, max_size=2))


def answer(database, target, pipeline, explain=False) -> tuple[str, int | None]:
    cmd = {"aggregate": target, "pipeline": pipeline, "cursor": {}}
    if explain:
        cmd = {"aggregate": target, "pipeline": pipeline, "explain": True}
    try:
        database.command(cmd)
        return "ok", None
    except OperationFailure as exc:
        return "error", exc.code


def malformed(pipeline) -> bool:
    return any(not isinstance(element, dict) or len(element) != 1 for element in pipeline)


@pytest.fixture(scope="module")
def database(client):
    database = client["aggregate_pipeline_shapes"]
    client.drop_database(database.name)
    database["c"].insert_one({"a": 1})
    yield database
    client.drop_database(database.name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(pipeline=st.lists(ELEMENTS, max_size=4), explain=st.booleans())
def test_any_pipeline_shape_gets_a_mongodb_error_code(database, pipeline, explain):
    at_database = answer(database, 1, pipeline, explain)
    on_collection = answer(database, "c", pipeline, explain)
    assert at_database[1] != 1 and on_collection[1] != 1, (pipeline, at_database, on_collection)
    if malformed(pipeline):
        assert at_database == on_collection, (pipeline, at_database, on_collection)
        assert at_database[1] in (14, 40323), (pipeline, at_database)


@pytest.mark.parametrize("pipeline, code", [([0], 14), ([True], 14), ([None, {"$documents": []}], 14),
                                            ([{"$documents": [{"a": 1}]}, 5], 14),
                                            ([{"$documents": [], "$limit": 1}], 40323), ([{}], 40323)])
def test_a_malformed_element_fails_an_aggregate_1_as_it_fails_a_collection(database, pipeline, code):
    assert answer(database, 1, pipeline) == ("error", code)
    assert answer(database, "c", pipeline) == ("error", code)
