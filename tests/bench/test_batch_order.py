"""bench.batch_order: the three loader modes send every batch exactly once, in the promised order."""

import pytest

from bench.batch_order import LOADERS, assign


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("batches,connections", [(10, 4), (3, 4), (360, 4), (0, 2)])
def test_every_batch_is_sent_once(loader, batches, connections):
    per_connection = assign(batches, connections, loader)
    assert len(per_connection) == connections
    sent = []
    # drain round-robin, as concurrent connections would
    iters = list(per_connection)
    while iters:
        for it in list(iters):
            try:
                sent.append(next(it))
            except StopIteration:
                iters.remove(it)
    assert sorted(sent) == list(range(batches))


def test_ordered_is_one_shared_queue_in_time_order():
    a, b = assign(6, 2, "ordered")
    assert [next(a), next(b), next(a), next(b)] == [0, 1, 2, 3]


def test_interleaved_and_ranges_split_as_described():
    assert [list(it) for it in assign(10, 4, "interleaved")] == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    assert [list(it) for it in assign(10, 4, "ranges")] == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]


def test_an_unknown_loader_is_refused():
    with pytest.raises(ValueError, match="unknown loader"):
        assign(4, 2, "random")
