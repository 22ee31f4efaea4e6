"""Failed authentications: a bounded log and a per-address back-off (``AuthManager.throttle``).

Without them one connection could try ~1,900 passwords a second and write as many "Authentication
failed" lines (id 20249). Invariants:

- Log lines: at most :data:`LOG_LINES_PER_SECOND` 20249 lines per second (process-wide); the rest
  are counted, and one "suppressed" line (id :data:`SUPPRESSED_ID`, attr ``suppressed``) says how
  many at the end of that second. Failures are never silent: the count is always logged.
- Back-off, per source address (the client's IP, whatever the port or connection): the first
  :data:`FREE_FAILURES` consecutive failures are answered at once; each further one is answered after
  ``BASE_DELAY * 2**k`` seconds (k = failures past the threshold - 1), capped at :data:`MAX_DELAY`.
  A success from the address resets it; an address quiet for :data:`FORGET_SECONDS` is forgotten.
  Only failure answers wait (an asyncio sleep on the failing connection: the event loop, other
  connections and other addresses go on); a correct login is never delayed. Speculative
  authentication (inside hello) neither counts nor waits: a driver falls back from it normally.
- Bounded memory: at most :data:`MAX_SOURCES` addresses are tracked (the stalest are dropped).

Event-loop thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

LOG_LINES_PER_SECOND = 10
SUPPRESSED_ID = 9_921_001
FREE_FAILURES = 10
BASE_DELAY = 0.01
MAX_DELAY = 1.0
FORGET_SECONDS = 60.0
MAX_SOURCES = 10_000


def source_address(peer: str | None) -> str:
    """The IP of a ``host:port`` / ``[v6]:port`` peer (the unit of the back-off)."""
    peer = peer or ""
    if peer.startswith("["):
        return peer[1:peer.find("]")] if "]" in peer else peer
    return peer.rsplit(":", 1)[0] if ":" in peer else peer


def delay_after(failures: int) -> float:
    """Seconds to wait before answering the ``failures``-th consecutive failure of an address."""
    past = failures - FREE_FAILURES
    if past <= 0:
        return 0.0
    return min(MAX_DELAY, BASE_DELAY * 2 ** min(past - 1, 16))


class AuthThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._sources: dict[str, list[float]] = {}  # address -> [consecutive failures, last failure time]
        self._window = 0.0  # start of the current one-second log window
        self._lines = 0  # 20249 lines written in this window
        self._suppressed = 0  # lines left out in this window (reported when it ends)
        self._flush_scheduled = False
        # counters (tests, diagnostics)
        self.failures = 0
        self.delayed = 0
        self.delayed_seconds = 0.0
        self.suppressed_total = 0

    # -- the log ------------------------------------------------------------------------------------
    def should_log(self, emit_summary: Callable[[int], None], schedule: Callable[[float, Callable], Any] | None
                   ) -> bool:
        """Whether this failure may write its 20249 line. ``emit_summary(k)`` writes the suppressed
        line; ``schedule(delay, fn)`` (the event loop's call_later, or None) makes sure it is written
        at the end of the window even if no failure follows."""
        now = self.clock()
        if now - self._window >= 1.0:
            self.flush(emit_summary)
            self._window, self._lines = now, 0
        if self._lines < LOG_LINES_PER_SECOND:
            self._lines += 1
            return True
        self._suppressed += 1
        self.suppressed_total += 1
        if schedule is not None and not self._flush_scheduled:
            self._flush_scheduled = True
            schedule(max(0.0, self._window + 1.0 - now), lambda: self.flush(emit_summary))
        return False

    def flush(self, emit_summary: Callable[[int], None]) -> None:
        """Write the suppressed line of the window if any line was left out."""
        self._flush_scheduled = False
        if self._suppressed:
            count, self._suppressed = self._suppressed, 0
            emit_summary(count)

    # -- the back-off -------------------------------------------------------------------------------
    def failed(self, address: str) -> float:
        """Count a failure of ``address``; returns how long to wait before answering it."""
        now = self.clock()
        self.failures += 1
        entry = self._sources.get(address)
        if entry is None or now - entry[1] > FORGET_SECONDS:
            if entry is None and len(self._sources) >= MAX_SOURCES:
                self._forget(now)
            entry = self._sources[address] = [0, now]
        entry[0] += 1
        entry[1] = now
        delay = delay_after(int(entry[0]))
        if delay:
            self.delayed += 1
            self.delayed_seconds += delay
        return delay

    def succeeded(self, address: str) -> None:
        self._sources.pop(address, None)

    def consecutive_failures(self, address: str) -> int:
        entry = self._sources.get(address)
        return int(entry[0]) if entry is not None else 0

    def _forget(self, now: float) -> None:
        stale = [a for a, (_n, last) in self._sources.items() if now - last > FORGET_SECONDS]
        for address in stale:
            del self._sources[address]
        if len(self._sources) >= MAX_SOURCES:  # all recent: drop the stalest half
            for address, _ in sorted(self._sources.items(), key=lambda kv: kv[1][1])[:MAX_SOURCES // 2]:
                del self._sources[address]

    def status(self) -> dict[str, Any]:
        return {"failures": self.failures, "delayedAnswers": self.delayed,
                "delayedSeconds": round(self.delayed_seconds, 3), "suppressedLogLines": self.suppressed_total,
                "trackedAddresses": len(self._sources)}
