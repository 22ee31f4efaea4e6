"""Where the typed rows of buckets live: one ``Table`` per collection and *layout* (pure, no I/O).

A layout is a bucket's column set: field names in bucket order, each typed (a fixed-width BSON type,
rows in NumPy) or constant (one value for every row). Every bucket of a table owns a *slot*: row ``s``
of one 2-D array per typed field, and the per-slot vectors below. Keeping the buckets of one layout
side by side is what lets router.py route and append an insert batch to hundreds of buckets with a
handful of NumPy operations instead of Python work per bucket.

Per slot: ``taken`` (it belongs to a bucket), ``count`` rows held, ``durable`` rows committed (journal or stored document; readers see
exactly these), ``in_flight`` the end of the rows the commit in flight carries, ``committed`` (some
rows were), ``size`` (rules.py), ``start_ms``, ``last_used`` (catalog clock), ``pure`` (the bucket's
columns are exactly the table's: the vectorized path may take it), ``gen`` (changes whenever the slot
changes hands: a commit's per-slot bookkeeping applies only while it is unchanged). Per series (collection
series ids) ``hot[sid]``: up to ``HOT`` slots of the series' routable buckets in this table (its open
bucket and recently archived ones), so writers whose times interleave find their bucket vectorized.

Invariants
- Rows below ``count[s]`` change only by a failed commit's rollback, and only at or above ``durable[s]``;
  rows below ``durable[s]`` never change while the slot belongs to its bucket, so readers (any thread)
  copy them without a lock.
- Arrays are replaced, never resized in place, when they grow: a reader holding the old array still
  sees consistent rows.
- A slot is reused only after its bucket left memory (``Bucket.leave``: its final document is kept on
  the bucket object, and readers check ``bucket.final`` after copying, so they never return another
  bucket's rows). Free slots are handed out lowest first: those released below ``used`` (a heap,
  ``free``), else ``used`` itself (every slot from ``used`` up is free and in no heap, so a grow adds
  no entries), so the buckets in memory gather in the low slots and ``shrink`` (maintenance) can drop the top of the arrays once few slots are held; ``gen``
  values are unique over the table's life (a commit's per-slot bookkeeping never matches a slot that
  changed hands, even across a shrink and a regrowth).
- Memory: every held slot costs ``row_bytes`` (its row of every typed array at the current capacity
  plus the per-slot vectors), counted in the catalog's ``Meter`` — on allocate, release, and whenever
  the row capacity changes for every held slot.
"""

from __future__ import annotations

import heapq
import mmap
import time
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tidemark.timeseries import rules
from tidemark.timeseries.columns import DTYPE, ConstColumn, TableColumn

if TYPE_CHECKING:
    from tidemark.timeseries.bucket import Bucket

# hot slots per series: a parallel backfill whose n connections each send a contiguous range of the
# time line keeps n live buckets per series (one per range) that each batch of one connection switches
# between. With fewer hot slots than writers, an LRU list cycled through by more writers than it holds
# misses on every batch and each series takes the row-by-row rules path (8 connections with 4 slots:
# ranges cost 2x ordered, 9.1 vs 4.3 ms server CPU per 1,000 rows); int32 (slot numbers) keeps the
# table at 64 bytes per series
HOT = 16
_FIRST_SLOTS = 8
_FIRST_CAPACITY = 16
_SLOT_VECTORS = ("count", "durable", "size", "start_ms", "last_used", "pure", "dirty", "in_flight", "committed", "gen",
                 "taken")
SLOT_BYTES = 8 * 8 + 3 + 8 + 8  # the per-slot vectors, the bucket list entry, the free heap entry
# a typed array from this size on is an anonymous mapping of its own (``rows_array``)
OWN_MAPPING_BYTES = 1 << 20
# ... mapped with room for as many slots as this many bytes hold of 8-byte rows (virtual: pages never
# written cost no memory), so that the slots can grow fourfold a few times without a new array
# (``Table._grow_slots``). The room is counted in slots, the same for every item size: a table's arrays
# grow their slots together, and counted in bytes an ObjectId column (12-byte values) had room for 5,461
# of the 8,192 slots a 1-day TSBS load grows to, so that one column was copied: 52 ms of the event loop
RESERVED_BYTES = 64 << 20
RESERVED_ITEMSIZE = 8


