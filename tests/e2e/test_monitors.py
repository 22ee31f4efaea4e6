"""What the monitoring tools read: mongotop lists only real namespaces (no ``admin.global`` from
``getLog: "global"``), serverStatus ``mem`` (mongostat's ``vsize``/``res``) is the process's own memory,
not the LMDB map's address-space reservation."""

from __future__ import annotations

import psutil
import pytest
from harness.mongo_tools import BIN, SKIP_REASON, run_tool, uri_args

pytestmark = pytest.mark.commands("top", "serverStatus", "getLog", "getParameter")


def test_top_lists_only_collections(db, client):
    db.watched.insert_one({"x": 1})
    client.admin.command({"getLog": "global"})
    client.admin.command({"getLog": "startupWarnings"})
    client.admin.command({"getParameter": "*"})
    db.command("dbHash")
    totals = client.admin.command("top")["totals"]
    assert f"{db.name}.watched" in totals
    assert "admin.global" not in totals
    assert "admin.startupWarnings" not in totals
    assert "admin.*" not in totals


@pytest.mark.slow
@pytest.mark.skipif(BIN is None, reason=SKIP_REASON)
def test_mongotop_shows_no_admin_global(start_server):
    srv = start_server()
    with srv.client() as client:
        client.app.orders.insert_one({"n": 1})
        client.admin.command({"getLog": "global"})  # what mongosh and Compass send on connect
        client.admin.command({"getLog": "startupWarnings"})
        result = run_tool("mongotop", *uri_args(srv.port), "--rowcount", "2", "1", timeout=60)
    assert result.returncode == 0, result.stdout
    assert "app.orders" in result.stdout
    assert "admin.global" not in result.stdout
    assert "admin.startupWarnings" not in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(BIN is None, reason=SKIP_REASON)
def test_mongostat_runs_and_vsize_is_not_the_map(start_server):
    srv = start_server()
    result = run_tool("mongostat", *uri_args(srv.port), "--rowcount", "1", "--json", timeout=60)
    assert result.returncode == 0, result.stdout
    assert "vsize" in result.stdout


@pytest.mark.slow
def test_server_status_memory_is_the_process_without_the_lmdb_map(start_server):
    srv = start_server()
    with srv.client() as client:
        mem = client.admin.command("serverStatus")["mem"]
        process = psutil.Process(srv.process.pid)
        info = process.memory_info()
        maps = process.memory_maps(grouped=True)
    lmdb = sum(m.size for m in maps if m.path.endswith("data.mdb")) if maps and hasattr(maps[0], "size") else None
    mib = 1024 * 1024
    assert abs(mem["resident"] - info.rss // mib) <= 32
    if lmdb is None:  # no per-mapping size on this platform: at least far below the raw VmSize
        assert mem["virtual"] < info.vms // mib
    else:
        expected = (info.vms - lmdb) // mib
        assert abs(mem["virtual"] - expected) <= max(64, expected // 10), (mem, info.vms // mib, lmdb // mib)
    assert mem["virtual"] >= mem["resident"]
    assert mem["virtual"] < 8 * 1024  # a sane process size, not a multi-GiB map reservation
