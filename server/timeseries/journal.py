"""The journal record of time-series buckets: one format, built per commit, replayed at start-up (pure).

A commit appends to its collection's stream ``b"tsc:" + ns`` one record per *segment*: all pure
buckets of one table (their rows gathered with one fancy index per column), or one impure bucket.
A record holds, for each of its buckets, the id and the positions ``[from, to)`` of the rows it adds,
and the rows column by column::

    {ns, tf, mf?, fields: [name...],            # bucket order
     kinds: Binary(one BSON type byte per field), # 0xFF: an object column
     consts: {name: value},                      # constant columns
     ids: Binary(12 bytes per bucket), from: Binary(<i4 per bucket), to: Binary(<i4 per bucket),
     new: [{i, start, meta?}],                   # buckets this record starts (no stored document yet)
     cols: {name: Binary(little-endian values of every bucket's rows, concatenated)},   # typed columns
     objs: {name: [{"<position>": value, ...} per bucket]}}                            # object columns

Replay is idempotent by position: recovery applies a bucket's rows only from the bucket's current
count on, so a record whose rows a stored document already holds changes nothing. A record may be
trimmed once every bucket it names has a stored document holding its rows (``CommitLog``); the trim
goes in the transaction of the full writes that cover it.
"""

from __future__ import annotations

import weakref
from collections import deque
from typing import Any

import numpy as np
from bson.binary import Binary
from bson.objectid import ObjectId

from tidemark.protocol.codec import decode, encode
from tidemark.timeseries.bucketdoc import MISSING, POS_KEYS
from tidemark.timeseries.columns import DTYPE, ConstColumn, TableColumn, python_values
from tidemark.timeseries.states import State

STREAM_PREFIX = b"tsc:"
OBJECT_KIND = 0xFF


def stream_of(ns: str) -> bytes:
    return STREAM_PREFIX + ns.encode()


