"""The Prometheus metrics endpoint (``--metricsPort``, off by default), served by prometheus-client.

``GET http://<bind_ip>:<metricsPort>/metrics`` answers the Prometheus text format. The library's HTTP
server runs in its own daemon thread per bound address (the same ``--bind_ip`` list as the MongoDB
port). Process-wide state belongs to the event loop, so a scrape asks the loop for one consistent
snapshot of it (opcounters, connections, cursors, per-command latency histograms from server/top.py,
the ``serverStatus`` sections such as ``bucketCatalog``) and reads storage figures through a short read
transaction in the scrape thread; nothing is computed between scrapes.

Families (``tidemark_`` prefix): ``opcounters_total{type}``, ``connections{state}``,
``connections_created_total``, ``network_{bytes_in,bytes_out,requests}_total``,
``command_duration_seconds{command}`` (histogram), ``op_latency_seconds_total{kind}``/``ops_total{kind}``,
``cursors_open``, ``bucket_catalog_<field>`` (every number of serverStatus ``bucketCatalog``, whatever
the time-series engine reports there: the ``num*`` figures that only grow as counters ``..._total``, the
others as gauges, ``memory_usage_bytes``), ``storage_{data,index,file}_bytes``,
``storage_group_commits_total`` (fsynced commits: the journal), ``storage_writes_total``,
``storage_map_size_bytes``, ``uptime_seconds``; plus the library's ``process_*`` (memory, CPU, fds).

The endpoint has no authentication (mongod has no such port to protect): with ``--auth`` the start-up
logs a warning (id 4615613, also a ``startupWarnings`` line) that it must be bound to a trusted
interface, since anyone who reaches it reads the server's activity.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from tidemark import log

SCRAPE_TIMEOUT_SECONDS = 5.0
HISTOGRAM_POWERS = range(6, 25, 2)  # bucket bounds 2^k microseconds: 64 us, 256 us, ... 16.8 s


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# bucketCatalog figures that go up and down (the other ``num*`` figures only grow: counters).
_BUCKET_CATALOG_GAUGES = frozenset({"numBuckets", "numOpenBuckets", "numIdleBuckets", "numArchivedBuckets",
                                    "memoryUsage", "avgNumMeasurementsPerCommit"})


def _bucket_catalog_family(name: str, value: float) -> CounterMetricFamily | GaugeMetricFamily:
    """One serverStatus ``bucketCatalog`` number: a counter (``..._total``) when it only grows, else a
    gauge (``memoryUsage`` in bytes: ``..._memory_usage_bytes``)."""
    help_text = f"serverStatus bucketCatalog.{name}"
    metric = f"tidemark_bucket_catalog_{_snake(name)}"
    if name.startswith("num") and name not in _BUCKET_CATALOG_GAUGES:
        return CounterMetricFamily(metric, help_text, value=value)  # exposed as <metric>_total
    if name == "memoryUsage":
        metric += "_bytes"
    return GaugeMetricFamily(metric, help_text, value=value)


class ServerCollector:
    """Builds the metric families of one server at each scrape (scrape thread)."""

    def __init__(self, state, loop: asyncio.AbstractEventLoop):
        self.state = state
        self.loop = loop

    async def _snapshot(self) -> dict[str, Any]:
        state = self.state
        sections = {}
        for name, provider in list(state.status_sections.items()):
            try:
                section = provider()
                sections[name] = await section if inspect.isawaitable(section) else section
            except Exception:  # noqa: BLE001 - one broken section must not break the scrape
                sections[name] = {}
        top = state.top
        return {
            "opcounters": dict(state.opcounters),
            "connections": (state.connections_current, state.connections_active, state.connections_total),
            "network": (state.bytes_in, state.bytes_out, state.num_requests),
            "cursors": len(state.cursors),
            "commands": {name: (list(h.counts), h.latency, h.ops) for name, h in top.by_command.items()},
            "latencies": {kind: (h.latency, h.ops) for kind, h in top.server.items()},
            "sections": sections,
            "uptime": time.monotonic() - state.started_monotonic,
        }

    def _storage(self) -> dict[str, Any]:
        engine = self.state.engine
        data = index = 0
        with engine.read() as r:
            for db in r.list_databases():
                for info in r.list_collections(db):
                    data += r.data_size(info)
                    index += r.total_index_size(info)
        files = 0
        dbpath = self.state.options.dbpath
        for entry in os.scandir(dbpath):
            if entry.is_file():
                files += entry.stat().st_blocks * 512
        return {"data": data, "index": index, "files": files, "engine": dict(engine.stats)}

    def collect(self) -> Iterator[Any]:
        snap = asyncio.run_coroutine_threadsafe(self._snapshot(), self.loop).result(SCRAPE_TIMEOUT_SECONDS)
        opcounters = CounterMetricFamily("tidemark_opcounters", "operations by type (serverStatus opcounters)",
                                         labels=["type"])
        for kind, n in snap["opcounters"].items():
            opcounters.add_metric([kind], n)
        yield opcounters
        current, active, created = snap["connections"]
        connections = GaugeMetricFamily("tidemark_connections", "client connections", labels=["state"])
        connections.add_metric(["current"], current)
        connections.add_metric(["active"], active)
        yield connections
        yield CounterMetricFamily("tidemark_connections_created", "connections accepted since start-up",
                                  value=created)
        bytes_in, bytes_out, requests = snap["network"]
        yield CounterMetricFamily("tidemark_network_bytes_in", "bytes received", value=bytes_in)
        yield CounterMetricFamily("tidemark_network_bytes_out", "bytes sent", value=bytes_out)
        yield CounterMetricFamily("tidemark_network_requests", "requests received", value=requests)
        yield GaugeMetricFamily("tidemark_cursors_open", "open cursors", value=snap["cursors"])
        yield self._command_histograms(snap["commands"])
        latency = CounterMetricFamily("tidemark_op_latency_seconds", "time spent in operations by kind "
                                      "(serverStatus opLatencies)", labels=["kind"])
        ops = CounterMetricFamily("tidemark_ops", "operations by kind (serverStatus opLatencies)", labels=["kind"])
        for kind, (micros, n) in snap["latencies"].items():
            latency.add_metric([kind], micros / 1e6)
            ops.add_metric([kind], n)
        yield latency
        yield ops
        for name, value in (snap["sections"].get("bucketCatalog") or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                yield _bucket_catalog_family(name, value)
        storage = self._storage()
        yield GaugeMetricFamily("tidemark_storage_data_bytes", "BSON bytes of all collections", value=storage["data"])
        yield GaugeMetricFamily("tidemark_storage_index_bytes", "bytes of all indexes", value=storage["index"])
        yield GaugeMetricFamily("tidemark_storage_file_bytes", "bytes allocated by the files under --dbpath",
                                value=storage["files"])
        engine = storage["engine"]
        yield CounterMetricFamily("tidemark_storage_group_commits", "durable (fsynced) group commits",
                                  value=engine.get("commits", 0))
        yield CounterMetricFamily("tidemark_storage_writes", "write functions committed",
                                  value=engine.get("writes", 0))
        yield GaugeMetricFamily("tidemark_storage_map_size_bytes", "LMDB map size", value=engine.get("map_size", 0))
        yield GaugeMetricFamily("tidemark_uptime_seconds", "seconds since start-up", value=snap["uptime"])

    @staticmethod
    def _command_histograms(commands: dict[str, tuple]) -> HistogramMetricFamily:
        """Top's power-of-two microsecond buckets, reported at every fourth power of two (64 us .. 16.8 s)
        so that every command has the same boundaries."""
        family = HistogramMetricFamily("tidemark_command_duration_seconds", "command latency by command name",
                                       labels=["command"])
        for name, (counts, micros, n) in sorted(commands.items()):
            buckets = [(repr((1 << k) / 1e6), sum(counts[: k + 1])) for k in HISTOGRAM_POWERS]
            buckets.append(("+Inf", n))
            family.add_metric([name], buckets, sum_value=micros / 1e6)
        return family


class MetricsEndpoint:
    """The running endpoint: one HTTP server per bound address."""

    def __init__(self, servers: list):
        self.servers = servers

    def stop(self) -> None:
        for httpd, thread in self.servers:
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=SCRAPE_TIMEOUT_SECONDS)
        self.servers = []


def start(state, hosts: list[str], port: int) -> MetricsEndpoint:
    """Serve ``/metrics`` on every host of ``hosts`` (raises OSError when the port is taken)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServerCollector(state, asyncio.get_running_loop()))
    ProcessCollector(registry=registry)
    servers = []
    try:
        for host in hosts:
            servers.append(start_http_server(port, addr=host, registry=registry))
    except OSError:
        MetricsEndpoint(servers).stop()
        raise
    if state.options.auth:
        log.warning(
            "CONTROL", 4615613,
            "The Prometheus metrics port is not protected by access control: anyone who can reach it reads "
            "the server's activity. Bind it to a trusted interface only (firewall it or use --bind_ip)",
            ctx="initandlisten", startup=True, port=port, address=",".join(hosts),
        )
    return MetricsEndpoint(servers)
