"""The systems measured side by side: name -> ``run(ctx) -> SystemResult`` (see bench.harness)."""

from __future__ import annotations

from collections.abc import Callable

from bench.harness import Context, SystemResult
from bench.peers import clickhouse, duckdb_peer, influx, lmdb_append, null, tidemark, victoria

PEERS: dict[str, Callable[[Context], SystemResult]] = {
    "tidemark": tidemark.run_timeseries,
    "tidemark-regular": tidemark.run_regular,
    "influxdb": influx.run,
    "victoria": victoria.run,
    "clickhouse": clickhouse.run,
    "duckdb": duckdb_peer.run,
    "null": null.run_count,
    "null-decode": null.run_decode,
    "lmdb-append": lmdb_append.run,
}
