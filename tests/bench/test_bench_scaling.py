"""bench.scaling's pure parts and the harness's memory readings (issue 23.2)."""

from __future__ import annotations

import os

from bench.harness import RssSampler, memory_status
from bench.queries import HOUR_MS
from bench.scaling import markdown, windows


def test_memory_status_reads_anon_file_and_peak():
    mem = memory_status(os.getpid())
    assert mem["anon"] > 0 and mem["file"] > 0
    assert mem["hwm"] >= mem["anon"]


def test_memory_status_of_a_gone_process_is_zero():
    assert memory_status(2**22 + 12345) == {"anon": 0, "file": 0, "hwm": 0}


def test_rss_sampler_sees_a_growth_of_anonymous_memory():
    sampler = RssSampler(os.getpid(), interval_s=0.005)
    before = memory_status(os.getpid())["anon"]
    block = bytearray(64 << 20)  # touched: zero-filled pages count once written
    block[::4096] = b"\x01" * len(block[::4096])
    peak = sampler.stop()
    del block
    assert peak["anon"] >= before + (60 << 20)


def test_windows_are_one_host_one_hour_inside_the_first_day_and_seeded():
    ws = windows(100, 20, 123)
    assert ws == windows(100, 20, 123) and ws != windows(100, 20, 124)
    for p in ws:
        assert p.end_ms - p.start_ms == HOUR_MS and len(p.hosts) == 1
        assert p.start_ms >= 1451606400000 and p.end_ms <= 1451606400000 + 86_400_000


def test_markdown_gives_ratios_to_the_first_size():
    mb = 1 << 20
    row = {"days": 1, "rows": 864_000, "ingest_ms_per_1000_rows": 5.0, "rows_per_s": 100_000.0,
           "one_host_hour_ms": [2.0, 2.0, 2.0], "lastpoint_ms": [4.0], "lastpoint_after_insert_ms": [6.0],
           "restart_first_lastpoint_ms": 150.0, "restart_first_lastpoint_anon_mb": 5.0,
           "load_peak": {"hwm": 300 * mb, "anon": 250 * mb, "file": 50 * mb},
           "end_memory": {"hwm": 300 * mb, "anon": 100 * mb, "file": 50 * mb}}
    bigger = dict(row, days=16, ingest_ms_per_1000_rows=5.5, one_host_hour_ms=[3.0])
    text = markdown([row, bigger])
    assert "| 16 | 864,000 | 5.50 (1.10×)" in text
    assert "3.00 (3.00–3.00) (1.50×)" in text
    assert "6.00 (6.00–6.00) (1.50×)" in text  # after insert vs read-only
    assert "| 300 (250 / 50) | 150 (100 / 50) |" in text
