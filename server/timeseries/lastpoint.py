"""The "lastpoint" read (TSBS): ``$sort {<meta paths>..., <time>: -1}`` -> ``$group`` keyed on meta with
only ``$first`` accumulators. Every group's first document is the latest measurement of some series
(distinct meta value), so the buckets holding each series' latest time, restricted to their rows at
that time, carry the whole answer; they are yielded in the order the full scan would meet them
(stored ones in ``_id`` order, a live bucket in place of its stored version, live-only ones last), so
ties in the ``$sort`` resolve the same way.

Finding them takes every bucket's summary (``_id``/``control.max``/``meta``): one pass over the stored
values, where a bucket already seen (same packed bytes, ``bucketcache``) costs a dictionary lookup and
a new or changed one a prefix-only decode (storage/bucket_reader.py). The buckets index
``{meta, control.min.t, control.max.t}`` could list the candidates in O(series) instead, but only if
it is known not to be multikey: a bucket whose meta is a one-element array ``[v]`` is indexed under
``v`` exactly like the series ``v``, so walking ``v``'s newest entries could miss the array series'
latest bucket, and the time-series write paths do not record multikeyness yet.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from bson import encode as bson_encode

from protocol.codec import CODEC_OPTIONS, decode
from server.timeseries import stored
from server.timeseries.bucketcache import SNAPSHOTS
from server.timeseries.buckets import MISSING, date_ms, meta_key
from server.timeseries.columnvalues import python_value
from server.timeseries.deps import refs
from server.timeseries.stored import StoredBucket, live_snapshot
from storage.bucket_codec import WIDTH

_NO_TIME = -(2**63)
_DATE = 0x09


def is_lastpoint(pipeline: list[dict], time_field: str, meta_field: str | None) -> bool:
    """``$sort {<meta paths>..., <time>: -1}`` then ``$group`` keyed on meta with only ``$first``
    accumulators."""
    if meta_field is None or len(pipeline) < 2 or len(pipeline[0]) != 1 or len(pipeline[1]) != 1:
        return False
    sort, group = pipeline[0].get("$sort"), pipeline[1].get("$group")
    if not isinstance(sort, dict) or not isinstance(group, dict):
        return False
    keys = list(sort.items())
    if not keys or keys[-1] != (time_field, -1):
        return False
    if not all(k == meta_field or k.startswith(meta_field + ".") for k, _ in keys[:-1]):
        return False
    read: set[str] = set()
    if not refs(group.get("_id"), read) or not read <= {meta_field}:
        return False
    return all(isinstance(acc, dict) and len(acc) == 1 and "$first" in acc
               for name, acc in group.items() if name != "_id")


def latest_buckets(server: Any, ns: str, time_field: str, stats: dict,
                   columns: set[str] | None) -> Iterator[dict]:
    """For every series, its bucket(s) holding its latest time, restricted to the rows at that time."""
    engine = server.engine
    attempts = 3  # commits racing the read: start over, at last accept rows read after the facts
    for attempt in range(attempts):
        snapshot = live_snapshot(server, ns, None, None)
        facts = stored_facts(engine, ns, time_field)
        scanned: dict = {}
        remembered = _LIVE_REMEMBERED.get(ns, {})
        live = [_LiveFacts(bucket, time_field, remembered) for bucket in snapshot.values()]
        winners = _winners(facts, live, scanned)
        docs = facts.rows(engine, ns, [ref for _, ref in winners if isinstance(ref, bytes)], time_field,
                          columns, strict=attempt < attempts - 1)
        if docs is not None:
            break
    stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + scanned["bucketsScanned"]
    out = [ref.rows() if not isinstance(ref, bytes) else docs.get(ref) for _position, ref in winners]
    kept: dict = {}
    for item in live:  # only the buckets live now: the others are forgotten
        item.remember(kept)
    _LIVE_REMEMBERED[ns] = kept
    yield from (doc for doc in out if doc is not None)


def _series_facts(summary: dict, time_field: str) -> tuple[Any, int]:
    """(series grouping key, latest time in ms) of a bucket summary."""
    latest = date_ms(((summary.get("control") or {}).get("max") or {}).get(time_field))
    return (meta_key(summary["meta"]) if "meta" in summary else MISSING,
            latest if latest is not None else _NO_TIME)


def _facts(bucket: StoredBucket, time_field: str) -> tuple[Any, Any, int]:
    """(bucket _id, series key, latest ms) of a stored bucket, remembered with its cached parts."""
    entry = bucket.cached
    memo_key = ("lastpoint", time_field)
    if entry is not None:
        found = entry.memo.get(memo_key)
        if found is not None:
            return found
    summary = bucket.summary()
    facts = (summary["_id"], *_series_facts(summary, time_field))
    if entry is not None:
        entry.memo[memo_key] = facts
    return facts


# ------------------------------------------------------------------ stored buckets: one pass per snapshot


class StoredFacts:
    """What lastpoint needs of every stored bucket of a collection, from one pass over the stored
    values: per series its buckets by latest time (newest first, then record id), and which record
    holds each bucket ``_id``. Kept in ``bucketcache.SNAPSHOTS`` when the pass saw one snapshot
    (``snapshot`` is then its id, else None), with the latest-rows documents built from it."""

    def __init__(self, snapshot: int | None):
        self.snapshot = snapshot
        self.count = 0
        self.rid_of: dict[Any, bytes] = {}
        self.by_series: dict[Any, list[tuple[int, bytes]]] = {}
        self.buckets: dict[bytes, StoredBucket] = {}  # each series' newest buckets, from the pass
        self._rows: dict[tuple, dict] = {}

    def rows(self, engine: Any, ns: str, rids: list[bytes], time_field: str,
             columns: set[str] | None, strict: bool = True) -> dict[bytes, dict] | None:
        """The latest-rows document of each of ``rids`` (remembered); None when a bucket had to be
        read again and storage no longer holds this snapshot (the caller starts over); with
        ``strict`` False, what storage holds now (records gone meanwhile are left out)."""
        wanted = frozenset(columns) if columns is not None else None
        out = {}
        missing = []
        for rid in rids:
            doc = self._rows.get((rid, wanted))
            if doc is None:
                missing.append(rid)
            else:
                out[rid] = doc
        if not missing:
            return out
        found = [self.buckets[rid] for rid in missing if rid in self.buckets]
        unread = [rid for rid in missing if rid not in self.buckets]
        if unread:
            read = stored.get_at(engine, ns, unread, self.snapshot) \
                if strict and self.snapshot is not None else list(stored.get_many(engine, ns, unread))
            if read is None or (strict and len(read) != len(unread)):
                return None
            found.extend(read)
        for bucket in found:
            rows = _latest_rows_packed(bucket, time_field, columns)
            doc = rows if rows is not None else latest_rows(bucket.select(columns), time_field)
            out[bucket.rid] = doc
            if self.snapshot is not None:
                self._rows[(bucket.rid, wanted)] = doc
        return out


def stored_facts(engine: Any, ns: str, time_field: str) -> StoredFacts:
    """The collection's ``StoredFacts`` at the current snapshot (remembered per snapshot)."""
    kind = ("lastpoint", time_field)
    before = stored.snapshot_id(engine)
    found = SNAPSHOTS.get(engine, ns, kind, before)
    if found is not None:
        return found
    facts = StoredFacts(before)
    newest: dict[Any, tuple[int, list[bytes]]] = {}  # series -> its latest time, the buckets reaching it
    for bucket in stored.scan(engine, ns, chunk_size=1024):
        bucket_id, series, latest = _facts(bucket, time_field)
        facts.count += 1
        facts.rid_of[bucket_id] = bucket.rid
        facts.by_series.setdefault(series, []).append((latest, bucket.rid))
        current = newest.get(series)
        if current is None or latest > current[0]:
            if current is not None:
                for rid in current[1]:
                    del facts.buckets[rid]
            newest[series] = (latest, [bucket.rid])
            facts.buckets[bucket.rid] = bucket
        elif latest == current[0]:
            current[1].append(bucket.rid)
            facts.buckets[bucket.rid] = bucket
    for entries in facts.by_series.values():
        entries.sort(key=lambda entry: (-entry[0], entry[1]))
    if stored.snapshot_id(engine) == before:  # no commit during the pass: it saw one snapshot
        SNAPSHOTS.put(engine, ns, kind, before, facts)
    else:
        facts.snapshot = None
    return facts


