"""Ports of MongoDB's time-series aggregation jstests (group D): each test runs the jstest's pipelines
on a time-series view and checks the documents (and order, where the jstest checks it) against the
jstest's expected answer or the same pipeline on an ordinary collection holding the same documents.

Explain shapes, block processing/SBE, sharding and failpoints are out of scope (a 7.0 standalone)."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import math
import random
import string

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from harness import jstests
from harness.jstests import canon, loose, ms, unordered
from pymongo.errors import OperationFailure

# results compare field-order blind (a time-series view answers its fields in its own order), types kept
bag = functools.partial(jstests.bag, key=unordered)
seq = functools.partial(jstests.seq, key=unordered)

pytestmark = pytest.mark.commands(
    "create", "insert", "aggregate", "find", "getMore", "killCursors", "createIndexes", "dropIndexes"
)

EPOCH = dt.datetime(1970, 1, 1)
MISSING = object()  # a field left out of a generated document


# --------------------------------------------------------------------------------------------------
# comparison helpers


def path_value(doc, path: str):
    cur = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return MISSING
        cur = cur[part]
    return cur


def sort_keys(docs, fields) -> list:
    out = []
    for d in docs:
        row = []
        for f in fields:
            v = path_value(d, f)
            row.append(("missing",) if v is MISSING else unordered(v))
        out.append(tuple(row))
    return out


def with_ids(docs: list[dict]) -> list[dict]:
    """Give every document an ``_id`` up front, so the view and the plain collection hold the same."""
    for d in docs:
        d.setdefault("_id", ObjectId())
    return docs


def make_pair(db, docs, *, time_field: str, meta_field: str | None = None, ts="ts", plain="plain",
              collation: dict | None = None):
    """A time-series collection and an ordinary collection holding the same documents."""
    opts = {"timeField": time_field}
    if meta_field is not None:
        opts["metaField"] = meta_field
    extra = {"collation": collation} if collation else {}
    db.create_collection(ts, timeseries=opts, **extra)
    db.create_collection(plain, **extra)
    docs = with_ids(docs)
    if docs:
        db[ts].insert_many(copy.deepcopy(docs))
        db[plain].insert_many(copy.deepcopy(docs))
    return db[ts], db[plain]


def agg(coll, pipeline, **kwargs):
    return list(coll.aggregate(pipeline, **{k: v for k, v in kwargs.items() if v is not None}))


def assert_same_as_plain(ts, plain, pipeline, **kwargs):
    got = agg(ts, pipeline, **kwargs)
    want = agg(plain, pipeline, **{k: v for k, v in kwargs.items() if k != "hint"})
    assert want, f"pipeline {pipeline}: expected a non-empty answer"
    assert bag(got) == bag(want), f"pipeline {pipeline}:\nview  {got}\nplain {want}"
    return got


def generate_hosts(rng: random.Random, n: int) -> list[dict]:
    """Hosts in the style of TimeseriesTest.generateHosts: tags with hostname 'host_<i>', hostid i."""
    regions = ["ap-northeast-1", "eu-central-1", "us-east-1", "us-west-2"]
    hosts = []
    for i in range(n):
        hosts.append({"tags": {
            "arch": rng.choice(["x64", "x86"]),
            "hostid": i,
            "hostname": f"host_{i}",
            "os": rng.choice(["Ubuntu15.10", "Ubuntu16.10", "Ubuntu16.04LTS"]),
            "rack": str(rng.randrange(100)),
            "region": rng.choice(regions),
            "service": str(rng.randrange(20)),
        }})
    return hosts


# --------------------------------------------------------------------------------------------------
# timeseries_group.js


def group_cases(time: str, meta: str, prefix: int, upper: dt.datetime, lower: dt.datetime) -> list:
    """The $group pipelines of jstests/libs/block_processing_test_cases.js (7.x), by name. The two
    {$meta: 'sortKey'} cases are left out (Tidemark refuses $meta 'sortKey', a documented general
    limitation, not a time-series one)."""
    lt, gt, lte = {"$match": {time: {"$lt": upper}}}, {"$match": {time: {"$gt": lower}}}, {
        "$match": {time: {"$lte": upper}}}
    start = ms(prefix)
    tv = f"${time}"
    diff_ms = {"$dateDiff": {"startDate": start, "endDate": tv, "unit": "millisecond"}}
    minmax_y = {"a": {"$min": "$y"}, "b": {"$max": "$y"}}
    spread = {"$subtract": ["$b", "$a"]}
    cases = [
        ("GroupByNull", [lt, {"$group": {"_id": None}}, {"$project": {"_id": 1}}]),
        ("Min_GroupByNull", [lt, {"$group": {"_id": None, "a": {"$min": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("Min_GroupByNullAllPass",
         [gt, {"$group": {"_id": None, "a": {"$min": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("MinWithId_GroupByNull", [lt, {"$group": {"_id": None, "a": {"$min": "$y"}}}]),
        ("Max_GroupByNull", [lt, {"$group": {"_id": None, "a": {"$max": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("Max_GroupByNullAllPass",
         [gt, {"$group": {"_id": None, "a": {"$max": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("MaxWithId_GroupByNull", [lt, {"$group": {"_id": None, "a": {"$max": "$y"}}}]),
        ("MaxMinusMin_GroupByNull", [lt, {"$group": {"_id": None, **minmax_y}}, {"$project": {"_id": 0, "a": spread}}]),
        ("MaxMinusMin_GroupByNullAllPass",
         [gt, {"$group": {"_id": None, **minmax_y}}, {"$project": {"_id": 0, "a": spread}}]),
        ("MaxMinusMinWithId_GroupByNull",
         [lt, {"$group": {"_id": None, **minmax_y}}, {"$project": {"_id": 1, "a": spread}}]),
        ("MinAndMaxWithId_GroupByNull", [lt, {"$group": {"_id": None, **minmax_y}}]),
        ("Min_GroupByX", [lt, {"$group": {"_id": "$x", "a": {"$min": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("MinWithId_GroupByX", [lt, {"$group": {"_id": "$x", "a": {"$min": "$y"}}}]),
        ("Max_GroupByX", [lt, {"$group": {"_id": "$x", "a": {"$max": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("MaxWithId_GroupByX", [lt, {"$group": {"_id": "$x", "a": {"$max": "$y"}}}]),
        ("MaxMinusMin_GroupByX", [lt, {"$group": {"_id": "$x", **minmax_y}}, {"$project": {"_id": 0, "a": spread}}]),
        ("MaxMinusMinWithId_GroupByX",
         [lt, {"$group": {"_id": "$x", **minmax_y}}, {"$project": {"_id": 1, "a": spread}}]),
        ("MinAndMaxWithId_GroupByX", [lt, {"$group": {"_id": "$x", **minmax_y}}]),
        ("MaxMinusMinWithId_GroupByDateTrunc",
         [lt, {"$group": {"_id": {"$dateTrunc": {"date": tv, "unit": "hour"}}, **minmax_y}},
          {"$project": {"_id": 1, "a": spread}}]),
        ("MinWithId_GroupByDateAdd",
         [lt, {"$group": {"_id": {"$dateAdd": {"startDate": tv, "unit": "millisecond", "amount": 100}},
                          "a": {"$min": "$y"}}}, {"$project": {"_id": 1, "a": "$a"}}]),
        ("MinWithId_GroupByDateAddAndDateDiff",
         [lt, {"$group": {"_id": {"$dateAdd": {"startDate": dt.datetime(2024, 1, 1), "unit": "millisecond",
                                               "amount": diff_ms}},
                          "a": {"$min": "$y"}}}, {"$project": {"_id": 1, "a": "$a"}}]),
        ("MinWithId_GroupByDateSubtract",
         [lt, {"$group": {"_id": {"$dateSubtract": {"startDate": tv, "unit": "millisecond", "amount": 100}},
                          "a": {"$min": "$y"}}}, {"$project": {"_id": 1, "a": "$a"}}]),
        ("MinWithId_GroupByDateSubtractAndDateDiff",
         [lt, {"$group": {"_id": {"$dateSubtract": {"startDate": dt.datetime(2024, 1, 1), "unit": "millisecond",
                                                    "amount": diff_ms}},
                          "a": {"$min": "$y"}}}, {"$project": {"_id": 1, "a": "$a"}}]),
        ("MaxAndMinOfDateDiffWithId_GroupByNull",
         [lte, {"$group": {"_id": None, "a": {"$min": diff_ms}, "b": {"$max": diff_ms},
                           "c": {"$min": {"$dateDiff": {"startDate": tv, "endDate": start, "unit": "millisecond"}}},
                           "d": {"$max": {"$dateDiff": {"startDate": tv, "endDate": start, "unit": "millisecond"}}}}},
          {"$project": {"_id": 0, "a": 1, "b": 1, "c": 1, "d": 1}}]),
        ("MaxAndMinOfDateAddDateSubtractDateTruncWithId_GroupByNull",
         [lte, {"$group": {"_id": None,
                           "a": {"$min": {"$dateAdd": {"startDate": tv, "unit": "millisecond", "amount": 100}}},
                           "b": {"$max": {"$dateSubtract": {"startDate": tv, "unit": "millisecond", "amount": 100}}},
                           "c": {"$max": {"$dateTrunc": {"date": tv, "unit": "second"}}}}},
          {"$project": {"_id": 0, "a": 1, "b": 1, "c": 1}}]),
        ("MaxMinusMinWithId_GroupByDateTruncAndDateAdd",
         [lt, {"$group": {"_id": {"$dateTrunc": {"date": {"$dateAdd": {"startDate": tv, "unit": "millisecond",
                                                                       "amount": 100}}, "unit": "hour"}},
                          **minmax_y}}, {"$project": {"_id": 1, "a": spread}}]),
        ("MaxMinusMinWithId_GroupByDateTruncAndDateSubtract",
         [lt, {"$group": {"_id": {"$dateTrunc": {"date": {"$dateSubtract": {"startDate": tv, "unit": "millisecond",
                                                                            "amount": 100}}, "unit": "hour"}},
                          **minmax_y}}, {"$project": {"_id": 1, "a": spread}}]),
        ("MinWithId_GroupByDateDiffAndDateAdd",
         [lt, {"$group": {"_id": {"$dateDiff": {"startDate": start, "endDate": {
             "$dateAdd": {"startDate": tv, "unit": "millisecond", "amount": 100}}, "unit": "millisecond"}},
             "a": {"$min": "$y"}}}, {"$project": {"_id": 1, "a": 1}}]),
        ("MinOfDateDiffWithId_GroupByNull_InvalidDate",
         [lte, {"$group": {"_id": None, "a": {"$min": {"$dateDiff": {"startDate": start, "endDate": "$y",
                                                                     "unit": "millisecond"}}}}},
          {"$project": {"_id": 0, "a": 1}}]),
        ("MinOfDateAddWithId_GroupByNull_MissingAmount",
         [lte, {"$group": {"_id": None, "a": {"$min": {"$dateAdd": {"startDate": start, "unit": "millisecond",
                                                                    "amount": "$k"}}}}},
          {"$project": {"_id": 0, "a": 1}}]),
        ("MaxPlusMinWithId_GroupByDateDiff",
         [lte, {"$group": {"_id": diff_ms, **minmax_y}}, {"$project": {"_id": 1, "a": {"$add": ["$b", "$a"]}}}]),
        ("MaxPlusMinWithId_GroupByFilteredComputedDateDiff",
         [{"$match": {time: {"$lte": ms(prefix + 300)}}}, {"$addFields": {"msDiff": diff_ms}},
          {"$match": {"msDiff": {"$gte": 300}}}, {"$group": {"_id": "$msDiff", **minmax_y}},
          {"$project": {"_id": 1, "a": {"$add": ["$b", "$a"]}}}]),
        ("Min_GroupByX_NoFilter", [{"$group": {"_id": "$x", "a": {"$min": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("MinWithId_GroupByX_NoFilter", [{"$group": {"_id": "$x", "a": {"$min": "$y"}}}]),
        ("Max_GroupByX_NoFilter", [{"$group": {"_id": "$x", "a": {"$max": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("MaxWithId_GroupByX_NoFilter", [{"$group": {"_id": "$x", "a": {"$max": "$y"}}}]),
        ("MaxMinusMin_GroupByX_NoFilter",
         [{"$group": {"_id": "$x", **minmax_y}}, {"$project": {"_id": 0, "a": spread}}]),
        ("MaxMinusMinWithId_GroupByX_NoFilter",
         [{"$group": {"_id": "$x", **minmax_y}}, {"$project": {"_id": 1, "a": spread}}]),
        ("MinAndMaxWithId_GroupByX_NoFilter", [{"$group": {"_id": "$x", **minmax_y}}]),
        ("MaxMinusMinWithId_GroupByDateTrunc_NoFilter",
         [{"$group": {"_id": {"$dateTrunc": {"date": tv, "unit": "minute", "binSize": 1}}, **minmax_y}},
          {"$project": {"_id": 1, "a": spread}}]),
        ("MaxMinusMinWithId_GroupByDateTruncAndDateDiff_NoFilter",
         [{"$group": {"_id": {"date": {"$dateTrunc": {"date": tv, "unit": "millisecond", "binSize": 200}},
                              "delta": diff_ms}, **minmax_y}},
          {"$project": {"_id": 1, "a": spread}}]),
        ("MaxMinusMinWithId_GroupByDateTruncAndMeta_NoFilter",
         [{"$group": {"_id": {"date": {"$dateTrunc": {"date": tv, "unit": "minute", "binSize": 1}},
                              "symbol": f"${meta}"}, **minmax_y}},
          {"$project": {"_id": 1, "a": spread}}]),
        ("MaxMinusMinWithId_GroupByMeta_NoFilter",
         [{"$group": {"_id": f"${meta}", **minmax_y}}, {"$project": {"_id": 1, "a": spread}}]),
        ("Avg_GroupByX", [lt, {"$group": {"_id": "$x", "a": {"$avg": "$y"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("Min_GroupByXAndY",
         [lt, {"$group": {"_id": {"x": "$x", "y": "$y"}, "a": {"$min": "$z"}}}, {"$project": {"_id": 0, "a": 1}}]),
        ("GroupWithProjectedOutFieldInAccumulator",
         [{"$project": {"_id": 0}}, {"$match": {meta: "foo"}}, {"$group": {"_id": None, "minY": {"$min": "$y"}}}]),
        ("GroupWithProjectedOutFieldInGb",
         [{"$project": {"_id": 0}}, {"$match": {meta: "foo"}}, {"$group": {"_id": "$y", "a": {"$min": "$x"}}}]),
        ("GroupWithMixOfProjectedOutField",
         [{"$project": {"_id": 0, "x": 1}}, {"$match": {meta: "foo"}}, {"$group": {"_id": "$y", "a": {"$min": "$x"}}}]),
    ]
    return cases


GROUP_PREFIX = 1680912440
GROUP_ERROR_CASES = {"MinOfDateDiffWithId_GroupByNull_InvalidDate"}


def d70(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


GROUP_EXPECTED = {
    "GroupByNull": [{"_id": None}],
    "Min_GroupByNull": [{"a": 11}],
    "Min_GroupByNullAllPass": [{"a": 11}],
    "MinWithId_GroupByNull": [{"_id": None, "a": 11}],
    "Max_GroupByNull": [{"a": 99}],
    "Max_GroupByNullAllPass": [{"a": 99}],
    "MaxWithId_GroupByNull": [{"_id": None, "a": 99}],
    "MaxMinusMin_GroupByNull": [{"a": 88}],
    "MaxMinusMin_GroupByNullAllPass": [{"a": 88}],
    "MaxMinusMinWithId_GroupByNull": [{"_id": None, "a": 88}],
    "MinAndMaxWithId_GroupByNull": [{"_id": None, "a": 11, "b": 99}],
    "Min_GroupByX": [{"a": 11}, {"a": 42}],
    "MinWithId_GroupByX": [{"_id": 123, "a": 42}, {"_id": 456, "a": 11}],
    "Max_GroupByX": [{"a": 73}, {"a": 99}],
    "MaxWithId_GroupByX": [{"_id": 123, "a": 73}, {"_id": 456, "a": 99}],
    "MaxMinusMin_GroupByX": [{"a": 31}, {"a": 88}],
    "MaxMinusMinWithId_GroupByX": [{"_id": 123, "a": 31}, {"_id": 456, "a": 88}],
    "MinAndMaxWithId_GroupByX": [{"_id": 123, "a": 42, "b": 73}, {"_id": 456, "a": 11, "b": 99}],
    "MaxMinusMinWithId_GroupByDateTrunc": [{"_id": d70("1970-01-20T10:00:00"), "a": 88}],
    "MinWithId_GroupByDateAdd": [
        {"_id": d70("1970-01-20T10:55:12.640"), "a": 73}, {"_id": d70("1970-01-20T10:55:12.740"), "a": 42},
        {"_id": d70("1970-01-20T10:55:12.840"), "a": 11}, {"_id": d70("1970-01-20T10:55:12.940"), "a": 99}],
    "MinWithId_GroupByDateAddAndDateDiff": [
        {"_id": d70("2024-01-01T00:00:00.100"), "a": 73}, {"_id": d70("2024-01-01T00:00:00.200"), "a": 42},
        {"_id": d70("2024-01-01T00:00:00.300"), "a": 11}, {"_id": d70("2024-01-01T00:00:00.400"), "a": 99}],
    "MinWithId_GroupByDateSubtract": [
        {"_id": d70("1970-01-20T10:55:12.440"), "a": 73}, {"_id": d70("1970-01-20T10:55:12.540"), "a": 42},
        {"_id": d70("1970-01-20T10:55:12.640"), "a": 11}, {"_id": d70("1970-01-20T10:55:12.740"), "a": 99}],
    "MinWithId_GroupByDateSubtractAndDateDiff": [
        {"_id": d70("2023-12-31T23:59:59.600"), "a": 99}, {"_id": d70("2023-12-31T23:59:59.700"), "a": 11},
        {"_id": d70("2023-12-31T23:59:59.800"), "a": 42}, {"_id": d70("2023-12-31T23:59:59.900"), "a": 73}],
    "MaxAndMinOfDateDiffWithId_GroupByNull": [{"a": 100, "b": 500, "c": -500, "d": -100}],
    "MaxAndMinOfDateAddDateSubtractDateTruncWithId_GroupByNull": [{
        "a": d70("1970-01-20T10:55:12.640"), "b": d70("1970-01-20T10:55:12.840"), "c": d70("1970-01-20T10:55:12")}],
    "MaxMinusMinWithId_GroupByDateTruncAndDateAdd": [{"_id": d70("1970-01-20T10:00:00"), "a": 88}],
    "MaxMinusMinWithId_GroupByDateTruncAndDateSubtract": [{"_id": d70("1970-01-20T10:00:00"), "a": 88}],
    "MinWithId_GroupByDateDiffAndDateAdd": [{"_id": 200, "a": 73}, {"_id": 300, "a": 42}, {"_id": 400, "a": 11},
                                            {"_id": 500, "a": 99}],
    "MinOfDateAddWithId_GroupByNull_MissingAmount": [{"a": None}],
    "MaxPlusMinWithId_GroupByDateDiff": [{"_id": 100, "a": 146}, {"_id": 200, "a": 84}, {"_id": 300, "a": 22},
                                         {"_id": 400, "a": 198}, {"_id": 500, "a": None}],
    "MaxPlusMinWithId_GroupByFilteredComputedDateDiff": [{"_id": 300, "a": 22}],
    "Min_GroupByX_NoFilter": [{"a": 11}, {"a": 42}, {"a": None}],
    "MinWithId_GroupByX_NoFilter": [{"_id": 123, "a": 42}, {"_id": 456, "a": 11}, {"_id": None, "a": None}],
    "Max_GroupByX_NoFilter": [{"a": 73}, {"a": 99}, {"a": None}],
    "MaxWithId_GroupByX_NoFilter": [{"_id": 123, "a": 73}, {"_id": 456, "a": 99}, {"_id": None, "a": None}],
    "MaxMinusMin_GroupByX_NoFilter": [{"a": 31}, {"a": 88}, {"a": None}],
    "MaxMinusMinWithId_GroupByX_NoFilter": [{"_id": 123, "a": 31}, {"_id": 456, "a": 88}, {"_id": None, "a": None}],
    "MinAndMaxWithId_GroupByX_NoFilter": [{"_id": 123, "a": 42, "b": 73}, {"_id": 456, "a": 11, "b": 99},
                                          {"_id": None, "a": None, "b": None}],
    "MaxMinusMinWithId_GroupByDateTrunc_NoFilter": [{"_id": d70("1970-01-20T10:55:00"), "a": 88}],
    "MaxMinusMinWithId_GroupByDateTruncAndDateDiff_NoFilter": [
        {"_id": {"date": d70("1970-01-20T10:55:12.400"), "delta": 100}, "a": 0},
        {"_id": {"date": d70("1970-01-20T10:55:12.600"), "delta": 200}, "a": 0},
        {"_id": {"date": d70("1970-01-20T10:55:12.600"), "delta": 300}, "a": 0},
        {"_id": {"date": d70("1970-01-20T10:55:12.800"), "delta": 400}, "a": 0},
        {"_id": {"date": d70("1970-01-20T10:55:12.800"), "delta": 500}, "a": None}],
    "MaxMinusMinWithId_GroupByDateTruncAndMeta_NoFilter": [
        {"_id": {"date": d70("1970-01-20T10:55:00"), "symbol": "foo"}, "a": 88}],
    "MaxMinusMinWithId_GroupByMeta_NoFilter": [{"_id": "foo", "a": 88}],
    "Avg_GroupByX": [{"a": 55}, {"a": 57.5}],
    "Min_GroupByXAndY": [{"a": 2}, {"a": 4}, {"a": 7}, {"a": 9}],
    "GroupWithProjectedOutFieldInAccumulator": [{"_id": None, "minY": 11}],
    "GroupWithProjectedOutFieldInGb": [{"_id": 11, "a": 456}, {"_id": 42, "a": 123}, {"_id": 73, "a": 123},
                                       {"_id": 99, "a": 456}, {"_id": None, "a": None}],
    "GroupWithMixOfProjectedOutField": [],
}


def swap_field(value, old: str, new: str):
    if isinstance(value, dict):
        return {k: swap_field(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [swap_field(v, old, new) for v in value]
    return new if value == old else value


def run_group_cases(ts, plain, cases, expected=None, disk_modes=(False, True)):
    for name, pipeline in cases:
        for allow_disk_use in disk_modes:
            try:
                want = agg(plain, pipeline, allowDiskUse=allow_disk_use)
            except OperationFailure as on_plain:
                # the same pipeline fails on the view with the ordinary collection's code
                assert expected is None or name in GROUP_ERROR_CASES, (name, on_plain)
                with pytest.raises(OperationFailure) as on_view:
                    agg(ts, pipeline, allowDiskUse=allow_disk_use)
                assert on_view.value.code == on_plain.code, name
                continue
            assert name not in GROUP_ERROR_CASES, name
            got = agg(ts, pipeline, allowDiskUse=allow_disk_use)
            assert bag(got) == bag(want), f"{name}: view {got} != plain {want}"
            if expected is not None:
                assert bag(got, key=loose) == bag(expected[name], key=loose), f"{name}: {got}"


def test_group_block_cases_expected_results(db):
    """timeseries_group.js (7.x, five measurements with meta 'measurement'): every $group test case
    of block_processing_test_cases.js ($min/$max/$avg by null, by a field, by $dateTrunc/$dateAdd/
    $dateSubtract/$dateDiff keys, after a $project that drops the meta field) returns the jstest's
    expected documents, with and without allowDiskUse, and the same as an ordinary collection; the
    invalid-date case fails with the ordinary collection's error code."""
    docs = [
        {"_id": 0, "time": ms(GROUP_PREFIX + 100), "measurement": "foo", "x": 123, "y": 73, "z": 7},
        {"_id": 1, "time": ms(GROUP_PREFIX + 200), "measurement": "foo", "x": 123, "y": 42, "z": 9},
        {"_id": 2, "time": ms(GROUP_PREFIX + 300), "measurement": "foo", "x": 456, "y": 11, "z": 4},
        {"_id": 3, "time": ms(GROUP_PREFIX + 400), "measurement": "foo", "x": 456, "y": 99, "z": 2},
        {"_id": 4, "time": ms(GROUP_PREFIX + 500), "measurement": "foo"},
    ]
    ts, plain = make_pair(db, docs, time_field="time", meta_field="measurement")
    cases = group_cases("time", "measurement", GROUP_PREFIX, ms(GROUP_PREFIX + 500), ms(GROUP_PREFIX))
    assert {n for n, _ in cases} == set(GROUP_EXPECTED) | GROUP_ERROR_CASES
    run_group_cases(ts, plain, cases, GROUP_EXPECTED)


