"""bench.loader_modes: every mode is loaded once per round and takes every place in a round equally often."""

from collections import Counter

from bench.batch_order import LOADERS
from bench.loader_modes import schedule


def test_each_round_loads_every_mode_once():
    order = schedule(list(LOADERS), 4)
    n = len(LOADERS)
    assert len(order) == 4 * n
    for r in range(4):
        assert sorted(order[r * n : (r + 1) * n]) == sorted(LOADERS)


def test_each_mode_takes_every_place_in_a_round_equally_often():
    n = len(LOADERS)
    order = schedule(list(LOADERS), 2 * n)
    places = Counter((mode, k % n) for k, mode in enumerate(order))
    assert set(places.values()) == {2}
    assert len(places) == n * n


def test_one_round_keeps_the_given_order():
    assert schedule(["ranges", "ordered"], 1) == ["ranges", "ordered"]