# ------------------------------------------------------------------ live buckets and the winners


class _LiveFacts:
    """A live bucket's series key and latest time, and its rows at that time (``rows()``).

    A column-wise bucket's rows below its count never change (append-only slot rows, and a slot is
    reused only by another bucket object), so what was derived from its first ``n`` rows is kept per
    bucket object (``remembered``: {bucket: (n, latest, rows document or None)}) and reused while its
    count is still ``n``."""

    __slots__ = ("bucket", "time_field", "series", "latest", "n", "_columns", "_doc")

    def __init__(self, bucket: Any, time_field: str, remembered: dict):
        self.bucket, self.time_field = bucket, time_field
        self._columns = self._doc = None
        self.n = -1
        if hasattr(bucket, "rows_copy") and _plain_layout(bucket):
            self.series = bucket.key
            found = remembered.get(bucket)
            if found is not None and found[0] == bucket.count:
                self.n, self.latest, self._doc = found
                return
            # its time column only; the other values are read at the latest rows when needed
            copied = bucket.rows_copy([time_field])
            if copied is not None:
                self._columns = copied
                self.n = copied[0]
                self.latest = int(copied[1][time_field].max()) if copied[0] else _NO_TIME
                return
        self.series, self.latest = _series_facts(bucket.summary(), time_field)

    def rows(self) -> dict:
        if self._doc is None and self._columns is None and self.n >= 0:  # remembered, but not its rows
            copied = self.bucket.rows_copy([self.time_field])
            if copied is not None and copied[0] >= self.n:
                self._columns = (self.n, {self.time_field: copied[1][self.time_field][:self.n]})
        if self._doc is None and self._columns is not None:
            self._doc = _columnar_latest_rows(self.bucket, self.time_field, *self._columns)
        if self._doc is not None:
            return self._doc
        return latest_rows(self.bucket.document(), self.time_field)

    def remember(self, into: dict) -> None:
        if self.n >= 0:
            into[self.bucket] = (self.n, self.latest, self._doc)