@pytest.mark.slow
def test_group_block_cases_mixed_types_match_plain(db):
    """timeseries_group.js (8.0 data set): 735 measurements over three metas (a string and two
    objects) whose x/y/z/w mix null, missing, NaN, +-Infinity, strings, [] and {}; every $group case
    gives the same documents on the view as on an ordinary collection holding the same documents."""
    x_vals = [None, MISSING, 42, -12.345, math.nan, "789", "antidisestablishmentarianism"]
    long_str = "a somewhat long string"
    y_vals = [0, 73.73, -math.inf, "blah", long_str, MISSING, None]
    z_special = [MISSING, 10e10, -10e10]
    w_special = [math.inf, -math.inf, math.nan, long_str, [], {}, MISSING]
    metas = ["foo", {"region": "us", "series": 123}, {"region": "eu", "series": 456}]
    docs = []
    next_id = offset = p = q = 0
    z_seed, w_seed = 1234, 5767
    for _ in range(5):
        for meta in metas:
            for x in x_vals:
                for y in y_vals:
                    z = z_seed // 2 if z_seed % 2 == 0 else -(z_seed + 1) // 2
                    w = w_seed // 2 if w_seed % 2 == 0 else -(w_seed + 1) // 2
                    if z_seed % 26 == 1 and z_special:
                        z = z_special.pop(0)
                    if w_seed % 26 == 1 and w_special:
                        w = w_special.pop(0)
                    doc = {"_id": next_id, "time": ms(GROUP_PREFIX + offset), "meta": copy.deepcopy(meta)}
                    for field, value in (("x", x), ("y", y), ("z", z), ("w", w)):
                        if value is not MISSING:
                            doc[field] = value
                    doc["p"], doc["q"] = p, q
                    docs.append(doc)
                    next_id += 1
                    offset = (offset + 5) % 199
                    z_seed = (z_seed + 997) % 9967
                    w_seed = (w_seed + 991) % 9973
                    q = (q + 1) % 20
                    if q == 0:
                        p += 1
    ts, plain = make_pair(db, docs, time_field="time", meta_field="meta")
    cases = group_cases("time", "meta", GROUP_PREFIX, ms(GROUP_PREFIX + 200), ms(GROUP_PREFIX))
    run_group_cases(ts, plain, cases)
    # y holds strings, so every $subtract of $max - $min fails (on both); again on the numeric z
    run_group_cases(ts, plain, [(n, swap_field(p, "$y", "$z")) for n, p in cases], disk_modes=(False,))


