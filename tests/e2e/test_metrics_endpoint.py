"""The Prometheus endpoint (--metricsPort): off by default, bound to --bind_ip, scraped with a real
HTTP client and parsed with prometheus-client's own text-format parser."""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
import urllib.request

import psutil
import pytest
from harness import free_port
from harness.server import ROOT
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.commands("insert", "find", "create")


def _text(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
        return response.read().decode()


def _scrape(port: int) -> dict:
    text = _text(port)
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
    assert samples[("tidemark_bucket_catalog_num_commits_total", ())] >= 1  # bucket catalog commits and sizes
    assert samples[("tidemark_bucket_catalog_num_measurements_committed_total", ())] >= 6
    assert samples[("tidemark_bucket_catalog_avg_num_measurements_per_commit", ())] >= 1
    assert ("tidemark_bucket_catalog_num_buckets_closed_due_to_count_total", ()) in samples  # closes by reason
    assert samples[("tidemark_bucket_catalog_memory_usage_bytes", ())] > 0
    assert samples[("tidemark_storage_data_bytes", ())] > 0
    assert samples[("tidemark_storage_file_bytes", ())] > 0
    assert samples[("tidemark_storage_group_commits_total", ())] >= 1
    assert ("tidemark_cursors_open", ()) in samples
    assert samples[("process_resident_memory_bytes", ())] > 10_000_000
    assert samples[("tidemark_ops_total", (("kind", "writes"),))] >= 2  # the two insert commands
    # bound to --bind_ip only, like the MongoDB port
    assert ("127.0.0.1", port) in _listening_ports(server.process.pid)
    assert ("0.0.0.0", port) not in _listening_ports(server.process.pid)


@pytest.mark.slow
def test_metrics_are_off_by_default(start_server):
    server = start_server()
    assert {port for _ip, port in _listening_ports(server.process.pid)} == {server.port}


@pytest.mark.slow
def test_a_taken_metrics_port_stops_start_up_with_exit_48(tmp_path, start_server):
    first = start_server()
    result = subprocess.run([sys.executable, "-m", "tidemark", "--port", str(free_port()), "--dbpath",
                             str(tmp_path / "other"), "--metricsPort", str(first.port)],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 48 and "Address already in use" in result.stderr


def _log_entries(server) -> list[dict]:
    import json

    return [json.loads(line) for line in server.log_text().splitlines() if line.startswith("{")]


@pytest.mark.slow
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


def lint_problems(text: str) -> list[str]:
    """What ``promtool check metrics`` reports, as explicit rules over prometheus-client's parse: HELP
    and TYPE on every family, counters end in ``_total``, no ``_count``/``_sum``/``_bucket`` suffix
    on a metric that is not a histogram or summary, snake_case names, no ``:``."""
    problems = []
    declared: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _hash, kind, name, *rest = line.split(" ", 3)
            declared.setdefault(name, {})[kind] = rest[0] if rest else ""
    for name, parts in declared.items():
        if not parts.get("HELP"):
            problems.append(f"{name}: no help text")
        if "TYPE" not in parts:
            problems.append(f"{name}: no TYPE")
        kind = parts.get("TYPE")
        if kind == "counter" and not name.endswith("_total"):
            problems.append(f"{name}: counter metrics should have \"_total\" suffix")
        if kind not in ("histogram", "summary") and name.endswith(("_count", "_sum", "_bucket")):
            problems.append(f"{name}: non-histogram and non-summary metrics should not have a _count, _sum "
                            "or _bucket suffix")
        if ":" in name or name != name.lower():
            problems.append(f"{name}: metric names should be snake_case without ':'")
    for family in text_string_to_metric_families(text):  # the text parses, every family has samples
        assert family.samples or family.type in ("counter", "gauge"), family.name
    return problems


@pytest.mark.slow
def test_metrics_pass_the_promtool_rules(start_server):
    port = free_port()
    server = start_server(args=("--metricsPort", str(port), "--bind_ip", "127.0.0.1"))
    client = server.client()
    client.m.create_collection("ts", timeseries={"timeField": "t", "metaField": "h"})
    client.m.ts.insert_many([{"t": datetime.datetime(2024, 1, 1, 0, i), "h": i % 2} for i in range(6)])
    list(client.m.ts.find())
    text = _text(port)
    assert lint_problems(text) == []
    promtool = shutil.which("promtool")
    if promtool is not None:  # the Debian package "prometheus" (not a make test prerequisite: 330 MB)
        result = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_lint_rules_catch_a_counter_without_total_and_a_count_gauge():
    text = ("# HELP a_count things\n# TYPE a_count gauge\na_count 1\n"
            "# HELP b_x things\n# TYPE b_x counter\nb_x 1\n")
    problems = lint_problems(text)
    assert any(p.startswith("a_count:") for p in problems)
    assert any(p.startswith("b_x:") for p in problems)
