"""A tailable cursor over a capped collection whose position was trimmed away dies at its next getMore
with 136 CappedPositionLost, as mongod's collection scan does on restoring its position; one whose
position survived goes on with exactly the records still stored after it (nothing read ahead before the
trim comes back after it).

mongod's position after a batch is the record of the last document it returned (or, at the end of the
collection, the last record it examined); the model below computes it from the inputs."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

POSITION_LOST = re.compile(r"CollectionScan died due to position in capped collection being deleted\. "
                           r"Last seen record id: RecordId\(\d+\)")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cap=st.integers(1, 6), before=st.integers(1, 10), batch=st.integers(1, 8), after=st.integers(0, 12))
def test_tail_getmore_dies_exactly_when_its_position_was_trimmed(db, cap, before, batch, after):
    db.drop_collection("tail")
    db.create_collection("tail", capped=True, size=64 * 1024, max=cap)
    db.tail.insert_many([{"x": i} for i in range(before)])
    start = max(0, before - cap)  # the first x still stored
    first = db.command({"find": "tail", "tailable": True, "batchSize": batch})["cursor"]
    assert [d["x"] for d in first["firstBatch"]] == list(range(start, min(before, start + batch)))
    position = min(before, start + batch) - 1  # the last returned (= the last examined at the end)
    if after:
        db.tail.insert_many([{"x": before + i} for i in range(after)])
    getmore = {"getMore": first["id"], "collection": "tail"}
    if position < before + after - cap:  # trimmed
        with pytest.raises(OperationFailure) as failed:
            db.command(getmore)
        assert (failed.value.code, failed.value.details["codeName"]) == (136, "CappedPositionLost")
        assert POSITION_LOST.fullmatch(failed.value.details["errmsg"])
        with pytest.raises(OperationFailure) as gone:  # the failed getMore took its cursor along
            db.command(getmore)
        assert gone.value.code == 43
    else:
        reply = db.command(getmore)["cursor"]
        assert [d["x"] for d in reply["nextBatch"]] == list(range(position + 1, before + after))
        assert reply["id"] == first["id"]  # a tail stays open


def test_tail_position_survives_trims_before_it(db):
    db.create_collection("tail_kept", capped=True, size=64 * 1024, max=5)
    db.tail_kept.insert_many([{"x": i} for i in range(5)])
    first = db.command({"find": "tail_kept", "tailable": True, "batchSize": 4})["cursor"]
    db.tail_kept.insert_many([{"x": 5}, {"x": 6}, {"x": 7}])  # trims x 0..2; the position (x 3) stays
    assert [d["x"] for d in db.command({"getMore": first["id"], "collection": "tail_kept"})["cursor"]["nextBatch"]] \
        == [4, 5, 6, 7]
