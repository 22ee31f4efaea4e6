"""Start-up and shutdown of the time-series engine (a ``server.app`` lifecycle hook).

Start-up: replay the journal into full bucket documents (a restart closes all buckets), then create the
bucket catalog (``state.bucket_catalog``), the group committer (``state.ts_committer``), the periodic
checkpointer, and the ``serverStatus().bucketCatalog`` section. Shutdown: write every live bucket in
full so the next start has nothing to replay.
"""

from __future__ import annotations

import asyncio
from typing import Any

from server.timeseries.catalog import BucketCatalog, default_memory_threshold
from server.timeseries.commit import Committer, recover

CHECKPOINT_INTERVAL_SECONDS = 60.0


def _param(state: Any, name: str, default: Any) -> Any:
    try:
        return state.params[name]
    except Exception:  # noqa: BLE001 - parameters table without this entry
        return default


def _memory_threshold(state: Any) -> int:
    configured = _param(state, "timeseriesIdleBucketExpiryMemoryUsageThreshold", 0)
    return int(configured) if configured else default_memory_threshold()


async def on_startup(state: Any) -> None:
    engine = state.engine
    if engine is None:
        return
    await asyncio.get_running_loop().run_in_executor(None, recover, engine)
    catalog = BucketCatalog(
        max_count=int(_param(state, "timeseriesBucketMaxCount", 1000)),
        max_size=int(_param(state, "timeseriesBucketMaxSize", 128000)),
        min_count=int(_param(state, "timeseriesBucketMinCount", 10)),
        memory_threshold=_memory_threshold(state),
        expiry_per_attempt=int(_param(state, "timeseriesIdleBucketExpiryMaxCountPerAttempt", 3)),
    )
    committer = Committer(engine, catalog, checkpoint_interval=CHECKPOINT_INTERVAL_SECONDS)
    state.bucket_catalog = catalog
    state.ts_committer = committer
    sections = getattr(state, "status_sections", None)
    if sections is not None:
        sections["bucketCatalog"] = catalog.server_status
    committer.start_checkpointer()


async def on_shutdown(state: Any) -> None:
    committer = getattr(state, "ts_committer", None)
    if committer is not None:
        await committer.close()
