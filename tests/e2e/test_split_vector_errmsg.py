"""splitVector's errmsg-style refusals as a standalone mongod 7.0 puts them on the wire.

src/mongo/db/s/split_vector_command.cpp is an ErrmsgCommandDeprecated: without a key pattern (missing,
empty, or not an object: ``getObjectField`` reads anything else as empty) it sets errmsg "no key pattern
found in splitVector" and returns false, and with exactly one of ``min``/``max`` non-empty "either
provide both min and max or leave both empty"; CommandHelpers::appendSimpleCommandStatus answers
``{ok: 0, errmsg}`` with no ``code`` or ``codeName`` (Tidemark answered 8 UnknownError with both). The
profiler records such a failure as mongod's getStatusFromCommandResult reads it: errCode 8.
"""

from __future__ import annotations

import pytest
from bson.son import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("splitVector")

ABSENT = object()
NOT_OBJECTS = st.sampled_from([1, "x", None, True, [1], 2.5])
key_patterns = st.one_of(st.just(ABSENT), st.just({}), NOT_OBJECTS, st.just({"_id": 1}))
bounds = st.one_of(st.just(ABSENT), st.just({}), NOT_OBJECTS, st.just({"_id": 0}), st.just({"_id": 10}))


def _non_empty_object(value) -> bool:
    return isinstance(value, dict) and bool(value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key_pattern=key_patterns, low=bounds, high=bounds)
def test_refusals_without_a_code(client, key_pattern, low, high):
    database = client["split_vector_errmsg"]
    if "r" not in database.list_collection_names():
        database.r.insert_many([{"_id": i} for i in range(20)])
    fields = [("keyPattern", key_pattern), ("min", low), ("max", high)]
    command = SON([("splitVector", "split_vector_errmsg.r"), ("maxChunkSize", 1),
                   *((name, value) for name, value in fields if value is not ABSENT)])
    reply = client.admin.command(command, check=False)
    if not _non_empty_object(key_pattern):
        assert reply == {"ok": 0.0, "errmsg": "no key pattern found in splitVector"}
    elif _non_empty_object(low) != _non_empty_object(high):
        assert reply == {"ok": 0.0, "errmsg": "either provide both min and max or leave both empty"}
    else:
        assert reply["ok"] == 1.0 and reply["splitKeys"] == []


@pytest.mark.commands("splitVector", "profile")
def test_the_profiler_records_errmsg_failures_as_unknown_error(client):
    database = client["split_vector_errmsg_profile"]
    database.command("profile", 2)
    try:
        reply = database.command("splitVector", "split_vector_errmsg_profile.r", check=False)
        assert reply == {"ok": 0.0, "errmsg": "no key pattern found in splitVector"}
        entry = database["system.profile"].find_one({"command.splitVector": {"$exists": True}})
        assert (entry["ok"], entry["errCode"], entry["errName"]) == (0.0, 8, "UnknownError")
        assert entry["errMsg"] == "no key pattern found in splitVector"
    finally:
        database.command("profile", 0)
        client.drop_database(database.name)
