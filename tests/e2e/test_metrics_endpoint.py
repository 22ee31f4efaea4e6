"""The Prometheus endpoint (--metricsPort): off by default, bound to --bind_ip, scraped with a real
HTTP client and parsed with prometheus-client's own text-format parser."""

from __future__ import annotations

import datetime
import subprocess
import sys
import urllib.request

import psutil
import pytest
from harness import free_port
from harness.server import ROOT
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.commands("insert", "find", "create")


def _scrape(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _listening_ports(pid: int) -> set[tuple[str, int]]:
    return {(c.laddr.ip, c.laddr.port) for c in psutil.Process(pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN}


def test_metrics_are_served_in_prometheus_text_format(start_server):
    port = free_port()
    server = start_server(args=("--metricsPort", str(port), "--bind_ip", "127.0.0.1"))
    client = server.client()
    client.m.c.insert_many([{"i": i} for i in range(10)])
    list(client.m.c.find())
    client.m.create_collection("ts", timeseries={"timeField": "t", "metaField": "h"})
    client.m.ts.insert_many([{"t": datetime.datetime(2024, 1, 1, 0, i), "h": i % 2} for i in range(6)])
    samples = _scrape(port)
    assert samples[("tidemark_opcounters_total", (("type", "insert"),))] >= 16
    assert samples[("tidemark_opcounters_total", (("type", "query"),))] >= 1
    assert samples[("tidemark_connections", (("state", "current"),))] >= 1
    assert samples[("tidemark_connections_created_total", ())] >= 1
    assert samples[("tidemark_command_duration_seconds_count", (("command", "insert"),))] >= 2
    inf = samples[("tidemark_command_duration_seconds_bucket", (("command", "find"), ("le", "+Inf")))]
    assert inf == samples[("tidemark_command_duration_seconds_count", (("command", "find"),))] >= 1
    assert samples[("tidemark_bucket_catalog_num_open_buckets", ())] >= 2  # the two series just written
    assert samples[("tidemark_bucket_catalog_num_commits", ())] >= 1  # bucket catalog commits and sizes
    assert samples[("tidemark_bucket_catalog_num_measurements_committed", ())] >= 6
    assert samples[("tidemark_bucket_catalog_avg_num_measurements_per_commit", ())] >= 1
    assert ("tidemark_bucket_catalog_num_buckets_closed_due_to_count", ()) in samples  # closes by reason
    assert samples[("tidemark_storage_data_bytes", ())] > 0
    assert samples[("tidemark_storage_file_bytes", ())] > 0
    assert samples[("tidemark_storage_group_commits_total", ())] >= 1
    assert ("tidemark_cursors_open", ()) in samples
    assert samples[("process_resident_memory_bytes", ())] > 10_000_000
    assert samples[("tidemark_ops_total", (("kind", "writes"),))] >= 2  # the two insert commands
    # bound to --bind_ip only, like the MongoDB port
    assert ("127.0.0.1", port) in _listening_ports(server.process.pid)
    assert ("0.0.0.0", port) not in _listening_ports(server.process.pid)


def test_metrics_are_off_by_default(start_server):
    server = start_server()
    assert {port for _ip, port in _listening_ports(server.process.pid)} == {server.port}


def test_a_taken_metrics_port_stops_start_up_with_exit_48(tmp_path, start_server):
    first = start_server()
    result = subprocess.run([sys.executable, "-m", "server", "--port", str(free_port()), "--dbpath",
                             str(tmp_path / "other"), "--metricsPort", str(first.port)],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 48 and "Address already in use" in result.stderr


def _log_entries(server) -> list[dict]:
    import json

    return [json.loads(line) for line in server.log_text().splitlines() if line.startswith("{")]


def test_metrics_port_with_auth_warns_that_it_is_not_behind_authentication(start_server):
    port = free_port()
    server = start_server(args=("--auth", "--metricsPort", str(port)))
    warnings = [e for e in _log_entries(server) if e.get("id") == 4615613]
    assert len(warnings) == 1, server.log_text()[-2000:]
    warning = warnings[0]
    assert warning["s"] == "W" and "trusted interface" in warning["msg"]
    assert "not protected by access control" in warning["msg"]
    assert warning["attr"]["port"] == port and warning["attr"]["address"] == "127.0.0.1"
    # without --auth the whole server is open (mongod's own warning 22120 says so): no second warning
    open_server = start_server(args=("--metricsPort", str(free_port())))
    assert not [e for e in _log_entries(open_server) if e.get("id") == 4615613]
    assert [e for e in _log_entries(open_server) if e.get("id") == 22120]
