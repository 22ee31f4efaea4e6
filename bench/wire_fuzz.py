"""A wire fuzzer: mutated frames of real requests against a running server.

``python -m bench.wire_fuzz --port P --frames 100000`` (the noisy-neighbour benchmark runs it too;
``tests/reliability/test_wire_fuzz.py`` runs 20,000). A frame is a valid request (handshake, CRUD,
aggregation, admin, regexes with large counted repetitions in every place a regex goes, compressed
with each compressor, document sequences, checksums, OP_QUERY) mutated by one or more of: bit flips, byte overwrites with boundary values, truncation, random insertions,
BSON-aware edits (a type byte, a length, a value swapped for a hostile one: huge/negative numbers,
NaN, deep nesting, long strings, wrong types, regex compile bombs) and splices of two frames. Most mutations keep the
header's length right so the stream stays in sync; some break it on purpose (on their own connection).

Each batch of frames is followed by a ``ping``: the replies before the ping's are the batch's. A reply
must never be 1 InternalError nor carry Python or library text; the server may close a connection
(a fatal parse error), but must answer the ping on a fresh one; no frame may take longer than
``HANG_SECONDS`` to be answered. Each successful reply is counted under the command its frame carries
as the server's own parser reads it (``Report.accepted``): against a server with ``--auth``, an
unauthenticated fuzzer must see successes of the handshake and authentication commands only.
Nothing here is a test assertion: ``run`` returns a ``Report``.
"""

from __future__ import annotations

import argparse
import random
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import bson
from bson.int64 import Int64

from tidemark.protocol import codec, compression
from tidemark.protocol.messages import (
    OpMsg,
    decode_message,
    decode_reply,
    encode_op_msg_request,
    encode_op_query_request,
)

HANG_SECONDS = 20.0
BATCH = 8
DB = "fuzz"
# errmsg text that would leak the server's internals (Python, libraries, paths).
LEAK = re.compile(r"Traceback|File \"|\.py\b|Error: |Exception|mdb_|MDB_|lmdb|bson\.|pymongo|/usr/|/home/|site-packages")

_HOSTILE_VALUES: list[Any] = [
    None, True, -1, 0, 2**31 - 1, -2**31, Int64(2**63 - 1), Int64(-2**63), 1e308, -1e308, float("nan"),
    float("inf"), "", "$", "$$ROOT", "a" * 70_000, "\x00", "ü" * 1000, [], [[]] * 50, {}, {"$": 1},
    {"$gt": None}, {"$regex": "(a+)+$"}, b"\x00" * 10, bson.Regex("(", ""), bson.ObjectId(),
    list(range(5000)), {"$where": "1"}, {"$expr": {"$divide": [1, 0]}}, {"a" * 200: 1},
    # regex compile bombs (issue 21): counts near and above PCRE's 65,535, nested counted groups, deep nesting
    {"$regex": "a{99999999}"}, bson.Regex("(a{60000}){60000}", ""), {"$regex": "a{65535}"}, "a{65536}",
    {"$regex": "((a{1000}){1000}){1000}", "$options": "x"}, bson.Regex("(" * 251 + ")" * 251, ""),
]