# per namespace: what was derived from its live column-wise buckets at the last lastpoint read
_LIVE_REMEMBERED: dict[str, dict] = {}


def _plain_layout(bucket: Any) -> bool:
    """A column-wise bucket whose columns ``python_value`` turns into what decoding gives (constants
    are strings or null) and whose time column is the table's date column."""
    table = bucket.table
    return (table.kinds.get(bucket.time_field) == _DATE and bucket.time_field not in table.constants
            and all(value is None or type(value) is str for value in table.constants.values()))


def _columnar_latest_rows(bucket: Any, time_field: str, n: int, columns: dict) -> dict | None:
    """``latest_rows(bucket.document())`` built from the bucket's first ``n`` rows (``columns``: its
    copied time column): only the values at the latest time are read and become Python values. None
    when the bucket left memory meanwhile (its document then holds the rows)."""
    table = bucket.table
    doc: dict[str, Any] = {"_id": bucket.id}
    if bucket.meta is not MISSING:
        doc["meta"] = decode(bson_encode({"m": bucket.meta}, codec_options=CODEC_OPTIONS))["m"]
    if n == 0:
        doc["data"] = {name: {} for name in table.order}
        return doc
    times = columns[time_field]
    keep = (times == times.max()).nonzero()[0] if n >= 2 else np.arange(n)
    values = bucket.values_at([name for name in table.order if name != time_field], keep)
    if values is None:
        return None
    values[time_field] = times[keep]
    keys = [str(position) for position in keep.tolist()]
    data = {}
    for name in table.order:
        if name in table.constants:
            data[name] = dict.fromkeys(keys, table.constants[name])
        else:
            kind = table.kinds[name]
            data[name] = dict(zip(keys, (python_value(kind, v) for v in values[name]), strict=True))
    doc["data"] = data
    return doc


