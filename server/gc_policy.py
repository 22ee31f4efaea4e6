"""The server's cyclic-GC policy: every automatic collection is a young one; survivors are frozen.

Ingest and queries allocate many short-lived containers while the process keeps large long-lived
structures (modules, the bucket catalog, the decoded-bucket cache). CPython 3.11's collector is
generational and not incremental: a collection of generation 1 or 2 walks every tracked object of the
generations it collects while holding the GIL. The bucket catalog holds ~5-10 tracked objects per bucket
(the bucket, its ObjectId, expiry and archive entries) and a series explosion keeps ~200,000 buckets in
memory at the default threshold (2.5 % of RAM): with thresholds (50,000, 20, 100) generation-1
collections walked a million of them and held every client ~330 ms of CPU (a full collection of the
2 million objects of that heap: ~1.1 s).

So after each young collection its survivors are frozen (``gc.freeze``: moved to the permanent
generation, which collections never walk): generations 1 and 2 stay empty and every automatic pause is
a young collection of at most ``YOUNG_THRESHOLD`` new objects. Frozen objects are still freed by their
reference counts (a bucket leaving memory, a finished request's state); only a reference cycle whose
objects were frozen before it became garbage is not. Those wait for the backstop: a full collection
(unfreeze, collect, freeze) once the process's anonymous memory not accounted for by the bucket
catalog (which bounds its own: ``timeseriesIdleBucketExpiryMemoryUsageThreshold``) has grown by
``FULL_COLLECTION_SLACK`` since the last full collection: frozen garbage cycles hold at most about
that much. That walk is proportional to the heap (~1 s of CPU for a series explosion's 2 million
objects), so it is kept for the case it exists for, not run per heap growth or on a timer.

Every collection's CPU time is counted per generation (``stats``: serverStatus ``tidemark.gc``).

The same timer hands freed C heap back to the OS (``trim_due`` / ``release_free_heap``: glibc's
``malloc_trim``, which returns the free pages of every arena). glibc raises its mmap threshold to the
size of each large block freed (up to 32 MiB), so large buffers (journal records, zstd output, liblmdb's
overflow pages) come from the heap of whichever thread allocates them; the bucket writer's arena grew by
~20 MB at each periodic checkpoint and kept it after the checkpoint's buffers were freed, so a long load's
peak anonymous memory followed its duration. Fixing the threshold instead (mallopt) cost 22 % of ingest
CPU: every large block a mapping of its own. The trim runs when the memory outside the catalog has grown
by ``TRIM_SLACK`` since the last one, so its cost (a walk of the free chunks, the pages faulted in again
when reused) follows the growth, not time.
"""

from __future__ import annotations

import ctypes
import gc
import time
from collections.abc import Callable
from typing import Any

# new tracked objects between young collections (CPython's default: 700, which cost ~10 % of ingest
# CPU and ~30 % of a large $group in collections); a young collection walks about this many, or what
# YOUNG_INTERVAL of work left (below)
YOUNG_THRESHOLD = 20_000
FULL_COLLECTION_SLACK = 256 << 20  # growth of the memory outside the catalog that calls the backstop
# The threshold counts allocations minus deallocations of tracked objects, frozen ones included: while
# buckets leave memory (freeing frozen objects) as fast as new ones come, the count stays low and the
# young generation grows without a collection (a series explosion reached 245,000 young objects: a
# 55 ms pause). So the server also collects it on a timer.
YOUNG_INTERVAL = 0.1
FULL_CHECK_INTERVAL = 1.0  # how often the backstop's condition is read (``full_collection_due``)
TRIM_SLACK = 16 << 20  # growth of the memory outside the catalog that returns the free heap to the OS


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_MALLOC_TRIM = _malloc_trim()


def release_free_heap() -> bool:
    """Return the free pages of every malloc arena to the OS (glibc ``malloc_trim(0)``; mongod's
    tcmalloc releases freed memory the same way). False where the C library has no such call."""
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True


