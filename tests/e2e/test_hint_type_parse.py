"""mongod parses a command's ``hint`` while it parses the request (query/hint_parser.cpp ``parseHint``,
the IDL type of find's, aggregate's, count's, distinct's and the write statements' hint): anything but
a string or an object is 9 FailedToParse "Hint must be a string or an object", whatever the namespace
— a time-series collection (a view) included, and before any index is looked at. Tidemark answered 2
BadValue "hint provided does not correspond to an existing index" for an aggregate or a count on a
time-series collection (the view's hint translation looked the value up as an index first), and
accepted a count's hint that was falsy (0, false, [], 0.0) on every collection.

The family: every BSON type but string and object (and null, which means no hint), falsy or not, on a
regular collection, a time-series collection with a metaField and one without, through aggregate,
count, distinct, find and the explain of each."""

import datetime as dt

import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "count", "distinct", "find", "explain")

_NOT_HINTS = st.one_of(
    st.sampled_from([0, 1, -1, 0.0, 1.5, False, True, [], [1], [["a", 1]], ["a_1"], Int64(0), Int64(3),
                     Decimal128("0"), Decimal128("1"), dt.datetime(2024, 1, 1), ObjectId("65a000000000000000000001"),
                     Binary(b"a"), Regex("a"), Timestamp(1, 1), MinKey(), MaxKey()]),
    st.integers(-(2**31), 2**31 - 1), st.floats(allow_nan=False),
    st.lists(st.one_of(st.integers(0, 3), st.text(max_size=3)), max_size=3),
)
_COMMANDS = ("aggregate", "count", "distinct", "find")


@pytest.fixture(scope="module")
def database(client):
    name = "hint_type_parse"
    client.drop_database(name)
    database = client[name]
    database.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    database.create_collection("tsnm", timeseries={"timeField": "t"})
    for coll in ("reg", "ts", "tsnm"):
        database[coll].insert_one({"t": dt.datetime(2024, 1, 1), "m": "a", "a": 1})
        database[coll].create_index("a")
    yield database
    client.drop_database(name)


def _command(kind, collection, hint):
    if kind == "aggregate":
        return {"aggregate": collection, "pipeline": [{"$match": {"a": 1}}], "cursor": {}, "hint": hint}
    if kind == "count":
        return {"count": collection, "query": {"a": 1}, "hint": hint}
    if kind == "distinct":
        return {"distinct": collection, "key": "a", "hint": hint}
    return {"find": collection, "filter": {"a": 1}, "hint": hint}


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(hint=_NOT_HINTS, kind=st.sampled_from(_COMMANDS), collection=st.sampled_from(["reg", "ts", "tsnm"]),
       explain=st.booleans())
def test_a_hint_neither_string_nor_object_fails_to_parse(database, hint, kind, collection, explain):
    command = _command(kind, collection, hint)
    with pytest.raises(OperationFailure) as failure:
        database.command({"explain": command} if explain else command)
    assert (failure.value.code, failure.value.details["errmsg"]) == (9, "Hint must be a string or an object")


@pytest.mark.parametrize("collection", ["reg", "ts", "tsnm"])
@pytest.mark.parametrize("kind", ["aggregate", "count", "find"])
def test_a_hint_naming_no_index_is_still_bad_value(database, collection, kind):
    """(what the parse leaves to the planner: an object or a name that matches no index)"""
    for hint in ({"b": 1}, "b_1"):
        with pytest.raises(OperationFailure) as failure:
            database.command(_command(kind, collection, hint))
        assert failure.value.code == 2, failure.value.details


@pytest.mark.parametrize("collection", ["reg", "ts", "tsnm"])
def test_string_object_and_null_hints_still_read(database, collection):
    for hint in ({"a": 1}, "a_1", {"$natural": 1}, None):
        for kind in ("aggregate", "count", "find"):
            assert database.command(_command(kind, collection, hint))["ok"] == 1.0
