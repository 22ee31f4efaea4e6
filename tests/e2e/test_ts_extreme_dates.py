"""Defect 15.7: range queries on the view return every matching measurement for any date pymongo can
encode — before 1901-12-13 and after 2106-02-07 (outside the 32-bit bucket ``_id`` timestamp) included —
from open buckets and, after a restart, from stored ones."""

import datetime as dt

import pytest
from bson.datetime_ms import DatetimeMS

pytestmark = [pytest.mark.commands("insert", "find", "aggregate")]

DATES = [
    dt.datetime(1, 1, 1),
    dt.datetime(1066, 10, 14, 9, 30),
    dt.datetime(1800, 1, 1),
    dt.datetime(1901, 12, 13, 20, 45, 51),
    dt.datetime(1901, 12, 13, 20, 45, 53),
    dt.datetime(1969, 12, 31, 23, 59, 59),
    dt.datetime(1970, 1, 1),
    dt.datetime(2024, 3, 1, 12),
    dt.datetime(2038, 1, 19, 3, 14, 8),
    dt.datetime(2106, 2, 7, 6, 28, 15),
    dt.datetime(2106, 2, 7, 6, 28, 17),
    dt.datetime(2200, 6, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59),
]
FAR = [DatetimeMS(-(2**62)), DatetimeMS(2**62)]  # beyond datetime's range: pymongo encodes them too


def expected(lo, hi, lo_inclusive=True, hi_inclusive=False):
    def inside(d):
        return (d > lo or (lo_inclusive and d == lo)) and (d < hi or (hi_inclusive and d == hi))

    return sorted(i for i, d in enumerate(DATES) if inside(d))


def check_ranges(coll):
    assert sorted(d["i"] for d in coll.find({})) == list(range(len(DATES) + len(FAR)))
    for i, d in enumerate(DATES):
        assert [x["i"] for x in coll.find({"t": d})] == [i], d
        assert [x["i"] for x in coll.find({"t": {"$gte": d, "$lte": d}})] == [i], d
    pairs = [(DATES[a], DATES[b]) for a in range(len(DATES)) for b in range(a, len(DATES))]
    for lo, hi in pairs:
        got = sorted(x["i"] for x in coll.find({"t": {"$gte": lo, "$lt": hi}}))
        assert got == expected(lo, hi), (lo, hi)
        got = sorted(x["i"] for x in coll.find({"t": {"$gt": lo, "$lte": hi}}))
        assert got == expected(lo, hi, False, True), (lo, hi)
    n = len(DATES)
    for d in DATES:  # one-sided ranges also reach the far dates (FAR[0] is before every date, FAR[1] after)
        assert sorted(x["i"] for x in coll.find({"t": {"$lt": d}})) == [i for i, x in enumerate(DATES) if x < d] + [n]
        assert sorted(x["i"] for x in coll.find({"t": {"$gte": d}})) == [i for i, x in enumerate(DATES)
                                                                          if x >= d] + [n + 1]
    assert sorted(x["i"] for x in coll.find({"t": {"$lt": DATES[0]}})) == [n]
    assert sorted(x["i"] for x in coll.find({"t": {"$gt": DATES[-1]}})) == [n + 1]
    grouped = list(coll.aggregate([{"$match": {"t": {"$gte": DATES[2], "$lt": DATES[-2]}}},
                                   {"$group": {"_id": None, "n": {"$sum": 1}}}]))
    assert grouped == [{"_id": None, "n": len(expected(DATES[2], DATES[-2]))}]


@pytest.mark.slow
def test_range_queries_find_dates_outside_the_32_bit_bucket_id_range(start_server):
    proc = start_server()
    with proc.client(datetime_conversion="DATETIME_AUTO") as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        docs = [{"t": d, "m": "a", "i": i} for i, d in enumerate(DATES)]
        docs += [{"t": d, "m": "a", "i": len(DATES) + k} for k, d in enumerate(FAR)]
        client.db.ts.insert_many(docs)
        check_ranges(client.db.ts)  # open buckets
    proc.terminate()
    proc.start()
    with proc.client(datetime_conversion="DATETIME_AUTO") as client:
        check_ranges(client.db.ts)  # stored buckets
