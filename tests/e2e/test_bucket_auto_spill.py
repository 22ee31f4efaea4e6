"""A $bucketAuto past its memory limit with allowDiskUse sorts on disk, and answers what it answers in memory.

mongod 7.0's DocumentSourceBucketAuto feeds (groupBy value, document) pairs to a Sorter whose memory
limit is internalDocumentSourceBucketAutoMaxMemoryBytes (100 MB): past it the Sorter spills sorted runs
to disk when allowDiskUse is on (true by default since 6.0: allowDiskUseByDefault) and merges them
(ties in input order), and without allowDiskUse answers 292 "Sort exceeded memory limit of <n> bytes,
but did not opt in to external sorting." (sorter.cpp, NoLimitSorter::spill). Tidemark kept every
document in memory against the blocking-sort limit and past it answered 146 ExceededMemoryLimit
whatever allowDiskUse said (292 with its own message without it), so a $bucketAuto over more than
100 MB failed where mongod's succeeds; the limit was not mongod's parameter either.

Here $bucketAuto runs over generated documents (groupBy values of every type, many ties, missing
fields; numbers for a granularity) with bucket counts from 1 to more than the documents, every
granularity (and a case-insensitive collation), and positional accumulators ($first, $last, $push: their values in input order within a
tie), under a limit small enough that the same stage without allowDiskUse answers 292, so the answer
with it came through several runs on disk; it must equal, byte for byte, the answer in memory, and the
profiler says usedDisk.
"""

from __future__ import annotations

import datetime
import math

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness.parameters import server_parameter
from harness.profiling import last_aggregate_entry, profiling
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "setParameter", "getParameter", "profile")

LIMIT = 8 * 1024
T0 = datetime.datetime(2024, 1, 1)
GRANULARITIES = ["R5", "R10", "R20", "R40", "R80", "1-2-5", "E6", "E12", "E24", "E48", "E96", "E192", "POWERSOF2"]
OUTPUT = {"n": {"$sum": 1}, "ids": {"$push": "$i"}, "first": {"$first": "$i"}, "last": {"$last": "$i"},
          "avg": {"$avg": "$i"}, "set": {"$addToSet": "$k"}}

KEYS = st.one_of(st.integers(-20, 20), st.floats(-30, 30, allow_nan=False),
                 st.sampled_from([1, 1.0, Int64(1), Decimal128("1"), -0.0, "a", "b", "B", None, "<missing>",
                                  {"x": 1}, [1, 2], [], True, False, T0, math.nan, Decimal128("NaN"), 2**40]))
NUMBERS = st.one_of(st.integers(0, 2000), st.floats(0, 1e6, allow_nan=False),
                    st.sampled_from([0, 0.0, Int64(5), Decimal128("0.25"), Decimal128("1E+3"), 1e-300, 5e-324]))


def _answer(coll, stage: dict, allow_disk_use: bool, collation: dict | None) -> list[bytes]:
    options = {"collation": collation} if collation else {}
    return [bson.encode(d) for d in coll.aggregate([{"$bucketAuto": stage}], allowDiskUse=allow_disk_use, **options)]


def _spilled_equals_in_memory(client, db, keys, stage, collation=None):
    db.drop_collection("c")
    db.c.insert_many([{"i": i, "p": "p" * 100, **({} if k == "<missing>" else {"k": k})} for i, k in enumerate(keys)])
    in_memory = _answer(db.c, stage, True, collation)
    with server_parameter(client, "internalDocumentSourceBucketAutoMaxMemoryBytes", LIMIT):
        with pytest.raises(OperationFailure) as refused:
            _answer(db.c, stage, False, collation)
        assert refused.value.code == 292
        assert refused.value.details["errmsg"] == (f"Sort exceeded memory limit of {LIMIT} bytes, but did not opt in "
                                                   "to external sorting.")
        with profiling(db):
            spilled = _answer(db.c, stage, True, collation)
    assert spilled == in_memory
    entry = last_aggregate_entry(db, "c")
    assert entry["usedDisk"] is True


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(KEYS, min_size=150, max_size=400), buckets=st.integers(1, 450),
       collation=st.booleans())
def test_a_spilled_bucket_auto_answers_as_one_in_memory(client, db, keys, buckets, collation):
    stage = {"groupBy": "$k", "buckets": buckets, "output": OUTPUT}
    _spilled_equals_in_memory(client, db, keys, stage, {"locale": "en", "strength": 2} if collation else None)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(NUMBERS, min_size=150, max_size=400), buckets=st.integers(1, 40),
       granularity=st.sampled_from(GRANULARITIES))
def test_a_spilled_bucket_auto_with_a_granularity_answers_as_one_in_memory(client, db, keys, buckets, granularity):
    stage = {"groupBy": "$k", "buckets": buckets, "granularity": granularity, "output": OUTPUT}
    _spilled_equals_in_memory(client, db, keys, stage)


def test_bucket_auto_spills_by_default(client, db):
    """allowDiskUse absent: allowDiskUseByDefault (true) lets the sort spill; the buckets are mongod's."""
    db.c.insert_many([{"i": i, "k": i % 100, "p": "p" * 200} for i in range(1000)])
    with server_parameter(client, "internalDocumentSourceBucketAutoMaxMemoryBytes", LIMIT):
        docs = list(db.c.aggregate([{"$bucketAuto": {"groupBy": "$k", "buckets": 4, "output": {"n": {"$sum": 1}}}}]))
    assert docs == [{"_id": {"min": 0, "max": 25}, "n": 250}, {"_id": {"min": 25, "max": 50}, "n": 250},
                    {"_id": {"min": 50, "max": 75}, "n": 250}, {"_id": {"min": 75, "max": 99}, "n": 250}]
