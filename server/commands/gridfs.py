"""GridFS family: ``filemd5`` (mongod 7.0's CmdFileMD5, dbcommands_d.cpp).

``{filemd5: <files_id>, root: <prefix>}`` reads ``<db>.<root>.chunks`` (``root`` defaults to "fs"; a
non-string root is 73 InvalidNamespace) for ``{files_id: <files_id>, n: {$gte: 0}}`` in ``{files_id: 1,
n: 1}`` order — through an index only (mongod plans it with NO_TABLE_SCAN: 291 NoQueryExecutionPlans
when no index serves it) — and answers ``{numChunks, md5}``: the md5 over the chunks' ``data`` in ``n``
order, every ``n`` from 0 present (10040 "chunks out of order" at the first gap). A chunk without
``data`` is 50848, one whose ``data`` is no BinData 50849.

``partialOk`` (what mongos sends, shard by shard): the digest goes on from ``md5state`` (the 88-byte
md5_state_t of the previous shard's reply: 50847 when it is no BinData, 16247 when its size is wrong)
at chunk ``startAt``, stops quietly at a gap, and the reply carries the new ``md5state`` first. hashlib
cannot export or resume its state, so this path runs :class:`Md5State` (pure Python, RFC 1321 with
md5_state_t's little-endian layout); the plain path uses hashlib.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Iterable
from typing import Any

from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark import collections as access
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.core.clustered import cluster_info
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query import plan as planner
from tidemark.query.expr_base import type_name
from tidemark.query.expr_logic import truthy  # BSON trueValue()
from tidemark.query.value_repr import bson_repr

__all__ = ["COMMANDS", "Md5State", "chunks_namespace"]

_MASK = 0xFFFFFFFF
_INITIAL = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
# RFC 1321's per-step shift amounts and sine-derived constants (four rounds of sixteen steps)
_SHIFTS = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4
_SINES = [int(abs(math.sin(i + 1)) * 2**32) & _MASK for i in range(64)]
_STATE = struct.Struct("<6I64s")  # md5_state_t: count[2] (bits, low word first), abcd[4], buf[64]
STATE_SIZE = _STATE.size  # 88


class Md5State:
    """An MD5 whose state is exported and resumed as mongod's md5_state_t bytes (``filemd5``'s
    ``md5state``). ``update`` / ``hexdigest`` as hashlib's; ``hexdigest`` leaves the state as it was."""

    __slots__ = ("_bits", "_abcd", "_pending")

    def __init__(self) -> None:
        self._bits = 0  # message length so far, in bits (mod 2**64, as count[2])
        self._abcd = _INITIAL
        self._pending = b""  # bytes of the block not yet complete (fewer than 64)

    @classmethod
    def from_bytes(cls, raw: bytes) -> Md5State:
        """The state a md5_state_t holds (``len(raw) == STATE_SIZE``)."""
        low, high, a, b, c, d, buf = _STATE.unpack(raw)
        state = cls()
        state._bits = (high << 32) | low
        state._abcd = (a, b, c, d)
        state._pending = buf[:(low >> 3) & 63]
        return state

    def to_bytes(self) -> bytes:
        bits = self._bits
        return _STATE.pack(bits & _MASK, (bits >> 32) & _MASK, *self._abcd, self._pending.ljust(64, b"\0"))

    def update(self, data: bytes) -> None:
        self._bits = (self._bits + 8 * len(data)) & 0xFFFFFFFFFFFFFFFF
        data = self._pending + bytes(data)
        whole = len(data) - len(data) % 64
        abcd = self._abcd
        for start in range(0, whole, 64):
            abcd = _compress(abcd, data[start:start + 64])
        self._abcd = abcd
        self._pending = data[whole:]

    def hexdigest(self) -> str:
        bits = self._bits
        tail = self._pending + b"\x80" + b"\0" * ((55 - len(self._pending)) % 64) + struct.pack("<Q", bits)
        abcd = self._abcd
        for start in range(0, len(tail), 64):
            abcd = _compress(abcd, tail[start:start + 64])
        return struct.pack("<4I", *abcd).hex()


def _compress(abcd: tuple[int, int, int, int], block: bytes) -> tuple[int, int, int, int]:
    """RFC 1321's transform of one 64-byte block."""
    words = struct.unpack("<16I", block)
    a, b, c, d = abcd
    for i in range(64):
        if i < 16:
            f, g = (b & c) | (~b & d), i
        elif i < 32:
            f, g = (d & b) | (~d & c), (5 * i + 1) % 16
        elif i < 48:
            f, g = b ^ c ^ d, (3 * i + 5) % 16
        else:
            f, g = c ^ (b | (~d & _MASK)), (7 * i) % 16
        rotated = (a + f + _SINES[i] + words[g]) & _MASK
        shift = _SHIFTS[i]
        a, d, c = d, c, b
        b = (b + ((rotated << shift) | (rotated >> (32 - shift)))) & _MASK
    return ((abcd[0] + a) & _MASK, (abcd[1] + b) & _MASK, (abcd[2] + c) & _MASK, (abcd[3] + d) & _MASK)


