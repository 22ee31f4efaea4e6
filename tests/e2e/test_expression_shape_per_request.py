"""An expression is compiled once per shape (query/expressions.compile_expression), yet every request
reads its own ``$$NOW`` and ``let`` values, and two pipelines whose constants are equal in Python
but of other BSON types (1, true, 1.0, Int64) keep their own answers — on a regular collection and on
a time-series collection's $group (the TSBS single-groupby shape)."""

from __future__ import annotations

import datetime
import time

import pytest
from bson.int64 import Int64

pytestmark = pytest.mark.commands("aggregate")

T0 = datetime.datetime(2024, 1, 1)


def test_now_and_let_per_request(db):
    db.c.insert_one({"_id": 1, "a": 1})
    seen = []
    for _ in range(2):
        seen.append(list(db.c.aggregate([{"$project": {"_id": 0, "n": "$$NOW"}}]))[0]["n"])
        time.sleep(0.01)
    assert seen[0] < seen[1]
    answers = [list(db.c.aggregate([{"$project": {"_id": 0, "v": "$$x"}}], let={"x": x}))[0]["v"]
               for x in (1, "s", True)]
    assert answers == [1, "s", True]
    assert type(answers[2]) is bool


def test_equal_constants_of_other_types(db):
    db.c.insert_one({"_id": 1, "a": 1})
    got = [list(db.c.aggregate([{"$project": {"_id": 0, "e": {"$eq": ["$a", v]}, "t": {"$type": [v]}}}]))[0]
           for v in (1, True, 1.0, Int64(1))]
    assert got == [{"e": True, "t": "int"}, {"e": False, "t": "bool"}, {"e": True, "t": "double"},
                   {"e": True, "t": "long"}]


def test_timeseries_group_answers_per_request(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + datetime.timedelta(seconds=20 * i), "m": {"h": "x"}, "v": i} for i in range(9)])

    def run(unit, field):
        return list(db.ts.aggregate([
            {"$match": {"t": {"$gte": T0, "$lt": T0 + datetime.timedelta(hours=1)}, "m.h": {"$in": ["x"]}}},
            {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": unit}}, "mx": {"$max": field}}},
            {"$sort": {"_id": 1}},
        ]))

    minute = [{"_id": T0 + datetime.timedelta(minutes=k), "mx": 3 * k + 2} for k in range(3)]
    assert run("minute", "$v") == minute
    assert run("hour", "$v") == [{"_id": T0, "mx": 8}]
    assert run("minute", "$v") == minute
    assert run("minute", {"$literal": 7}) == [{"_id": T0 + datetime.timedelta(minutes=k), "mx": 7} for k in range(3)]
