"""The shape of profile entries (server/profiler.py), in process: a write of one statement is profiled
as that statement, comments follow getMores and explains, hasSortStage, cursorid, nMatched of an
upsert, and a dropped database's settings (profile_update.js, comment_field.js, profile_find.js,
profile_agg.js, profile_no_such_db.js)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.operations import command_report
from tidemark.profiler import Profiler, ReadFacts


def entry(name: str, cmd: dict, reply: dict | None = None, facts: ReadFacts | None = None) -> dict:
    conn = SimpleNamespace(peer="127.0.0.1:5000", client=None, principal=None)
    return Profiler(100).entry(conn, "db", name, {**cmd, "$db": "db"}, reply or {"ok": 1.0}, 1.0, facts)


@given(st.booleans(), st.booleans(), st.sampled_from([None, {"locale": "fr"}]))
def test_an_update_of_one_statement_is_profiled_as_the_statement(multi, upsert, collation):
    statement = {"q": {"a": 1}, "u": {"$inc": {"b": 1}}, "multi": multi, "upsert": upsert}
    if collation:
        statement["collation"] = collation
    command = entry("update", {"update": "c", "updates": [statement], "ordered": True, "comment": "x"})["command"]
    expected = {"q": {"a": 1}, "u": {"$inc": {"b": 1}}, **({"collation": collation} if collation else {}),
                "multi": multi, "upsert": upsert, "comment": "x"}
    assert list(command.items()) == list(expected.items())


def test_a_statement_without_flags_gets_mongods_defaults():
    command = entry("update", {"update": "c", "updates": [{"q": {}, "u": {"a": 1}}]})["command"]
    assert command == {"q": {}, "u": {"a": 1}, "multi": False, "upsert": False}
    assert entry("delete", {"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 1}]})["command"] == {
        "q": {"a": 1}, "limit": 1}


def test_several_statements_keep_the_command():
    cmd = {"delete": "c", "deletes": [{"q": {}, "limit": 1}, {"q": {}, "limit": 0}]}
    assert entry("delete", cmd)["command"]["deletes"] == cmd["deletes"]


def test_an_upsert_is_not_matched():
    reply = {"ok": 1.0, "n": 2, "nModified": 1, "upserted": [{"index": 1, "_id": 5}]}
    got = entry("update", {"update": "c", "updates": [{"q": {}, "u": {}}, {"q": {}, "u": {}, "upsert": True}]}, reply)
    assert (got["nMatched"], got["nModified"], got["nUpserted"]) == (1, 1, 1)


@pytest.mark.parametrize("own", [None, "own"])
def test_a_getmore_carries_its_origins_comment_unless_it_has_one(own):
    facts = ReadFacts(origin={"aggregate": "c", "pipeline": [], "comment": [{"name": "agg"}]})
    cmd = {"getMore": 7, "collection": "c", **({"comment": own} if own else {})}
    got = entry("getMore", cmd, {"ok": 1.0, "cursor": {"id": 7, "nextBatch": []}}, facts)
    assert got["command"]["comment"] == (own or [{"name": "agg"}])
    assert got["cursorid"] == 7


def test_an_explain_carries_the_explained_commands_comment():
    inner = {"aggregate": "c", "pipeline": [], "cursor": {}, "comment": {"n": 1}}
    assert entry("explain", {"explain": inner})["command"]["comment"] == {"n": 1}
    assert entry("explain", {"explain": inner, "comment": "top"})["command"]["comment"] == "top"


def test_an_open_cursor_is_reported_a_closed_one_exhausted():
    got = entry("find", {"find": "c"}, {"ok": 1.0, "cursor": {"id": 42, "firstBatch": [{}]}})
    assert got["cursorid"] == 42 and "cursorExhausted" not in got
    got = entry("find", {"find": "c"}, {"ok": 1.0, "cursor": {"id": 0, "firstBatch": []}})
    assert "cursorid" not in got and got["cursorExhausted"] is True


PLAN_SORTED = SimpleNamespace(kind="IXSCAN", provides_sort=True)
PLAN_UNSORTED = SimpleNamespace(kind="COLLSCAN", provides_sort=False)


@pytest.mark.parametrize("origin, plan, expected", [
    ({"find": "c", "sort": {"a": 1}}, PLAN_UNSORTED, True),
    ({"find": "c", "sort": {"a": 1}}, PLAN_SORTED, False),
    ({"find": "c"}, PLAN_UNSORTED, False),
    ({"aggregate": "c", "pipeline": [{"$match": {}}, {"$sort": {"b": 1}}]}, PLAN_UNSORTED, True),
    ({"aggregate": "c", "pipeline": [{"$match": {}}, {"$sort": {"a": 1}}]}, PLAN_SORTED, False),
    ({"aggregate": "c", "pipeline": [{"$group": {"_id": 1}}, {"$sort": {"a": 1}}]}, PLAN_SORTED, True),
    ({"aggregate": "c", "pipeline": [{"$sort": {"a": 1}}, {"$sort": {"b": 1}}]}, PLAN_SORTED, True),
    ({"aggregate": "c", "pipeline": [{"$match": {}}]}, PLAN_UNSORTED, False),
    ({"find": "missing", "sort": {"a": 1}}, SimpleNamespace(kind="EOF", provides_sort=False), False),  # EOF plan
])
def test_has_sort_stage(origin, plan, expected):
    assert ReadFacts(plan=plan, origin=origin).has_sort_stage() is expected


def test_dropping_a_database_forgets_its_settings():
    profiler = Profiler(100)
    profiler.configure("a", 2, {"op": "query"})
    profiler.configure("b", 1, None)
    profiler.forget("a")
    assert profiler.settings("a") == (0, None) and profiler.settings("b") == (1, None) and profiler.watching
    profiler.forget("b")
    assert not profiler.watching


# --------------------------------------------------------------------------------------------------
# the truncated form of a big command (server/operations.py command_report: mongod's BSONObj::toString)


def test_a_big_command_is_shown_as_mongods_text():
    report = command_report({"update": "c", "q": {"a": "a" * 5000}, "multi": False, "n": None, "x": 1.0, "e": {},
                             "l": [1, "b"]}, 1024)
    assert report == {"$truncated": '{ update: "c", q: { a: "' + "a" * 150 + '..." }, multi: false, n: null, x: 1.0, '
                                     'e: {}, l: [ 1, "b" ] }'}


def test_a_string_of_159_characters_is_shown_whole():
    text = command_report({"s": "b" * 159, "pad": "x" * 2000}, 1024)["$truncated"]
    assert '"' + "b" * 159 + '"' in text and '"' + "x" * 150 + '..."' in text


_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=300)),
                       lambda inner: st.one_of(st.lists(inner, max_size=8),
                                               st.dictionaries(st.text("abc", min_size=1, max_size=3), inner,
                                                               max_size=8)),
                       max_leaves=60)


@given(st.dictionaries(st.text("xyz", min_size=1, max_size=4), _VALUES, min_size=1, max_size=6),
       st.sampled_from([64, 256, 1024]), st.one_of(st.none(), st.text(max_size=5)))
def test_a_report_is_the_command_or_text_within_the_limit(command, limit, comment):
    if comment is not None:
        command = {**command, "comment": comment}
    report = command_report(command, limit)
    if "$truncated" in report:
        assert len(report["$truncated"]) <= limit
        assert report.get("comment") == comment
    else:
        assert report == command
