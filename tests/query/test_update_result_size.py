"""The one size check of every stored document (``core.collection.encode_doc``): up to 16 MiB is stored,
one byte more is the storing write's own answer — an insert's 2 BadValue (mongod's fixDocumentForInsert),
an update's result 17419 (UpdateStage), an upserted document 17420 (UpsertStage). The end-to-end family
(every write kind through update, findAndModify and insert) is in tests/e2e/test_jstests_admin.py."""

import bson
import pytest
from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.core.collection import MAX_BSON_SIZE, encode_doc
from tidemark.protocol.errors import MongoError, code_name

EXPECTED = {
    "insert": (2, "object to insert too large. size in bytes: {size}, max size: 16777216"),
    "update": (17419, "Resulting document after update is larger than 16777216"),
    "upsert": (17420, "Document to upsert is larger than 16777216"),
}


@settings(max_examples=40, deadline=None)
@given(excess=st.integers(-40, 40), write=st.sampled_from(sorted(EXPECTED)), oid=st.booleans())
def test_a_document_over_16mib_is_the_storing_writes_error(excess, write, oid):
    _id = ObjectId() if oid else 1
    overhead = len(bson.encode({"_id": _id, "x": ""}))
    doc = {"_id": _id, "x": "a" * (MAX_BSON_SIZE + excess - overhead)}
    if excess <= 0:
        raw = encode_doc(doc, write)
        assert len(raw) == MAX_BSON_SIZE + excess and bson.decode(raw) == doc
        return
    with pytest.raises(MongoError) as err:
        encode_doc(doc, write)
    code, message = EXPECTED[write]
    assert (err.value.code, err.value.message) == (code, message.format(size=MAX_BSON_SIZE + excess))
    assert code_name(code) == ("BadValue" if code == 2 else f"Location{code}")


def test_the_default_write_is_an_insert():
    with pytest.raises(MongoError) as err:
        encode_doc({"_id": 1, "x": "a" * MAX_BSON_SIZE})
    assert err.value.code == 2
