"""Hostile argument values for the "every place an argument goes" families
(tests/reliability/test_command_argument_values.py, test_operator_argument_values.py): the edges of each
BSON type, a connection that sends one request at a time, and the check every answer must pass — a
success, or a MongoDB error code (never 1 InternalError, never Python or library text)."""

from __future__ import annotations

import datetime
import math
import re
import socket
from collections.abc import Iterable

import bson
from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from bench.wire_fuzz import LEAK
from harness.server import recv_frame
from tidemark.protocol.messages import decode_reply, encode_op_msg_request

DB = "argfuzz"
# mongod's ErrmsgCommandDeprecated commands answer some refusals with {ok: 0, errmsg} and no code at all
# (appendSimpleCommandStatus), and Tidemark answers as they do.
CODELESS = {"splitVector": "no key pattern found in splitVector",
            "checkShardingIndex": "no key pattern found in checkShardingindex"}


# Python's own renderings of BSON values, which never appear in mongod's messages
PY_REPR = re.compile(r"DatetimeMS\(|(?<![\w.$'])b'|(?<![\w.$])b\"|Binary\(|Int64\(|Decimal128\(|datetime\.datetime\(|UUID\('|Code\(|"
                     r"SON\(|\bNone\b|\bTrue\b|\bFalse\b")
_JS_ERROR = re.compile(r"(ReferenceError|SyntaxError|TypeError|RangeError|InternalError|Error): ")


def _deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


HOSTILE: list = [
    None, True, False, 0, -1, 2**31 - 1, -(2**31), Int64(2**63 - 1), Int64(-(2**63)),
    math.nan, math.inf, -math.inf, -0.0, 1e308, 0.5,
    Decimal128("NaN"), Decimal128("-Infinity"), Decimal128("1E+6144"),
    "", "x" * 20_000, "a.b", "$a", "$$ROOT", "system.buckets.c", "admin", "\u00e9\u65e5",
    {}, {"$x": 1}, {"": 1}, {"a": {"$gt": 1}}, _deep(90),
    [], [[]], [1, "a", None], [{}] * 3,
    Regex("(", ""), Regex("a", "zz"), Code("x"), Code("x", {"y": 1}),
    bson.Binary(b"", 0), bson.Binary(b"\x00" * 16, 4), bson.Binary(b"\x01", 128),
    ObjectId("000000000000000000000000"), Timestamp(0, 0), Timestamp(2**32 - 1, 2**32 - 1),
    datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59),
    DatetimeMS(-(2**63)), DatetimeMS(2**63 - 1),
    MinKey(), MaxKey(),
]


class Connection:
    """One socket, one request at a time; a request on a connection the server closed raises (and the
    next one gets a fresh socket)."""

    def __init__(self, port: int):
        self.port, self.request_id = port, 0
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)

    def command(self, body: dict) -> dict:
        self.request_id += 1
        try:
            self.sock.sendall(encode_op_msg_request(body, self.request_id))
            return decode_reply(recv_frame(self.sock))
        except (ConnectionError, OSError):
            self.sock.close()
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            raise

    def close(self) -> None:
        self.sock.close()


def restore(conn: Connection) -> None:
    """Put back the two collections the bodies name, if a command dropped one: ``c`` (regular, one
    document) and ``ts`` (time-series, one measurement)."""
    listed = conn.command({"listCollections": 1, "nameOnly": True, "$db": DB})["cursor"]["firstBatch"]
    present = {c["name"] for c in listed}
    if "c" not in present:
        conn.command({"insert": "c", "documents": [{"_id": 1, "a": 1, "s": "x"}], "$db": DB})
    if "ts" not in present:
        conn.command({"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}, "$db": DB})
        conn.command({"insert": "ts", "documents": [{"t": datetime.datetime(2024, 1, 1), "m": 1, "a": 1}],
                      "$db": DB})


def _shown(body: dict) -> str:
    return str({k: repr(v)[:80] for k, v in body.items()})


def problem(body: dict, reply: dict) -> str | None:
    """What is wrong with ``reply`` to ``body`` (None: a success or a proper MongoDB error)."""
    if reply.get("ok") == 1:
        return None
    if "code" not in reply and reply.get("errmsg") == CODELESS.get(next(iter(body))):
        return None
    if reply.get("code") in (None, 1) or reply.get("codeName") == "InternalError":
        return f"{_shown(body)} -> {reply.get('code')} {reply.get('codeName')}: {str(reply.get('errmsg'))[:200]}"
    # a JavaScript error (139 JSInterpreterFailure) is shown as mongod shows it: "ReferenceError: x is not
    # defined :\n@:1" — the script's own error, not the server's internals
    if reply.get("code") == 139 and _JS_ERROR.match(str(reply.get("errmsg", ""))):
        return None
    errmsg = str(reply.get("errmsg", ""))
    if LEAK.search(errmsg.replace("onError: ", "")):  # (a spec's own field, echoed)
        return f"{_shown(body)} -> leaks: {errmsg[:200]}"
    if PY_REPR.search(errmsg):
        return f"{_shown(body)} -> a Python rendering: {errmsg[:200]}"
    return None


def send_all(port: int, bodies: Iterable[dict]) -> tuple[int, list[str]]:
    """Send each body on one connection; (bodies sent, problems: bad answers and closed connections)."""
    conn = Connection(port)
    restore(conn)
    problems: list[str] = []
    sent = 0
    try:
        for body in bodies:
            sent += 1
            try:
                reply = conn.command(body)
            except (ConnectionError, OSError):
                problems.append(f"{_shown(body)} -> connection closed")
                continue
            found = problem(body, reply)
            if found:
                problems.append(found)
            if sent % 200 == 0:  # a command may have dropped a collection
                restore(conn)
    finally:
        conn.close()
    return sent, problems
