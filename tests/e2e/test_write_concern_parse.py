"""A command's writeConcern is parsed as mongod 7.0's WriteConcernOptions (its strict IDL, then
WriteConcernOptions::parse) and checked as a standalone's validateWriteConcern, before the command
runs: a refused write concern writes nothing. Found by Eve's suite (``w: 2`` gave another message) and
probing around it (a custom ``w`` mode on a standalone was accepted and the write applied).

- unknown field: 40415 ``BSON field 'WriteConcernOptions.<f>' is an unknown field.``;
- ``j`` / ``fsync`` not bool or number: 14; both true: 9;
- ``w``: a number in 0..50 (9 outside), a string, a document of numbers (tags; 9 if empty or not
  numbers), null; anything else 9;
- ``provenance``: one of ReadWriteConcernProvenanceSource's values (14 not a string, 2 another);
- not an object: 14 in bsonExtractTypedField's words (the aggregate IDL's for an aggregate);
- standalone: ``w`` > 1 and a mode other than "majority" are 2 BadValue.
The IDL reads the fields in document order, ``w``'s deserializer at ``w``'s place: ``{w: {}, j: null}``
is 9 (Tidemark checked w after every other field: 14).
"""

from __future__ import annotations

import math

import pytest
from bson import Decimal128, Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "update", "delete", "createIndexes", "aggregate")

SAFE_BOOL = "[bool, long, int, decimal, double]"

CASES = [
    ({"w": 2}, 2, "cannot use 'w' > 1 when a host is not replicated"),
    ({"w": Decimal128("3")}, 2, "cannot use 'w' > 1 when a host is not replicated"),
    ({"w": "dc1"}, 2, "cannot use non-majority 'w' mode \"dc1\" when a host is not a member of a replica set"),
    ({"j": True, "fsync": True}, 9, "fsync and j options cannot be used together"),
    ({"j": 1, "fsync": 2.5}, 9, "fsync and j options cannot be used together"),
    ({"j": "x"}, 14, f"BSON field 'WriteConcernOptions.j' is the wrong type 'string', expected types '{SAFE_BOOL}'"),
    ({"fsync": None}, 14, f"BSON field 'WriteConcernOptions.fsync' is the wrong type 'null', expected types '{SAFE_BOOL}'"),
    ({"w": {}}, 9, "tagged write concern requires tags"),
    ({"w": {"dc": "x"}}, 9, 'tags must be a single level document with only number values; found: dc: "x"'),
    ({"w": [1]}, 9, "w has to be a number, string, or object; found: array"),
    ({"w": True}, 9, "w has to be a number, string, or object; found: bool"),
    ({"w": 51}, 9, "w has to be a non-negative number and not greater than 50; found: 51"),
    ({"w": -1}, 9, "w has to be a non-negative number and not greater than 50; found: -1"),
    ({"x": 1}, 40415, "BSON field 'WriteConcernOptions.x' is an unknown field."),
    ({"w": {}, "j": None}, 9, "tagged write concern requires tags"),
    ({"j": None, "w": {}}, 14, f"BSON field 'WriteConcernOptions.j' is the wrong type 'null', expected types '{SAFE_BOOL}'"),
    ({"provenance": 1}, 14, "BSON field 'WriteConcernOptions.provenance' is the wrong type 'int', expected type 'string'"),
    ({"provenance": "bogus"}, 2, "Enumeration value 'bogus' for field 'WriteConcernOptions.provenance' is not a valid value."),
    (7, 14, '"writeConcern" had the wrong type. Expected object, found int'),
]
ACCEPTED = [{}, {"w": 0}, {"w": 1}, {"w": 1.9}, {"w": Int64(1)}, {"w": "majority"}, {"w": {"dc": 1}},
            {"w": None}, {"j": True, "fsync": False}, {"fsync": 1}, {"wtimeout": "ignored"},
            {"w": 1, "wOpTime": 5, "wElectionId": 1, "getLastError": 1}, {"w": math.nan}]


@pytest.mark.parametrize("concern, code, message", CASES)
def test_refused_write_concern_writes_nothing(db, concern, code, message):
    for cmd in ({"insert": "c", "documents": [{"_id": 1}]},
                {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "upsert": True}]},
                {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}):
        with pytest.raises(OperationFailure) as info:
            db.command({**cmd, "writeConcern": concern})
        assert (info.value.code, info.value.details["errmsg"]) == (code, message)
    assert "c" not in db.list_collection_names()


@pytest.mark.parametrize("concern", ACCEPTED)
def test_accepted_write_concern_writes(db, concern):
    reply = db.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": concern})
    if concern.get("w") != 0:
        assert reply["n"] == 1
    assert db.c.find_one() == {"_id": 1}


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 60), st.floats(allow_nan=False, width=32),
                   st.sampled_from(["majority", "dc1", "", "clientSupplied"]), st.just({}), st.just({"dc": 1}),
                   st.just([1]))
