"""A regex bounds an index scan by its literal prefix, as mongod (IndexBoundsBuilder::translateRegex):
``{a: /^abc/}`` scans ``["abc", "abd")`` and the regex value ``[/^abc/, /^abc/]``, a regex without
a prefix all strings ``["", {})``; ``$in`` unites its regexes' ranges with its values' points. Before,
no regex bounded an index: a prefix search read every document (or every bucket of a time-series
collection) whatever index its field had.

The family: documents holding strings (ASCII, non-ASCII, the last code points before the surrogates),
arrays of them, regex values, numbers and nothing; regexes from the same characters with every flag
and with metacharacters, as a value, ``$regex`` (with ``$options``) and in ``$in``; ascending,
descending, compound and collated indexes and a time-series meta index: the index's answer is the
collection scan's."""

import datetime
import re

import pytest
from bson.regex import Regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

_CHARS = ["a", "b", "ab", "é", "\ud7ff", "\U0010ffff", "A", "\n", "."]
_STRING = st.lists(st.sampled_from(_CHARS), max_size=4).map("".join)
_VALUE = st.one_of(_STRING, st.lists(_STRING, max_size=3), st.integers(0, 3),
                   st.sampled_from([Regex("^ab"), Regex("^ab", "i"), Regex("b")]), st.none())
_PIECE = st.sampled_from(_CHARS + [".", "*", "?", "+", "{0}", "$", "\\.", "|", "(b)", "[ab]", "\\Qa.\\E"])
_PATTERN = st.tuples(st.sampled_from(["^", "^", "\\A", ""]), st.lists(_PIECE, max_size=4)).map(
    lambda t: t[0] + "".join(t[1]))
_OPTIONS = st.sampled_from(["", "", "s", "m", "i", "x", "u", "ms"])


@st.composite
def _condition(draw):
    pattern, options = draw(_PATTERN), draw(_OPTIONS)
    kind = draw(st.sampled_from(["value", "$regex", "$in"]))
    if kind == "value":
        return Regex(pattern, options)
    if kind == "$regex":
        return {"$regex": pattern, "$options": options}
    others = draw(st.lists(st.one_of(_STRING, st.integers(0, 3), _PATTERN.map(Regex)), max_size=3))
    return {"$in": [Regex(pattern, options), *others]}


def _bounds(plan):
    while plan:
        if "indexBounds" in plan:
            return plan["indexBounds"]
        plan = plan.get("inputStage") or (plan.get("inputStages") or [None])[0]
    return None


@pytest.mark.commands("find", "createIndexes", "explain")
@pytest.mark.parametrize("key, options", [
    ([("a", 1)], {}), ([("a", -1)], {}), ([("a", 1), ("n", 1)], {}),
    ([("a", 1)], {"collation": {"locale": "en", "strength": 2}}),
])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_VALUE, max_size=20), condition=_condition())
def test_the_index_answers_as_the_collection_scan(db, key, options, values, condition):
    db.c.drop()
    db.c.create_index(key, **options)
    if values:
        db.c.insert_many([{"_id": i, "a": v, "n": i} for i, v in enumerate(values)])
    query = {"a": condition}
    scanned = _ids(db.c.find(query).hint({"$natural": 1}))
    assert _ids(db.c.find(query)) == scanned
    assert _ids(db.c.find(query).hint(key)) == scanned
    assert _ids(db.c.find(query, sort=key)) == scanned


def _ids(cursor):
    """The answer's ids, sorted, or the error code (a pattern PCRE refuses is refused whatever the plan)."""
    try:
        return sorted(d["_id"] for d in cursor)
    except OperationFailure as failure:
        return failure.code


@pytest.mark.commands("find", "createIndexes", "explain")
def test_a_prefix_scans_only_its_strings(db):
    db.c.insert_many([{"a": f"{c}{i}"} for c in "abcdefghij" for i in range(20)] + [{"a": Regex("^c1")}])
    db.c.create_index("a")
    reply = db.command("explain", {"find": "c", "filter": {"a": Regex("^c1")}}, verbosity="executionStats")
    assert _bounds(reply["queryPlanner"]["winningPlan"]) == {"a": ['["c1", "c2")', "[/^c1/, /^c1/]"]}
    stats = reply["executionStats"]
    assert stats["nReturned"] == 12 and stats["totalDocsExamined"] == 12
    assert stats["totalKeysExamined"] <= 13
    reply = db.command("explain", {"find": "c", "filter": {"a": {"$regex": "1$"}}}, verbosity="queryPlanner")
    assert _bounds(reply["queryPlanner"]["winningPlan"]) == {"a": ['["", {})', "[/1$/, /1$/]"]}
    reply = db.command("explain", {"find": "c", "filter": {"a": {"$in": [Regex("^b"), "a1", Regex("^b1")]}}},
                       verbosity="queryPlanner")
    assert _bounds(reply["queryPlanner"]["winningPlan"]) == {
        "a": ['["a1", "a1"]', '["b", "c")', "[/^b/, /^b/]", "[/^b1/, /^b1/]"]}
    # a pattern Python compiled (pymongo sends its flags with "u", which changes no match)
    reply = db.command("explain", {"find": "c", "filter": {"a": re.compile("^d")}}, verbosity="executionStats")
    assert _bounds(reply["queryPlanner"]["winningPlan"])["a"][0] == '["d", "e")'
    assert reply["executionStats"]["totalDocsExamined"] == 20


@pytest.mark.commands("find", "aggregate", "createIndexes", "explain")
def test_a_time_series_meta_prefix_reads_only_its_buckets(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    start = datetime.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": start + datetime.timedelta(seconds=i), "m": {"host": f"host_{i % 50}"}, "v": i}
                       for i in range(2000)])
    db.ts.create_index("m.host")
    for condition, expected in [(Regex("^host_1"), 440), ({"$regex": "^host_4", "$options": ""}, 440),
                                ({"$in": [Regex("^host_4"), "host_7"]}, 480), ({"$regex": "_4"}, 440)]:
        query = {"m.host": condition}
        assert len(list(db.ts.find(query))) == expected
        assert len(list(db.ts.find(query).hint({"$natural": 1}))) == expected
    reply = db.command("explain", {"aggregate": "ts", "pipeline": [{"$match": {"m.host": Regex("^host_1")}}],
                                   "cursor": {}}, verbosity="executionStats")
    text = str(reply)
    assert "'meta.host': ['[\"host_1\", \"host_2\")', '[/^host_1/, /^host_1/]']" in text
    # the 11 buckets of host_1 and host_10..host_19, of 50
    assert "'totalKeysExamined': 11" in text and "'bucketsUnpacked': 11" in text
