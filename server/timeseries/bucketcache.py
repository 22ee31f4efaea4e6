"""What reads decoded from stored buckets, kept across reads: summaries and dense columns (as numpy
arrays) of bucket records, so repeated queries over the same buckets skip zstd and the codec.

State (process-wide, one ``BucketCache`` in ``CACHE``), and its invariants:

- An entry is keyed by (namespace, record id) and **valid only for the exact stored bytes it was
  decoded from**: every lookup passes the packed value just read from storage and gets the entry only
  if it holds equal bytes (equal packed bytes decode to equal values). A bucket rewritten in place
  (appends at close/checkpoint, updates, repacks), deleted and re-inserted, or a collection dropped and
  recreated under the same name, therefore never serves stale data: the lookup misses and the caller
  decodes again. Nothing has to be invalidated on write.
- Cached values are shared by every reader: summaries follow the read paths' copy-on-write rule
  (stages never mutate values they did not create) and arrays are read-only.
- Memory is bounded: the entries' approximate sizes (packed bytes + summary estimate + array bytes)
  stay under ``budget`` bytes. Eviction is CLOCK (second chance): a hit only sets the entry's
  ``referenced`` flag (no reordering, no lock); evicting walks the table in insertion order, giving a
  referenced entry one more round. ``budget`` 0 disables caching.
- Thread-safe: reads may run concurrently in executor threads; insertions and evictions hold a lock,
  hits read the dict without it (entries only ever gain parts, and a part computed twice by two threads
  is the same value).

- Remembered runs (``groupruns``: a bucket's whole-bucket run summary for one group shape) are not
  arrays of their own: ``remember_runs`` appends their rows to the current ``RunBlock`` of the group
  shape's ``RunStore`` (a fixed-size array; buckets remembered one after the other sit next to each
  other), and the entry holds ``(block, serial, offset, count)``. A read taking many buckets whole
  then slices a few blocks instead of joining one tiny array per bucket. A block's bytes count in
  ``used`` from its allocation until no registered entry holds rows in it (entries release their
  rows when evicted, replaced or cleared) and it is no longer its store's current block; rows are
  written once, under the lock, before any reader sees them, and never change.

Live (open) buckets are never cached: they are not read from storage.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

DEFAULT_BUDGET = int(os.environ.get("TIDEMARK_BUCKET_CACHE_MB", "384")) * 1024 * 1024
_ENTRY_OVERHEAD = 600  # the entry, its key, its dicts and the stored bytes' object
_SUMMARY_FACTOR = 3  # Python objects of a decoded summary vs its BSON bytes (measured ~2.5x on TSBS)
_SUMMARY_MIN = 1024  # a summary's dicts, dates and ObjectId even for a tiny bucket (~1 KB measured)
_MEMO_ITEM = 512  # a remembered value's Python objects (tuples, dicts, array headers), its arrays' data aside


def _approx_bytes(value: Any, depth: int = 2) -> int:
    """Array data held by a remembered value (arrays at the top or nested in tuples, lists, dicts)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if depth and isinstance(value, (tuple, list)):
        return sum(_approx_bytes(v, depth - 1) for v in value)
    if depth and isinstance(value, dict):
        return sum(_approx_bytes(v, depth - 1) for v in value.values())
    return len(value) if isinstance(value, bytes) else 0


class _Memo(dict[str, Any]):
    """An entry's memo: what a read path stores in it counts in the cache's bytes (a memo of fast
    arrays, runs and column ranges held ~5 KB per small stored bucket, uncounted: a $group over
    31,000 stored buckets kept ~150 MB the budget did not see)."""

    __slots__ = ("entry", "cache")
    entry: CachedBucket | None  # None: not counted (caching off, or the entry left the cache)
    cache: BucketCache | None

    def __setitem__(self, key: Any, value: Any) -> None:
        fresh = key not in self
        super().__setitem__(key, value)
        entry, cache = self.entry, self.cache
        if fresh and entry is not None and cache is not None:
            cache._grow(entry, _MEMO_ITEM + _approx_bytes(value))


BLOCK_ROWS = 2048  # rows of a run block (a bucket with more runs gets a block of its own)