def seed_commands() -> list[dict[str, Any]]:
    """Valid commands touching most of the server (all in database ``fuzz``)."""
    c = "c"
    return [
        {"ping": 1},
        {"hello": 1, "client": {"driver": {"name": "fuzz", "version": "1"}, "os": {"type": "Linux"}}},
        {"isMaster": 1},
        {"buildInfo": 1},
        {"insert": c, "documents": [{"_id": 1, "a": 1, "s": "x"}, {"a": [1, 2, {"b": 3}], "t": {"$date": 0}}]},
        {"find": c, "filter": {"a": {"$gte": 1}}, "sort": {"a": -1}, "projection": {"s": 1}, "limit": 5},
        {"find": c, "filter": {"s": {"$regex": "^x", "$options": "i"}}, "batchSize": 1},
        {"aggregate": c, "pipeline": [{"$match": {"a": 1}}, {"$group": {"_id": "$s", "n": {"$sum": 1}}},
                                      {"$sort": {"n": -1}}], "cursor": {}},
        {"aggregate": c, "pipeline": [{"$project": {"x": {"$concat": ["$s", "y"]}, "d": {"$toDate": "$a"}}},
                                      {"$unwind": "$a"}, {"$limit": 3}], "cursor": {}},
        {"aggregate": c, "pipeline": [{"$lookup": {"from": c, "localField": "a", "foreignField": "a", "as": "j"}},
                                      {"$facet": {"x": [{"$count": "n"}]}}], "cursor": {}},
        {"update": c, "updates": [{"q": {"a": 1}, "u": {"$inc": {"n": 1}, "$push": {"l": 1}}, "upsert": True}]},
        {"update": c, "updates": [{"q": {}, "u": [{"$set": {"z": "$a"}}], "multi": True}]},
        {"delete": c, "deletes": [{"q": {"a": 99}, "limit": 1}]},
        {"findAndModify": c, "query": {"a": 1}, "update": {"$set": {"f": 1}}, "new": True},
        {"count": c, "query": {"a": {"$exists": True}}},
        {"distinct": c, "key": "a"},
        {"getMore": Int64(1), "collection": c},
        {"killCursors": c, "cursors": [Int64(1)]},
        {"createIndexes": c, "indexes": [{"key": {"a": 1}, "name": "a_1"}]},
        {"listIndexes": c},
        {"listCollections": 1, "filter": {}},
        {"listDatabases": 1, "$db": "admin"},
        {"collStats": c},
        {"dbStats": 1},
        {"explain": {"find": c, "filter": {"a": 1}}, "verbosity": "executionStats"},
        {"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}},
        {"insert": "ts", "documents": [{"t": {"$date": 0}, "m": {"h": 1}, "v": 1.5}]},
        {"aggregate": "ts", "pipeline": [{"$group": {"_id": "$m.h", "v": {"$max": "$v"}}}], "cursor": {}},
        {"currentOp": 1, "$db": "admin"},
        {"getParameter": "*", "$db": "admin"},
        {"serverStatus": 1},
        {"getLog": "global", "$db": "admin"},
        {"collMod": c, "validator": {"a": {"$type": "int"}}, "validationAction": "warn"},
        {"startSession": 1},
        {"endSessions": [{"id": bson.Binary(b"0" * 16, 4)}]},
        # regexes with large counted repetitions (issue 21): refused by the pre-compile scan, or cheap
        {"find": c, "filter": {"s": bson.Regex("a{65536}", "")}},
        {"find": c, "filter": {"s": {"$in": [bson.Regex("x{1,65535}", "i"), bson.Regex("(ab){40000}", "")]}}},
        {"count": c, "query": {"s": {"$regex": "((a{1000}){1000}){1000}"}}},
        {"delete": c, "deletes": [{"q": {"s": {"$regex": "a{99999999}"}}, "limit": 0}]},
        {"aggregate": c, "pipeline": [{"$match": {"s": bson.Regex("(a{60000}){60000}", "")}}], "cursor": {}},
        {"aggregate": c, "pipeline": [{"$project": {"m": {"$regexMatch": {"input": "$s", "regex": "a{65535,65536}"}},
                                                    "f": {"$regexFindAll": {"input": "$s", "regex": "(?:a{300}){300}"}}}}],
         "cursor": {}},
        {"find": c, "filter": {"$jsonSchema": {"properties": {"s": {"pattern": "b{70000}"}},
                                               "patternProperties": {"^x{1,65535}$": {"bsonType": "int"}}}}},
        {"aggregate": 1, "pipeline": [{"$documents": [{"s": "a"}]}, {"$match": {"s": {"$regex": "a{,99999999}"}}}],
         "cursor": {}},
    ]


def _fix_dates(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$date"}:
            import datetime
            return datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=value["$date"])
        return {k: _fix_dates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fix_dates(v) for v in value]
    return value


def seed_frames() -> list[bytes]:
    """The seed corpus: each command as OP_MSG (documents as a kind-1 sequence where natural, some
    with a checksum), each compressed with every compressor, and the legacy OP_QUERY hello."""
    frames: list[bytes] = []
    for i, cmd in enumerate(seed_commands()):
        cmd = _fix_dates(dict(cmd))
        cmd.setdefault("$db", DB)
        sequences = None
        for key in ("documents", "updates", "deletes"):
            if key in cmd and i % 2 == 0:
                sequences = {key: cmd.pop(key)}
        frame = encode_op_msg_request(cmd, i + 1, sequences=sequences, checksum=i % 5 == 0)
        frames.append(frame)
        for name in compression.AVAILABLE:
            frames.append(compression.compress(frame, compression.compressor_id(name)))
    frames.append(encode_op_query_request("admin.$cmd", {"hello": 1}, 77))
    frames.append(encode_op_query_request("admin.$cmd", {"isMaster": 1, "client": {"application": {"name": "x"}}}, 78))
    return frames


class Mutator:
    """Mutations of a frame. ``mutate`` returns (bytes, keeps_framing)."""

    def __init__(self, rng: random.Random, seeds: list[bytes]):
        self.rng = rng
        self.seeds = seeds

    def mutate(self, frame: bytes) -> tuple[bytes, bool]:
        rng = self.rng
        if rng.random() < 0.4:  # handler-level: a well-formed request with a hostile value
            return self._value_mutation(frame, deep=rng.random() < 0.05), True
        data = bytearray(frame)
        keep_length = rng.random() < 0.93
        for _ in range(rng.choice((1, 1, 1, 2, 3, 5))):
            kind = rng.randrange(9)
            if kind == 0 and len(data) > 16:  # bit flips
                for _ in range(rng.randrange(1, 4)):
                    i = rng.randrange(16 if keep_length else 0, len(data))
                    data[i] ^= 1 << rng.randrange(8)
            elif kind == 1 and len(data) > 16:  # boundary values over a 1/4/8-byte field
                width = rng.choice((1, 4, 4, 8))
                i = rng.randrange(16 if keep_length else 0, max(17, len(data) - width))
                value = rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 5, 16, 2**63))
                data[i:i + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
            elif kind == 2 and len(data) > 21:  # truncation
                del data[rng.randrange(21, len(data)):]
            elif kind == 3:  # random insertion
                i = rng.randrange(16, len(data) + 1)
                data[i:i] = rng.randbytes(rng.randrange(1, 40))
            elif kind == 4:  # a document value replaced by a hostile one
                return self._value_mutation(frame), True
            elif kind == 5 and len(data) > 21:  # a type byte changed somewhere in the BSON
                i = rng.randrange(21, len(data))
                data[i] = rng.choice((0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x10, 0x11,
                                      0x12, 0x13, 0x7F, 0xFF, 0x00, 0x20, 0x99))
            elif kind == 6:  # splice with another seed
                other = self.rng.choice(self.seeds)
                a, b = rng.randrange(16, max(17, len(data))), rng.randrange(16, max(17, len(other)))
                data = data[:a] + bytearray(other[b:])
            elif kind == 7 and len(data) >= 20:  # opcode / flags
                if rng.random() < 0.5:
                    data[12:16] = struct.pack("<i", rng.choice((1, 2004, 2012, 2013, 2010, 0, -1, 2002)))
                else:
                    data[16:20] = struct.pack("<I", rng.choice((0, 1, 2, 3, 1 << 16, 1 << 15, 0xFFFFFFFF)))
            elif kind == 8:  # nested deeper than allowed / a long document sequence
                return self._value_mutation(frame, deep=True), True
        if keep_length:
            data[0:4] = struct.pack("<i", len(data))
        return bytes(data), keep_length

    def _value_mutation(self, frame: bytes, deep: bool = False) -> bytes:
        """Decode a seed OP_MSG, swap one value (at any depth) for a hostile one, re-encode."""
        rng = self.rng
        try:
            body = codec.decode(memoryview(frame)[21:21 + struct.unpack_from("<i", frame, 21)[0]])
        except Exception:  # noqa: BLE001 - compressed or OP_QUERY seeds: a bit flip instead
            data = bytearray(frame)
            i = rng.randrange(16, len(data))
            data[i] ^= 1 << rng.randrange(8)
            return bytes(data)
        if deep:
            value: Any = 1
            for _ in range(rng.choice((150, 199, 220, 1000))):
                value = {"a": value} if rng.random() < 0.5 else [value]
        else:
            value = rng.choice(_HOSTILE_VALUES)
        target = body
        path = []
        for _ in range(rng.randrange(1, 5)):
            if isinstance(target, dict) and target:
                key = rng.choice(list(target))
            elif isinstance(target, list) and target:
                key = rng.randrange(len(target))
            else:
                break
            path.append((target, key))
            nxt = target[key]
            if not isinstance(nxt, dict | list):
                break
            target = nxt
        if not path or (path[0][1] == next(iter(body)) and len(path) == 1):
            body[rng.choice(("filter", "pipeline", "q", "limit", "batchSize", "maxTimeMS", "x", "$db"))] = value
        else:
            holder, key = path[-1]
            holder[key] = value
        try:
            return encode_op_msg_request(body, rng.randrange(1, 2**31), checksum=rng.random() < 0.1)
        except Exception:  # noqa: BLE001 - a value BSON cannot hold
            return frame


@dataclass
class Report:
    frames: int = 0
    replies: int = 0
    closed: int = 0
    internal_errors: list[dict] = field(default_factory=list)
    leaks: list[dict] = field(default_factory=list)
    hangs: int = 0
    unanswered_pings: int = 0
    seconds: float = 0.0
    accepted: dict[str, int] = field(default_factory=dict)  # command name -> ok:1 replies ("?": unparsable)
    unnamed: list[dict] = field(default_factory=list)  # ok:1 replies to frames naming no command (samples)

    def merge(self, other: Report) -> None:
        self.frames += other.frames
        self.replies += other.replies
        self.closed += other.closed
        self.internal_errors += other.internal_errors
        self.leaks += other.leaks
        self.hangs += other.hangs
        self.unanswered_pings += other.unanswered_pings
        self.unnamed += other.unnamed[:5]
        for name, n in other.accepted.items():
            self.accepted[name] = self.accepted.get(name, 0) + n

    def ok(self) -> bool:
        return not (self.internal_errors or self.leaks or self.hangs or self.unanswered_pings)

    def summary(self) -> str:
        return (f"{self.frames} frames in {self.seconds:.1f} s: {self.replies} replies, {self.closed} connections "
                f"closed by the server, {len(self.internal_errors)} InternalError replies, {len(self.leaks)} "
                f"replies leaking internals, {self.hangs} hangs, {self.unanswered_pings} unanswered pings")


class _Conn:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS)
        self.buffer = bytearray()

    def frame(self) -> bytes:
        while len(self.buffer) < 4 or len(self.buffer) < int.from_bytes(self.buffer[:4], "little"):
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionResetError("closed")
            self.buffer += chunk
        n = int.from_bytes(self.buffer[:4], "little")
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    def close(self) -> None:
        self.sock.close()


