"""Which insert batches each loader connection sends, and in what order (``--loader``).

- ``ordered``: one shared queue; each connection takes the next batch, so batches arrive nearly in time
  order (the default, and the only mode before issue 15);
- ``interleaved``: connection i sends batches i, i+n, i+2n, ... (n connections): the writers' times
  interleave and drift apart under load;
- ``ranges``: connection i sends the i-th contiguous 1/n of the batches in time order — a parallel
  backfill of history, every series written by n writers at n distant points in time at once.

Batches are whole TSBS ticks in load order (time-major, host-minor), so the modes differ only in which
connection sends what; every mode sends every batch exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator

LOADERS = ("ordered", "interleaved", "ranges")


def assign(batches: int, connections: int, loader: str = "ordered") -> list[Iterator[int]]:
    """One iterator of batch numbers per connection (``ordered``: the same shared iterator for all;
    ``next`` on a range iterator is atomic, so threads may share it too)."""
    if loader == "ordered":
        shared = iter(range(batches))
        return [shared] * connections
    if loader == "interleaved":
        return [iter(range(i, batches, connections)) for i in range(connections)]
    if loader == "ranges":
        bounds = [batches * i // connections for i in range(connections + 1)]
        return [iter(range(bounds[i], bounds[i + 1])) for i in range(connections)]
    raise ValueError(f"unknown loader {loader!r}: choose from {', '.join(LOADERS)}")
