"""A $group past its memory limit with allowDiskUse spills, and answers what it answers in memory.

mongod 7.0's DocumentSourceGroup, past internalDocumentSourceGroupMaxMemoryBytes with allowDiskUse
(true by default since 6.0: allowDiskUseByDefault), writes its groups' partial states to disk and
merges them at the end (DocumentSourceGroup::spill, each accumulator's ``processInternal(...,
merging=true)``; $accumulator calls the user's ``merge``); without allowDiskUse it answers 292.
Tidemark could not spill a $group: past the limit it answered 146 ExceededMemoryLimit whatever
allowDiskUse said, so any grouping of more than 100 MB of state failed where mongod's succeeds.

Here every accumulator $group takes runs over generated documents (thousands: each example spills
many generations whose groups overlap) (group keys of every kind,
numbers of equal value in different types among them, values of mixed types, missing fields) under
a limit small enough that the same $group without allowDiskUse answers 292, so the answer with it
came through several spills; it must equal, byte for byte, the answer under the default limit
(which spills nothing). Output order is not compared: a spilled $group's order is its own (mongod's
too), so both answers are sorted by their encoded ``_id``.
"""

from __future__ import annotations

import datetime
import math

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness.jstests import canon
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "setParameter", "getParameter")

LIMIT = 4 * 1024
T0 = datetime.datetime(2024, 1, 1)

ACCUMULATORS = {
    "sum": {"$sum": "$v"}, "avg": {"$avg": "$v"}, "min": {"$min": "$v"}, "max": {"$max": "$v"},
    "first": {"$first": "$v"}, "last": {"$last": "$v"}, "push": {"$push": "$v"}, "set": {"$addToSet": "$v"},
    "sdp": {"$stdDevPop": "$v"}, "sds": {"$stdDevSamp": "$v"}, "merged": {"$mergeObjects": "$o"},
    "count": {"$count": {}}, "top": {"$top": {"sortBy": {"s": 1}, "output": "$v"}},
    "bottomN": {"$bottomN": {"n": 2, "sortBy": {"s": -1}, "output": ["$v", "$i"]}},
    "firstN": {"$firstN": {"n": 3, "input": "$v"}}, "lastN": {"$lastN": {"n": 2, "input": "$v"}},
    "maxN": {"$maxN": {"n": 2, "input": "$v"}}, "minN": {"$minN": {"n": 3, "input": "$v"}},
    "median": {"$median": {"input": "$v", "method": "approximate"}},
    "pct": {"$percentile": {"input": "$v", "p": [0.1, 0.9], "method": "approximate"}},
    "js": {"$accumulator": {"init": "function() { return []; }",
                            "accumulate": "function(s, i) { s.push(i); return s; }", "accumulateArgs": ["$i"],
                            "merge": "function(a, b) { return a.concat(b); }", "lang": "js"}},
    "jsReduce": {"$_internalJsReduce": {"data": {"k": "$s", "v": "$i"},
                                        "eval": "function(k, vs) { return vs.reduce((a, b) => a + b, 0); }"}},
}

KEYS = st.sampled_from([1, 1.0, Int64(1), Decimal128("1"), 2, -0.0, 0, "a", "b", None, "<missing>",
                        {"x": 1}, {"x": 1.0}, [1, 2], True, T0, math.nan, Decimal128("NaN")])
VALUES = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=False, width=64),
                   st.sampled_from([None, "<missing>", "s", "t", Decimal128("2.5"), Int64(7), T0, 2**40]))


def _document(i: int, key, value, sort_value: int, obj_field: int) -> dict:
    doc = {"i": i, "t": T0 + datetime.timedelta(seconds=i), "s": sort_value, "o": {f"f{obj_field}": i},
           "p": "p" * 100}  # ("p": every $group below also pushes it, so its state passes LIMIT)
    if key != "<missing>":
        doc["k"] = key
    if value != "<missing>":
        doc["v"] = value
    return doc


def _answer(coll, group: dict, allow_disk_use: bool) -> list[bytes]:
    docs = list(coll.aggregate([{"$group": group}], allowDiskUse=allow_disk_use))
    for d in docs:
        # $stdDevPop/$stdDevSamp merge partial states by mongod's parallel algorithm, whose last bits
        # differ from the one-by-one update's: they compare to 9 significant digits (both ways non-finite
        # or null alike)
        for name in ("sdp", "sds"):
            if type(d.get(name)) is float:
                d[name] = f"{d[name]:.9g}" if math.isfinite(d[name]) else repr(d[name])
        # $maxN keeps a later value equal to its smallest kept one only by evicting (mongod's multiset,
        # accumulator_state.MinMaxN): which of equal numbers of different types a spilled group keeps
        # may differ, so its values compare by value (mongod's own spill merge is no more exact)
        if "maxN" in d:
            d["maxN"] = [repr(canon(v, by_value=True)) for v in d["maxN"]]
    encoded = [(bson.encode({"_id": d["_id"]}), bson.encode(d)) for d in docs]
    return [doc for _, doc in sorted(encoded)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(KEYS | st.integers(0, 40), VALUES, st.integers(0, 3), st.integers(0, 4)),
                     min_size=60, max_size=160),  # (each repeated: every chunk meets the same groups)
       repeats=st.integers(8, 24), names=st.lists(st.sampled_from(sorted(ACCUMULATORS)), min_size=1, max_size=6,
                                                  unique=True),
       time_series=st.booleans())
def test_a_spilled_group_answers_as_one_in_memory(client, db, rows, repeats, names, time_series):
    db.drop_collection("c")
    if time_series:
        db.create_collection("c", timeseries={"timeField": "t"})
    db.c.insert_many([_document(i, *rows[i % len(rows)]) for i in range(len(rows) * repeats)])
    group = {"_id": "$k", "pads": {"$push": "$p"}, **{name: ACCUMULATORS[name] for name in names}}
    in_memory = _answer(db.c, group, True)
    with server_parameter(client, "internalDocumentSourceGroupMaxMemoryBytes", LIMIT):
        with pytest.raises(OperationFailure) as refused:  # (a time-series $group from columns counts alike)
            _answer(db.c, group, False)
        assert refused.value.code == 292
        spilled = _answer(db.c, group, True)
    assert spilled == in_memory


def test_a_group_spills_by_default_and_keeps_its_first_id(client, db):
    """allowDiskUse absent: allowDiskUseByDefault (true) lets it spill. A group met first as 1, then
    as 1.0 and Decimal128 1 in later generations, keeps the _id 1
    and every value in input order."""
    db.c.insert_many([{"i": i, "k": [1, 1.0, Decimal128("1")][i // 1024] if i % 2 else i, "p": "p" * 200}
                      for i in range(3072)])
    with server_parameter(client, "internalDocumentSourceGroupMaxMemoryBytes", LIMIT):
        docs = list(db.c.aggregate([{"$group": {"_id": "$k", "is": {"$push": "$i"}, "n": {"$sum": 1},
                                                "pads": {"$push": "$p"}}}]))
    ones = [d for d in docs if d["_id"] == 1]
    assert len(ones) == 1 and type(ones[0]["_id"]) is int
    assert ones[0]["is"] == list(range(1, 3072, 2)) and ones[0]["n"] == 1536
    assert sorted(d["_id"] for d in docs if d is not ones[0]) == list(range(0, 3072, 2))
