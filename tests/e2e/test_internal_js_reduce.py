"""``$_internalJsReduce``, the reduce step of mongod's mapReduce as a ``$group`` accumulator.

mongod 7.0 registers it for every client (accumulator_js_reduce.cpp, REGISTER_ACCUMULATOR;
jstests/aggregation/accumulators/internal_js_reduce.js): ``{data: <expression>, eval: <string or
code>}``; each input must be an object of exactly the fields ``k`` and ``v`` (31251; not an object:
31242; a missing input is skipped); the result calls ``reduce(key, values)`` with the values last
first, as many as fit in 16 MB, feeding each partial result back as the newest value until one call
took them all (31392 "Value too large to reduce" when not even two fit); a lone value is reduced too.
Parse errors: not an object 31326, an unknown field 31243, ``eval`` not a string or code 31244, no
``eval`` 31245, no ``data`` 31349. Tidemark answered 15952 "unknown group operator" to all of it.
"""

from __future__ import annotations

import pytest
from bson.code import Code
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

SUM = Code("function reduce(key, values) { return Array.sum(values); }")
# order-revealing: which key and which values, in which order, each call saw
TRACE = "function (key, values) { return key + ':' + values.join('|'); }"


def _group(coll, spec, key="$word"):
    return list(coll.aggregate([{"$group": {"_id": key, "r": {"$_internalJsReduce": spec}}}]))


def _code(fn) -> int:
    with pytest.raises(OperationFailure) as exc:
        fn()
    return exc.value.code


@pytest.mark.commands("aggregate")
def test_word_count(db):
    coll = db.words
    coll.insert_many([{"word": w, "val": 1} for w in ["hello", "world", "world", "hello", "hi"]] +
                     [{"word": None, "val": 1}])
    for reduce in (SUM, str(SUM)):  # code or string
        got = {d["_id"]: d["r"] for d in _group(coll, {"data": {"k": "$word", "v": "$val"}, "eval": reduce})}
        assert got == {"hello": 2, "world": 2, "hi": 1, None: 1}
    # an input evaluating to nothing is skipped: a group of none is null
    assert _group(coll, {"data": "$nothing", "eval": SUM}, key=None) == [{"_id": None, "r": None}]


@pytest.mark.commands("aggregate")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=st.dictionaries(st.sampled_from("abc"), st.lists(st.text("xyz", max_size=3), min_size=1, max_size=6),
                              min_size=1))
def test_reduce_sees_the_key_and_the_values_last_first(db, groups):
    db.drop_collection("trace")
    db.trace.insert_many([{"word": w, "val": v} for w, vs in groups.items() for v in vs])
    got = {d["_id"]: d["r"] for d in _group(db.trace, {"eval": TRACE, "data": {"k": "$word", "v": "$val"}})}
    assert got == {w: f"{w}:" + "|".join(reversed(vs)) for w, vs in groups.items()}


@pytest.mark.commands("aggregate")
def test_values_reduce_in_16mb_calls_and_one_too_large_fails(db):
    coll = db.big
    coll.insert_many([{"word": "w", "val": "a" * (9 * 1024 * 1024)} for _ in range(2)])
    # the last value fits, the one before it does not: no progress can be made
    assert _code(lambda: _group(coll, {"data": {"k": "$word", "v": "$val"}, "eval": SUM})) == 31392
    # a value's length instead of the value: one call takes them all
    coll.insert_one({"word": "w", "val": "b"})
    got = _group(coll, {"data": {"k": "$word", "v": {"$strLenBytes": "$val"}}, "eval": SUM})
    assert got == [{"_id": "w", "r": 2 * 9 * 1024 * 1024 + 1}]


@pytest.mark.commands("aggregate")
@pytest.mark.parametrize("spec, code", [
    ("not an object", 31326),
    ({"notEval": 1, "notData": 1}, 31243),
    ({"eval": 5, "data": "$x"}, 31244),
    ({"eval": "", "data": "$x"}, 31245),
    ({"data": "$x"}, 31245),
    ({"eval": TRACE}, 31349),
    ({"eval": TRACE, "data": 5}, 31242),
    ({"eval": TRACE, "data": {"v": 1}}, 31251),
    ({"eval": TRACE, "data": {"key": 1, "value": 1}}, 31251),
    ({"eval": TRACE, "data": {"k": 1, "v": 1, "x": 1}}, 31251),
    ({"eval": TRACE, "data": {"k": "$word", "v": "$missing"}}, 31251),
    ({"eval": "UDFs are great!", "data": {"k": 1, "v": 1}}, 139),
])
def test_errors(db, spec, code):
    db.c.insert_many([{"word": "oi", "val": 1}, {"word": "oi", "val": 2}])
    assert _code(lambda: _group(db.c, spec)) == code


@pytest.mark.commands("aggregate")
def test_not_a_window_function(db):
    db.c.insert_one({"x": 1})
    spec = {"$_internalJsReduce": {"data": {"k": 1, "v": "$x"}, "eval": TRACE}}
    with pytest.raises(OperationFailure):
        list(db.c.aggregate([{"$setWindowFields": {"output": {"r": spec}}}]))
