"""A transaction on a standalone is refused with 20 whatever its read and write concerns.

mongod 7.0 checks a command's session fields (initializeOperationSessionInfo: a transaction on a
standalone is 20 IllegalOperation "Transaction numbers are only allowed on a replica set member or
mongos") before it extracts and waits for its readConcern (readConcern snapshot alone on a standalone:
123 NotAReplicaSet from waitForReadConcern) — jstests/noPassthrough/readConcern_snapshot.js: a
transaction with readConcern snapshot on a standalone fails with IllegalOperation. Tidemark checked
the concerns first: 123 for such a transaction (and a bad writeConcern's code before 20).
"""

from __future__ import annotations

import uuid

import pytest
from bson.binary import Binary
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "insert", "aggregate", "update")

READ = st.sampled_from([None, {"level": "snapshot"}, {"level": "majority"}, {"level": "local"},
                        {"level": "linearizable"}, {"level": "snapshot", "atClusterTime": 1}])
WRITE = st.sampled_from([None, {"w": 1}, {"w": 3}, {"w": "majority"}])
COMMANDS = st.sampled_from([{"find": "c"}, {"aggregate": "c", "pipeline": [], "cursor": {}},
                            {"insert": "c", "documents": [{"a": 1}]}])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=COMMANDS, read=READ, write=WRITE)
def test_a_transaction_is_refused_before_its_concerns(db, command, read, write):
    cmd = {**command, "lsid": {"id": Binary(uuid.uuid4().bytes, 4)}, "txnNumber": Int64(1),
           "startTransaction": True, "autocommit": False}
    if read is not None:
        cmd["readConcern"] = read
    if write is not None and "insert" in command:
        cmd["writeConcern"] = write
    with pytest.raises(OperationFailure) as refused:
        db.command(cmd)
    assert refused.value.code == 20
    assert refused.value.details["errmsg"] == "Transaction numbers are only allowed on a replica set member or mongos"


def test_snapshot_outside_a_transaction_is_still_123(db):
    with pytest.raises(OperationFailure) as refused:
        db.command({"find": "c", "readConcern": {"level": "snapshot"}})
    assert refused.value.code == 123