def _winners(facts: StoredFacts, live: list[_LiveFacts], stats: dict) -> list[tuple[tuple, Any]]:
    """(position, record id | live facts) of every bucket holding its series' latest time, in the
    order the full scan meets them: stored records by record id (a live bucket in place of its stored
    version), then live buckets never stored, by ``_id``."""
    replaced = {}
    live_by_series: dict[Any, list[_LiveFacts]] = {}
    for item in live:
        rid = facts.rid_of.get(item.bucket.id)
        if rid is not None:
            replaced[rid] = item
        live_by_series.setdefault(item.series, []).append(item)
    stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + facts.count + len(live) - len(replaced)
    out: list[tuple[tuple, Any]] = []
    for series in facts.by_series.keys() | live_by_series.keys():
        candidates = live_by_series.get(series, ())
        best = max((item.latest for item in candidates), default=None)
        entries = [entry for entry in facts.by_series.get(series, ()) if entry[1] not in replaced] \
            if replaced else facts.by_series.get(series, ())
        if entries and (best is None or entries[0][0] > best):
            best = entries[0][0]
        for latest, rid in entries:
            if latest != best:
                break
            out.append(((0, rid), rid))
        for item in candidates:
            if item.latest == best:
                rid = facts.rid_of.get(item.bucket.id)
                out.append(((0, rid) if rid is not None else (1, item.bucket.id), item))
    out.sort(key=lambda found: found[0])
    return out


# ------------------------------------------------------------------ the rows at the latest time


def latest_rows(bucket: dict, time_field: str) -> dict:
    """``bucket`` restricted to its measurements at its latest time (within one bucket the meta is
    constant, so a row at an earlier time never sorts first in its group). Buckets with a sparse
    column are kept whole: dropping rows could make the column dense and change field order."""
    data = bucket.get("data")
    times = data.get(time_field) if isinstance(data, dict) else None
    if not isinstance(times, dict) or len(times) < 2:
        return bucket
    positions = list(times)
    if not all(isinstance(column, dict) and list(column) == positions for column in data.values()):
        return bucket
    latest = max(times.values(), key=date_ms_or_min)
    keep = [key for key, value in times.items() if value == latest and type(value) is type(latest)]
    if len(keep) == len(times):
        return bucket
    restricted = dict(bucket)
    restricted["data"] = {field: {key: column[key] for key in keep} for field, column in data.items()}
    return restricted


def date_ms_or_min(value: Any) -> int:
    ms = date_ms(value)
    return ms if ms is not None else _NO_TIME


def _latest_rows_packed(bucket: StoredBucket, time_field: str, columns: set[str] | None) -> dict | None:
    """``latest_rows(bucket.select(columns))`` for a bucket-codec record whose selected columns are all
    dense and fixed-width, decoding only the rows at the latest time (remembered with the bucket's
    cached parts: the result is shared, like every cached value); None otherwise."""
    if columns is None:
        return None  # without a column selection the whole document (every top-level field) is wanted
    entry = bucket.cached
    memo_key = ("latest rows", time_field, frozenset(columns))
    if entry is not None and memo_key in entry.memo:
        return entry.memo[memo_key]
    doc = _build_latest_rows(bucket, time_field, columns)
    if entry is not None:
        entry.memo[memo_key] = doc
    return doc


def _build_latest_rows(bucket: StoredBucket, time_field: str, columns: set[str]) -> dict | None:
    all_names = bucket.column_names()
    if all_names is None:
        return None
    names = [name for name in all_names if name in columns]
    found = bucket.column_values(time_field) if time_field in names else None
    if found is None or found[0] != _DATE or not len(found[1]):
        return None
    times = found[1]
    dense = {}
    for name in names:
        column = bucket.column_values(name)
        if column is None or len(column[1]) != len(times):
            return None
        dense[name] = column
    keep = (times == times.max()).nonzero()[0]
    keys = [str(position).encode() + b"\x00" for position in keep.tolist()]
    data = {}
    for name, (btype, values) in dense.items():
        width = WIDTH[btype]
        raw = values[keep].tobytes()
        head = bytes((btype,))
        body = b"".join(head + key + raw[i * width:(i + 1) * width] for i, key in enumerate(keys))
        data[name] = decode((len(body) + 5).to_bytes(4, "little") + body + b"\x00")
    doc = dict(bucket.summary())
    doc["data"] = data
    return doc
