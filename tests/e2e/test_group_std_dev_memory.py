"""$stdDevPop/$stdDevSamp hold a fixed-size state, as mongod 7.0's AccumulatorStdDev (a count, a mean and
M2; it counts sizeof(*this) against the $group limit): Tidemark kept every value and counted 16 bytes
each, so a $group's deviation over a few thousand values failed with 292 under a 16 KB limit (and over
~6.5 million values per group under mongod's default 100 MB), where mongod answers. The arithmetic is
checked against mongod's in tests/query/test_std_dev_welford.py."""

import math

import pytest
from harness.parameters import server_parameter

pytestmark = pytest.mark.commands("insert", "aggregate", "setParameter", "getParameter", "create")


@pytest.mark.parametrize("time_series", [False, True], ids=["collection", "time-series"])
def test_std_dev_holds_no_values(client, db, time_series):
    if time_series:
        db.create_collection("c", timeseries={"timeField": "t"})
    import datetime as dt
    t0 = dt.datetime(2024, 1, 1)
    db.c.insert_many([{"t": t0 + dt.timedelta(seconds=i), "x": i * 0.37} for i in range(3000)])
    pipeline = [{"$group": {"_id": None, "pop": {"$stdDevPop": "$x"}, "samp": {"$stdDevSamp": "$x"}}}]
    with server_parameter(client, "internalDocumentSourceGroupMaxMemoryBytes", 16 * 1024):
        (doc,) = db.c.aggregate(pipeline, allowDiskUse=False)
    xs = [i * 0.37 for i in range(3000)]
    mean = math.fsum(xs) / len(xs)
    exact = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs))
    assert math.isclose(doc["pop"], exact, rel_tol=1e-12)
    assert doc["samp"] > doc["pop"]
