"""mongosh's operator helpers against Tidemark: db.setProfilingLevel / db.getProfilingStatus /
`show profile`, capped collections (createCollection, isCapped, stats) and a tailable cursor."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = [pytest.mark.clients, pytest.mark.commands("profile", "create", "insert", "find", "collStats")]


def _interactive(uri: str, lines: list[str]) -> str:
    from harness import have_mongosh
    from harness.clients import MONGOSH, _env

    if not have_mongosh():
        pytest.skip("mongosh is not installed (run `make test`)")
    result = subprocess.run([str(MONGOSH), "--norc", uri], input="\n".join([*lines, "exit"]) + "\n",
                            capture_output=True, text=True, timeout=60, env=_env())
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


@pytest.mark.slow
def test_profiling_helpers(mongosh, db):
    result = mongosh(
        f"db = db.getSiblingDB('{db.name}'); db.setProfilingLevel(1, {{slowms: 250}});"
        "const status = db.getProfilingStatus(); const previous = db.setProfilingLevel(0, {slowms: 100});"
        "({status, previous, now: db.getProfilingStatus().was})")
    status, previous = result["status"], result["previous"]
    assert (status["was"], status["slowms"], status["sampleRate"]) == (1, 250, 1)
    assert (previous["was"], previous["slowms"]) == (1, 250)
    assert result["now"] == 0


@pytest.mark.slow
def test_show_profile_lists_recent_entries(db, server):
    empty = _interactive(server.uri, [f"use {db.name}", "show profile"])
    assert "db.system.profile is empty." in empty
    db.command("profile", 2)
    try:
        db.c.insert_many([{"i": i, "pad": "x" * 200} for i in range(5000)])  # takes > 0 ms: listed
    finally:
        db.command("profile", 0)
    output = _interactive(server.uri, [f"use {db.name}", "show profile"])
    assert f"insert\t{db.name}.c" in output and "ninserted:5000" in output


@pytest.mark.slow
def test_capped_collection_and_tailable_cursor_in_mongosh(mongosh, db):
    result = mongosh(
        f"db = db.getSiblingDB('{db.name}'); db.createCollection('log', {{capped: true, size: 4096, max: 2}});"
        "db.log.insertMany([{_id: 1}, {_id: 2}, {_id: 3}]);"
        "const c = db.log.find().tailable(); const first = c.tryNext()._id;"
        "({capped: db.log.isCapped(), ids: db.log.find().toArray().map(d => d._id), first,"
        "  stats: db.log.stats().maxSize})")
    assert result == {"capped": True, "ids": [2, 3], "first": 2, "stats": 4096}


@pytest.mark.commands("replSetGetStatus", "aggregate")
def test_rs_status_and_watch_answer_like_a_standalone(mongosh):
    result = mongosh(
        "const codes = {};"
        "try { rs.status(); } catch (e) { codes.status = e.code; }"
        "try { db.getSiblingDB('w').c.watch().tryNext(); } catch (e) { codes.watch = e.code; }"
        "codes")
    assert result == {"status": 76, "watch": 40573}
