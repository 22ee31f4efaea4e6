"""kill -9 with many open time-series buckets: the restart replays the journal (timeseries/recovery.py), every
acknowledged measurement is there exactly once, and inserting continues into the recovered buckets.

Each measurement is ``{t, m: <meta of series s>, s, r}``: ``(s, r)`` names it, so the check compares, per
series, the set of rounds read back (and how often each) with the set acknowledged. Speed is not asserted.
"""

from __future__ import annotations

import datetime
import itertools
from collections import Counter
from typing import Any

import pytest
from harness.server import patched
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError, OperationFailure
from pymongo.write_concern import WriteConcern

BASE = datetime.datetime(2026, 1, 1)
ACKED = WriteConcern(w=1, j=True)
_names = itertools.count()
# a server whose recovery replays the journal in slices of ~2 KiB and is killed (SIGKILL) before the
# slice after the first n: a kill -9 during recovery, some slices done (their rows in stored buckets,
# their records trimmed), the others not
_KILLED_IN_RECOVERY = """
import os, signal
from tidemark.timeseries import recovery
recovery.SLICE_BYTES = 2048
_replay_slice, _done = recovery._replay_slice, []
def _slice(*args):
    if len(_done) >= %d:
        os.kill(os.getpid(), signal.SIGKILL)
    _done.append(1)
    return _replay_slice(*args)
recovery._replay_slice = _slice
"""


def _meta(kind: str, s: int) -> Any:
    return {"int": s, "str": f"host-{s}", "doc": {"s": s, "region": f"r{s % 7}"}}[kind]


def _measurement(kind: str, s: int, r: int) -> dict[str, Any]:
    return {"t": BASE + datetime.timedelta(seconds=10 * r), "m": _meta(kind, s), "s": s, "r": r, "v": float(r)}


def _batches(n_series: int, rounds: int, size: int, first_round: int = 0) -> list[list[tuple[int, int]]]:
    """(series, round) of every measurement, round by round, cut in batches of ``size``."""
    flat = [(s, r) for r in range(first_round, first_round + rounds) for s in range(n_series)]
    return [flat[at:at + size] for at in range(0, len(flat), size)]


def _insert(coll: Any, kind: str, batch: list[tuple[int, int]], ordered: bool) -> list[tuple[int, int]]:
    """Insert one batch; the (series, round) pairs the server acknowledged."""
    try:
        coll.insert_many([_measurement(kind, s, r) for s, r in batch], ordered=ordered)
    except BulkWriteError as error:
        failed = {e["index"] for e in error.details["writeErrors"]}
        if ordered:
            return batch[:min(failed)]
        return [pair for k, pair in enumerate(batch) if k not in failed]
    except OperationFailure:
        return []  # the whole command refused: nothing of it was applied
    return batch


def _check_exactly_once(db: Any, name: str, acked: list[tuple[int, int]]) -> None:
    counts = {(d["_id"]["s"], d["_id"]["r"]): d["n"] for d in db[name].aggregate(
        [{"$group": {"_id": {"s": "$s", "r": "$r"}, "n": {"$sum": 1}}}], allowDiskUse=True)}
    assert set(counts) == set(acked), (
        f"missing {sorted(set(acked) - set(counts))[:5]}, unacknowledged {sorted(set(counts) - set(acked))[:5]}")
    duplicated = {pair: n for pair, n in counts.items() if n != 1}
    assert not duplicated, f"measurements read back more than once: {list(duplicated.items())[:5]}"
    assert db[name].count_documents({}) == len(acked)


def _buckets_per_series(db: Any, name: str) -> Counter[int]:
    """How many stored buckets each series has (by its ``s``: every bucket holds one series)."""
    per = db[f"system.buckets.{name}"].aggregate([{"$group": {"_id": "$meta", "n": {"$sum": 1}}}])
    return Counter(d["n"] for d in per)


