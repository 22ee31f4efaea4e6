"""collStats, dbStats, validate and dataSize."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture
def filled(db):
    db.c.insert_many([{"i": i, "s": "x" * 100} for i in range(50)])
    db.c.create_index("i")
    return db


@pytest.mark.commands("collStats")
def test_coll_stats_counts_and_sizes(filled):
    st = filled.command("collStats", "c")
    assert st["ns"] == f"{filled.name}.c" and st["count"] == 50
    assert st["size"] > 50 * 100 and st["nindexes"] == 2
    assert set(st["indexSizes"]) == {"_id_", "i_1"}
    assert st["totalSize"] == st["storageSize"] + st["totalIndexSize"]
    scaled = filled.command("collStats", "c", scale=1024)
    assert scaled["scaleFactor"] == 1024 and scaled["size"] == st["size"] // 1024


@pytest.mark.commands("collStats")
def test_coll_stats_scale_must_be_positive(filled):
    with pytest.raises(OperationFailure) as e:
        filled.command("collStats", "c", scale=0)
    assert e.value.code == 2


@pytest.mark.commands("dbStats")
def test_db_stats_totals(filled):
    filled.other.insert_one({"a": 1})
    st = filled.command("dbStats")
    assert st["db"] == filled.name and st["collections"] == 2 and st["objects"] == 51
    assert st["indexes"] == 3 and st["dataSize"] > 0 and st["views"] == 0
    assert st["totalSize"] == st["storageSize"] + st["indexSize"]


@pytest.mark.commands("dbStats")
def test_db_stats_of_missing_database_is_zero(client):
    st = client["no_such_db_for_stats"].command("dbStats")
    assert st["collections"] == 0 and st["objects"] == 0


@pytest.mark.commands("validate")
def test_validate_checks_index_entries_against_records(filled):
    filled.c.update_many({"i": {"$lt": 10}}, {"$set": {"i": [1, 2]}})
    v = filled.command("validate", "c")
    assert v["valid"] is True and v["nrecords"] == 50
    assert v["keysPerIndex"] == {"_id_": 50, "i_1": 40 + 20}


@pytest.mark.commands("validate")
def test_validate_missing_collection_is_26(db):
    with pytest.raises(OperationFailure) as e:
        db.command("validate", "nope")
    assert e.value.code == 26


@pytest.mark.commands("dataSize")
def test_data_size_of_namespace(filled):
    reply = filled.command("dataSize", f"{filled.name}.c")
    assert reply["numObjects"] == 50 and reply["size"] > 0