# --------------------------------------------------------------------------------------------------
# timeseries_lastpoint.js


def lastpoint_group(time: int, extra: tuple[str, ...] = ()) -> dict:
    acc = "$last" if time > 0 else "$first"
    spec = {"_id": "$tags.hostid"}
    for f in (*extra, "usage_user", "usage_guest", "usage_idle"):
        spec[f] = {acc: f"${f}"}
    return {"$group": spec}


def boring_lastpoint_collections(db, include_idle: bool):
    rng = random.Random(20240601)
    hosts = generate_hosts(rng, 10)
    docs = []
    clock = 1_700_000_000_000
    usage_fields = ["usage_guest", "usage_guest_nice", "usage_idle", "usage_iowait", "usage_irq",
                    "usage_nice", "usage_softirq", "usage_steal", "usage_system"]
    for i in range(20):
        for host in hosts:
            user = rng.randrange(101)
            doc = {"tags": copy.deepcopy(host["tags"]), "time": ms(clock)}
            clock += 1
            for f in usage_fields:
                doc[f] = rng.randrange(101)
            doc["usage_user"] = user
            docs.append(doc)
            if include_idle and i % 2:
                docs.append({"tags": copy.deepcopy(host["tags"]), "time": ms(clock), "idle_user": 100 - user})
                clock += 1
    return make_pair(db, docs, time_field="time", meta_field="tags", ts="in", plain="observer_in")


def run_all_time_meta_directions(db, ts, plain, make_pipelines):
    """testAllTimeMetaDirections: time -1/+1 (and +1 with a buckets index), meta +-1; each pipeline
    without an index, then with the {tags.hostid, time} index (and the buckets index)."""
    for time, buckets_index in ((-1, False), (1, False), (1, True)):
        for meta_dir in (1, -1):
            index = {"tags.hostid": meta_dir, "time": time}
            pipelines = make_pipelines(time, index)
            for pipeline in pipelines:
                assert_same_as_plain(ts, plain, pipeline)
            ix_name = f"tsIndex_time_{time}_meta_{meta_dir}"
            ts.create_index(list(index.items()), name=ix_name)
            bucket_ix = None
            if buckets_index:
                bucket_ix = f"bucketsIndex_time_{time}_meta_{meta_dir}"
                db[f"system.buckets.{ts.name}"].create_index(
                    [("meta.hostid", meta_dir), ("control.max.time", 1), ("control.min.time", 1)], name=bucket_ix)
            for pipeline in pipelines:
                assert_same_as_plain(ts, plain, pipeline)
            ts.drop_index(ix_name)
            if bucket_ix:
                db[f"system.buckets.{ts.name}"].drop_index(bucket_ix)


