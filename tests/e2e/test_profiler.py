"""The database profiler through pymongo: profile levels 0/1/2 with slowms, sampleRate and filter,
mongod's reply (was/slowms/sampleRate/filter/note), system.profile as a 1 MB capped collection of
mongod-shaped entries, and the "Slow query" log line with the command truncated as mongod does."""

from __future__ import annotations

import datetime
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("profile", "find", "insert", "getMore", "aggregate", "update", "delete")


@pytest.fixture
def profiled(db):
    yield db
    db.command("profile", 0, slowms=100, sampleRate=1.0, filter="unset")


def _entries(db, **flt):
    return list(db.system.profile.find(flt))


def test_profile_answers_the_previous_settings_and_level_2_records_every_operation(profiled):
    db = profiled
    first = db.command("profile", 2)
    assert first == {"was": 0, "slowms": 100, "sampleRate": 1.0, "ok": 1.0}
    assert db.command("profile", -1) == {"was": 2, "slowms": 100, "sampleRate": 1.0, "ok": 1.0}
    options = next(db.list_collections(filter={"name": "system.profile"}))["options"]
    assert options == {"capped": True, "size": 1024 * 1024}
    db.c.create_index("a")
    db.c.insert_many([{"a": i, "b": i % 2} for i in range(5)])
    assert len(list(db.c.find({"a": {"$gte": 1}}, batch_size=2))) == 4
    db.c.update_many({"b": 1}, {"$set": {"u": True}})
    db.c.delete_one({"a": 0})
    db.command("profile", 0)
    ops = [e["op"] for e in _entries(db, ns=f"{db.name}.c")]
    assert ops[:1] == ["command"] and {"insert", "query", "getmore", "update", "remove"} <= set(ops)
    insert = _entries(db, op="insert")[0]
    assert insert["ninserted"] == 5 and insert["command"]["insert"] == "c"
    query = _entries(db, op="query")[0]
    assert query["ns"] == f"{db.name}.c" and query["command"]["filter"] == {"a": {"$gte": 1}}
    assert query["planSummary"] == "IXSCAN { a: 1 }"
    assert query["keysExamined"] >= 2 and query["docsExamined"] >= 2 and query["nreturned"] == 2
    assert isinstance(query["millis"], int) and isinstance(query["ts"], datetime.datetime)
    assert query["client"] == "127.0.0.1" and query["responseLength"] > 0
    assert query["user"] == "" and query["allUsers"] == [] and query["protocol"] == "op_msg"
    # four documents two at a time: the first getMore's batch ends at the last one, and its scan learns
    # that only when a second getMore draws past it (mongod's isEOF), which answers nothing
    getmore, last = _entries(db, op="getmore")[:2]
    assert getmore["originatingCommand"]["find"] == "c" and getmore["nreturned"] == 2
    assert "cursorExhausted" not in getmore
    assert last["nreturned"] == 0 and last["cursorExhausted"] is True
    update = _entries(db, op="update")[0]
    assert (update["nMatched"], update["nModified"]) == (2, 2)
    assert _entries(db, op="remove")[0]["ndeleted"] == 1


def test_a_time_series_index_read_reports_the_keys_it_examined(start_server):
    """A time-series read through a buckets index takes its index entries when it opens, before the
    profiler took its counters' starting point: every such read of stored buckets reported keysExamined
    0 (the slow-query log line too; seen on the TSBS data, 72 buckets examined through 0 keys). A read's
    counters now start at zero; a getMore's where the read left off."""
    server = start_server()
    db = server.client().app
    db.create_collection("tsk", timeseries={"timeField": "t", "metaField": "m"})
    t0 = datetime.datetime(2024, 1, 1)
    db.tsk.insert_many([{"t": t0 + datetime.timedelta(hours=h), "m": m, "v": h} for m in range(3) for h in range(6)])
    server.restart()  # (a clean shutdown stores every bucket: the index holds them)
    db = server.client().app
    db.command("profile", 2)
    assert len(list(db.tsk.find({"m": 1}, batch_size=2))) == 6
    db.command("profile", 0)
    query = _entries(db, op="query", ns="app.tsk")[0]
    assert query["planSummary"].startswith("IXSCAN") and query["keysExamined"] == 6 and query["docsExamined"] >= 1
    getmores = _entries(db, op="getmore", ns="app.tsk")
    assert getmores and all(e["keysExamined"] == 0 for e in getmores)