CONCERNS = st.dictionaries(st.sampled_from(["w", "j", "fsync", "wtimeout", "provenance", "bogus"]), VALUES,
                           max_size=3)
PROVENANCES = ("clientSupplied", "implicitDefault", "customDefault", "getLastErrorDefaults", "internalWriteDefault")


def _expected_code(concern: dict) -> int | None:
    """The model: the first failure mongod's parse and validation meet (the IDL reads the fields in
    document order, w's deserializer included; then parse's own j/fsync check; then the standalone's)."""
    for key, value in concern.items():
        if key == "bogus":
            return 40415
        if key in ("j", "fsync") and not isinstance(value, (bool, int, float)):
            return 14
        if key == "provenance" and not isinstance(value, str):
            return 14
        if key == "provenance" and value not in PROVENANCES:
            return 2
        if key == "w":
            is_num = isinstance(value, (int, float)) and not isinstance(value, bool)
            if value is not None and not is_num and not isinstance(value, str):
                if not isinstance(value, dict) or not value:
                    return 9
            if is_num and not (math.isfinite(value) and 0 <= int(value) <= 50):
                return 9  # safeNumberLong: an infinity is past either end
    w = concern.get("w")
    is_num = isinstance(w, (int, float)) and not isinstance(w, bool)
    if concern.get("j") and concern.get("fsync"):
        return 9
    if is_num and int(w) > 1 or isinstance(w, str) and w != "majority":
        return 2
    return None


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(concern=CONCERNS)
def test_write_concern_family(db, concern):
    db.c.delete_many({})
    expected = _expected_code(concern)
    try:
        db.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": concern})
    except OperationFailure as exc:
        assert exc.code == expected, (concern, exc.details)
        assert db.c.count_documents({}) == 0
    else:
        assert expected is None, concern
        assert db.c.count_documents({}) == 1


# -- commands that take no write concern ------------------------------------------------------------
# mongod 7.0 refuses any writeConcern on a command whose supportsWriteConcern() is false with 72
# InvalidOptions, before parsing it (jstests/core/commands_that_do_not_write_do_not_accept_wc.js,
# jstests/sharding/validate_commands_wc.js). Tidemark's find used to give 40415 and the others ran.
# An aggregate takes one whether it writes or not (jstests/core/aggregation_accepts_write_concern.js).

NOT_SUPPORTED = (72, "Command does not support writeConcern")

READS = [
    {"find": "leaves", "filter": {"_id": 1}},
    {"distinct": "leaves", "key": "_id"},
    {"count": "leaves", "query": {"type": "oak"}},
    {"mapReduce": "leaves", "map": "function() { this.tags.forEach(function(z) { emit(z, 1); }); }",
     "reduce": "function(key, values) { return {count: values.length}; }", "out": {"inline": 1}},
    {"listIndexes": "leaves"},
    {"listCollections": 1},
    {"collStats": "leaves"},
    {"dbStats": 1},
    {"explain": {"find": "leaves"}},
    {"ping": 1},
]


@pytest.mark.commands("find", "distinct", "count", "mapReduce", "listIndexes", "listCollections",
                      "collStats", "dbStats", "explain", "ping")
@pytest.mark.parametrize("cmd", READS, ids=lambda cmd: next(iter(cmd)))
def test_commands_that_do_not_write_do_not_accept_wc(db, cmd):
    """The jstest's commands and write concerns (a valid and an invalid one), plus the empty one
    validate_commands_wc.js gives ping: each is 72 with no writeConcernError."""
    db.leaves.insert_one({"type": "oak", "tags": ["a"]})
    for concern in ({"w": "invalid"}, {"w": 1}, {}):
        with pytest.raises(OperationFailure) as info:
            db.command({**cmd, "writeConcern": concern})
        assert (info.value.code, info.value.details["errmsg"]) == NOT_SUPPORTED
        assert info.value.details.get("codeName") == "InvalidOptions"
        assert "writeConcernError" not in info.value.details