def test_lastpoint_boring_collections_match_plain(db):
    """timeseries_lastpoint.js (results only): lastpoint pipelines ($sort on time or on
    {tags.hostid, time}, then $group by tags.hostid with $first/$last; with an equality, $ne, $gt, $lt
    $match first; with a computed field) give the same groups as an ordinary collection, for both
    time and meta directions, without and with the time-series index and a buckets index."""
    ts, plain = boring_lastpoint_collections(db, include_idle=False)

    def pipelines(time, index):
        group = lastpoint_group(time)
        out = [[{"$sort": {"time": time}}, group], [{"$sort": index}, group],
               [{"$set": {"abc": {"$add": [1, "$tags.hostid"]}}}, {"$sort": index}, lastpoint_group(time, ("abc",))]]
        for match in ({"tags.hostid": 0}, {"tags.hostid": {"$ne": 0}}, {"tags.hostid": {"$gt": 5}},
                      {"tags.hostid": {"$lt": 5}}):
            out.append([{"$match": match}, {"$sort": index}, group])
        return out

    run_all_time_meta_directions(db, ts, plain, pipelines)


def test_lastpoint_with_idle_measurements_match_plain(db):
    """timeseries_lastpoint.js: with extra 'idle' measurements that lack the usage fields, the
    lastpoint $sort+$group returns the same (null for missing fields) as an ordinary collection."""
    ts, plain = boring_lastpoint_collections(db, include_idle=True)
    run_all_time_meta_directions(db, ts, plain, lambda time, index: [[{"$sort": index}, lastpoint_group(time)]])


def test_lastpoint_interesting_meta_values_match_plain(db):
    """timeseries_lastpoint.js (interesting metaField values, collation en_US strength 2): arrays,
    objects differing in field order, null/missing/empty values, strings differing in case and 7 as
    int/long/double/decimal, each bare, wrapped in an array and in an object, give the same lastpoint
    groups on the view as on an ordinary collection with the view's documents."""
    collation = {"locale": "en_US", "strength": 2}
    base = [[5], [5, 99], [99], {"x": 1, "y": 2}, {"y": 2, "x": 1}, None, [], {}, "",
            "a", "A", "b", "B", 7.0, 7, Int64(7), Decimal128("7")]
    values = base + [[v] for v in base] + [{"w": v} for v in base]
    docs = []
    for _ in range(2):
        for v in values:
            docs.append({"_id": len(docs), "tags": {"hostid": copy.deepcopy(v)}, "time": ms(len(docs))})
        docs.append({"_id": len(docs), "time": ms(len(docs))})
    for v in values:
        docs.append({"_id": len(docs), "tags": {"hostid": copy.deepcopy(v)}, "time": ms(len(docs) + 3600_000)})
    db.create_collection("in", timeseries={"timeField": "time", "metaField": "tags"}, collation=collation)
    db["in"].insert_many(docs, ordered=False)
    db.create_collection("observer_in", collation=collation)
    db.observer_in.insert_many(list(db["in"].find()), ordered=False)
    ts, plain = db["in"], db.observer_in
    assert ts.count_documents({}) == len(docs)

    first = {"$arrayElemAt": ["$_id", 0]}
    is_arr = {"$isArray": "$_id"}
    strs, nums = ["a", "A", "b", "B"], [7.0, 7, Int64(7), Decimal128("7")]
    to_equivalent = {"$addFields": {"_id": {"$switch": {"branches": [
        {"case": {"$in": ["$_id.w", strs]}, "then": {"w": {"$toLower": "$_id.w"}}},
        {"case": {"$and": [is_arr, {"$in": [first, strs]}]}, "then": [{"$toLower": first}]},
        {"case": {"$and": [{"$not": is_arr}, {"$in": ["$_id", strs]}]}, "then": {"$toLower": "$_id"}},
        {"case": {"$in": ["$_id.w", nums]}, "then": {"w": 7}},
        {"case": {"$and": [is_arr, {"$in": [first, nums]}]}, "then": [7]},
        {"case": {"$and": [{"$not": is_arr}, {"$in": ["$_id", nums]}]}, "then": 7},
    ], "default": "$_id"}}}}

    def pipelines(time, index):
        group = lastpoint_group(time)
        return [[{"$sort": {"time": time}}, group, to_equivalent], [{"$sort": index}, group, to_equivalent]]

    run_all_time_meta_directions(db, ts, plain, pipelines)


# --------------------------------------------------------------------------------------------------
# timeseries_lookup.js / timeseries_union_with.js / timeseries_graph_lookup.js

TS_TAG = {"timeField": "time", "metaField": "tag"}
COMBOS = [(None, TS_TAG), (TS_TAG, None), (TS_TAG, TS_TAG)]
COMBO_IDS = ["regular-from-ts", "ts-from-regular", "ts-from-ts"]


def create(db, name, ts_options):
    if ts_options is None:
        db.create_collection(name)
    else:
        db.create_collection(name, timeseries=ts_options)
    return db[name]


def host_count_project():
    return [{"$project": {"_id": 0, "host": "$tags.hostname", "matchedB": {"$size": "$matchedB"}}},
            {"$sort": {"host": 1}}]


@pytest.mark.parametrize("a_opts,b_opts", COMBOS, ids=COMBO_IDS)
def test_lookup_with_timeseries_on_either_side(db, a_opts, b_opts):
    """timeseries_lookup.js: $lookup between a time-series and an ordinary collection (either way,
    or both time-series): localField/foreignField equality, uncorrelated and correlated let+pipeline
    joins, a non-equality join ($lte on the host number) and a let-less $sort sub-pipeline give the
    per-host match counts computed from the inserted documents."""
    rng = random.Random(7)
    hosts = generate_hosts(rng, 10)
    coll_a, coll_b = create(db, "a", a_opts), create(db, "b", b_opts)
    now = dt.datetime(2024, 3, 1, 12, 0)
    coll_a.insert_many([{"measurement": "cpu", "time": now, "tags": copy.deepcopy(h["tags"])} for h in hosts])
    per_host = [0] * 10
    b_docs = []
    for i in range(200):
        h = rng.randrange(10)
        per_host[h] += 1
        b_docs.append({"measurement": "cpu", "time": now + dt.timedelta(milliseconds=i),
                       "tags": copy.deepcopy(hosts[h]["tags"])})
    coll_b.insert_many(b_docs)
    names = [f"host_{i}" for i in range(10)]  # hostnames sort as strings; host_0..host_9 keep numeric order

    out = agg(coll_a, [{"$lookup": {"from": "b", "localField": "tags.hostname", "foreignField": "tags.hostname",
                                    "as": "matchedB"}}, *host_count_project()])
    assert canon(out) == canon([{"host": names[i], "matchedB": per_host[i]} for i in range(10)])

    first_only = {"$match": {"$expr": {"$eq": ["$$outer_hostname", "host_0"]}}}
    for inner in ([first_only], [first_only, {"$set": {"foo": {"$const": 123}}}],
                  [first_only, {"$set": {"foo": "$$outer_hostname"}}]):
        out = agg(coll_a, [{"$lookup": {"from": "b", "let": {"outer_hostname": "$tags.hostname"},
                                        "pipeline": inner, "as": "matchedB"}}, *host_count_project()])
        assert canon(out) == canon([{"host": names[i], "matchedB": 200 if i == 0 else 0} for i in range(10)])

    host_num = {"$toInt": {"$substr": ["$tags.hostname", 5, -1]}}
    out = agg(coll_a, [{"$lookup": {"from": "b", "let": {"hostId": host_num},
                                    "pipeline": [{"$match": {"$expr": {"$lte": [host_num, "$$hostId"]}}}],
                                    "as": "matchedB"}}, *host_count_project()])
    running = [sum(per_host[: i + 1]) for i in range(10)]
    assert canon(out) == canon([{"host": names[i], "matchedB": running[i]} for i in range(10)])

    out = agg(coll_a, [{"$lookup": {"from": "b", "as": "docs", "let": {}, "pipeline": [{"$sort": {"_id": 1}}]}}])
    assert len(out) == 10
    assert all(len(d["docs"]) == 200 for d in out)


@pytest.mark.parametrize("a_opts,b_opts", COMBOS, ids=COMBO_IDS)
def test_union_with_timeseries_on_either_side(db, a_opts, b_opts):
    """timeseries_union_with.js: $unionWith of a time-series and an ordinary collection (either way,
    or both time-series) with an $expr sub-pipeline keeping even host numbers, then $group by host,
    gives the per-host counts computed from the inserted documents."""
    rng = random.Random(11)
    hosts = generate_hosts(rng, 10)
    coll_a, coll_b = create(db, "a", a_opts), create(db, "b", b_opts)
    now = dt.datetime(2024, 3, 1, 12, 0)
    counts = [0] * 10
    a_docs, b_docs = [], []
    for i in range(200):
        ha, hb = rng.randrange(10), rng.randrange(10)
        t = now + dt.timedelta(milliseconds=i)
        a_docs.append({"measurement": "cpu", "time": t, "tags": copy.deepcopy(hosts[ha]["tags"])})
        b_docs.append({"measurement": "cpu", "time": t, "tags": copy.deepcopy(hosts[hb]["tags"])})
        counts[ha] += 1
        if hb % 2 == 0:
            counts[hb] += 1
    coll_a.insert_many(a_docs)
    coll_b.insert_many(b_docs)
    even = {"$match": {"$expr": {"$eq": [{"$mod": [{"$toInt": {"$substr": ["$tags.hostname", 5, -1]}}, 2]}, 0]}}}
    out = agg(coll_a, [{"$unionWith": {"coll": "b", "pipeline": [even]}},
                       {"$group": {"_id": "$tags.hostname", "count": {"$sum": 1}}}, {"$sort": {"_id": 1}}])
    assert canon(out) == canon([{"_id": f"host_{i}", "count": counts[i]} for i in range(10)])


