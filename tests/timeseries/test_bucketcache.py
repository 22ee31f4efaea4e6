"""server/timeseries/bucketcache.py: entries are valid only for the exact stored bytes, memory stays under
the budget (CLOCK eviction gives referenced entries a second chance), arrays are read-only."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.timeseries.bucketcache import _ENTRY_OVERHEAD, BucketCache


def test_an_entry_serves_only_the_exact_stored_bytes_it_was_decoded_from():
    cache = BucketCache(budget=1 << 20)
    first = cache.entry("db.b", b"r1", b"packed-v1")
    cache.set_summary(first, {"meta": "a"}, 10)
    assert cache.entry("db.b", b"r1", b"packed-v1") is first
    rewritten = cache.entry("db.b", b"r1", b"packed-v2")  # the bucket was rewritten in place
    assert rewritten is not first and rewritten.summary is None
    assert cache.entry("db.other", b"r1", b"packed-v2") is not rewritten  # keyed by namespace too
    assert cache.stats()["hits"] == 1


def test_memory_stays_under_the_budget_and_referenced_entries_get_a_second_chance():
    cache = BucketCache(budget=2 * (700 + _ENTRY_OVERHEAD) + 100)  # two entries fit, three do not
    a = cache.entry("ns", b"a", b"x" * 700)
    cache.entry("ns", b"b", b"y" * 700)
    cache.entry("ns", b"a", b"x" * 700)  # a hit: a is referenced
    cache.entry("ns", b"c", b"z" * 700)  # over budget: b (not referenced) goes, a survives
    assert cache.used <= cache.budget
    assert cache.entry("ns", b"a", b"x" * 700) is a
    assert cache.stats()["evictions"] == 1
    column = np.arange(100, dtype=np.float64)
    cache.set_column(a, "v", (1, column))
    assert cache.used <= cache.budget
    with pytest.raises(ValueError):
        column[0] = 5.0  # shared by every reader: read-only


def test_parts_added_to_an_evicted_entry_are_not_counted():
    cache = BucketCache(budget=1000)
    old = cache.entry("ns", b"a", b"x" * 600)
    cache.entry("ns", b"b", b"y" * 600)  # evicts a
    used = cache.used
    cache.set_summary(old, {"k": 1}, 100)
    assert cache.used == used


def test_views_of_a_chunk_get_each_record_s_entry_as_entry_would():
    cache = BucketCache(budget=1 << 20)
    kept = cache.entry("ns", b"a", b"v1")
    records = [(b"a", b"v1"), (b"b", b"v2"), (b"a", b"v1"), (b"c", b"v3")]
    views = cache.views("ns", records, lambda rid, stored, opener, entry: (rid, stored, opener, entry), "opener")
    assert [(rid, stored, opener) for rid, stored, opener, _ in views] == [(r, s, "opener") for r, s in records]
    entries = [entry for *_, entry in views]
    assert entries[0] is kept and entries[2] is kept and kept.referenced
    assert entries[1] is cache.find("ns", b"b", b"v2") and entries[3] is cache.find("ns", b"c", b"v3")
    assert cache.stats()["hits"] == 2 and cache.stats()["misses"] == 3
    off = BucketCache(budget=0)
    assert [entry for *_, entry in off.views("ns", records, lambda *parts: parts, None)] == [None] * 4


def test_a_zero_budget_disables_caching():
    assert BucketCache(budget=0).entry("ns", b"a", b"x") is None


def test_find_answers_only_for_the_same_bytes_and_registers_nothing():
    cache = BucketCache(budget=1 << 20)
    assert cache.find("ns", b"a", b"x") is None
    assert cache.stats()["entries"] == 0 and cache.used == 0  # a pass over every bucket keeps nothing
    entry = cache.entry("ns", b"a", b"x")
    assert cache.find("ns", b"a", b"x") is entry
    assert cache.find("ns", b"a", b"y") is None  # the record was rewritten
    assert cache.stats()["entries"] == 1


def test_what_a_read_path_remembers_counts_in_the_budget():
    cache = BucketCache(budget=1 << 20)
    entry = cache.entry("ns", b"a", b"x" * 100)
    before = cache.used
    entry.memo["fast"] = (np.zeros(1000), {"v": np.zeros(1000)})
    assert cache.used - before >= 16_000 and entry.size == cache.used
    entry.memo["fast"] = False  # replaced: counted once
    assert cache.used - before < 16_000 + 1024
    small = BucketCache(budget=4000)
    first = small.entry("ns", b"a", b"x" * 100)
    first.memo["runs"] = np.zeros(1000)  # 8 KB remembered: over the budget, the entry goes
    assert small.stats()["entries"] <= 1 and small.used <= small.budget


def _rows(n: int, first: float) -> np.ndarray:
    rows = np.zeros((n, 7))  # a width-1 group's runs: 4 table columns + 3 facts
    rows[:, 0] = np.arange(n) + first
    return rows


def test_remembered_runs_of_buckets_remembered_together_join_as_one_slice_of_a_block():
    from tidemark.timeseries.groupruns import Runs

    cache = BucketCache(budget=1 << 22)
    entries = [cache.entry("ns", bytes([i]), b"x" * 100) for i in range(5)]
    refs = [cache.remember_runs(entry, "runs k", _rows(i + 1, 10.0 * i), {"r": i})[0] for i, entry in enumerate(entries)]
    assert entries[2].memo["runs k"] == (refs[2], {"r": 2})
    assert len({ref[0].serial for ref in refs}) == 1  # one block, side by side
    assert [ref[2] for ref in refs] == [0, 1, 3, 6, 10]
    picked = [refs[1], refs[2], refs[4]]  # a gap (bucket 3 left out): two slices
    runs = Runs.remembered(1, True, picked, [0, 1, 2], [7, 8, 9])
    assert runs.table[:, 0].tolist() == [10.0, 11.0, 20.0, 21.0, 22.0, 40.0, 41.0, 42.0, 43.0, 44.0]
    assert runs.seq.tolist() == [0, 0, 1, 1, 1, 2, 2, 2, 2, 2] and runs.owner.tolist()[:3] == [7, 7, 8]
    whole = Runs.remembered(1, True, refs[1:3], [0, 1], [0, 0])
    with pytest.raises(ValueError):
        whole.table[0, 0] = 1.0  # a view of the shared block: read-only


def test_run_blocks_count_in_the_budget_until_no_entry_holds_rows_in_them():
    from tidemark.timeseries import bucketcache

    cache = BucketCache(budget=1 << 22)
    block_bytes = bucketcache.BLOCK_ROWS * 7 * 8
    a = cache.entry("ns", b"a", b"x" * 100)
    before = cache.used
    cache.remember_runs(a, "runs k", _rows(2, 0.0), None)
    assert cache.used >= before + block_bytes
    big = cache.entry("ns", b"big", b"y" * 100)  # more runs than a block holds: a block of its own
    cache.remember_runs(big, "runs k", _rows(bucketcache.BLOCK_ROWS + 1, 0.0), None)
    assert cache.used >= before + block_bytes + (bucketcache.BLOCK_ROWS + 1) * 7 * 8
    cache.entry("ns", b"big", b"rewritten")  # the bucket changed: its block is no longer counted
    cache.entry("ns", b"a", b"rewritten")  # the last rows in the current block go: so does the block
    assert cache.used == 2 * (len(b"rewritten") + _ENTRY_OVERHEAD)
    cache.clear()
    assert cache.used == 0


def test_run_blocks_stay_under_a_small_budget():
    cache = BucketCache(budget=200_000)
    for i in range(400):
        entry = cache.entry("ns", i.to_bytes(2, "big"), b"x" * 300)
        if entry.memo.entry is not None:
            cache.remember_runs(entry, f"runs {i % 3}", _rows(3, float(i)), None)
        assert cache.used <= cache.budget


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=400), st.integers(1, 12))
def test_evictions_follow_the_clock_order_of_a_reference_model(keys, room):
    """Any sequence of lookups (misses insert, hits set ``referenced``) leaves exactly the entries a
    plain CLOCK model keeps: the hand takes the oldest entry, a referenced one goes to the back once."""
    size = 100 + _ENTRY_OVERHEAD
    cache = BucketCache(budget=room * size)
    model: list[list] = []  # [key, referenced], oldest first
    for k in keys:
        rid = k.to_bytes(2, "big")
        cache.entry("ns", rid, b"v" * 100)
        held = next((item for item in model if item[0] == rid), None)
        if held is not None:
            held[1] = True
            continue
        model.append([rid, False])
        while len(model) > room:
            oldest = model.pop(0)
            if oldest[1] and model:
                oldest[1] = False
                model.append(oldest)
        assert cache.used <= cache.budget
    assert [rid for _, rid in cache._entries] == [rid for rid, _ in model]
    assert [entry.referenced for entry in cache._entries.values()] == [ref for _, ref in model]
