"""Each start writes one document to ``local.startup_log``, a capped collection of 10 MB, as mongod's
logStartup (mongod_main.cpp; jstests/core/diagnostics/startup_log.js): ``_id`` "<host>-<start ms>",
``hostname`` (serverStatus's host without the port), ``startTime`` (the start in whole seconds),
``startTimeLocal`` (its ctime string with milliseconds), ``cmdLine`` (getCmdLineOpts ``parsed``), ``pid``
(serverStatus's) and ``buildinfo`` (the buildInfo command's document).

Tidemark kept no local.startup_log (listDatabases showed a ``local`` database that held nothing), so the
jstest's read of the newest entry found none."""

from __future__ import annotations

import datetime
import re

import pytest

pytestmark = pytest.mark.commands("find", "collStats", "getCmdLineOpts", "buildInfo", "serverStatus")

KEYS = {"_id", "hostname", "startTime", "startTimeLocal", "cmdLine", "pid", "buildinfo"}


def _newest(client) -> dict:
    return next(client.local.startup_log.find().sort("$natural", -1).limit(1))


def test_the_newest_entry_describes_this_start(client):
    entry = _newest(client)
    assert set(entry) == KEYS
    status = client.admin.command("serverStatus")
    host, _, millis = entry["_id"].rpartition("-")
    assert host == entry["hostname"] == status["host"].split(":")[0]
    started = datetime.datetime.fromtimestamp(int(millis) // 1000, tz=datetime.UTC).replace(tzinfo=None)
    assert entry["startTime"] == started
    assert re.fullmatch(r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}\.\d{3}", entry["startTimeLocal"])
    assert entry["cmdLine"] == client.admin.command("getCmdLineOpts")["parsed"]
    assert entry["pid"] == status["pid"]
    build = client.admin.command("buildInfo")
    build.pop("ok")
    assert entry["buildinfo"] == build
    stats = client.local.command("collStats", "startup_log")
    assert stats["capped"] is True and stats["maxSize"] == 10 * 1024 * 1024


@pytest.mark.slow
def test_every_start_adds_one_entry(start_server):
    proc = start_server()
    with proc.client() as client:
        first = list(client.local.startup_log.find())
        assert len(first) == 1
    proc.restart()
    with proc.client() as client:
        entries = list(client.local.startup_log.find())
        assert len(entries) == 2 and entries[0] == first[0]
        assert _newest(client)["_id"] != first[0]["_id"]
        assert _newest(client)["pid"] == client.admin.command("serverStatus")["pid"]
