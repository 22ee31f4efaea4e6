"""Start-up and shutdown of the time-series engine (a ``tidemark.app`` lifecycle hook).

Start-up: replay the journal into full bucket documents (recovery.py; a restart closes all buckets),
then create the bucket catalog (``state.bucket_catalog``), the group committer (``state.ts_committer``)
with its maintenance task (archived buckets leaving memory, checkpoints), and the
``serverStatus().bucketCatalog`` section. Shutdown: write every bucket with unwritten rows in full, so
the next start has nothing to replay.

NumPy's transparent-huge-page hint is turned off for the process: with the kernel's THP defrag on
``madvise``, the first write to each 2 MB of a large new array may compact memory first — growing the
bucket tables (table.py) stalled the event loop ~100 ms instead of ~15 — and a huge page commits 2 MB
where the tables touch a few KB per bucket.
"""

from __future__ import annotations

import asyncio
from typing import Any

# (private to NumPy, so absent from its stubs: mypy cannot know it)
try:
    from numpy._core.multiarray import _set_madvise_hugepage  # type: ignore[attr-defined]
except ImportError:  # NumPy 1.26 (pyproject allows it)
    from numpy.core.multiarray import _set_madvise_hugepage  # type: ignore[no-redef]

from tidemark.timeseries.catalog import BucketCatalog
from tidemark.timeseries.commit import Committer
from tidemark.timeseries.recovery import recover


async def on_startup(state: Any) -> None:
    _set_madvise_hugepage(False)
    await asyncio.get_running_loop().run_in_executor(None, recover, state.engine)
    catalog = BucketCatalog(memory_threshold=state.params["timeseriesIdleBucketExpiryMemoryUsageThreshold"])
    committer = Committer(state.engine, catalog, checkpoint_interval=lambda: float(state.params["syncdelay"]))
    state.bucket_catalog = catalog
    state.ts_committer = committer

    async def status() -> dict[str, Any] | None:
        if not catalog.collections:
            # no collection has execution stats (nothing inserted since start-up, or every such
            # collection dropped): mongod's section generates nothing then, and serverStatus omits it
            return None
        # the snapshot on the loop (cheap copies), the walk over every live bucket in a worker thread:
        # a series explosion's 200,000 buckets would otherwise hold the loop ~130 ms per serverStatus
        snapshot = catalog.live_snapshot()
        counted = await asyncio.get_running_loop().run_in_executor(None, catalog.server_status, snapshot)
        return {**counted, "writes": {**committer.counters.as_dict(), **committer.backlog()}}

    state.status_sections["bucketCatalog"] = status
    committer.start_maintenance()


async def on_shutdown(state: Any) -> None:
    await state.ts_committer.close()