class RunBlock:
    """Rows of remembered runs of many buckets, one group shape (``rows``: float64 [capacity, width])."""

    __slots__ = ("rows", "used", "live", "serial", "store")

    def __init__(self, rows: np.ndarray, serial: int, store: RunStore | None):
        self.rows, self.serial, self.store = rows, serial, store
        self.used = 0  # rows written
        self.live = 0  # rows held by registered entries


class RunStore:
    """The run blocks of one group shape: the current one takes the next bucket's rows."""

    __slots__ = ("key", "current")

    def __init__(self, key: str):
        self.key = key
        self.current: RunBlock | None = None


RunRef = tuple[RunBlock, int, int, int]  # (block, its serial, first row, row count)


class CachedBucket:
    """Decoded parts of one stored bucket record (the exact ``stored`` value they came from)."""

    __slots__ = ("key", "stored", "summary", "columns", "memo", "size", "referenced", "runs", "time_bounds")

    def __init__(self, key: tuple[str, bytes], stored: bytes, cache: BucketCache | None = None):
        self.key, self.stored = key, stored
        self.referenced = False
        self.summary: dict[str, Any] | None = None
        self.columns: dict[str, tuple[int, np.ndarray] | None] = {}
        # derived facts for one read path (e.g. lastpoint's latest time), counted in ``cache``'s bytes
        self.memo = _Memo()
        self.memo.entry, self.memo.cache = (self if cache is not None else None), cache
        self.size = len(stored) + _ENTRY_OVERHEAD
        self.runs: list[RunRef] | None = None  # rows this entry holds in run blocks (``remember_runs``)
        # (key, control min, max of the time field in ms) as the time-bounds predicate remembers them in
        # ``memo`` (``filters._TimeBounds``), read here by a scan's chunk at once: one object, not the memo's
        self.time_bounds: tuple[str, float, float] | None = None


