"""Wait on the TTL monitor's own pass counter (serverStatus ``metrics.ttl.passes``, as mongod) instead of
sleeping: a test writes its data, then waits until the counter has advanced by two passes. The pass that
was running when the data was written may have missed it; the next one started after it, so it saw it."""

from __future__ import annotations

import time
from typing import Any


def ttl_passes(client: Any) -> int:
    """The server's completed TTL monitor passes so far."""
    return int(client.admin.command("serverStatus")["metrics"]["ttl"]["passes"])


def wait_ttl_passes(client: Any, passes: int = 2, timeout: float = 60.0) -> int:
    """Block until ``passes`` more TTL passes have completed; returns the counter. Raises on timeout."""
    start = ttl_passes(client)
    deadline = time.monotonic() + timeout
    while True:
        now = ttl_passes(client)
        if now >= start + passes:
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"the TTL monitor completed {now - start} of {passes} passes in {timeout} s")
        time.sleep(0.05)
