"""Every command the server lists, given hostile values in every place an argument goes, answers like
mongod: a reply with a MongoDB error code (never 1 InternalError, never Python or library text), on a
connection that stays open, from a server that keeps serving.

The family: each command of ``listCommands`` (test commands too) with the hostile value as its own first
field (``{<name>: v}``), then naming a collection that exists with ``v`` in each field
``arguments.COMMAND_FIELDS`` declares for it (on a regular and on a time-series collection), and in the
generic arguments every command takes (``maxTimeMS``, ``writeConcern``, ``readConcern``, ``comment``).
The values (``harness.hostile.HOSTILE``) are the edges of each BSON type. The wire fuzzer
(bench/wire_fuzz.py) mutates a few dozen seed commands at random; this walks the whole command table
deterministically, so a command no seed names is reached too."""

from __future__ import annotations

import pytest
from harness.hostile import DB, HOSTILE, send_all

from tidemark.arguments import COMMAND_FIELDS

# Commands whose effect would end or freeze the run itself, not answer it: shutdown stops the server,
# fsync {lock} blocks every later write until an fsyncUnlock, and sleep (a test command) sleeps as asked.
NOT_SENT = frozenset({"shutdown", "fsync", "fsyncUnlock", "sleep"})
GENERIC = ("maxTimeMS", "writeConcern", "readConcern", "comment")


def _bodies(names: list[str]):
    for name in names:
        for value in HOSTILE:
            yield {name: value, "$db": DB}
        for target in ("c", "ts"):
            for field in COMMAND_FIELDS.get(name, {}):
                for value in HOSTILE:
                    yield {name: target, field: value, "$db": DB}
    for name in names:  # the generic arguments: the dispatcher's one place, reached through each command
        for field in GENERIC:
            for value in HOSTILE[::3]:
                yield {name: "c", field: value, "$db": DB}


@pytest.mark.slow
@pytest.mark.commands("listCommands", "ping")
def test_every_command_answers_hostile_argument_values_with_a_mongodb_error(start_server):
    srv = start_server(params={"enableTestCommands": 1})  # the test commands are reachable too
    client = srv.client()
    names = sorted(name for name in client.admin.command("listCommands")["commands"] if name not in NOT_SENT)
    assert len(names) > 140
    sent, problems = send_all(srv.port, _bodies(names))
    assert sent > 30_000
    assert not problems, f"{len(problems)} of {sent}:\n" + "\n".join(problems[:30])
    assert srv.running and client.admin.command("ping")["ok"] == 1
    client.close()