GRAPH_TS = {"timeField": "time", "metaField": "hostid"}


@pytest.mark.parametrize("a_opts,b_opts", [(None, GRAPH_TS), (GRAPH_TS, None), (GRAPH_TS, GRAPH_TS)],
                         ids=COMBO_IDS)
def test_graph_lookup_with_timeseries_on_either_side(db, a_opts, b_opts):
    """timeseries_graph_lookup.js: $graphLookup (maxDepth 0) connecting on the meta field 'hostid'
    between a time-series and an ordinary collection (either way, or both time-series) counts each
    host's measurements; with restrictSearchWithMatch on measurement fields (cpu > 80, idle exists)
    it counts only those."""
    rng = random.Random(13)
    coll_a, coll_b = create(db, "a", a_opts), create(db, "b", b_opts)
    now = dt.datetime(2024, 3, 1, 12, 0)
    coll_a.insert_many([{"time": now, "hostid": i} for i in range(10)])
    per_host, busy_with_idle = [0] * 10, [0] * 10
    b_docs = []
    for i in range(200):
        h, usage = rng.randrange(10), rng.randrange(101)
        doc = {"time": now + dt.timedelta(milliseconds=i), "hostid": h, "cpu": usage}
        if usage % 2:
            doc["idle"] = 100 - usage
            if usage > 80:
                busy_with_idle[h] += 1
        per_host[h] += 1
        b_docs.append(doc)
    coll_b.insert_many(b_docs)
    spec = {"from": "b", "startWith": "$hostid", "connectFromField": "hostid", "connectToField": "hostid",
            "as": "matchedB", "maxDepth": 0}
    tail = [{"$project": {"_id": 0, "hostid": 1, "matchedB": {"$size": "$matchedB"}}}, {"$sort": {"hostid": 1}}]
    out = agg(coll_a, [{"$graphLookup": spec}, *tail])
    assert canon(out) == canon([{"hostid": i, "matchedB": per_host[i]} for i in range(10)])
    restricted = {**spec, "restrictSearchWithMatch": {"cpu": {"$gt": 80}, "idle": {"$exists": True}}}
    out = agg(coll_a, [{"$graphLookup": restricted}, *tail])
    assert canon(out) == canon([{"hostid": i, "matchedB": busy_with_idle[i]} for i in range(10)])


# --------------------------------------------------------------------------------------------------
# timeseries_internal_bounded_sort.js