def anonymous_memory() -> int | None:
    """The process's resident anonymous memory (Linux ``RssAnon``), None where unknown."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class GcPolicy:
    """Installed once per server process (``install``); a ``gc.callbacks`` entry. Collections run on any
    thread (whichever allocates), always holding the GIL, so the callback needs no lock."""

    def __init__(self) -> None:
        self.collections = [0, 0, 0]
        self.cpu_total = [0.0, 0.0, 0.0]
        self.cpu_max = [0.0, 0.0, 0.0]
        self.full_collections = 0  # backstops run (``collect_frozen``)
        self.full_cpu_max = 0.0
        self.unaccounted_after_full: int | None = None
        self.unaccounted_after_trim: int | None = None
        self.trims = 0  # free heap returned to the OS (``trim_due``)
        self.accounted: Callable[[], int] = lambda: 0  # bytes of memory bounded elsewhere (the catalog)
        self.installed = False
        self._started = 0.0

    def install(self, accounted: Callable[[], int] | None = None) -> None:
        """Collect and freeze what start-up built (~50,000 long-lived objects), then freeze the survivors
        of every young collection. ``accounted``: memory whose bound is kept elsewhere."""
        if accounted is not None:
            self.accounted = accounted
        gc.collect()
        gc.freeze()
        self.unaccounted_after_full = self.unaccounted_after_trim = self._unaccounted()
        gc.set_threshold(YOUNG_THRESHOLD)
        if not self.installed:
            gc.callbacks.append(self._callback)
            self.installed = True

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.thread_time()
            return
        generation = info["generation"]
        spent = time.thread_time() - self._started
        self.collections[generation] += 1
        self.cpu_total[generation] += spent
        self.cpu_max[generation] = max(self.cpu_max[generation], spent)
        gc.freeze()  # the survivors join the permanent generation (see the module)

    @staticmethod
    def collect_young() -> None:
        gc.collect(0)  # (the callback freezes its survivors)

    def _unaccounted(self) -> int | None:
        anonymous = anonymous_memory()
        return None if anonymous is None else max(anonymous - self.accounted(), 0)

    def full_collection_due(self) -> bool:
        base = self.unaccounted_after_full
        now = self._unaccounted()
        return base is not None and now is not None and now > base + FULL_COLLECTION_SLACK

    def trim_if_grown(self) -> bool:
        """``release_free_heap`` once the memory outside the catalog has grown by ``TRIM_SLACK`` since the
        last trim (or install); what the trim could not return becomes the new base. True if it ran."""
        base, now = self.unaccounted_after_trim, self._unaccounted()
        if base is None or now is None or now <= base + TRIM_SLACK or not release_free_heap():
            if now is not None and base is not None and now < base:
                self.unaccounted_after_trim = now  # (memory given back otherwise lowers the base)
            return False
        self.trims += 1
        self.unaccounted_after_trim = self._unaccounted()
        return True

    def collect_frozen(self) -> int:
        """Unfreeze, collect everything, freeze again: garbage cycles that were frozen are freed (a pause
        that walks the whole heap: run when ``full_collection_due``). Returns the objects collected."""
        started = time.thread_time()
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self.unaccounted_after_full = self._unaccounted()
        self.full_collections += 1
        self.full_cpu_max = max(self.full_cpu_max, time.thread_time() - started)
        return found

    def stats(self) -> dict[str, Any]:
        """Collections and their CPU milliseconds by generation (backstops included in generation 2)."""
        return {"collections": list(self.collections),
                "cpuMillisTotal": [round(s * 1000, 3) for s in self.cpu_total],
                "cpuMillisMax": [round(s * 1000, 3) for s in self.cpu_max],
                "fullCollections": self.full_collections,
                "fullCollectionCpuMillisMax": round(self.full_cpu_max * 1000, 3),
                "heapTrims": self.trims}


POLICY = GcPolicy()