class BucketCache:
    def __init__(self, budget: int = DEFAULT_BUDGET):
        self.budget = budget
        self.used = 0
        self.hits = self.misses = self.evictions = 0
        # (an OrderedDict: the CLOCK hand takes the oldest entry in O(1); a dict's first item after many
        # pops from its front is found by walking its deleted slots: 89 us an eviction at 150,000 entries)
        self._entries: OrderedDict[tuple[str, bytes], CachedBucket] = OrderedDict()
        self._lock = threading.Lock()
        self._stores: dict[str, RunStore] = {}  # by group shape (the memo key of its runs)
        self._serial = 0  # the last run block's number (tells blocks apart in a NumPy comparison)

    def entry(self, ns: str, rid: bytes, stored: bytes) -> CachedBucket | None:
        """The entry for this exact stored value (a fresh, registered one on a miss); None when
        caching is off."""
        if self.budget <= 0:
            return None
        key = (ns, rid)
        found = self._entries.get(key)
        if found is not None and found.stored == stored:
            found.referenced = True
            self.hits += 1  # a statistic: a lost update under concurrency does not matter
            return found
        with self._lock:
            self.misses += 1
            found = self._entries.pop(key, None)
            if found is not None:
                self.used -= found.size
                found.memo.entry = None  # no cycle: the old entry is freed as soon as no reader holds it
                self._release(found)
            fresh = self._entries[key] = CachedBucket(key, stored, self)
            self.used += fresh.size
            self._evict()
            return fresh

    def views(self, ns: str, records: list[tuple[bytes, bytes]], make: Any, opener: Any) -> list[Any]:
        """``make(rid, stored, opener, entry)`` of each (record id, stored value) with its ``entry``,
        looked up at once, in the same pass (a scan's chunk: the check per bucket is the cost)."""
        if self.budget <= 0:
            return [make(rid, stored, opener, None) for rid, stored in records]
        get = self._entries.get
        out: list[Any] = []
        append = out.append
        hits = 0
        for rid, stored in records:
            entry = get((ns, rid))
            if entry is not None and entry.stored == stored:
                entry.referenced = True
                hits += 1
            else:
                entry = self.entry(ns, rid, stored)
            append(make(rid, stored, opener, entry))
        self.hits += hits
        return out

    def find(self, ns: str, rid: bytes, stored: bytes) -> CachedBucket | None:
        """The entry for this exact stored value if there is one (nothing is registered on a miss)."""
        found = self._entries.get((ns, rid))
        return found if found is not None and found.stored == stored else None

    def set_summary(self, entry: CachedBucket, summary: dict[str, Any], bson_size: int) -> None:
        entry.summary = summary
        self._grow(entry, max(bson_size * _SUMMARY_FACTOR, _SUMMARY_MIN))

    def set_column(self, entry: CachedBucket, name: str, column: tuple[int, np.ndarray] | None) -> None:
        if column is not None:
            column[1].flags.writeable = False
        entry.columns[name] = column
        self._grow(entry, 64 + (column[1].nbytes if column is not None else 0))

    def _grow(self, entry: CachedBucket, delta: int) -> None:
        with self._lock:
            entry.size += delta
            if self._entries.get(entry.key) is entry:  # still registered (not evicted meanwhile)
                self.used += delta
                self._evict()

    def _evict(self) -> None:
        entries = self._entries
        while self.used > self.budget and entries:
            key, old = entries.popitem(last=False)
            if old.referenced and len(entries) > 0:
                old.referenced = False
                entries[key] = old  # second chance: back of the queue
                continue
            self.used -= old.size
            old.memo.entry = None
            self._release(old)
            self.evictions += 1

    def remember_runs(self, entry: CachedBucket, key: str, rows: np.ndarray, extra: Any) -> tuple[RunRef, Any]:
        """Remember ``rows`` (one bucket's runs, float64 [n, width]) in the run store of group shape
        ``key`` and ``(their RunRef, extra)`` as ``entry.memo[key]``; returns that value. An entry no
        longer registered gets a block of its own, counted nowhere (it is freed with the entry)."""
        n, width = rows.shape
        with self._lock:
            self._serial += 1
            registered = self._entries.get(entry.key) is entry
            block = self._block_for(key, n, width) if registered else RunBlock(np.empty((n, width)), self._serial, None)
            offset = block.used
            block.rows[offset:offset + n] = rows
            block.used += n
            ref: RunRef = (block, block.serial, offset, n)
            if registered:
                block.live += n
                if entry.runs is None:
                    entry.runs = []
                entry.runs.append(ref)
        value = (ref, extra)
        entry.memo[key] = value  # counted as the entry's memo item (the rows are the block's bytes)
        with self._lock:
            self._evict()
        return value

    def _block_for(self, key: str, n: int, width: int) -> RunBlock:
        """The block of group shape ``key`` that takes ``n`` more rows (lock held): the store's current
        one while it has room, else a new one, counted in ``used``."""
        store = self._stores.get(key)
        if store is None:  # (a group shape's key fixes its rows' width)
            store = self._stores[key] = RunStore(key)
        block = store.current
        if block is not None and block.used + n <= len(block.rows):
            return block
        block = RunBlock(np.empty((max(BLOCK_ROWS, n), width)), self._serial, store)
        self.used += block.rows.nbytes
        if n <= BLOCK_ROWS:  # else a block of its own: the current one keeps taking rows
            old, store.current = store.current, block
            if old is not None:
                self._drop_if_unused(old)
        return block

    def _release(self, entry: CachedBucket) -> None:
        """``entry`` left the cache: its rows in run blocks are no longer held (lock held)."""
        refs, entry.runs = entry.runs, None
        for block, _serial, _offset, n in refs or ():
            block.live -= n
            self._drop_if_unused(block)

    def _drop_if_unused(self, block: RunBlock) -> None:
        """Count out a block no registered entry holds rows in (lock held); a store left with no block
        is forgotten."""
        store = block.store
        if block.live > 0 or store is None:
            return
        if block is store.current:
            store.current = None
            if self._stores.get(store.key) is store:
                del self._stores[store.key]
        block.store = None  # counted out once
        self.used -= block.rows.nbytes

    def clear(self) -> None:
        with self._lock:
            for entry in self._entries.values():
                entry.memo.entry = None
                self._release(entry)
            for store in list(self._stores.values()):
                if store.current is not None:
                    self._drop_if_unused(store.current)
            self._stores.clear()
            self._entries.clear()
            self.used = 0

    def stats(self) -> dict[str, Any]:
        return {"entries": len(self._entries), "bytes": self.used, "budget": self.budget, "hits": self.hits,
                "misses": self.misses, "evictions": self.evictions}


CACHE = BucketCache()