def chunks_namespace(cmd: dict[str, Any]) -> str:
    """The chunks collection's name: ``<root>.chunks`` (mongod's parseNs; the auth rule uses it too)."""
    root = cmd.get("root")
    if "root" in cmd and type(root) is not str:
        raise MongoError(ErrorCode.InvalidNamespace, "'root' must be of type String")
    return (root or "fs") + ".chunks"


def _number_int(value: Any) -> int:
    """BSONElement::numberInt: a number cut to int32 (doubles truncated, out of range clamped), else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        return 0
    number = value.to_decimal() if isinstance(value, Decimal128) else value
    if number != number:  # NaN
        return 0
    if isinstance(value, int):
        return ((int(value) + 2**31) % 2**32) - 2**31  # an int64 cut to its low 32 bits
    return max(-(2**31), min(2**31 - 1, int(number)))


def _chunk_bytes(chunk: dict[str, Any]) -> bytes:
    """A chunk's ``data`` as binDataClean reads it (subtype 2 without its inner length prefix)."""
    if "data" not in chunk:
        raise MongoError(50848, "The element that calls binDataClean() must be type of BinData, but type of "
                                "misisng found. Field name is required")
    data = chunk["data"]
    if isinstance(data, Binary):
        return bytes(data[4:]) if data.subtype == 2 else bytes(data)
    if isinstance(data, bytes):
        return data
    raise MongoError(50849, "The element that calls binDataClean() must be type of BinData, but type of "
                            f"{type_name(data)} found.")


def _no_plan(ns: str, files_id: Any, start: int) -> MongoError:
    return MongoError(ErrorCode.NoQueryExecutionPlans,
                      f"error processing query: ns={ns}Tree: $and\n    files_id $eq {bson_repr(files_id)}\n"
                      f"    n $gte {start}\nSort: {{ files_id: 1, n: 1 }}\nProj: {{}}\n planner returned error "
                      ":: caused by :: No indexed plans available, and running with 'notablescan'")


def _digest(chunks: Iterable[dict[str, Any]], hasher: Any, start: int, partial: bool) -> int:
    """Feed the chunks' data from ``n == start`` on to ``hasher``; the next ``n`` expected."""
    n = start
    for chunk in chunks:
        if _number_int(chunk.get("n")) != n:
            if partial:
                break  # the next chunk is on another shard
            raise MongoError(10040, "chunks out of order")
        hasher.update(_chunk_bytes(chunk))
        n += 1
        interrupt.check()  # maxTimeMS / killOp between chunks (the pure-Python digest is ~3.5 MB/s)
    return n


async def filemd5(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    db = ctx.db
    name = chunks_namespace(cmd)
    files_id = cmd["filemd5"]
    partial = truthy(cmd.get("partialOk"))
    hasher: Any = hashlib.md5()  # noqa: S324 - GridFS's md5 is mongod's answer
    start = 0
    if partial:
        hasher = Md5State()
        if "md5state" in cmd:
            raw = cmd["md5state"]
            if not isinstance(raw, bytes | Binary):
                raise MongoError(50847, "The element that calls binDataClean() must be type of BinData, but "
                                        f"type of {type_name(raw)} found.")
            raw = bytes(raw[4:]) if isinstance(raw, Binary) and raw.subtype == 2 else bytes(raw)
            if len(raw) != STATE_SIZE:
                raise MongoError(16247, "md5 state not correct size")
            hasher = Md5State.from_bytes(raw)
        start = _number_int(cmd.get("startAt"))
    flt = {"files_id": files_id, "n": {"$gte": start}}
    sort = {"files_id": 1, "n": 1}

    def work() -> int:
        with ctx.server.engine.read() as r:
            target = namespace.lookup(r, db, name)
        if target.is_view:
            raise MongoError(ErrorCode.CommandNotSupportedOnView,
                             f"Namespace {C.ns_of(db, name)} is a view, not a collection")
        info = target.info
        if info is None:
            return start  # nothing to read: mongod's EOF plan
        plan = planner.choose_plan(list(info.indexes), flt, sort, None, multikey_default=info.clustered,
                                   allow_or=True, cluster=cluster_info(info))
        if plan.kind == "COLLSCAN" and plan.record_range is None:
            raise _no_plan(C.ns_of(db, name), files_id, start)
        docs = access.open_read(ctx.server, db, name, [{"$match": flt}, {"$sort": sort}], ctx=ctx,
                                target=target).docs
        return _digest(docs, hasher, start, partial)

    n = await ctx.run_blocking(work)
    reply: dict[str, Any] = {}
    if partial:
        reply["md5state"] = Binary(hasher.to_bytes(), 0)
    reply["numChunks"] = n if -(2**31) <= n < 2**31 else Int64(n)
    reply["md5"] = hasher.hexdigest()
    return reply


COMMANDS = [
    CommandSpec("filemd5", filemd5, help=" example: { filemd5 : ObjectId(aaaaaaa) , root : \"fs\" }"),
]