def test_time_sort_over_overlapping_buckets_matches_reference(db):
    """timeseries_internal_bounded_sort.js (results only): 10 interleaved batches of 1000
    measurements (many overlapping buckets); {$sort: {t: +-1}} with hint $natural +-1 or the {t: -1}
    index returns every measurement in time order, equal to a reference sort, and $sort+$limit 100
    returns its first 100."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    start = 1_709_294_400_000
    for i in range(10):
        db.c.insert_many([{"t": ms(start + i * 9090 + j * 100_000)} for j in range(1000)])
    assert db.system.buckets.c.count_documents({}) > 1
    db.c.create_index([("t", -1)])
    everything = list(db.c.find())
    assert len(everything) == 10_000
    for ascending in (True, False):
        direction = 1 if ascending else -1
        reference = sorted(everything, key=lambda d: d["t"], reverse=not ascending)
        for hint in ({"$natural": direction}, {"$natural": -direction}, {"t": -1}):
            got = agg(db.c, [{"$sort": {"t": direction}}], hint=hint)
            assert canon(got) == canon(reference), hint
            got = agg(db.c, [{"$sort": {"t": direction}}, {"$limit": 100}], hint=hint)
            assert canon(got) == canon(reference[:100]), hint


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="Tidemark does not implement the $_internalBoundedSort stage "
                   "(40324 Unrecognized pipeline stage name), which 7.0 accepts with enableTestCommands")
def test_explicit_internal_bounded_sort_on_buckets(start_server):
    """timeseries_internal_bounded_sort.js (the explicit-stage part; the jstest suites run with
    enableTestCommands): on system.buckets, $sort on control.min.t (or control.max.t), then
    $_internalUnpackBucket, then {$_internalBoundedSort: {sortKey: {t: +-1}, bound: {base: min|max,
    offsetSeconds}, limit: 100}} returns the first 100 measurements in time order."""
    srv = start_server(params={"enableTestCommands": 1})
    with srv.client() as client:
        db = client.bounded
        db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
        start = 1_709_294_400_000
        for i in range(3):
            db.c.insert_many([{"t": ms(start + i * 9090 + j * 100_000)} for j in range(300)])
        span = next(db.list_collections(filter={"name": "c"}))["options"]["timeseries"]["bucketMaxSpanSeconds"]
        unpack = {"$_internalUnpackBucket": {"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": span}}
        buckets = db["system.buckets.c"]
        for ascending in (True, False):
            direction = 1 if ascending else -1
            naive = sorted(buckets.aggregate([unpack]), key=lambda d: d["t"], reverse=not ascending)[:100]
            from_min = {"base": "min"} if ascending else {"base": "min", "offsetSeconds": span}
            from_max = {"base": "max", "offsetSeconds": -span} if ascending else {"base": "max"}
            for control, bound in (("control.min.t", from_min), ("control.max.t", from_max)):
                got = list(buckets.aggregate([
                    {"$sort": {control: direction}}, unpack,
                    {"$_internalBoundedSort": {"sortKey": {"t": direction}, "bound": bound, "limit": 100}}]))
                assert canon(got) == canon(naive), (ascending, control)


# --------------------------------------------------------------------------------------------------
# bucket_unpacking_with_sort.js


def test_bucket_unpacking_sort_reference_pipeline_with_inhibit_optimization(db):
    """bucket_unpacking_with_sort.js: the jstest's reference pipeline [{$_internalInhibitOptimization:
    {}}, {$sort: {t: 1}}] on the view (also on system.buckets after $_internalUnpackBucket, as
    timeseries_internal_bounded_sort.js does) returns the same documents, in the same order, as
    [{$sort: {t: 1}}]."""
    db.create_collection("c", timeseries={"timeField": "t"})
    db.c.insert_many([{"t": ms(i * 6000 + offset)} for offset in (0, 3000) for i in range(700)])
    sorted_view = agg(db.c, [{"$sort": {"t": 1}}])
    assert len(sorted_view) == 1400
    inhibited = agg(db.c, [{"$_internalInhibitOptimization": {}}, {"$sort": {"t": 1}}])
    assert canon(inhibited) == canon(sorted_view)
    unpack = {"$_internalUnpackBucket": {"timeField": "t", "bucketMaxSpanSeconds": 3600}}
    raw = agg(db.system.buckets.c, [unpack, {"$_internalInhibitOptimization": {}}, {"$sort": {"t": 1}}])
    assert [d["t"] for d in raw] == [d["t"] for d in sorted_view]


@pytest.fixture
def sort_colls(db):
    """The jstest's collections, with 2 meta values instead of 10: for each series,
    timeseriesBucketMaxCount measurements 6 s apart, then as many again 3 s later (overlapping
    buckets). 'coll' has no meta field; 'meta' has m = 5, 7; 'sub' has m = {a, b, array}."""
    _CURRENT_INDEX.clear()
    _PLAIN_ANSWERS.clear()
    max_count = db.client.admin.command("getParameter", 1, timeseriesBucketMaxCount=1)["timeseriesBucketMaxCount"]
    out = {}
    for name, uses_meta, sub in (("coll", False, False), ("meta", True, False), ("sub", True, True)):
        docs = []
        for j in ([5, 7] if uses_meta else [0]):
            meta = {"a": j, "b": j, "array": [1, 2]} if sub else j
            for offset in (0, 3000):
                for i in range(max_count):
                    doc = {"t": ms(i * 6000 + offset)}
                    if uses_meta:
                        doc["m"] = copy.deepcopy(meta)
                    docs.append(doc)
        out[name] = make_pair(db, docs, time_field="t", meta_field="m" if uses_meta else None,
                              ts=f"ts_{name}", plain=f"plain_{name}")
    return out


_CURRENT_INDEX: dict[str, dict] = {}  # the one secondary index check_sort last built on a view
_PLAIN_ANSWERS: dict[tuple, tuple] = {}  # the ordinary collection's answer per pipeline (it has no index)


def check_sort(ts, plain, sort, *, index=None, hint=None, before=(), after=(), order_by=None):
    """runRewritesTest/runDoesntRewriteTest, results only: (re)create ``index`` on the view, run
    [*before, {$sort}, *after] (with ``hint``) and compare with the ordinary collection: the same
    documents, in the same order of the sort keys (``order_by``, default the $sort's fields)."""
    if index is not None and _CURRENT_INDEX.get(ts.full_name) != index:
        ts.drop_indexes()
        ts.create_index(list(index.items()))
        _CURRENT_INDEX[ts.full_name] = index
    pipeline = [*before, {"$sort": sort}, *after]
    got = agg(ts, pipeline, hint=hint)
    fields = order_by or list(sort)
    key = (plain.full_name, repr(pipeline))
    if key not in _PLAIN_ANSWERS:
        want = agg(plain, pipeline)
        assert want, f"{pipeline}: the jstest requires non-empty results"
        _PLAIN_ANSWERS[key] = (bag(want), sort_keys(want, fields))
    want_bag, want_keys = _PLAIN_ANSWERS[key]
    assert bag(got) == want_bag, f"{pipeline} hint={hint}"
    assert sort_keys(got, fields) == want_keys, f"{pipeline} hint={hint}: order differs"


def test_bucket_unpacking_sort_on_time_collscan_and_index(sort_colls):
    """bucket_unpacking_with_sort.js (results and order): {t: +-1} over overlapping buckets with a
    collection scan, with {t: 1}/{t: -1} indexes hinted either direction, with $natural hints against
    the sort direction, and with a trailing $limit, sorts exactly like an ordinary collection."""
    ts, plain = sort_colls["coll"]
    check_sort(ts, plain, {"t": 1})
    check_sort(ts, plain, {"t": -1})
    check_sort(ts, plain, {"t": 1}, index={"t": 1})
    check_sort(ts, plain, {"t": -1}, index={"t": -1}, hint={"t": -1})
    check_sort(ts, plain, {"t": 1}, index={"t": 1}, hint={"t": 1})
    check_sort(ts, plain, {"t": 1}, index={"t": -1}, hint={"t": -1})
    check_sort(ts, plain, {"t": -1}, index={"t": 1}, hint={"t": 1})
    check_sort(ts, plain, {"t": 1}, index={"t": 1}, hint={"t": 1}, after=[{"$limit": 10}])
    check_sort(ts, plain, {"t": -1}, hint={"$natural": 1})
    check_sort(ts, plain, {"t": 1}, hint={"$natural": -1})
    check_sort(ts, plain, {"foo": 1, "t": 1}, index={"foo": 1}, hint={"foo": 1})


@pytest.mark.slow
def test_bucket_unpacking_sort_on_meta_and_time(sort_colls):
    """bucket_unpacking_with_sort.js (results and order): compound {m, t} sorts in every direction
    with matching, reversed and half-reversed {m, t} indexes; intermediate $project stages that keep
    or drop the sorted fields; $setWindowFields after a $sort; meta-only and incompatible sorts."""
    ts, plain = sort_colls["meta"]
    for m in (1, -1):
        for t in (1, -1):
            for ix in ({"m": m, "t": t}, {"m": -m, "t": -t}, {"m": m, "t": -t}, {"m": -m, "t": t}):
                check_sort(ts, plain, {"m": m, "t": t}, index=ix, hint=ix)
    ix = {"m": 1, "t": 1}
    check_sort(ts, plain, {"m": 1, "t": 1}, index=ix, hint=ix, before=[{"$project": {"a": 0}}])
    check_sort(ts, plain, {"m": 1, "t": 1}, index=ix, hint=ix, before=[{"$project": {"m": 1, "t": 1}}])
    check_sort(ts, plain, {"t": 1}, index={"t": 1}, hint={"t": 1}, before=[{"$project": {"m": 0, "_id": 0}}])
    check_sort(ts, plain, {"k": 1}, index=ix, hint=ix, order_by=["m", "t"],
               after=[{"$setWindowFields": {"partitionBy": "$m", "sortBy": {"t": 1},
                                            "output": {"arr": {"$max": "$t"}}}}])
    check_sort(ts, plain, {"m": 1}, index={"m": 1}, hint={"m": 1})
    check_sort(ts, plain, {"m": 1, "k": 1, "t": 1}, index={"m": 1, "k": 1, "t": 1}, hint={"m": 1, "k": 1, "t": 1})
    for before in ([{"$project": {"t": 0}}], [{"$unset": "t"}], [{"$set": {"t": {"$const": 5}}}],
                   [{"$set": {"t": "$m.junk"}}]):
        check_sort(ts, plain, {"t": 1}, hint={"$natural": 1}, before=before)
    for before in ([{"$project": {"m": 0}}], [{"$unset": "m"}], [{"$set": {"m": {"$const": 5}}}],
                   [{"$set": {"m": "$m.junk"}}], [{"$project": {"t": 0}}], [{"$project": {"a": 1}}],
                   [{"$project": {"m.a": 0}}]):
        check_sort(ts, plain, {"m": 1, "t": 1}, index=ix, hint=ix, before=before)
    # point predicates on the meta field
    for sort in (1, -1):
        for m in (1, -1):
            for t in (1, -1):
                check_sort(ts, plain, {"t": sort}, index={"m": m, "t": t}, hint={"m": m, "t": t},
                           before=[{"$match": {"m": 7}}])
                check_sort(ts, plain, {"t": sort}, index={"m": m, "t": t}, before=[{"$match": {"m": 7}}])
    for match in ({"m": {"$gte": 5, "$lte": 6}}, {"m": {"$in": [4, 5, 6]}}):
        check_sort(ts, plain, {"t": 1}, index=ix, hint=ix, before=[{"$match": match}])


@pytest.mark.slow
def test_bucket_unpacking_sort_on_meta_subfields(sort_colls):
    """bucket_unpacking_with_sort.js (results and order): sorts on meta sub-fields with
    {m.a, m.b, t} indexes (and trailing measurement fields), point predicates on m.a/m.b, a range on
    m.a with a point on m.b, mismatched meta paths and a multikey meta sub-field index."""
    ts, plain = sort_colls["sub"]
    ab = {"m.a": 1, "m.b": 1, "t": 1}
    check_sort(ts, plain, {"m.b": 1, "t": 1}, index={"m.b": 1, "t": 1}, hint={"m.b": 1, "t": 1},
               before=[{"$project": {"m.a": 0}}])
    check_sort(ts, plain, ab, index=ab, hint=ab)
    check_sort(ts, plain, ab, index=ab, hint=ab, before=[{"$project": {"m": 1, "t": 1}}])
    check_sort(ts, plain, {"m": 1, "t": 1}, index={"m.a": 1, "t": 1}, hint={"m.a": 1, "t": 1})
    check_sort(ts, plain, {"m.b": 1, "t": 1}, index=ab, hint=ab)
    check_sort(ts, plain, {"m.a": 1, "t": 1}, index={"m": 1, "t": 1}, hint={"m": 1, "t": 1})
    check_sort(ts, plain, {"m.a": 1, "t": -1}, index={"m.a": 1, "t": 1}, hint={"m.a": 1, "t": 1})
    check_sort(ts, plain, {"m.a": 1, "t": 1}, index={"m.a": 1, "t": 1}, hint={"m.a": 1, "t": 1},
               before=[{"$project": {"m": 0}}])
    for sort in (1, -1):
        for a, b, t in ((1, 1, 1), (1, -1, -1), (-1, 1, 1), (-1, -1, -1)):
            for trailing in ({}, {"x": 1, "y": -1}):
                ix = {"m.a": a, "m.b": b, "t": t, **trailing}
                check_sort(ts, plain, {"t": sort}, index=ix, hint=ix, before=[{"$match": {"m.a": 5, "m.b": 5}}])
                check_sort(ts, plain, {"t": sort}, index=ix, before=[{"$match": {"m.a": 5, "m.b": 5}}])
    for ix in (ab, {"m.a": -1, "m.b": 1, "t": -1, "x": 1, "y": -1}):
        for sb in (1, -1):
            for st in (1, -1):
                check_sort(ts, plain, {"m.b": sb, "t": st}, index=ix, hint=ix, before=[{"$match": {"m.a": 7}}])
                check_sort(ts, plain, {"m.a": sb, "t": st}, index=ix, hint=ix, before=[{"$match": {"m.b": 7}}])
                check_sort(ts, plain, {"m.a": sb, "t": st}, index=ix, hint=ix,
                           before=[{"$match": {"m.a": {"$gte": -999, "$lte": 999}, "m.b": 7}}])
    check_sort(ts, plain, {"t": 1}, index={"m.array": 1, "t": 1}, hint={"m.array": 1, "t": 1},
               before=[{"$match": {"m.array": 1}}])
    check_sort(ts, plain, {"t": 1}, index={"m.a": 1, "t": 1, "m.array": 1}, hint={"m.a": 1, "t": 1, "m.array": 1},
               before=[{"$match": {"m.a": 7}}])


def test_bucket_unpacking_sort_with_hinted_geo_indexes(db):
    """bucket_unpacking_with_sort.js (geo part): two measurements with a polygon meta and far-apart
    points share one bucket; compound 2dsphere indexes on the meta polygon or on the measurement
    point (with t, and with m.a) can be built and hinted by [{$match: {m.a: 7}}, {$sort: {t: 1}}],
    which runs and matches nothing."""
    area = {"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]]]}
    db.create_collection("geo", timeseries={"timeField": "t", "metaField": "m"})
    db.geo.insert_many([{"t": EPOCH, "m": {"area": area}, "loc": [0, 0]},
                        {"t": EPOCH, "m": {"area": area}, "loc": [90, 0]}])
    assert db.system.buckets.geo.count_documents({}) == 1
    for ix in ({"t": 1, "m.area": "2dsphere"}, {"m.a": 1, "t": 1, "m.area": "2dsphere"},
               {"t": 1, "loc": "2dsphere"}, {"m.a": 1, "t": 1, "loc": "2dsphere"}):
        db.geo.drop_indexes()
        db.geo.create_index(list(ix.items()))
        assert agg(db.geo, [{"$match": {"m.a": 7}}, {"$sort": {"t": 1}}], hint=ix) == [], ix
    assert len(agg(db.geo, [{"$sort": {"t": 1}}])) == 2


def test_bucket_unpacking_sort_with_collation(db):
    """bucket_unpacking_with_sort.js (collation part, results and order): an equality on a string
    meta value followed by {t: 1} returns the case-sensitive matches on a simple-collation collection
    and both cases on an en_US strength-2 collection, with a matching index and with an index of the
    other collation hinted."""
    _CURRENT_INDEX.clear()
    _PLAIN_ANSWERS.clear()
    docs = [{"t": t, "m": m} for m in ("a", "A", "b", "B") for t in (ms(0), ms(7000))]
    ci = {"locale": "en_US", "strength": 2}
    cs_ts, cs_plain = make_pair(db, copy.deepcopy(docs), time_field="t", meta_field="m", ts="cs", plain="cs_plain")
    ci_ts, ci_plain = make_pair(db, copy.deepcopy(docs), time_field="t", meta_field="m", ts="ci", plain="ci_plain",
                                collation=ci)
    assert db.system.buckets.cs.count_documents({}) == 4
    assert db.system.buckets.ci.count_documents({}) == 4
    match = [{"$match": {"m": "a"}}]
    check_sort(cs_ts, cs_plain, {"t": 1}, index={"m": 1, "t": 1}, hint={"m": 1, "t": 1}, before=match)
    check_sort(ci_ts, ci_plain, {"t": 1}, index={"m": 1, "t": 1}, hint={"m": 1, "t": 1}, before=match)
    assert len(agg(cs_ts, [*match, {"$sort": {"t": 1}}])) == 2
    assert len(agg(ci_ts, [*match, {"$sort": {"t": 1}}])) == 4
    cs_ts.drop_indexes()
    ci_ts.drop_indexes()
    _CURRENT_INDEX.clear()
    cs_ts.create_index([("m", 1), ("t", 1)], collation=ci)
    ci_ts.create_index([("m", 1), ("t", 1)], collation={"locale": "simple"})
    check_sort(cs_ts, cs_plain, {"t": 1}, hint={"m": 1, "t": 1}, before=match)
    check_sort(ci_ts, ci_plain, {"t": 1}, hint={"m": 1, "t": 1}, before=match)


# --------------------------------------------------------------------------------------------------
# timeseries_cursor_batches.js / timeseries_getmore_cursor.js


def test_cursor_batches_of_one_return_every_measurement(db):
    """timeseries_cursor_batches.js: three measurements in one bucket, aggregated with a $match on a
    measurement field and _id and a $project, with cursor batchSize 1, come back one per batch (first
    batch then getMores) — all three of them."""
    db.create_collection("c", timeseries={"timeField": "time", "metaField": "tag"})
    t = dt.datetime(2023, 11, 3, 12, 35, 19, 33000)
    db.c.insert_many([{"_id": 0, "time": t, "tag": {"t": 1}, "str": "abcdefghijklmnop"},
                      {"_id": 1, "time": t, "tag": {"t": 1}, "str": ""},
                      {"_id": 2, "time": t, "tag": {"t": 1}, "str": ""}])
    assert db.system.buckets.c.count_documents({}) == 1
    pipeline = [{"$match": {"str": {"$ne": "hello"}, "_id": {"$lt": 5}}}, {"$project": {"_id": 1, "str": 1}}]
    reply = db.command("aggregate", "c", pipeline=pipeline, cursor={"batchSize": 1})
    batch = reply["cursor"]["firstBatch"]
    assert len(batch) == 1
    docs, cursor_id = list(batch), reply["cursor"]["id"]
    while cursor_id:
        more = db.command("getMore", cursor_id, collection="c", batchSize=1)
        assert len(more["cursor"]["nextBatch"]) <= 1
        docs += more["cursor"]["nextBatch"]
        cursor_id = more["cursor"]["id"]
    assert sorted(docs, key=lambda d: d["_id"]) == [
        {"_id": 0, "str": "abcdefghijklmnop"}, {"_id": 1, "str": ""}, {"_id": 2, "str": ""}]
    assert len(list(db.c.aggregate(pipeline, batchSize=1))) == 3


def test_getmore_cursor_namespace_is_the_view(db):
    """timeseries_getmore_cursor.js (the parts without rawData, an 8.x option): find and aggregate on
    the view report cursor.ns '<db>.<view>' (never system.buckets), exhausted in one batch of 10 with
    id 0; with batchSize 1 the first batch and a getMore on the view name return one measurement each
    under the same ns, and killCursors on the view name ends the cursor."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    base = dt.datetime(2026, 1, 1)
    db.c.insert_many([{"t": base + dt.timedelta(minutes=i), "m": i % 4, "value": i} for i in range(10)])
    ns = f"{db.name}.c"
    for cmd in ({"find": "c", "batchSize": 100}, {"aggregate": "c", "pipeline": [], "cursor": {"batchSize": 100}}):
        reply = db.command(cmd)
        assert reply["cursor"]["ns"] == ns
        assert reply["cursor"]["id"] == 0
        assert len(reply["cursor"]["firstBatch"]) == 10
    for cmd in ({"find": "c", "batchSize": 1}, {"aggregate": "c", "pipeline": [], "cursor": {"batchSize": 1}}):
        reply = db.command(cmd)
        assert reply["cursor"]["ns"] == ns
        assert len(reply["cursor"]["firstBatch"]) == 1
        assert set(reply["cursor"]["firstBatch"][0]) == {"_id", "t", "m", "value"}
        assert reply["cursor"]["id"] != 0
        more = db.command("getMore", reply["cursor"]["id"], collection="c", batchSize=1)
        assert more["cursor"]["ns"] == ns
        assert len(more["cursor"]["nextBatch"]) == 1
        assert more["cursor"]["id"] != 0
        killed = db.command("killCursors", "c", cursors=[more["cursor"]["id"]])
        assert killed["cursorsKilled"] == [more["cursor"]["id"]]


# --------------------------------------------------------------------------------------------------
# timeseries_homogeneous_top_bottom.js


def test_homogeneous_top_bottom_match_plain(db):
    """timeseries_homogeneous_top_bottom.js: $topN/$bottomN (n 1 and 10) sorted on each unique field
    (time, long x, double y with NaN/+-Infinity, long/int z, date t; both directions), grouped by a
    3-second $dateTrunc, an hour $dateTrunc or a constant, after a time-range $match, give the same
    groups on the view as on an ordinary collection."""
    prefix = 1680912440
    docs = []
    next_id = 0
    date_max = 0
    for meta_idx in range(10):
        current = 0
        meta_sign = -1 if meta_idx % 2 == 0 else 1
        for d in range(25):
            doc_sign = -1 if d % 2 == 0 else 1
            docs.append({"_id": next_id, "time": ms(prefix + current + next_id), "meta": meta_idx,
                         "x": Int64(200 * meta_idx * meta_sign + d * doc_sign),
                         "y": float(1000 * meta_idx * meta_sign + d * doc_sign), "z": Int64(next_id),
                         "t": ms(prefix + 10000 * meta_idx * meta_sign + d * doc_sign)})
            next_id += 1
            current += 500
        if meta_idx == 5:
            d = 25
            for special in (math.nan, -math.inf, math.inf):
                doc_sign = -1 if d % 2 == 0 else 1
                docs.append({"_id": next_id, "time": ms(prefix + current + next_id), "meta": meta_idx,
                             "x": Int64(200 * meta_idx * meta_sign + d * doc_sign), "y": special, "z": next_id,
                             "t": ms(prefix + 10000 * meta_idx * meta_sign + d * doc_sign)})
                next_id += 1
                current += 500
                d += 1
            date_max = prefix + current
    ts, plain = make_pair(db, docs, time_field="time", meta_field="meta")
    group_bys = [{"time": {"$dateTrunc": {"date": "$time", "unit": "second", "binSize": 3}}},
                 {"time": {"$dateTrunc": {"date": "$time", "unit": "hour"}}}, {"id": None}]
    match = {"$match": {"time": {"$gte": ms(prefix), "$lte": ms(date_max)}}}
    for acc in ("$topN", "$bottomN"):
        for n in (1, 10):
            for field in ("time", "x", "y", "z", "t"):
                for direction in (1, -1):
                    for group_by in group_bys:
                        pipeline = [match, {"$group": {"_id": group_by, "acc": {
                            acc: {"n": n, "sortBy": {field: direction}, "output": "$_id"}}}}]
                        assert_same_as_plain(ts, plain, pipeline, allowDiskUse=True)


# --------------------------------------------------------------------------------------------------
# timeseries_streaming_group.js


def test_streaming_group_on_time_matches_plain(db):
    """timeseries_streaming_group.js (results only): $sort on time then $group whose _id is monotonic
    in time ({symbol, minute offset}, a minute $dateTrunc, the time itself) with $avg accumulators,
    then $addFields and $sort on _id, returns the same documents in the same order as an ordinary
    collection."""
    rng = random.Random(1)
    symbols = ["".join(rng.choice(string.ascii_uppercase) for _ in range(5)) for _ in range(10)]
    start = 1641027600000
    docs = [{"time": ms(start + i * 1000), "price": 100 + rng.randrange(100), "amount": 1 + rng.randrange(19),
             "meta": {"symbol": s}} for i in range(100) for s in symbols]
    ts, plain = make_pair(db, docs, time_field="time", meta_field="meta")
    averages = {"average_price": {"$avg": {"$multiply": ["$price", "$amount"]}}, "average_amount": {"$avg": "$amount"}}
    ratio = {"$addFields": {"average_price": {"$divide": ["$average_price", "$average_amount"]}}}
    minute_offset = {"$subtract": [{"$dateTrunc": {"date": "$time", "unit": "minute"}},
                                   {"$dateTrunc": {"date": ms(start), "unit": "minute"}}]}
    for group_id in ({"symbol": "$meta.symbol", "minute": minute_offset},
                     {"$dateTrunc": {"date": "$time", "unit": "minute"}}, "$time"):
        pipeline = [{"$sort": {"time": 1}}, {"$group": {"_id": group_id, **averages}}, ratio, {"$sort": {"_id": 1}}]
        got, want = agg(ts, pipeline), agg(plain, pipeline)
        assert len(got) == len(want) > 0
        assert seq(got) == seq(want), group_id
        assert [list(d) for d in got] == [list(d) for d in want], group_id  # field order too


# --------------------------------------------------------------------------------------------------
# timeseries_top_k_sort_optimization.js


def topk_doc(t: str, s: str, **fields) -> dict:
    return {"t": dt.datetime.fromisoformat(t), "s": s, **fields}


D1 = topk_doc("2024-01-01T23:50:00", "D", x=3, y=10)
D1A = topk_doc("2024-01-01T23:50:00", "D", a=[{"b": 0}])
D2 = topk_doc("2024-01-02T00:00:28", "A", x=10, y=5)
D2A = topk_doc("2024-01-02T00:00:28", "A", a=[{"b": 1}, {"b": 99}])
D3 = topk_doc("2024-01-02T00:05:17", "B", x=2, y=100)
D3A = topk_doc("2024-01-02T00:05:17", "B", a={"b": 2})
D4 = topk_doc("2024-01-02T00:10:42", "B", x=5, y=24)
D5 = topk_doc("2024-01-02T00:15:50", "A", x=4, y=1)
D5A = topk_doc("2024-01-02T00:15:50", "A", a=[{"b": 50}, {"b": 98}])
D6 = topk_doc("2024-01-02T00:20:06", "C", x=5, y=9)
D6A = topk_doc("2024-01-02T00:20:06", "C", a=[{"b": 100}])
D7 = topk_doc("2024-01-02T00:21:06", "C", x=7, y=300)
D7A = topk_doc("2024-01-02T00:21:06", "C", a=[50, 51])
D8 = topk_doc("2024-01-02T00:22:59", "D", x=20, y=3)
D9 = topk_doc("2024-01-02T00:23:01", "C", x=6, y=1000)
D10 = topk_doc("2024-01-02T01:05:01", "B", x=6, y=1)
ALL_XY = [D1, D2, D3, D4, D5, D6, D7, D8, D9, D10]
ARRAYS = [D1A, D2A, D3A, D5A, D6A, D7A]
M1 = topk_doc("2024-01-01T23:50:00", "D", x=3, a={"b": 0}, arr=[{"b": 0}])
M2 = topk_doc("2024-01-01T23:51:00", "A", x=2, a={"c": 1}, arr=[{"c": 1}])
M3 = topk_doc("2024-01-02T00:02:00", "D", x=1, a={"b": 1}, arr=[{"b": 1}])
JS_PUSH = {"$accumulator": {"init": "function() { return []; }",
                            "accumulate": "function(state, a) { state.push(a); return state; }",
                            "accumulateArgs": ["$a"], "merge": "function(s1, s2) { return s1.concat(s2); }",
                            "lang": "js"}}
H = dt.datetime.fromisoformat

TOP_K_CASES = {
    "basic": (ALL_XY, [{"$sort": {"t": 1}}, {"$group": {"_id": "$s", "open": {"$first": "$x"},
                                                         "close": {"$last": "$x"}}}],
              [{"_id": "A", "open": 10, "close": 4}, {"_id": "B", "open": 2, "close": 6},
               {"_id": "C", "open": 5, "close": 6}, {"_id": "D", "open": 3, "close": 20}]),
    "mixed_accs": (ALL_XY, [{"$sort": {"t": 1}}, {"$group": {"_id": "$s", "open": {"$first": "$x"},
                                                             "s": {"$sum": "$y"}}}],
                   [{"_id": "A", "open": 10, "s": 6}, {"_id": "B", "open": 2, "s": 125},
                    {"_id": "C", "open": 5, "s": 1309}, {"_id": "D", "open": 3, "s": 13}]),
    "group_by_time": ([D1, D2, D3, D10], [{"$sort": {"t": 1}}, {"$group": {
        "_id": {"$dateTrunc": {"unit": "hour", "date": "$t"}}, "fs": {"$first": "$s"}, "ls": {"$last": "$s"}}}],
        [{"_id": H("2024-01-01T23:00:00"), "fs": "D", "ls": "D"}, {"_id": H("2024-01-02T00:00:00"), "fs": "A", "ls": "B"},
         {"_id": H("2024-01-02T01:00:00"), "fs": "B", "ls": "B"}]),
    "multiple_group_keys": ([D1, D2, D8, D6, D9, D10], [{"$sort": {"t": 1}}, {"$group": {
        "_id": {"t": {"$dateTrunc": {"unit": "hour", "date": "$t"}}, "s": "$s"},
        "fy": {"$first": "$y"}, "ly": {"$last": "$y"}}}],
        [{"_id": {"t": H("2024-01-01T23:00:00"), "s": "D"}, "fy": 10, "ly": 10},
         {"_id": {"t": H("2024-01-02T00:00:00"), "s": "A"}, "fy": 5, "ly": 5},
         {"_id": {"t": H("2024-01-02T00:00:00"), "s": "C"}, "fy": 9, "ly": 1000},
         {"_id": {"t": H("2024-01-02T00:00:00"), "s": "D"}, "fy": 3, "ly": 3},
         {"_id": {"t": H("2024-01-02T01:00:00"), "s": "B"}, "fy": 1, "ly": 1}]),
    "many_firsts_and_lasts": (ALL_XY, [{"$sort": {"t": 1}}, {"$group": {
        "_id": "$s", "fx": {"$first": "$x"}, "lx": {"$last": "$x"}, "fy": {"$first": "$y"}, "ly": {"$last": "$y"}}}],
        [{"_id": "A", "fx": 10, "lx": 4, "fy": 5, "ly": 1}, {"_id": "B", "fx": 2, "lx": 6, "fy": 100, "ly": 1},
         {"_id": "C", "fx": 5, "lx": 6, "fy": 9, "ly": 1000}, {"_id": "D", "fx": 3, "lx": 20, "fy": 10, "ly": 3}]),
    "sort_by_array_asc": (ARRAYS, [{"$sort": {"a.b": 1}}, {"$group": {"_id": "$s", "fa": {"$first": "$a.b"},
                                                                     "la": {"$last": "$a.b"}}}],
                          [{"_id": "A", "fa": [1, 99], "la": [50, 98]}, {"_id": "B", "fa": 2, "la": 2},
                           {"_id": "C", "fa": [], "la": [100]}, {"_id": "D", "fa": [0], "la": [0]}]),
    "sort_by_array_desc": (ARRAYS, [{"$sort": {"a.b": -1}}, {"$group": {"_id": "$s", "fa": {"$first": "$a.b"},
                                                                       "la": {"$last": "$a.b"}}}],
                           [{"_id": "A", "fa": [1, 99], "la": [50, 98]}, {"_id": "B", "fa": 2, "la": 2},
                            {"_id": "C", "fa": [100], "la": []}, {"_id": "D", "fa": [0], "la": [0]}]),
    "stage_between_sort_and_group": ([D1A, D2A, D3A, D6A, D7A], [
        {"$sort": {"a.b": 1}}, {"$addFields": {"arrsum": {"$sum": "$a.b"}}},
        {"$group": {"_id": "$s", "fa": {"$first": "$arrsum"}, "la": {"$last": "$arrsum"}}}],
        [{"_id": "A", "fa": 100, "la": 100}, {"_id": "B", "fa": 2, "la": 2}, {"_id": "C", "fa": 0, "la": 100},
         {"_id": "D", "fa": 0, "la": 0}]),
    "sort_limit": ([D4, D1, D3, D2], [{"$sort": {"t": 1}}, {"$limit": 3}, {"$group": {"_id": "$s",
                                                                                    "open": {"$first": "$x"}}}],
                   [{"_id": "D", "open": 3}, {"_id": "A", "open": 10}, {"_id": "B", "open": 2}]),
    "first_and_first_n": (ALL_XY, [{"$sort": {"t": 1}}, {"$group": {
        "_id": "$s", "f1": {"$first": "$x"}, "f2": {"$firstN": {"n": 2, "input": "$y"}}}}],
        [{"_id": "A", "f1": 10, "f2": [5, 1]}, {"_id": "B", "f1": 2, "f2": [100, 24]},
         {"_id": "C", "f1": 5, "f2": [9, 300]}, {"_id": "D", "f1": 3, "f2": [10, 3]}]),
    "first_and_merge_objects": ([M1, M2, M3], [{"$sort": {"x": 1}}, {"$group": {
        "_id": "$s", "fx": {"$first": "$x"}, "o": {"$mergeObjects": "$a"}}}],
        [{"_id": "A", "fx": 2, "o": {"c": 1}}, {"_id": "D", "fx": 1, "o": {"b": 0}}]),
    "last_and_push": ([M1, M2, M3], [{"$sort": {"x": 1}}, {"$group": {"_id": "$s", "lx": {"$last": "$x"},
                                                                      "a": {"$push": "$a"}}}],
                      [{"_id": "A", "lx": 2, "a": [{"c": 1}]}, {"_id": "D", "lx": 3, "a": [{"b": 1}, {"b": 0}]}]),
    "last_and_percentile": ([M1, M2, M3], [{"$sort": {"x": 1}}, {"$group": {
        "_id": "$s", "lx": {"$last": "$x"}, "a": {"$percentile": {"input": "$x", "p": [0.95],
                                                                  "method": "approximate"}}}}],
        [{"_id": "A", "lx": 2, "a": [2]}, {"_id": "D", "lx": 3, "a": [3]}]),
    "last_and_accumulator_js": ([M1, M2, M3], [{"$sort": {"x": 1}}, {"$group": {"_id": "$s", "lx": {"$last": "$x"},
                                                                                "a": JS_PUSH}}],
                                [{"_id": "A", "lx": 2, "a": [{"c": 1}]},
                                 {"_id": "D", "lx": 3, "a": [{"b": 1}, {"b": 0}]}]),
}


@pytest.mark.parametrize("case", list(TOP_K_CASES))
def test_top_k_sort_then_group_first_last(db, case):
    """timeseries_top_k_sort_optimization.js (results only; the $concatArrays accumulator case is
    8.1 and the {$meta: 'randVal'} sort case is left out): $sort followed by $group with
    $first/$last (mixed with $sum, $firstN, $mergeObjects, $push, $percentile, $accumulator; sorting
    on arrays; with a stage or a $limit in between) returns the jstest's expected groups, the same
    as an ordinary collection."""
    docs, pipeline, expected = TOP_K_CASES[case]
    ts, plain = make_pair(db, copy.deepcopy(docs), time_field="t", meta_field="s")
    got = agg(ts, pipeline)
    assert bag(got, key=loose) == bag(expected, key=loose), got
    assert bag(got) == bag(agg(plain, pipeline))
