"""Journal records of column-wise buckets: one record per table per commit (pure, no I/O).

A commit that appends rows to many column-wise buckets (``columnstore.SeriesTable``) writes ONE
journal record for all of them, in the collection's stream ``b"tsc:" + ns``, instead of one record
per bucket: at 1,000 series per insert that is one LMDB put instead of a thousand. A record holds,
for each bucket, its id and the positions ``[from, to)`` of the rows it adds, and for each field the
rows of all its buckets concatenated (raw little-endian values). A bucket's first record also
carries its start and meta, so a bucket never written in full can be rebuilt.

Replay is idempotent by position: recovery applies a bucket's rows ``[from, to)`` only from the
bucket's current count on, so a record whose rows are already in the stored document changes
nothing. A record may be trimmed once every bucket it names has a stored full document holding its
rows (``CommitLog.trimmable``); the trim goes in the same transaction as the full writes that cover
it. A column-wise bucket replaced by a general-path bucket (``successor``) is covered by its
successor's full writes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from bson.binary import Binary
from bson.int64 import Int64
from bson.objectid import ObjectId

from protocol.codec import decode, encode
from server.timeseries.buckets import MISSING, ms_to_date
from server.timeseries.rawbatch import DATE, INT64, OID, VALUE_DTYPE

STREAM_PREFIX = b"tsc:"


def stream_of_collection(ns: str) -> bytes:
    return STREAM_PREFIX + ns.encode()


def build_record(table: Any, ns: str, buckets: list, slots: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bytes:
    """The journal record of rows ``lo[i]:hi[i]`` of ``buckets[i]`` (in ``slots[i]`` of ``table``)."""
    new = []
    for i, bucket in enumerate(buckets):
        if lo[i] == 0 and not bucket.stored:
            entry: dict[str, Any] = {"i": i, "start": bucket.start_s}
            if bucket.meta is not MISSING:
                entry["meta"] = bucket.meta
            new.append(entry)
    record: dict[str, Any] = {
        "ns": ns, "tf": table.time_field, "fields": list(table.order),
        "kinds": Binary(bytes(table.kinds[f] for f in table.order)),
        "consts": dict(table.constants),
        "ids": Binary(b"".join(bucket.id.binary for bucket in buckets)),
        "from": Binary(lo.astype("<i4").tobytes()), "to": Binary(hi.astype("<i4").tobytes()),
        "new": new,
        "cols": {name: Binary(values.tobytes()) for name, values in table.rows(slots, lo, hi).items()},
    }
    if table.meta_field is not None:
        record["mf"] = table.meta_field
    return encode(record)


def parse_record(payload: bytes) -> tuple[dict, list[tuple[ObjectId, int, int, dict | None, list[dict]]]]:
    """(header, [(bucket id, from, to, new-bucket info or None, measurements)]) of a record."""
    record = decode(payload)
    fields = record["fields"]
    kinds = dict(zip(fields, bytes(record["kinds"]), strict=True))
    consts = record["consts"]
    ids = bytes(record["ids"])
    lo = np.frombuffer(bytes(record["from"]), "<i4")
    hi = np.frombuffer(bytes(record["to"]), "<i4")
    lengths = (hi - lo).astype(np.int64)
    ends = np.cumsum(lengths).tolist()
    columns: dict[str, list] = {}
    for name in fields:
        if name in consts:
            continue
        values = np.frombuffer(bytes(record["cols"][name]), VALUE_DTYPE[kinds[name]])
        kind = kinds[name]
        if kind == DATE:
            columns[name] = [ms_to_date(int(v)) for v in values.tolist()]
        elif kind == OID:
            columns[name] = [ObjectId(bytes(v)) for v in values]
        elif kind == INT64:
            columns[name] = [Int64(v) for v in values.tolist()]
        else:
            columns[name] = values.tolist()
    new = {entry["i"]: entry for entry in record.get("new", [])}
    entries = []
    begin = 0
    for i, end in enumerate(ends):
        rows = []
        for r in range(begin, end):
            rows.append({name: consts[name] if name in consts else columns[name][r] for name in fields})
        entries.append((ObjectId(ids[12 * i:12 * i + 12]), int(lo[i]), int(hi[i]), new.get(i), rows))
        begin = end
    return record, entries


def _covered_count(bucket: Any) -> int:
    while getattr(bucket, "successor", None) is not None:
        bucket = bucket.successor
    return bucket.full_count


class CommitLog:
    """The records of one collection still in the journal, oldest first: ``[seq, buckets, tos, checked]``
    (``seq`` None until the record's commit is durable; ``checked``: buckets already known covered)."""

    def __init__(self, ns: str):
        self.stream = stream_of_collection(ns)
        self.records: deque[list] = deque()

    def add(self, buckets: list, tos: list[int]) -> list:
        record = [None, buckets, tos, 0]
        self.records.append(record)
        return record

    def trimmable(self) -> int | None:
        """The highest seq such that it and every older record are covered by stored documents (then
        forgotten here), or None."""
        upto = None
        records = self.records
        while records:
            record = records[0]
            seq, buckets, tos, checked = record
            if seq is None:
                break
            while checked < len(buckets) and _covered_count(buckets[checked]) >= tos[checked]:
                checked += 1
            record[3] = checked
            if checked < len(buckets):
                break
            upto = seq
            records.popleft()
        return upto
