"""The target of ``$out`` / ``$merge`` is checked as mongod checks it, over the family of names a client
can send (found by tests/reliability/test_operator_argument_values.py: a 20,000-character ``$out`` name
reached the storage engine and came back as an LMDB error with library text):

- an invalid target namespace (NamespaceString::isValid: a database name of 64 bytes or more or with
  one of ``/\\. "`` or NUL, an empty collection name or one starting with '.') -> 73 "Invalid $out target
  namespace, <ns>" / "Invalid $merge target namespace: '<ns>'", as the stage's parser refuses it;
- a valid one that is no name a user may create (a '$' in the collection name, a full name past 255
  bytes) -> 73 ("Invalid collection name", "Fully qualified namespace is too long"), as mongod's rename
  of the stage's temporary collection onto it refuses it (a '$out' to 'a$b' made a collection no find
  could read);
- (a ``$merge`` whose ``coll`` is empty fails its spec's parse first: 5786801);
- either way nothing is written; a target that passes is created under exactly that name."""

from __future__ import annotations

import pymongo.errors
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAME_CHARS = st.sampled_from(list("abcxyz019_-.$/\\ \"\u00e9\u65e5\U0001f600") + ["\x00"])
NAMES = st.one_of(st.text(NAME_CHARS, min_size=0, max_size=12),
                  st.integers(1, 300).map(lambda n: "n" * n))


def _valid_namespace(db: str, coll: str) -> bool:
    return (0 < len(db.encode()) < 64 and not set('/\\. "\x00') & set(db)
            and bool(coll) and not coll.startswith(".") and "\x00" not in coll)


@pytest.mark.commands("aggregate", "listCollections")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stage=st.sampled_from(["$out", "$merge"]), db_name=NAMES, coll=NAMES)
def test_a_write_stage_target_is_refused_or_created_as_named(client, stage, db_name, coll):
    source = client.src_targets.c
    source.replace_one({"_id": 1}, {"_id": 1, "v": 1}, upsert=True)
    spec = {"db": db_name, "coll": coll} if stage == "$out" else {"into": {"db": db_name, "coll": coll}}
    if stage == "$merge" and not db_name:  # $merge's empty 'db' is the aggregation's own (its parser's rule)
        db_name = "src_targets"
    before = set(client.list_database_names())
    try:
        list(source.aggregate([{stage: spec}]))
    except pymongo.errors.OperationFailure as refused:
        assert refused.code not in (None, 1), refused.details
        if stage == "$merge" and not coll:  # the $merge spec's own parse, before the namespace
            assert refused.code == 5786801
        elif not _valid_namespace(db_name, coll):
            assert refused.code == 73 and refused.details["errmsg"].startswith(f"Invalid {stage} target namespace")
        elif "$" in coll:
            assert refused.code == 73 and refused.details["errmsg"].startswith("Invalid collection name")
        elif len(db_name.encode()) + 1 + len(coll.encode()) > 255:
            assert refused.code == 73
            assert refused.details["errmsg"].startswith("Fully qualified namespace is too long")
        if db_name not in before and _valid_namespace(db_name, coll):
            assert db_name not in client.list_database_names()  # nothing was written
        return
    assert _valid_namespace(db_name, coll) and "$" not in coll
    assert len(db_name.encode()) + 1 + len(coll.encode()) <= 255
    # (by command: a name such as '$' is one pymongo's Collection refuses to build)
    assert client[db_name].command("find", coll)["cursor"]["firstBatch"] == [{"_id": 1, "v": 1}]
    if db_name != "src_targets":
        client.drop_database(db_name)
    elif coll != "c":
        client[db_name].command("drop", coll)


@pytest.mark.commands("find")
@pytest.mark.parametrize("argument, expected", [
    (float("nan"), []), (float("inf"), [1, 2, 3]), (-float("inf"), [1, 2, 3]), (2.9, [1, 2]), (-1.5, [3]),
    ([float("nan"), 2], [1, 2]), ([1, float("inf")], [2, 3]), ([-float("inf"), 1], [1]),
])
def test_find_slice_reads_its_numbers_as_mongod_does(db, argument, expected):
    """The find ``$slice`` reads each number with safeNumberInt (NaN 0, the infinities clamped to the
    int range, doubles truncated): a NaN was 1 InternalError."""
    db.c.insert_one({"_id": 1, "a": [1, 2, 3]})
    assert db.c.find_one({}, {"a": {"$slice": argument}}) == {"_id": 1, "a": expected}