def rows_array(slots: int, cap: int, dtype: np.dtype[Any]) -> np.ndarray:
    """An uninitialized array of ``cap`` rows per slot for at least ``slots`` slots (``[:slots]`` is the
    array asked for). From ``OWN_MAPPING_BYTES`` on it is an anonymous mapping of its own, so that only
    the rows written are resident and freeing it returns it to the system. From the malloc heap it
    would be neither: once glibc frees one large mapped block it raises its mmap threshold to that
    block's size (up to 32 MiB), later arrays below it come from the heap, whose pages earlier arrays
    already touched (all resident, however few rows the new one holds), and the heap, fragmented by the
    arrays replaced on every grow and shrink, is never given back: after a 16-day ordered load
    (bench.scaling) the heap held ~230 MB with 100 buckets in memory. A mapping holds as many slots as
    ``RESERVED_BYTES`` hold of ``RESERVED_ITEMSIZE``-byte rows, whatever its own item size (or just those
    asked for when the system refuses that much address space, e.g. under strict overcommit): a 1-day
    load of 100 series holds ~2,400 buckets of 1,024 rows, and growing 512 -> 2,048 -> 8,192 slots by
    copying cost 36 and 120 ms of the event loop (a new mapping's every page faulted in again)."""
    dtype = np.dtype(dtype)
    row = cap * dtype.itemsize
    if slots * row < OWN_MAPPING_BYTES:
        return np.empty((slots, cap), dtype)
    room = max(slots, RESERVED_BYTES // (cap * RESERVED_ITEMSIZE))
    try:
        mapping = mmap.mmap(-1, room * row)
    except OSError:
        room, mapping = slots, mmap.mmap(-1, slots * row)
    return np.frombuffer(mapping, dtype).reshape(room, cap)


class Meter:
    """Bytes the catalog holds (``BucketCatalog.memory``), shared with its tables."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


class Table:
    """The slots of one collection and layout. Only the catalog (event loop) mutates it."""

    def __init__(self, key: tuple[Any, ...], ns: str, time_field: str, meter: Meter | None = None, collation: Any = None):
        self.key = key  # ((name, kind or None, constant), ...) in bucket order
        self.ns = ns
        self.time_field = time_field
        # the collection's default collation (collation.Collation, None = simple): its buckets' control
        # min/max order strings by it
        self.collation = collation
        self.order: tuple[str, ...] = tuple(name for name, _, _ in key)
        self.kinds: dict[str, int] = {name: kind for name, kind, _ in key if kind is not None}
        self.constants: dict[str, Any] = {name: value for name, kind, value in key if kind is None}
        self.varying: tuple[str, ...] = tuple(self.kinds)
        self.columns: dict[str, Any] = {name: TableColumn(name, kind) if kind is not None else ConstColumn(name, value)
                                        for name, kind, value in key}
        self.by_kind: dict[int, list[str]] = {}
        for name, kind in self.kinds.items():
            if name != time_field:
                self.by_kind.setdefault(kind, []).append(name)
        self.sizes = rules.layout_sizes(self.order, self.kinds, self.constants, time_field)
        slots, cap = _FIRST_SLOTS, _FIRST_CAPACITY
        self.cap = cap
        self.data: dict[str, np.ndarray] = {f: np.zeros((slots, cap), DTYPE[k]) for f, k in self.kinds.items()}
        # the whole array (``rows_array``) each of ``data`` is the first slots of
        self._mapped: dict[str, np.ndarray] = dict(self.data)
        self.count = np.zeros(slots, np.int64)
        self.durable = np.zeros(slots, np.int64)
        self.size = np.zeros(slots, np.int64)
        self.start_ms = np.zeros(slots, np.int64)
        self.last_used = np.zeros(slots, np.int64)
        self.pure = np.zeros(slots, bool)
        self.dirty = np.zeros(slots, bool)
        self.in_flight = np.zeros(slots, np.int64)
        self.committed = np.zeros(slots, bool)
        self.gen = np.zeros(slots, np.int64)
        self.taken = np.zeros(slots, bool)  # the slot belongs to a bucket
        self.buckets: list[Bucket | None] = [None] * slots
        self.free: list[int] = []  # a heap of the free slots below ``used``: the lowest first
        self.used = 0  # slots below this were allocated since the arrays were last made (rows to copy)
        self.live = 0  # slots held
        self.next_gen = 1
        self.hot = np.full((16, HOT), -1, np.int32)
        self.grown_ms = 0  # monotonic ms of the last growth of the arrays (slots or row capacity)
        self.meter = meter if meter is not None else Meter()
        self.row_bytes = self._row_bytes()

    def _row_bytes(self) -> int:
        return sum(array.itemsize for array in self.data.values()) * self.cap + SLOT_BYTES

    def memory(self) -> int:
        """What the table's arrays hold (allocated; only written pages are resident)."""
        vectors: int = sum(getattr(self, n).nbytes for n in _SLOT_VECTORS)
        return sum(a.nbytes for a in self.data.values()) + vectors + \
            self.hot.nbytes + 8 * (len(self.buckets) + len(self.free))

    # -- slots
    def allocate(self, bucket: Any) -> int:
        if self.free:
            slot = heapq.heappop(self.free)
        else:
            if self.used == len(self.count):
                self._grow_slots()
            slot = self.used
            self.used += 1
        self.live += 1
        self.meter.bytes += self.row_bytes
        self.buckets[slot] = bucket
        self.taken[slot] = True
        self.count[slot] = self.durable[slot] = self.size[slot] = self.in_flight[slot] = 0
        self.pure[slot] = True
        self.dirty[slot] = self.committed[slot] = False
        self.gen[slot] = self.next_gen
        self.next_gen += 1
        return slot

    def _grow_slots(self) -> None:
        """Four times the slots (the new slots are free without a heap entry each): a longer view of each
        data array's mapping while it has room (``rows_array``), else new arrays with the rows held
        copied. Data arrays are uninitialized (rows at or above a slot's count are never read): zeroing
        hundreds of MB — what calloc does once the allocator reuses freed memory — cost ~100 ms, and
        pages never written cost no memory."""
        old = len(self.count)
        new = old * 4
        self._replace_arrays(new, self.cap)
        for name in _SLOT_VECTORS:
            array = getattr(self, name)
            grown = np.zeros(new, array.dtype)
            grown[:old] = array
            setattr(self, name, grown)
        self.buckets.extend([None] * (new - old))
        self.grown_ms = time.monotonic_ns() // 1_000_000

    def _replace_arrays(self, slots: int, cap: int) -> None:
        """Data arrays of ``slots`` x ``cap`` holding the rows held (arrays are replaced, never resized in
        place: see the module). More slots at the same capacity within a mapping's room are a longer view
        of it (the rows stay where they are); otherwise new arrays get the rows held copied (a shrink
        makes new ones to give the memory back)."""
        used = min(self.used, slots)
        held = min(int(self.count[:used].max()) if used else 0, cap)
        for name, array in self.data.items():
            whole = self._mapped[name]
            if cap != self.cap or not array.shape[0] <= slots <= whole.shape[0]:
                whole = rows_array(slots, cap, array.dtype)
                whole[:used, :held] = array[:used, :held]
                self._mapped[name] = whole
            self.data[name] = whole[:slots]

    def reserve_rows(self, rows: int) -> None:
        """Room for ``rows`` rows per slot (capacity grows fourfold, copying only the rows held, into
        uninitialized arrays as in ``_grow_slots``)."""
        if rows <= self.cap:
            return
        cap = self.cap
        while cap < rows:
            cap *= 4
        self._replace_arrays(len(self.count), cap)
        self._set_cap(cap)
        self.grown_ms = time.monotonic_ns() // 1_000_000

    def row_bytes_at(self, rows: int) -> int:
        """``row_bytes`` once ``reserve_rows(rows)`` has run."""
        cap = self.cap
        while cap < rows:
            cap *= 4
        return self.row_bytes + (cap - self.cap) * sum(array.itemsize for array in self.data.values())

    def _set_cap(self, cap: int) -> None:
        self.cap = cap
        before, self.row_bytes = self.row_bytes, self._row_bytes()
        self.meter.bytes += self.live * (self.row_bytes - before)

    def release(self, slot: int) -> None:
        """The slot's bucket left memory: forget it everywhere and make the slot reusable."""
        self.unhot(slot)
        self.buckets[slot] = None
        self.count[slot] = self.durable[slot] = self.size[slot] = self.in_flight[slot] = 0
        self.pure[slot] = self.dirty[slot] = self.committed[slot] = self.taken[slot] = False
        self.gen[slot] = self.next_gen
        self.next_gen += 1
        heapq.heappush(self.free, slot)
        self.live -= 1
        self.meter.bytes -= self.row_bytes

    def shrink(self) -> bool:
        """Smaller arrays when the slots held all sit in the lowest quarter of them, or every held slot
        holds at most a quarter of the row capacity: the top slots / columns are dropped and the held
        rows copied into new arrays (replaced, never resized in place). Slots are handed out lowest
        first, so the top empties as old buckets leave. O(slots), vectorized: the maintenance pass
        calls it. True when it shrank."""
        size = len(self.count)
        if self.live * 4 > size and self.cap == _FIRST_CAPACITY:
            return False
        held = np.flatnonzero(self.taken[:self.used])
        top = int(held[-1]) + 1 if len(held) else 0
        slots = size
        while slots > _FIRST_SLOTS and top <= slots // 4:
            slots //= 4
        rows = int(self.count[:top].max()) if top else 0
        cap = self.cap
        while cap > _FIRST_CAPACITY and rows <= cap // 4:
            cap //= 4
        if slots == size and cap == self.cap:
            return False
        self.used = top  # (the rows of slots from ``top`` up are not kept)
        self._replace_arrays(slots, cap)
        for name in _SLOT_VECTORS:
            setattr(self, name, getattr(self, name)[:slots].copy())
        del self.buckets[slots:]
        self.free = [s for s in self.free if s < top]  # (the slots from ``used`` up are free)
        heapq.heapify(self.free)
        self._set_cap(cap)
        return True

    def forget_series(self, sid: int) -> None:
        """A released series id (catalog.Series): no hot slots left for it."""
        if sid < len(self.hot):
            self.hot[sid] = -1

    # -- hot slots per series
    def _series_capacity(self, sid: int) -> None:
        if sid >= len(self.hot):
            grown = np.full((max(2 * len(self.hot), sid + 1), HOT), -1, np.int32)
            grown[:len(self.hot)] = self.hot
            self.hot = grown

    def make_hot(self, sid: int, slot: int) -> None:
        """``slot`` is a routable bucket of series ``sid``: first in its hot list (the oldest drops out)."""
        self._series_capacity(sid)
        row = self.hot[sid]
        others = [s for s in row.tolist() if s >= 0 and s != slot][:HOT - 1]
        row[:] = -1
        row[0] = slot
        row[1:1 + len(others)] = others

    def promote(self, sids: np.ndarray, slots: np.ndarray) -> None:
        """``make_hot`` for many series at once (distinct ``sids``; each ``slots[i]`` already in its
        series' hot list): the slot moves first, the others keep their order."""
        rows = self.hot[sids]
        at = np.argmax(rows == slots[:, None], axis=1)[:, None]  # where each slot is now
        shifted = np.concatenate((slots[:, None], rows[:, :-1]), axis=1)  # every entry one to the right
        self.hot[sids] = np.where(np.arange(HOT) <= at, shifted, rows)

    def unhot(self, slot: int) -> None:
        bucket = self.buckets[slot]
        if bucket is None or bucket.sid >= len(self.hot):
            return
        row = self.hot[bucket.sid]
        if slot in row:
            kept = [s for s in row.tolist() if s >= 0 and s != slot]
            row[:] = -1
            row[:len(kept)] = kept

    def hot_slots(self, sids: np.ndarray, first: int = HOT) -> np.ndarray:
        """The first ``first`` entries of ``hot[sid]`` of each series (n x first, -1 where none)."""
        if len(sids) and int(sids.max()) >= len(self.hot):
            self._series_capacity(int(sids.max()))
        return cast(np.ndarray, self.hot[sids, :first])

    # -- rows
    def row_sizes(self, positions: Any) -> Any:
        return rules.row_sizes(self.sizes, positions)

    def append_sizes(self, positions: np.ndarray) -> np.ndarray:
        """Bytes rows at ``positions`` add to pure buckets of the table: ``row_sizes``, and a bucket's
        first row pays for the columns it creates (``rules.column_sizes``)."""
        sizes: np.ndarray = self.row_sizes(positions)
        return sizes + np.where(positions == 0, self.sizes.first_extra, 0) if self.sizes.first_extra else sizes

    def gather(self, slots: np.ndarray, lo: np.ndarray, hi: np.ndarray, data: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
        """Rows ``lo[i]:hi[i]`` of ``slots[i]``, concatenated, for every typed column (``data``: the
        arrays to read, as taken earlier from ``self.data``)."""
        data = self.data if data is None else data
        lengths = hi - lo
        total = int(lengths.sum())
        slot_of_row = np.repeat(slots, lengths)
        ends = np.cumsum(lengths)
        pos = np.arange(total) - np.repeat(ends - lengths - lo, lengths)
        # one 1-D gather per column from the flattened (slots x cap) array (a 2-D fancy index costs ~6x)
        flat: dict[int, np.ndarray] = {}
        out: dict[str, np.ndarray] = {}
        for name in self.varying:
            array = data[name]
            cap = array.shape[1]
            index = flat.get(cap)
            if index is None:
                index = flat[cap] = slot_of_row * cap + pos
            out[name] = array.reshape(-1)[index]
        return out
