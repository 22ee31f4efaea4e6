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

from protocol.codec import decode
from server.timeseries import stored
from server.timeseries.buckets import MISSING, date_ms, meta_key
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
    snapshot = live_snapshot(server, ns, None, None)
    best = _Best(stats)
    stored_ids = set()
    for bucket in stored.scan(server.engine, ns, chunk_size=1024):
        bucket_id, series, latest = _facts(bucket, time_field)
        live = snapshot.get(bucket_id)
        if live is None:
            best.offer(series, latest, (0, bucket.rid), bucket)
        else:
            stored_ids.add(bucket_id)
            best.offer(*_series_facts(live.summary(), time_field), (0, bucket.rid), live)
    for bucket_id, live in snapshot.items():
        if bucket_id not in stored_ids:
            best.offer(*_series_facts(live.summary(), time_field), (1, bucket_id), live)
    for _position, ref in sorted(best.found(), key=lambda item: item[0]):
        if isinstance(ref, StoredBucket):
            rows = _latest_rows_packed(ref, time_field, columns)
            yield rows if rows is not None else latest_rows(ref.select(columns), time_field)
        else:
            yield latest_rows(ref.document(), time_field)


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


class _Best:
    """Per series (meta grouping key), the latest time seen and the buckets reaching it."""

    def __init__(self, stats: dict):
        self.stats = stats
        self.by_series: dict[Any, tuple[int, list]] = {}

    def offer(self, series: Any, latest: int, position: tuple, ref: Any) -> None:
        self.stats["bucketsScanned"] = self.stats.get("bucketsScanned", 0) + 1
        current = self.by_series.get(series)
        if current is None or latest > current[0]:
            self.by_series[series] = (latest, [(position, ref)])
        elif latest == current[0]:
            current[1].append((position, ref))

    def found(self) -> list[tuple[tuple, Any]]:
        return [item for _, items in self.by_series.values() for item in items]


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
