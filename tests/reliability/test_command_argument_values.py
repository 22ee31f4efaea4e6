"""Every command the server lists, given hostile values in every place an argument goes, answers like
mongod: a reply with a MongoDB error code (never 1 InternalError, never Python or library text), on a
connection that stays open, from a server that keeps serving.

The family: each command of ``listCommands`` with the hostile value as its own first field
(``{<name>: v}``), then on a collection that exists with ``v`` in each field ``arguments.COMMAND_FIELDS``
declares for it (on a regular and on a time-series collection), and in the generic arguments every
command takes (``maxTimeMS``, ``writeConcern``, ``readConcern``, ``comment``). The values are the edges of each BSON type: NaN and the
infinities, the ends of int32/int64, -0.0, Decimal128 specials, empty and huge strings, dotted and
``$``-prefixed strings, empty and deeply nested documents and arrays, MinKey/MaxKey, regexes that do
not compile, code with scope, binary of each common subtype, the ends of the date range. The wire fuzzer
(bench/wire_fuzz.py) mutates a few dozen seed commands at random; this walks the whole command table
deterministically, so a command no seed names is reached too."""

from __future__ import annotations

import datetime
import math
import socket

import bson
import pytest
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from harness.server import recv_frame

from bench.wire_fuzz import LEAK
from tidemark.arguments import COMMAND_FIELDS
from tidemark.protocol.messages import decode_reply, encode_op_msg_request

DB = "argfuzz"
# Commands whose effect would end or freeze the run itself, not answer it: shutdown stops the server,
# fsync {lock} blocks every later write until an fsyncUnlock, and sleep (a test command) sleeps as asked.
NOT_SENT = frozenset({"shutdown", "fsync", "fsyncUnlock", "sleep"})
GENERIC = ("maxTimeMS", "writeConcern", "readConcern", "comment")
# mongod's ErrmsgCommandDeprecated commands answer some refusals with {ok: 0, errmsg} and no code at all
# (appendSimpleCommandStatus), and Tidemark answers as they do.
CODELESS = {"splitVector": "no key pattern found in splitVector",
            "checkShardingIndex": "no key pattern found in checkShardingindex"}


def _deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


HOSTILE: list = [
    None, True, False, 0, -1, 2**31 - 1, -(2**31), Int64(2**63 - 1), Int64(-(2**63)),
    math.nan, math.inf, -math.inf, -0.0, 1e308, 0.5,
    Decimal128("NaN"), Decimal128("-Infinity"), Decimal128("1E+6144"),
    "", "x" * 20_000, "a.b", "$a", "system.buckets.c", "admin", "\u00e9\u65e5",
    {}, {"$x": 1}, {"": 1}, {"a": {"$gt": 1}}, _deep(90),
    [], [[]], [1, "a", None], [{}] * 3,
    Regex("(", ""), Regex("a", "zz"), Code("x"), Code("x", {"y": 1}),
    bson.Binary(b"", 0), bson.Binary(b"\x00" * 16, 4), bson.Binary(b"\x01", 128),
    ObjectId("000000000000000000000000"), Timestamp(0, 0), Timestamp(2**32 - 1, 2**32 - 1),
    datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59),
    bson.datetime_ms.DatetimeMS(-(2**63)), bson.datetime_ms.DatetimeMS(2**63 - 1),
    MinKey(), MaxKey(),
]


class _Connection:
    """One socket, one request at a time; reconnects if the server closed it (counted)."""

    def __init__(self, port: int):
        self.port, self.request_id, self.closed = port, 0, 0
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)

    def command(self, body: dict) -> dict:
        self.request_id += 1
        try:
            self.sock.sendall(encode_op_msg_request(body, self.request_id))
            return decode_reply(recv_frame(self.sock))
        except (ConnectionError, OSError):
            self.closed += 1
            self.sock.close()
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            raise

    def close(self) -> None:
        self.sock.close()


def _bodies(names: list[str]):
    for name in names:
        for value in HOSTILE:
            yield {name: value, "$db": DB}
        for target in ("c", "ts"):  # a regular collection and a time-series one
            for field in COMMAND_FIELDS.get(name, {}):
                for value in HOSTILE:
                    yield {name: target, field: value, "$db": DB}
    for name in names:  # the generic arguments: the dispatcher's one place, reached through each command
        for field in GENERIC:
            for value in HOSTILE[::3]:
                yield {name: "c", field: value, "$db": DB}


def _problem(body: dict, reply: dict) -> str | None:
    if reply.get("ok") == 1:
        return None
    shown = {k: (repr(v)[:60]) for k, v in body.items()}
    name = next(iter(body))
    if "code" not in reply and reply.get("errmsg") == CODELESS.get(name):
        return None
    if reply.get("code") in (None, 1) or reply.get("codeName") == "InternalError":
        return f"{shown} -> {reply.get('code')} {reply.get('codeName')}: {str(reply.get('errmsg'))[:200]}"
    if LEAK.search(str(reply.get("errmsg", ""))):
        return f"{shown} -> leaks: {str(reply.get('errmsg'))[:200]}"
    return None


def _restore(conn: _Connection) -> None:
    present = {c["name"] for c in conn.command({"listCollections": 1, "nameOnly": True, "$db": DB})["cursor"]["firstBatch"]}
    if "c" not in present:
        conn.command({"insert": "c", "documents": [{"_id": 1, "a": 1}], "$db": DB})
    if "ts" not in present:  # a time-series collection holding one measurement
        conn.command({"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}, "$db": DB})
        conn.command({"insert": "ts", "documents": [{"t": datetime.datetime(2024, 1, 1), "m": 1, "v": 1}], "$db": DB})


@pytest.mark.slow
@pytest.mark.commands("listCommands", "ping")
def test_every_command_answers_hostile_argument_values_with_a_mongodb_error(start_server):
    srv = start_server(params={"enableTestCommands": 1})  # the test commands are reachable too
    client = srv.client()
    names = sorted(name for name in client.admin.command("listCommands")["commands"] if name not in NOT_SENT)
    assert len(names) > 140
    conn = _Connection(srv.port)
    _restore(conn)
    problems: list[str] = []
    sent = dropped = 0
    try:
        for body in _bodies(names):
            sent += 1
            try:
                reply = conn.command(body)
            except (ConnectionError, OSError):
                dropped += 1
                problems.append(f"{ {k: repr(v)[:60] for k, v in body.items()} } -> connection closed")
                continue
            problem = _problem(body, reply)
            if problem:
                problems.append(problem)
            if sent % 200 == 0:
                # a command may have dropped or replaced the collection: put it back
                if conn.command({"listCollections": 1, "filter": {"name": "c"}, "$db": DB})["cursor"]["firstBatch"] == []:
                    conn.command({"insert": "c", "documents": [{"_id": 1, "a": 1}], "$db": DB})
    finally:
        conn.close()
    assert sent > 10_000
    assert not problems, f"{len(problems)} of {sent}:\n" + "\n".join(problems[:30])
    assert dropped == 0
    assert srv.running and client.admin.command("ping")["ok"] == 1
    client.close()