def test_level_1_records_only_operations_slower_than_slowms(profiled):
    db = profiled
    db.command("profile", 1, slowms=1_000_000)
    db.c.insert_one({"x": 1})
    assert _entries(db) == []
    assert db.command("profile", 1, slowms=-1)["slowms"] == 1_000_000
    db.c.find_one({"x": 1})
    assert [e["op"] for e in _entries(db, ns=f"{db.name}.c")] == ["query"]


def test_sample_rate_zero_records_no_slow_operation(profiled):
    db = profiled
    db.command("profile", 1, slowms=-1, sampleRate=0.0)
    db.c.insert_one({"x": 1})
    db.c.find_one()
    assert _entries(db) == []
    assert db.command("profile", -1)["sampleRate"] == 0.0


def test_a_filter_decides_instead_of_slowms_and_is_reported(profiled):
    db = profiled
    reply = db.command("profile", 1, filter={"op": "query", "nreturned": {"$gte": 2}})
    assert reply["note"].startswith("When a filter expression is set")
    db.c.insert_many([{"i": i} for i in range(3)])
    list(db.c.find())
    db.c.find_one()
    entries = _entries(db, ns=f"{db.name}.c")
    assert [(e["op"], e["nreturned"]) for e in entries] == [("query", 3)]
    status = db.command("profile", -1)
    assert status["filter"] == {"op": "query", "nreturned": {"$gte": 2}} and "note" in status
    db.command("profile", 1, filter="unset")
    assert "filter" not in db.command("profile", -1)


def test_profile_argument_errors_match_mongod(db):
    def code(*args, **kw):
        with pytest.raises(OperationFailure) as e:
            db.command(*args, **kw)
        return e.value.code

    assert code("profile", 1, sampleRate=1.5) == 2
    assert code("profile", 1, filter=5) == 2
    assert code("profile", 1, filter={"$bogus": 1}) == 2
    assert code("profile", "high") == 14
    assert db.command("profile", 7)["was"] == 0  # outside 0..2: only reads, like mongod
    assert db.command("profile", -1)["was"] == 0


def test_the_profile_collection_stays_within_one_megabyte(profiled):
    db = profiled
    db.command("profile", 2)
    for _ in range(40):
        db.c.insert_one({"pad": "p" * 40_000})
    db.command("profile", 0)
    stats = db.command("collStats", "system.profile")
    assert stats["capped"] is True and stats["size"] <= 1024 * 1024
    inserts = _entries(db, op="insert")
    assert 0 < len(inserts) < 40  # the oldest entries were removed


def test_a_huge_command_is_truncated_in_its_profile_entry(profiled):
    db = profiled
    db.command("profile", 2)
    db.c.insert_many([{"pad": "q" * 1000} for _ in range(100)])
    db.command("profile", 0)
    entry = _entries(db, op="insert")[0]
    assert set(entry["command"]) == {"$truncated"} and len(entry["command"]["$truncated"]) < 60_000


@pytest.mark.commands("getLog")
def test_slow_query_log_line_carries_mongods_attributes_and_truncates_the_command(profiled, client):
    db = profiled
    db.command("profile", 0, slowms=-1)
    db.c.insert_many([{"k": i} for i in range(3)])
    list(db.c.find({"k": {"$in": list(range(3000))}}).comment("big"))
    db.command("profile", 0, slowms=100)
    lines = [json.loads(line) for line in client.admin.command("getLog", "global")["log"]]
    slow = [line for line in lines if line["id"] == 51803 and line["attr"].get("ns") == f"{db.name}.c"
            and "find" in line["attr"]["command"]]
    line = slow[-1]
    attr = line["attr"]
    assert attr["planSummary"] == "COLLSCAN" and attr["docsExamined"] == 3 and attr["nreturned"] == 3
    assert attr["keysExamined"] == 0 and attr["type"] == "command" and "durationMillis" in attr
    assert "remote" in attr and "reslen" in attr
    # over 10 KB: cut inside the $in array, the cut described under "truncated", the full size under "size"
    assert len(json.dumps(attr["command"])) <= 10 * 1024
    assert "filter" in line["truncated"]["command"] and line["size"]["command"] > 10 * 1024
    assert attr["command"]["find"] == "c"


