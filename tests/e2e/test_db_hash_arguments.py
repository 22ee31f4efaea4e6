"""dbHash's arguments as mongod 7.0 reads them (dbhash.cpp DBHashCmd::run): a string as the command's
value makes Command::parseNs's namespace "<db>.<value>", which fails the database-name check: 73
InvalidNamespace "Invalid db name: <db>.<value>" (jstests/core/diagnostics/dbhash.js: ``{dbhash: ""}``
fails); any other value hashes the database. ``collections`` is read only when it is an array (its
entries must be strings, else 2); any other type hashes every collection.

Tidemark hashed the database for a string value, and refused a non-array ``collections`` with 2. The
test draws the command's value and ``collections`` from many BSON types."""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("dbHash", "dbhash")

NOT_STRINGS = st.one_of(st.integers(min_value=-5, max_value=5), st.floats(allow_nan=False), st.booleans(),
                        st.none(), st.builds(Int64, st.integers(min_value=0, max_value=9)),
                        st.dictionaries(st.text(alphabet="abc", max_size=3), st.integers(min_value=-9, max_value=9), max_size=2))


@pytest.fixture
def hashed_db(db):
    db.a.insert_one({"_id": 1})
    db.b.insert_one({"_id": 2})
    return db


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(max_size=8), name=st.sampled_from(["dbHash", "dbhash"]))
def test_a_string_value_is_an_invalid_database_name(hashed_db, value, name):
    with pytest.raises(OperationFailure) as raised:
        hashed_db.command({name: value})
    assert raised.value.code == 73
    assert raised.value.details["errmsg"] == f"Invalid db name: {hashed_db.name}.{value}"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NOT_STRINGS)
def test_any_other_value_hashes_the_database(hashed_db, value):
    assert set(hashed_db.command({"dbHash": value})["collections"]) == {"a", "b"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(collections=st.one_of(NOT_STRINGS.filter(lambda v: v is not None), st.text(max_size=3)))
def test_collections_other_than_an_array_hash_everything(hashed_db, collections):
    reply = hashed_db.command({"dbHash": 1, "collections": collections})
    assert set(reply["collections"]) == {"a", "b"}


def test_collections_array_entries_must_be_strings(hashed_db):
    assert set(hashed_db.command({"dbHash": 1, "collections": ["a"]})["collections"]) == {"a"}
    with pytest.raises(OperationFailure) as raised:
        hashed_db.command({"dbHash": 1, "collections": ["a", 1]})
    assert raised.value.code == 2
    assert raised.value.details["errmsg"] == "collections entries have to be strings"
