"""A ``local.oplog.*`` collection must be capped.

mongod 7.0 checks every collection creation (DatabaseImpl::_checkCanCreateCollection): a namespace
``local.oplog.*`` that is not capped is 28838 "cannot create a non-capped oplog collection" — an
explicit create, an insert creating it implicitly (a write error of each document, as performInserts
reports a failed creation; ordered: the first) (jstests/noPassthrough/noncapped_oplog_creation.js; its
$out into local fails earlier, 31321). A capped one is created. Tidemark created them all.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError, OperationFailure

pytestmark = pytest.mark.commands("create", "insert", "aggregate", "drop")

MESSAGE = "cannot create a non-capped oplog collection"


@pytest.fixture
def local(client):
    yield client.local
    for name in client.local.list_collection_names():
        if name.startswith("oplog.") or name == "input":
            client.local.drop_collection(name)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(suffix=st.sampled_from(["rs", "fake", "$main", "a.b"]), n=st.integers(1, 4), ordered=st.booleans())
def test_a_non_capped_oplog_collection_is_refused(local, suffix, n, ordered):
    name = "oplog." + suffix
    if "$" not in suffix:
        with pytest.raises(OperationFailure) as refused:
            local.command("create", name, capped=False)
        assert refused.value.code == 28838 and refused.value.details["errmsg"] == MESSAGE
        with pytest.raises(BulkWriteError) as failed:
            local[name].insert_many([{"i": i} for i in range(n)], ordered=ordered)
        errors = failed.value.details["writeErrors"]
        assert [e["index"] for e in errors] == (list(range(n)) if not ordered else [0])
        assert {(e["code"], e["errmsg"]) for e in errors} == {(28838, MESSAGE)}
        assert failed.value.details["nInserted"] == 0
    assert name not in local.list_collection_names()


def test_out_to_an_oplog_namespace_fails_and_a_capped_one_is_created(local):
    local.input.insert_one({})
    with pytest.raises(OperationFailure) as refused:
        list(local.input.aggregate([{"$out": "oplog.aggregation"}]))
    assert refused.value.code == 31321  # (mongod 7.0 refuses any $out into local first)
    local.command("create", "oplog.capped", capped=True, size=4096)
    local["oplog.capped"].insert_one({"x": 1})
    assert "oplog.capped" in local.list_collection_names()
    assert "oplog.aggregation" not in local.list_collection_names()
