"""bench.rounds' pure parts: figures out of report.json, merged over rounds, the side-by-side table."""

from __future__ import annotations

from bench.rounds import INGEST, STORAGE, figures_of, markdown, merge


def _report(tidemark_cpu: float, victoria_cpu: float) -> dict:
    return {"systems": [
        {"name": "tidemark", "ingest": {"replay": {"cpu_ms_per_1000_rows": 5.0}}, "storage": {"bytes_per_row": 4.9},
         "queries": {"lastpoint": {"cpu_median_ms": tidemark_cpu}}},
        {"name": "victoria", "ingest": {"line-protocol": {"cpu_ms_per_1000_rows": 6.0}},
         "storage": {"bytes_per_row": 4.0}, "queries": {"lastpoint": {"cpu_median_ms": victoria_cpu},
                                                        "groupby-orderby-limit": {"cpu_median_ms": None}}},
        {"name": "duckdb", "ingest": {"bulk": {"cpu_ms_per_1000_rows": None}}, "storage": {"bytes_per_row": 9.0},
         "queries": {}},
    ]}


def test_figures_take_each_systems_network_ingest_storage_and_query_cpu():
    figs = figures_of(_report(2.0, 4.0))
    assert figs["tidemark"] == {INGEST: 5.0, STORAGE: 4.9, "lastpoint, server CPU ms": 2.0}
    assert figs["victoria"] == {INGEST: 6.0, STORAGE: 4.0, "lastpoint, server CPU ms": 4.0}
    assert figs["duckdb"] == {STORAGE: 9.0}


def test_table_gives_medians_ranges_best_peer_and_ratio():
    table = merge([figures_of(_report(t, v)) for t, v in ((2.0, 4.0), (3.0, 5.0), (2.5, 4.5))])
    text = markdown(table, ["tidemark", "victoria", "duckdb"])
    assert "| lastpoint, server CPU ms | 2.50 (2.00–3.00) | 4.50 (4.00–5.00) | n/a | victoria | 0.56× |" in text
    assert "| bytes on disk / row | 4.90 (4.90–4.90) | 4.00 (4.00–4.00) | 9.00 (9.00–9.00) | victoria | 1.23× |" in text
    assert f"| {INGEST} | 5.00 (5.00–5.00) | 6.00 (6.00–6.00) | n/a | victoria | 0.83× |" in text


def test_schedule_warms_up_round_ones_first_system_then_alternates_the_order():
    from bench.rounds import WARMUP, schedule

    assert schedule(["tidemark", "victoria", "duckdb"], 3, warmup=True) == [
        (WARMUP, "tidemark"),
        (1, "tidemark"), (1, "victoria"), (1, "duckdb"),
        (2, "duckdb"), (2, "victoria"), (2, "tidemark"),
        (3, "tidemark"), (3, "victoria"), (3, "duckdb"),
    ]
    assert schedule(["tidemark", "victoria"], 2, warmup=False) == [
        (1, "tidemark"), (1, "victoria"), (2, "victoria"), (2, "tidemark")]
    assert schedule(["tidemark"], 0, warmup=True) == []
