"""20,000 mutated wire frames (bench/wire_fuzz.py; the benchmark sends 100,000): no crash, no hang,
no InternalError reply and no reply leaking internals — while a concurrent client doing ping, insert
and find sees no error and correct results — and the server's memory high-water mark (VmHWM) stays
under 1 GB: among the frames are regexes with counted repetitions near and above 65,535, nested
counted groups and deep nesting (issue 21: one ``a{99999999}`` used to take 23 GB)."""

from __future__ import annotations

import pytest
from harness.innocent import InnocentClient

from bench import wire_fuzz

FRAMES = 20_000
MAX_HWM_MB = 1024


def _high_water_mark_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.slow
@pytest.mark.commands("ping", "insert", "find")
def test_twenty_thousand_mutated_frames(start_server):
    srv = start_server()
    with InnocentClient(srv) as innocent:
        report = wire_fuzz.run(srv.port, FRAMES, seed=20240601)
    assert report.frames >= FRAMES
    assert report.replies > FRAMES // 3  # most frames reached a handler, not only the parser
    assert not report.internal_errors, report.internal_errors[:3]
    assert not report.leaks, report.leaks[:3]
    assert report.hangs == 0 and report.unanswered_pings == 0, report.summary()
    assert not innocent.errors, innocent.errors[:1]
    assert innocent.rounds > 10
    hwm_mb = _high_water_mark_mb(srv.process.pid)
    assert hwm_mb < MAX_HWM_MB, f"server peak RSS {hwm_mb:.0f} MB"
    check = srv.client()
    assert check.innocent.c.count_documents({}) == innocent.rounds
    check.close()
    assert srv.running
    assert srv.terminate() == 0  # and it still shuts down cleanly
