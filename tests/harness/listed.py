"""A command running on one client's connection in a thread, found by another client in currentOp
by its comment: how tests reach a long operation to kill it or to show it does not stop others."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class ListedRun:
    """``run()`` in a daemon thread; ``ops`` is what ``watcher``'s currentOp listed for ``comment``
    (waited for up to ``timeout`` seconds), ``outcome`` the exception ``run`` raised, if any."""

    def __init__(self, run: Callable[[], Any], watcher: Any, comment: str, timeout: float = 30,
                 poll: float = 0.01):
        self.outcome: list[BaseException] = []

        def target() -> None:
            try:
                run()
            except BaseException as exc:  # noqa: BLE001 - the test asserts it
                self.outcome.append(exc)

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        self.ops: list[dict] = []
        while not self.ops and time.monotonic() < deadline:
            self.ops = watcher.admin.command({"currentOp": 1, "command.comment": comment})["inprog"]
            time.sleep(poll)