class Segment:
    """What one record carries (see the module); built on the event loop, encoded on the writer thread
    (``encode``), where it reads the table arrays taken at the drain."""

    __slots__ = ("buckets", "lo", "hi", "fields", "kinds", "consts", "typed", "objects")

    def __init__(self, buckets: list[Any], lo: np.ndarray, hi: np.ndarray, fields: list[str], kinds: list[int],
                 consts: dict[str, Any], typed: Any, objects: dict[str, Any]):
        self.buckets, self.lo, self.hi = buckets, lo, hi
        self.fields, self.kinds, self.consts = fields, kinds, consts
        self.typed = typed  # () -> {name: concatenated values}
        self.objects = objects  # {name: [values of each bucket's rows]}

    @classmethod
    def of_table(cls, table: Any, buckets: list[Any], slots: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Segment:
        """The rows ``lo[i]:hi[i]`` of the pure buckets in ``slots[i]`` of ``table``."""
        data = dict(table.data)  # the arrays as they are now (growth replaces them, rows stay)
        kinds = [table.kinds.get(name, _const_kind(table.constants.get(name))) for name in table.order]
        return cls(buckets, lo, hi, list(table.order), kinds, dict(table.constants),
                   lambda: table.gather(slots, lo, hi, data), {})

    @classmethod
    def of_bucket(cls, bucket: Any, lo: int, hi: int) -> Segment:
        """The rows ``[lo, hi)`` of one bucket (any columns)."""
        columns = bucket.columns
        data = dict(bucket.table.data)
        slot = bucket.slot
        fields, kinds, consts, objects, typed_names = [], [], {}, {}, []
        for name, column in columns.items():
            fields.append(name)
            if type(column) is TableColumn:
                kinds.append(column.kind)
                typed_names.append(name)
            elif type(column) is ConstColumn:
                kinds.append(_const_kind(column.value))
                consts[name] = column.value
            else:
                kinds.append(OBJECT_KIND)
                values = column.values[lo:hi]
                objects[name] = [{POS_KEYS[lo + j] if lo + j < len(POS_KEYS) else str(lo + j): v
                                  for j, v in enumerate(values) if v is not MISSING}]
        return cls([bucket], np.array([lo]), np.array([hi]), fields, kinds, consts,
                   lambda: {name: data[name][slot, lo:hi] for name in typed_names}, objects)

    def encode(self, ns: str, time_field: str, meta_field: str | None) -> bytes:
        new = []
        for i in np.flatnonzero(np.asarray(self.lo) == 0).tolist():
            bucket = self.buckets[i]
            if not bucket.stored_count:
                entry: dict[str, Any] = {"i": i, "start": bucket.start_s}
                if bucket.meta is not MISSING:
                    entry["meta"] = bucket.meta
                new.append(entry)
        record: dict[str, Any] = {
            "ns": ns, "tf": time_field, "fields": self.fields, "kinds": Binary(bytes(self.kinds)),
            "consts": self.consts, "ids": Binary(b"".join(bucket.id.binary for bucket in self.buckets)),
            "from": Binary(np.asarray(self.lo).astype("<i4").tobytes()),
            "to": Binary(np.asarray(self.hi).astype("<i4").tobytes()), "new": new,
            "cols": {name: Binary(np.ascontiguousarray(values).tobytes()) for name, values in self.typed().items()},
        }
        if self.objects:
            record["objs"] = self.objects
        if meta_field is not None:
            record["mf"] = meta_field
        return encode(record)


def _const_kind(value: Any) -> int:
    return 0x02 if type(value) is str else 0x0A if value is None else 0x03


def parse(payload: bytes) -> tuple[dict[str, Any], list[tuple[ObjectId, int, int, dict[str, Any] | None, list[dict[str, Any]]]]]:
    """(header, [(bucket id, from, to, new-bucket info or None, rows as dicts)]) of a record."""
    record = decode(payload)
    fields = record["fields"]
    kinds = dict(zip(fields, bytes(record["kinds"]), strict=True))
    consts = record.get("consts", {})
    objects = record.get("objs", {})
    ids = bytes(record["ids"])
    lo = np.frombuffer(bytes(record["from"]), "<i4")
    hi = np.frombuffer(bytes(record["to"]), "<i4")
    ends = np.cumsum((hi - lo).astype(np.int64)).tolist()
    columns = {name: python_values(kinds[name], np.frombuffer(bytes(raw), DTYPE[kinds[name]]))
               for name, raw in record.get("cols", {}).items()}
    new = {entry["i"]: entry for entry in record.get("new", [])}
    entries = []
    begin = 0
    for i, end in enumerate(ends):
        rows = []
        for r in range(begin, end):
            position = str(int(lo[i]) + r - begin)
            row = {}
            for name in fields:
                if name in consts:
                    row[name] = consts[name]
                elif name in objects:
                    value = objects[name][i].get(position, MISSING)
                    if value is not MISSING:
                        row[name] = value
                else:
                    row[name] = columns[name][r]
            rows.append(row)
        entries.append((ObjectId(ids[12 * i:12 * i + 12]), int(lo[i]), int(hi[i]), new.get(i), rows))
        begin = end
    return record, entries


def covered(bucket: Any, to: int, writing: dict[int, int] | None = None) -> bool:
    """The bucket's stored document holds its rows below ``to`` (or it will never be written again);
    ``writing``: id(bucket) -> rows of the full documents the same commit writes. ``bucket`` None: the
    bucket object is gone, which it is only once it left memory — its full document durable, or frozen."""
    return bucket is None or bucket.stored_count >= to or bucket.state is State.FROZEN or (
        writing is not None and writing.get(id(bucket), 0) >= to)


class CommitLog:
    """The records of one collection still in the journal, oldest first: ``[seq, buckets, tos, checked]``
    (``buckets``: weak references; ``checked``: buckets already known covered).

    A record is trimmed only after every older one, so one bucket that stays open keeps every later
    record too. Held strongly, each bucket they name that left memory meanwhile would stay alive with the
    full document it keeps for late readers (``Bucket.final``, uncompressed): a 1-day parallel backfill
    of 100 series held ~33 MB of them, and one series written once held all of a 1-day load's (~130 MB)
    until its bucket's next full write (at the latest the periodic checkpoint). Held weakly, a bucket is
    freed when it leaves memory, and a reference found dead is covered."""

    def __init__(self, ns: str):
        self.stream = stream_of(ns)
        self.records: deque[list[Any]] = deque()

    def add(self, seq: int, buckets: list[Any], tos: list[int]) -> None:
        self.records.append([seq, [weakref.ref(bucket) for bucket in buckets], tos, 0])

    def trimmable(self, writing: dict[int, int] | None = None) -> tuple[int, int] | None:
        """(highest seq, how many records) such that it and every older record are covered by stored
        documents — those already stored, or ``writing`` (full writes of the same commit: the trim goes
        in their transaction) — or None. Nothing is forgotten until ``trimmed`` (the commit succeeded)."""
        upto, n = None, 0
        for record in self.records:
            seq, buckets, tos, checked = record
            while checked < len(buckets) and covered(buckets[checked](), tos[checked]):
                checked += 1
            record[3] = checked
            if checked < len(buckets) and not all(covered(b(), to, writing) for b, to in
                                                  zip(buckets[checked:], tos[checked:], strict=True)):
                break
            upto, n = seq, n + 1
        return (upto, n) if upto is not None else None

    def trimmed(self, n: int) -> None:
        for _ in range(min(n, len(self.records))):
            self.records.popleft()

    def holding(self, upto: int) -> list[tuple[list[Any], list[int]]]:
        """The records up to seq ``upto`` (oldest first), each as its buckets not known covered:
        ``(weak references, tos)`` past its ``checked`` prefix — what keeps them in the journal."""
        held = []
        for seq, buckets, tos, checked in self.records:
            if seq > upto:
                break
            held.append((buckets[checked:], tos[checked:]))
        return held
