"""The lower-case / legacy spellings mongod accepts for the regular-collection commands."""

from __future__ import annotations

import pytest


@pytest.mark.commands("dbstats", "collstats", "datasize", "deleteIndexes", "findandmodify")
def test_legacy_command_spellings_behave_like_the_canonical_names(db):
    db.c.insert_many([{"_id": i, "a": i} for i in range(3)])
    db.c.create_index("a")
    assert db.command("dbstats")["objects"] == 3
    assert db.command("collstats", "c")["count"] == 3
    assert db.command("datasize", f"{db.name}.c")["numObjects"] == 3
    reply = db.command("findandmodify", "c", query={"_id": 1}, update={"$set": {"a": 10}}, new=True)
    assert reply["value"] == {"_id": 1, "a": 10}
    assert db.command("deleteIndexes", "c", index="a_1")["nIndexesWas"] == 2
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]