@pytest.mark.commands("aggregate", "mapReduce")
def test_aggregate_and_writing_map_reduce_take_a_write_concern(db):
    """An aggregate, reading or writing with $out/$merge, and a mapReduce writing a collection parse
    theirs (2 for a mode a standalone cannot honour; nothing written) and run with an acceptable one."""
    db.leaves.insert_many([{"_id": 1, "type": "oak", "tags": ["a"]}, {"_id": 2, "type": "maple", "tags": ["a", "b"]}])
    mr = {"mapReduce": "leaves", "map": "function() { this.tags.forEach(function(z) { emit(z, 1); }); }",
          "reduce": "function(key, values) { return Array.sum(values); }", "out": "mr_out"}
    for cmd, target in (({"aggregate": "leaves", "pipeline": [{"$out": "agg_out"}], "cursor": {}}, "agg_out"),
                        ({"aggregate": "leaves", "pipeline": [{"$merge": {"into": "merge_out"}}], "cursor": {}},
                         "merge_out"),
                        (mr, "mr_out")):
        with pytest.raises(OperationFailure) as info:
            db.command({**cmd, "writeConcern": {"w": "invalid"}})
        assert info.value.code == 2
        assert target not in db.list_collection_names()
        db.command({**cmd, "writeConcern": {"w": 1}})
        assert db[target].count_documents({}) == 2
    read = {"aggregate": "leaves", "pipeline": [{"$match": {"_id": 1}}], "cursor": {}}
    with pytest.raises(OperationFailure) as info:
        db.command({**read, "writeConcern": {"w": "invalid"}})
    assert info.value.code == 2
    for concern in ({"w": "majority"}, {"w": 1}, {}):
        assert db.command({**read, "writeConcern": concern})["cursor"]["firstBatch"] == [
            {"_id": 1, "type": "oak", "tags": ["a"]}]


@pytest.mark.commands("find", "count", "distinct", "mapReduce", "insert")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(concern=CONCERNS, read=st.sampled_from(READS[:4]))
def test_read_refuses_any_write_concern_family(db, concern, read):
    """Whatever the write concern holds, a read refuses it with 72 (it is never parsed), while the same
    write concern on an insert meets the parse of the model above."""
    with pytest.raises(OperationFailure) as info:
        db.command({**read, "writeConcern": concern})
    assert (info.value.code, info.value.details["errmsg"]) == NOT_SUPPORTED
    db.c.delete_many({})
    try:
        db.command({"insert": "c", "documents": [{"_id": 1}], "writeConcern": concern})
    except OperationFailure as exc:
        assert exc.code == _expected_code(concern)
    else:
        assert _expected_code(concern) is None


@pytest.mark.parametrize("w", [0, 0.0, Int64(0), Decimal128("0")])
def test_an_unacknowledged_write_answers_only_its_defaults(db, w):
    """mongod's write commands skip their output for ``w: 0`` without ``j``/``fsync`` (shouldSkipOutput)
    when a client asks for the reply anyway (no moreToCome): {n: 0, ok: 1} (update: nModified 0 too), the
    statements' results and errors untold; the statements ran. Found by the Perl driver's bulk.t."""
    wc = {"w": w}
    assert db.command({"insert": "c", "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}], "ordered": False,
                       "writeConcern": wc}) == {"n": 0, "ok": 1.0}
    assert db.command({"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$set": {"a": 1}}, "upsert": True}],
                       "writeConcern": wc}) == {"n": 0, "nModified": 0, "ok": 1.0}
    assert sorted(d["_id"] for d in db.c.find()) == [1, 2, 3]
    assert db.command({"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}], "writeConcern": wc}) == {
        "n": 0, "ok": 1.0}
    assert sorted(d["_id"] for d in db.c.find()) == [2, 3]
    # a sync asked is an acknowledgement: the whole reply
    assert db.command({"delete": "c", "deletes": [{"q": {}, "limit": 0}], "writeConcern": {"w": w, "j": True}}) == {
        "n": 2, "ok": 1.0}
    # a command error is still an error
    with pytest.raises(OperationFailure) as info:
        db.command({"insert": "c", "documents": [{"_id": 1}], "bogus": 1, "writeConcern": wc})
    assert info.value.code == 40415


def test_a_non_object_write_concern_and_a_bad_provenance_in_mongods_words(db):
    with pytest.raises(OperationFailure) as refused:
        db.command({"insert": "c", "documents": [{}], "writeConcern": None})
    assert (refused.value.code, refused.value.details["errmsg"]) == (
        14, '"writeConcern" had the wrong type. Expected object, found null')
    with pytest.raises(OperationFailure) as refused:
        db.command({"aggregate": "c", "pipeline": [], "cursor": {}, "writeConcern": 1})
    assert (refused.value.code, refused.value.details["errmsg"]) == (
        14, "BSON field 'aggregate.writeConcern' is the wrong type 'int', expected type 'object'")
    with pytest.raises(OperationFailure) as refused:
        db.command({"insert": "c", "documents": [{}], "writeConcern": {"provenance": "bogus"}})
    assert (refused.value.code, refused.value.details["errmsg"]) == (
        2, "Enumeration value 'bogus' for field 'WriteConcernOptions.provenance' is not a valid value.")
    assert db.c.count_documents({}) == 0