_PING_ID = 0x7EADBEEF


def command_name(frame: bytes) -> str:
    """The command a request frame carries, read by the server's own parser ("?" if it does not parse).
    A frame whose header declares fewer bytes than it has is read as the server reads it: that many."""
    declared = int.from_bytes(frame[:4], "little", signed=True) if len(frame) >= 4 else 0
    if 16 <= declared < len(frame):
        frame = frame[:declared]
    try:
        request = decode_message(frame)
    except Exception:  # noqa: BLE001 - a mutated frame may fail in any way; it then names no command
        return "?"
    body = request.command if isinstance(request, OpMsg) else request.query
    if not isinstance(request, OpMsg) and isinstance(body.get("$query"), dict):
        body = body["$query"]
    return next(iter(body), "?")


def _check(reply: dict, report: Report, frame: bytes) -> None:
    report.replies += 1
    if reply.get("ok") == 1.0:
        name = command_name(frame)
        report.accepted[name] = report.accepted.get(name, 0) + 1
        if name == "?" and len(report.unnamed) < 5:
            report.unnamed.append({"reply": reply, "frame": frame[:300].hex()})
    code = reply.get("code")
    if reply.get("ok") == 0.0 and code == 1:
        report.internal_errors.append({"reply": reply, "frame": frame[:300].hex()})
    message = reply.get("errmsg") or reply.get("$err") or ""
    if isinstance(message, str) and LEAK.search(message):
        report.leaks.append({"reply": reply, "frame": frame[:300].hex()})


