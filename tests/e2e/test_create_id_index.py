"""create with idIndex (what mongorestore sends): validated like mongod, never kept in the options."""

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("create", "listCollections")


def test_id_index_is_not_a_collection_option(db):
    db.command("create", "c", idIndex={"v": 2, "key": {"_id": 1}, "name": "_id_"}, validationLevel="moderate")
    (entry,) = db.list_collections(filter={"name": "c"})
    assert entry["options"] == {"validationLevel": "moderate"}
    assert entry["idIndex"] == {"v": 2, "key": {"_id": 1}, "name": "_id_"}


@pytest.mark.parametrize("spec, code, message", [
    ("x", 14, "'idIndex' has to be a document: idIndex: \"x\""),
    ({"v": 2, "key": {"a": 1}, "name": "_id_"}, 2,
     "The field 'key' for an _id index must be { _id: 1 }, but got { a: 1 }"),
])
def test_a_bad_id_index_is_refused(db, spec, code, message):
    with pytest.raises(OperationFailure) as info:
        db.command("create", "c", idIndex=spec)
    assert (info.value.code, info.value.details["errmsg"]) == (code, message)
    assert "c" not in db.list_collection_names()


def test_id_index_is_not_allowed_on_a_view(db):
    with pytest.raises(OperationFailure) as info:
        db.command("create", "v", viewOn="c", pipeline=[], idIndex={"key": {"_id": 1}, "name": "_id_"})
    assert info.value.code == 72
