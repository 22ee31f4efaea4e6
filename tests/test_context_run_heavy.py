"""CommandContext.run_heavy: a request's own parse runs inline when small, in the thread pool from
``offload_bytes`` (1 MiB by default; 1 KiB for find/update/delete filters, which may carry a long
regex whose compile — Python code in the engine's parser — would otherwise hold the event loop)."""

from __future__ import annotations

import asyncio

from tidemark.context import FILTER_REQUEST_BYTES, LARGE_REQUEST_BYTES, CommandContext


class _Stub:
    def __init__(self, request_bytes: int):
        self.request_bytes = request_bytes
        self.offloaded = 0

    async def run_blocking(self, fn, *args):
        self.offloaded += 1
        return fn(*args)


def _run(request_bytes: int, **kw) -> int:
    stub = _Stub(request_bytes)
    assert asyncio.run(CommandContext.run_heavy(stub, lambda x: x + 1, 1, **kw)) == 2
    return stub.offloaded


def test_a_small_request_parses_inline_and_a_large_one_in_the_pool():
    assert _run(1000) == 0
    assert _run(LARGE_REQUEST_BYTES - 1) == 0
    assert _run(LARGE_REQUEST_BYTES) == 1


def test_filters_go_to_the_pool_from_one_kib():
    assert FILTER_REQUEST_BYTES == 1024
    assert _run(FILTER_REQUEST_BYTES - 1, offload_bytes=FILTER_REQUEST_BYTES) == 0
    assert _run(FILTER_REQUEST_BYTES, offload_bytes=FILTER_REQUEST_BYTES) == 1
    assert _run(40_000, offload_bytes=FILTER_REQUEST_BYTES) == 1  # a 32 KB pattern
