"""mongod 7.0's $group (DocumentSourceGroup) counts, against internalDocumentSourceGroupMaxMemoryBytes
(100 MB, settable at start-up and at run time), each group's key and what each accumulator holds: a
$first/$last/$min/$max keeps one value and counts its size (AccumulatorFirst... ``_memUsageBytes``),
replaced as the value kept changes. Past the limit without allowDiskUse: 292 "Exceeded memory limit
for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in." Tidemark counted only
the growing accumulators ($push...), so 120 groups each keeping a 1 MB string through $first ran to
completion, and $group used the sort's parameter (internalQueryMaxBlockingSortMemoryUsageBytes).
With allowDiskUse the groups spill and the $group completes (test_group_spill.py checks its results)."""

from __future__ import annotations

import pytest
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

LIMIT = 256 * 1024  # the group limit these tests set (keeps the data small)
NO_DISK = "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in."
KEEPING = ["$first", "$last", "$max", "$min"]


@pytest.fixture(scope="module")
def small_group_limit(server, client):
    with server_parameter(client, "internalDocumentSourceGroupMaxMemoryBytes", LIMIT) as before:
        assert before == 100 * 1024 * 1024
        yield client


def _run(coll, accumulator: str, allow_disk_use: bool) -> int:
    """0 when the $group completes, else the error code (its message checked)."""
    pipeline = [{"$group": {"_id": "$g", "v": {accumulator: "$s"}}}, {"$project": {"v": 0}}]
    try:
        list(coll.aggregate(pipeline, allowDiskUse=allow_disk_use))
    except OperationFailure as exc:
        assert exc.details["errmsg"] == NO_DISK
        return exc.code
    return 0


@pytest.mark.commands("aggregate", "setParameter", "getParameter")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(accumulator=st.sampled_from(KEEPING), groups=st.integers(1, 40), per_group=st.integers(1, 3),
       over=st.booleans(), allow_disk_use=st.booleans())
def test_the_value_each_group_keeps_counts_toward_the_limit(small_group_limit, db, accumulator, groups,
                                                            per_group, over, allow_disk_use):
    # the values a group keeps add up to twice the limit, or to a quarter of it (far from the edge:
    # the per-group overhead is an estimate); each group sees per_group documents of equal length
    size = (2 * LIMIT if over else LIMIT // 4) // groups
    db.c.drop()
    db.c.insert_many([{"g": g, "s": chr(97 + k) * size} for g in range(groups) for k in range(per_group)])
    expected = 292 if over and not allow_disk_use else 0  # (with allowDiskUse it spills)
    assert _run(db.c, accumulator, allow_disk_use) == expected


@pytest.mark.commands("aggregate")
@pytest.mark.parametrize("accumulator", KEEPING)
def test_replaced_values_do_not_add_up(small_group_limit, db, accumulator):
    """One group fed ten times the limit: only the value kept counts."""
    db.c.insert_many([{"g": 1, "s": f"{i:04}" + "x" * 8000} for i in range(320)])
    assert _run(db.c, accumulator, False) == 0


@pytest.mark.commands("aggregate", "setParameter")
def test_group_uses_its_own_parameter_not_the_sorts(client, db):
    db.c.insert_many([{"g": g, "s": "x" * 3_000} for g in range(40)])  # 120 KB kept: past 64 KB
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", 64 * 1024):
        assert _run(db.c, "$first", False) == 0
    with pytest.raises(OperationFailure) as bad:
        client.admin.command("setParameter", 1, internalDocumentSourceGroupMaxMemoryBytes=0)
    assert bad.value.code == 2


@pytest.mark.commands("aggregate")
def test_the_startup_parameter_applies(start_server):
    srv = start_server(params={"internalDocumentSourceGroupMaxMemoryBytes": LIMIT})
    client = srv.client()
    coll = client.g.c
    coll.insert_many([{"g": g, "s": "x" * 20_000} for g in range(30)])  # 600 KB kept
    assert client.admin.command("getParameter", 1, internalDocumentSourceGroupMaxMemoryBytes=1)[
        "internalDocumentSourceGroupMaxMemoryBytes"] == LIMIT
    assert _run(coll, "$first", False) == 292
    assert _run(coll, "$last", True) == 0  # (it spills)
    client.close()
