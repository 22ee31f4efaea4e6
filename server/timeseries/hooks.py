"""Start-up and shutdown of the time-series engine (a ``server.app`` lifecycle hook).

Start-up: replay the journal into full bucket documents (recovery.py; a restart closes all buckets),
then create the bucket catalog (``state.bucket_catalog``), the group committer (``state.ts_committer``)
with its maintenance task (archived buckets leaving memory, checkpoints), and the
``serverStatus().bucketCatalog`` section. Shutdown: write every bucket with unwritten rows in full, so
the next start has nothing to replay.
"""

from __future__ import annotations

import asyncio
from typing import Any

from server.timeseries.catalog import BucketCatalog
from server.timeseries.commit import Committer
from server.timeseries.recovery import recover


async def on_startup(state: Any) -> None:
    await asyncio.get_running_loop().run_in_executor(None, recover, state.engine)
    catalog = BucketCatalog(memory_threshold=state.params["timeseriesIdleBucketExpiryMemoryUsageThreshold"])
    committer = Committer(state.engine, catalog)
    state.bucket_catalog = catalog
    state.ts_committer = committer

    def status() -> dict[str, Any]:
        return {**catalog.server_status(), "writes": committer.counters.as_dict()}

    state.status_sections["bucketCatalog"] = status
    committer.start_maintenance()


async def on_shutdown(state: Any) -> None:
    await state.ts_committer.close()