@pytest.mark.slow
@pytest.mark.commands("insert", "aggregate", "count")
def test_kill9_with_15000_open_series_keeps_every_acknowledged_measurement_exactly_once(start_server):
    n_series, rounds = 15_000, 3
    srv = start_server()
    client = srv.client()
    db = client.get_database("many", write_concern=ACKED)
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    acked: list[tuple[int, int]] = []
    for batch in _batches(n_series, rounds, 1_000):
        acked += _insert(db.c, "doc", batch, ordered=True)
    assert len(acked) == n_series * rounds
    client.close()
    srv.kill()

    srv.start(timeout=300)
    client = srv.client()
    db = client.get_database("many", write_concern=ACKED)
    _check_exactly_once(db, "c", acked)
    # inserting continues: into each series' recovered bucket (reopened by query), none duplicated
    for batch in _batches(n_series, 1, 1_000, first_round=rounds):
        acked += _insert(db.c, "doc", batch, ordered=False)
    _check_exactly_once(db, "c", acked)
    client.close()
    srv.kill()  # and once more, now that the recovered buckets took rows again
    srv.start(timeout=300)
    client = srv.client()
    db = client.get_database("many")
    _check_exactly_once(db, "c", acked)
    assert _buckets_per_series(db, "c") == {1: n_series}
    client.close()


@pytest.mark.slow
@pytest.mark.commands("insert", "aggregate", "setParameter")
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), n_series=st.integers(1, 400), rounds=st.integers(1, 4), size=st.integers(1, 700),
       ordered=st.booleans(), kind=st.sampled_from(["int", "str", "doc"]),
       killed_in_recovery=st.none() | st.integers(0, 8))
def test_kill9_between_random_batches_keeps_exactly_the_acknowledged_measurements(
        start_server, data, n_series, rounds, size, ordered, kind, killed_in_recovery):
    srv = _server(start_server)
    name = f"c{next(_names)}"
    batches = _batches(n_series, rounds, size)
    kill_after = data.draw(st.integers(0, len(batches)), label="kill_after")
    # a commit that fails while the load runs (disk full or I/O error): its batch is not acknowledged
    fault = data.draw(st.none() | st.tuples(st.integers(0, max(0, kill_after - 1)), st.sampled_from(["ENOSPC", "EIO"])),
                      label="fault")
    client = srv.client()
    db = client.get_database("rand", write_concern=ACKED)
    db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
    acked: list[tuple[int, int]] = []
    for k, batch in enumerate(batches[:kill_after]):
        if fault is not None and fault[0] == k:
            client.admin.command("setParameter", 1, failStorageCommitsForTest={"times": 1, "errno": fault[1]})
        acked += _insert(db[name], kind, batch, ordered)
    client.admin.command("setParameter", 1, failStorageCommitsForTest={"times": 0})
    client.close()
    srv.kill()
    if killed_in_recovery is not None:  # and killed again while recovering, after that many slices
        recovering = patched(srv, _KILLED_IN_RECOVERY % killed_in_recovery, f"r{name}")
        try:
            recovering.start(timeout=120)
        except RuntimeError:
            pass  # (it died in recovery, as meant)
        recovering.kill()

    srv.start(timeout=120)
    client = srv.client()
    db = client.get_database("rand", write_concern=ACKED)
    _check_exactly_once(db, name, acked)
    for batch in _batches(n_series, 1, size, first_round=rounds):
        acked += _insert(db[name], kind, batch, ordered)
    _check_exactly_once(db, name, acked)
    assert set(_buckets_per_series(db, name)) == {1}
    client.close()


_servers: dict[int, Any] = {}


def _server(start_server: Any) -> Any:
    """One server per test run of the Hypothesis family (each example uses a collection of its own)."""
    srv = _servers.get(id(start_server))
    if srv is None or not srv.running:
        srv = start_server(params={"enableTestCommands": 1})
        _servers.clear()
        _servers[id(start_server)] = srv
    return srv


def _catalog(client: Any) -> dict[str, int]:
    return client.admin.command("serverStatus")["bucketCatalog"]


