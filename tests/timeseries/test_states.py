"""The bucket lifecycle of states.py: every (state, event) pair of the transition table.

An allowed pair moves the bucket to the table's state (``move`` and ``move_all`` alike); a forbidden pair
raises ``TransitionError`` and leaves the state as it was (a bug in the engine, never client input).
"""

from __future__ import annotations

import itertools

import pytest

from tidemark.timeseries.states import (
    IN_MEMORY,
    ROUTABLE,
    TRANSITIONS,
    Event,
    State,
    TransitionError,
    move,
    move_all,
)

PAIRS = list(itertools.product(State, Event))


class _Bucket:
    def __init__(self, state: State, id: int = 1):
        self.state, self.id = state, id


def _id(pair):
    state, event = pair
    return f"{state.name}-{event.name}"


@pytest.mark.parametrize("pair", PAIRS, ids=[_id(p) for p in PAIRS])
def test_every_state_event_pair_moves_or_raises(pair):
    state, event = pair
    bucket = _Bucket(state)
    if pair in TRANSITIONS:
        assert move(bucket, event) is TRANSITIONS[pair]
        assert bucket.state is TRANSITIONS[pair]
    else:
        with pytest.raises(TransitionError, match=f"{event.value} is not allowed when {state.value}"):
            move(bucket, event)
        assert bucket.state is state


@pytest.mark.parametrize("pair", PAIRS, ids=[_id(p) for p in PAIRS])
def test_move_all_follows_the_same_table(pair):
    state, event = pair
    buckets = [_Bucket(state, i) for i in range(3)]
    if pair in TRANSITIONS:
        move_all(buckets, event)
        assert [b.state for b in buckets] == [TRANSITIONS[pair]] * 3
    else:
        with pytest.raises(TransitionError):
            move_all(buckets, event)
        assert buckets[0].state is state


def test_the_table_is_the_documented_lifecycle():
    """Nine allowed moves: the diagram of states.py, nothing more."""
    assert TRANSITIONS == {
        (State.OPEN, Event.ARCHIVE): State.ARCHIVED,
        (State.ARCHIVED, Event.REOPEN): State.OPEN,
        (State.OPEN, Event.CLOSE): State.CLOSED,
        (State.ARCHIVED, Event.CLOSE): State.CLOSED,
        (State.CLOSED, Event.STORED): State.STORED,
        (State.ARCHIVED, Event.STORED): State.STORED,
        (State.OPEN, Event.FREEZE): State.FROZEN,
        (State.ARCHIVED, Event.FREEZE): State.FROZEN,
        (State.CLOSED, Event.FREEZE): State.FROZEN,
    }
    assert len(PAIRS) - len(TRANSITIONS) == 16  # forbidden pairs


def test_stored_and_frozen_are_final():
    for state in (State.STORED, State.FROZEN):
        assert not any((state, event) in TRANSITIONS for event in Event)


def test_routable_states_are_in_memory_and_only_they_reopen_or_archive():
    assert ROUTABLE <= IN_MEMORY
    assert IN_MEMORY == {State.OPEN, State.ARCHIVED, State.CLOSED}
    assert {old for (old, event) in TRANSITIONS if event in (Event.ARCHIVE, Event.REOPEN)} <= ROUTABLE
    # a bucket leaves memory only by STORED or FREEZE
    assert {new for new in TRANSITIONS.values() if new not in IN_MEMORY} == {State.STORED, State.FROZEN}


def test_move_all_raises_at_the_first_forbidden_bucket_without_rolling_back():
    buckets = [_Bucket(State.OPEN, 1), _Bucket(State.CLOSED, 2)]
    with pytest.raises(TransitionError, match="bucket 2: archive is not allowed when closed"):
        move_all(buckets, Event.ARCHIVE)
    assert buckets[0].state is State.ARCHIVED  # moved before the bad one was reached (no rollback)
