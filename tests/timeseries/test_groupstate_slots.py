"""The columnar ``$group``'s group slots (groupstate ``DenseGroups.slots``), pure: over several batches of
run tokens (meta index, truncated ms), each token's slot is the first-seen index of its generic group key
(``stage_group.group_key`` of the ``_id`` the generic stage evaluates), whether the keys are matched as
arrays (every meta's ``_id`` a template), by the dicts (a meta without one, from then on), or both in
one query; the slots' ``_id``s and the ``$limit``'s picked documents are the generic ones, and
``materialize`` hands on each slot's first run token (one per group, never every token seen)."""

from __future__ import annotations

import datetime as dt

import bson
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.pipeline import PipelineContext
from tidemark.query.stage_group import group_key
from tidemark.query.values import MISSING
from tidemark.timeseries import columnar
from tidemark.timeseries.groupstate import DenseGroups

MINUTE = 60_000
EPOCH = dt.datetime(1970, 1, 1)
# metas 0 and 1 share the _id's host part (one template part), 2 has none (a missing part), 3 and 4
# are arrays (a template, different keys), 5's host is a date: with "t" a time part it is still a template
METAS = [{"h": "a", "r": 1}, {"h": "a", "r": 2}, {"r": 3}, {"h": ["x"]}, {"h": ["y", 1]},
         {"h": dt.datetime(2020, 1, 1)}, {"h": 2}, {"h": 2.0}]
IDS = {
    "time-host": {"t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "h": "$m.h"},
    "host-time": {"h": "$m.h", "t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}},
    "time": {"$dateTrunc": {"date": "$t", "unit": "minute"}},
    "host": "$m.h",
    # a time part inside a sub-document: no template for any meta (the dicts throughout)
    "nested": {"a": {"t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}}, "h": "$m.h"},
    # a time part inside a sub-document beside a top-level one: no template either (the nested date
    # is not fixed per meta)
    "nested-and-top": {"a": {"t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}},
                       "t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "h": "$m.h"},
    # as time-host, but meta 6 made without a template (below): the arrays, then the dicts from there on
    "mixed": {"t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "h": "$m.h"},
}


def _plan(id_spec):
    group = {"$group": {"_id": id_spec, "n": {"$count": {}}}}
    plan = columnar.plan(None, [group], "t", "m")
    assert plan is not None
    return plan


@st.composite
def _batches(draw):
    """Batches of tokens (owner, minute, second within it), as ``_run_slots`` hands them: a run's each,
    a token repeating (runs of one group cut apart: buckets of one meta, rows out of time order)."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        tokens = draw(st.lists(st.tuples(st.integers(0, len(METAS) - 1), st.integers(0, 6)), min_size=1,
                               max_size=25))
        out.append([(owner, minute, draw(st.integers(0, 59))) for owner, minute in tokens])
    return out


@st.composite
def _distinct_batches(draw):
    """As ``_batches``, each batch's tokens distinct (no key repeats within a batch: every token of a
    batch is a new group or a known one), several batches (keys known from earlier ones)."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        tokens = draw(st.lists(st.tuples(st.integers(0, len(METAS) - 1), st.integers(0, 6)), min_size=1,
                               max_size=25, unique=True))
        out.append([(owner, minute, draw(st.integers(0, 59))) for owner, minute in tokens])
    return out


@settings(max_examples=300, deadline=None)
@given(shape=st.sampled_from(sorted(IDS)), batches=_batches(), limit=st.integers(1, 40))
def test_slots_are_the_first_seen_generic_keys(shape, batches, limit):
    _check_slots(shape, batches, limit)


@settings(max_examples=300, deadline=None)
@given(shape=st.sampled_from(sorted(IDS)), batches=_distinct_batches(), limit=st.integers(1, 40))
def test_slots_of_distinct_tokens_are_the_first_seen_generic_keys(shape, batches, limit):
    _check_slots(shape, batches, limit)


def _check_slots(shape, batches, limit):
    plan = _plan(IDS[shape])
    timed = plan.unit_ms is not None
    ctx = PipelineContext()
    if shape == "mixed":
        plan.id_shape = None  # (templates made here, not taken from time-host's examples: same _id)
    dense = DenseGroups(plan, ctx, [(True, meta) for meta in METAS], [bson.encode({"m": meta}) for meta in METAS])
    if shape == "mixed":
        template = dense._ids._template
        dense._ids._template = lambda idv, trunc: None if idv.get("h") == 2 else template(idv, trunc)
    expected_slot: dict = {}
    expected_ids: list = []
    first_tokens: dict = {}  # each slot's first token
    for batch in batches:
        owners = np.asarray([owner for owner, _, _ in batch], dtype=np.int64)
        truncs = np.asarray([minute * MINUTE for _, minute, _ in batch], dtype=np.int64)
        firsts = truncs + np.asarray([second * 1000 for _, _, second in batch], dtype=np.int64)
        # a batch of one meta's tokens may say so (``meta``: as ``feed`` does for a _id reading no meta)
        one = int(owners[0]) if len(set(owners.tolist())) == 1 and batch[0][2] % 2 else None
        got, created = dense.slots(owners, truncs if timed else None, firsts, one)
        if len(created) == len(got):  # every token made a slot: they are the next ones, in order (``feed``)
            assert got.tolist() == list(range(len(expected_ids), len(expected_ids) + len(got)))
        want, want_created = [], []
        for r, (owner, minute, second) in enumerate(batch):
            rep = {"t": EPOCH + dt.timedelta(minutes=minute, seconds=second), "m": METAS[owner]}
            idv = plan.id_fn(rep, ctx.variables)
            key = group_key(idv)
            if key not in expected_slot:
                expected_slot[key] = len(expected_ids)
                expected_ids.append(idv)
                want_created.append(r)
                first_tokens[(owner, minute * MINUTE if timed else None)] = expected_slot[key]
            want.append(expected_slot[key])
        assert got.tolist() == want
        assert created.tolist() == want_created
    # (before any _id is made) the $limit's documents: only the picked ones, in the asked order
    picked = list(range(len(expected_ids)))[::-1][:limit]
    shown = [None if idv is MISSING else idv for idv in expected_ids]
    assert [d["_id"] for d in dense.results(picked)] == [shown[i] for i in picked]
    assert [d["_id"] for d in dense.results()] == shown
    # the token cache handed on: each group's first run token with its accumulators, one per group
    # (not every token seen: tokens grow with metas x times, groups may not)
    _table, by_token = dense.materialize()
    assert set(by_token) == set(first_tokens)
    slot_accs = list(_table.values())
    assert all(by_token[token] is slot_accs[slot][1] for token, slot in first_tokens.items())


@settings(max_examples=200, deadline=None)
@given(owners=st.lists(st.integers(0, 5), max_size=30))
def test_distinct_metas_are_numpys(owners):
    from tidemark.timeseries.groupstate import _distinct
    array = np.asarray(owners, dtype=np.int64)
    metas, where = _distinct(array)
    want_metas, want_where = np.unique(array, return_index=True)
    assert metas.tolist() == want_metas.tolist() and where.tolist() == want_where.tolist()