def _worker(port: int, frames: int, seed: int, report: Report) -> None:
    rng = random.Random(seed)
    seeds = seed_frames()
    mutator = Mutator(rng, seeds)
    conn = _Conn(port)
    ping = encode_op_msg_request({"ping": 1, "$db": "admin"}, _PING_ID)
    sent = 0
    try:
        while sent < frames:
            batch: list[bytes] = []
            broken: bytes | None = None
            while len(batch) < BATCH and sent < frames:
                data, in_sync = mutator.mutate(rng.choice(seeds))
                sent += 1
                if not in_sync:
                    broken = data
                    break
                batch.append(data)
            report.frames += len(batch)
            # replies come in request order (one request at a time per connection); frames that get
            # none (moreToCome) are skipped by matching each reply to the next frame of its request id
            request_ids = [struct.unpack_from("<i", f, 4)[0] if len(f) >= 8 else None for f in batch]
            position = 0
            try:
                conn.sock.sendall(b"".join(batch) + ping)
                while True:
                    reply_frame = conn.frame()
                    response_to = struct.unpack_from("<i", reply_frame, 8)[0]
                    if response_to == _PING_ID:
                        break
                    answered = next((i for i in range(position, len(batch)) if request_ids[i] == response_to), None)
                    if answered is not None:
                        position = answered + 1
                    try:
                        _check(decode_reply(reply_frame), report, b"" if answered is None else batch[answered])
                    except Exception:  # noqa: BLE001 - a reply we cannot decode is not a server reply
                        report.leaks.append({"undecodable": reply_frame[:200].hex()})
            except TimeoutError:
                report.hangs += 1
                conn.close()
                conn = _Conn(port)
            except (ConnectionError, OSError):
                report.closed += 1
                conn.close()
                conn = _Conn(port)
            if broken is not None:  # its own connection: the stream cannot be resynchronised
                report.frames += 1
                extra = _Conn(port)
                try:
                    extra.sock.settimeout(0.5)
                    extra.sock.sendall(broken)
                    try:
                        _check(decode_reply(extra.frame()), report, broken)
                    except (TimeoutError, ConnectionError, OSError):
                        report.closed += 1  # waiting for bytes that never come, or closed: both fine
                    except Exception:  # noqa: BLE001
                        pass
                finally:
                    extra.close()
        probe = _Conn(port)  # the server still answers on a fresh connection
        try:
            probe.sock.sendall(ping)
            if decode_reply(probe.frame()).get("ok") != 1.0:
                report.unanswered_pings += 1
        except (OSError, ConnectionError):
            report.unanswered_pings += 1
        finally:
            probe.close()
    finally:
        conn.close()


def run(port: int, frames: int, *, seed: int = 1, clients: int = 4) -> Report:
    """Send ``frames`` mutated frames over ``clients`` connections at once."""
    started = time.monotonic()
    reports = [Report() for _ in range(clients)]
    threads = [threading.Thread(target=_worker, args=(port, frames // clients + (i < frames % clients), seed * 1000 + i,
                                                      reports[i]), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = Report()
    for r in reports:
        total.merge(r)
    total.seconds = time.monotonic() - started
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    report = run(args.port, args.frames, seed=args.seed)
    print(report.summary())
    for item in (report.internal_errors + report.leaks)[:20]:
        print(item)


if __name__ == "__main__":
    main()