@pytest.mark.slow
@pytest.mark.commands("insert", "aggregate", "serverStatus")
def test_series_beyond_the_memory_threshold_do_not_all_reopen_every_round_and_after_kill9_once_each(start_server):
    """A catalog memory threshold lowered so that about 2/3 of 3,000 one-row series fit (a million series
    at the default threshold, in small), round after round: the buckets reopened by query and not used
    again are closed first, so the resident ones stay and a round reopens about the series that do not
    fit (least recently used first, each reopened bucket closed the resident one the round reached next:
    every series of every round, 4,176 reopens in two rounds). After kill -9 every series' bucket is
    reopened once, and every acknowledged measurement is there once."""
    n_series, threshold = 3_000, 6 * 1024 * 1024
    srv = start_server(params={"timeseriesIdleBucketExpiryMemoryUsageThreshold": threshold})
    client = srv.client()
    db = client.get_database("cycle", write_concern=ACKED)
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    acked: list[tuple[int, int]] = []
    for batch in _batches(n_series, 1, 1_000):
        acked += _insert(db.c, "doc", batch, ordered=True)
    assert 0 < _catalog(client)["numBucketsClosedDueToMemoryThreshold"] < n_series // 2
    for batch in _batches(n_series, 2, 1_000, first_round=1):
        acked += _insert(db.c, "doc", batch, ordered=True)
        # within the threshold, but for the closed buckets awaiting their full writes and one insert's
        assert _catalog(client)["memoryUsage"] <= threshold * 5 // 4 + 1_000 * 4096
    # two rounds; every series that left the resident set counts, resumed or reopened by query (before
    # the probation queue: 4,176 reopens; with it, but before resuming, fewer reopens, yet 1,176 of the
    # series opened a second bucket instead, their expired one still awaiting its full write)
    reopened = _catalog(client)["numBucketsReopened"]
    assert 0 < reopened <= n_series * 3 // 2
    _check_exactly_once(db, "c", acked)
    assert _buckets_per_series(db, "c") == {1: n_series}
    client.close()
    srv.kill()

    srv.start(timeout=300)
    client = srv.client()
    db = client.get_database("cycle", write_concern=ACKED)
    for batch in _batches(n_series, 1, 1_000, first_round=3):
        acked += _insert(db.c, "doc", batch, ordered=True)
    assert _catalog(client)["numBucketsReopened"] == n_series  # each series' bucket once, by query
    _check_exactly_once(db, "c", acked)
    assert _buckets_per_series(db, "c") == {1: n_series}
    client.close()


@pytest.mark.slow
@pytest.mark.commands("insert", "aggregate", "serverStatus")
def test_series_resume_their_buckets_awaiting_full_writes_one_bucket_each_and_after_kill9(start_server):
    """Two groups of 1,000 series alternate, one measurement per series per round, at a threshold that
    holds fewer than a group: each group's buckets expire while the other group's insert routes, and the
    next round reaches them while their full writes still wait (a commit takes FULL_WRITES_PER_COMMIT of
    them). Each series resumes its bucket (mongod reopens the one it closed): one bucket per series
    (before: ~700 of the 2,000 series had two). The catalog's memory stays within the threshold + the
    leaving allowance + one insert's buckets twice (the ones it opens or resumes, still uncommitted, and
    as many it expires, awaiting their full writes). After kill -9, every acknowledged measurement is there
    once, and the next round still finds one bucket per series."""
    group, threshold = 1_000, 2 * 1024 * 1024
    srv = start_server(params={"timeseriesIdleBucketExpiryMemoryUsageThreshold": threshold})
    client = srv.client()
    db = client.get_database("alternate", write_concern=ACKED)
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    acked: list[tuple[int, int]] = []
    for r in range(3):
        for first in (0, group):
            acked += _insert(db.c, "doc", [(s, r) for s in range(first, first + group)], ordered=True)
            assert _catalog(client)["memoryUsage"] <= threshold + (1 << 20) + 2 * group * 4096
    assert _catalog(client)["numBucketsReopened"] > 0
    _check_exactly_once(db, "c", acked)
    assert _buckets_per_series(db, "c") == {1: 2 * group}
    client.close()
    srv.kill()

    srv.start(timeout=300)
    client = srv.client()
    db = client.get_database("alternate", write_concern=ACKED)
    _check_exactly_once(db, "c", acked)
    for first in (0, group):
        acked += _insert(db.c, "doc", [(s, 3) for s in range(first, first + group)], ordered=True)
    _check_exactly_once(db, "c", acked)
    assert _buckets_per_series(db, "c") == {1: 2 * group}
    client.close()