@pytest.mark.commands("getCmdLineOpts")
def test_profile_flag_sets_every_databases_default_level(start_server):
    server = start_server(args=("--profile", "2", "--slowOpSampleRate", "0.5"))
    client = server.client()
    client.app.c.insert_one({"x": 1})
    assert [e["op"] for e in client.app.system.profile.find({"ns": "app.c"})] == ["insert"]
    assert client.app.command("profile", -1) == {"was": 2, "slowms": 100, "sampleRate": 0.5, "ok": 1.0}
    client.app.command("profile", 0)
    client.app.c.insert_one({"x": 2})
    assert client.app.system.profile.count_documents({"ns": "app.c"}) == 1
    parsed = client.admin.command("getCmdLineOpts")["parsed"]
    assert parsed["operationProfiling"] == {"mode": "all", "slowOpSampleRate": 0.5}


def test_a_query_counter_over_the_profile_counts_as_mongod_does(profiled):
    """mongoengine's query_counter (found by its test suite): profiling off, system.profile dropped,
    level 2, then counts of system.profile. The command that turned profiling on is not in it (mongod
    profiles an operation by the level in effect when it began), and each count of the profile is an
    operation the next count sees."""
    db = profiled
    db.command("profile", 0)
    db.system.profile.drop()
    db.command("profile", 2)
    assert db.system.profile.count_documents({}) == 0
    assert db.system.profile.count_documents({}) == 1  # the first count
    db.c.find_one()
    assert db.system.profile.count_documents({}) == 3
    assert db.system.profile.count_documents({"ns": f"{db.name}.system.profile"}) == 3
    db.command("profile", 0)  # begun at level 2: profiled
    entries = list(db.system.profile.find({"command.profile": {"$exists": True}}))
    assert [e["command"]["profile"] for e in entries] == [0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.lists(st.sampled_from([0, 1, 2, -1]), min_size=1, max_size=6))
def test_a_profile_command_is_profiled_by_the_level_it_began_at(profiled, levels):
    db = profiled
    db.command("profile", 0)
    db.system.profile.drop()
    current, expected = 0, []
    for level in levels:
        if current == 2:  # (level 1 with slowms 100: these commands are never that slow)
            expected.append(level)
        if level != -1:
            current = level
        assert db.command("profile", level)["was"] in (0, 1, 2)
    db.command("profile", 0)
    shown = [e["command"]["profile"] for e in db.system.profile.find({"command.profile": {"$exists": True}})]
    assert shown == expected + ([0] if current == 2 else [])


@pytest.mark.commands("distinct", "profile")
def test_distinct_entry_carries_its_plan_and_counters(profiled):
    """profile_distinct.js: a distinct's entry has the plan it ran and what it examined, as a count's
    and a find's (it had neither). Not asserted: execStats and fromMultiPlanner, which no Tidemark
    entry has."""
    db = profiled
    db.c.insert_many([{"a": i % 5, "b": i} for i in range(10)])
    db.c.create_index([("b", 1)])
    db.command("profile", 1, slowms=-1)
    assert sorted(db.c.distinct("a", {"b": {"$gte": 5}}, collation={"locale": "fr"})) == [0, 1, 2, 3, 4]
    db.command("profile", 0)
    entry = _entries(db, **{"command.distinct": "c"})[-1]
    assert (entry["op"], entry["ns"]) == ("command", f"{db.name}.c")
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"]) == (5, 5, "IXSCAN { b: 1 }")
    assert entry["command"]["collation"] == {"locale": "fr"} and entry["protocol"] == "op_msg"
    assert "responseLength" in entry and "millis" in entry and "numYield" in entry and "locks" in entry


@pytest.mark.parametrize("bad", [None, 1, "set", [], True])
def test_a_filter_neither_an_object_nor_unset_is_refused(db, bad):
    """mongod's parseObjectOrUnset: null too is 2 (Tidemark took a null filter as no filter)."""
    with pytest.raises(OperationFailure) as refused:
        db.command("profile", 0, filter=bad)
    assert (refused.value.code, refused.value.details["errmsg"]) == (2, "Expected an object, or the string 'unset'.")
