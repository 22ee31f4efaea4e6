"""The innocent client of isolation tests: ping, insert and find in a loop on its own connection while a
hostile client works, so a test can assert that the server kept serving it (no error, some rounds)."""

from __future__ import annotations

import threading
import time
from typing import Any


class InnocentClient:
    """``with InnocentClient(srv) as innocent: ...`` — ``innocent.errors`` (exceptions raised) and
    ``innocent.rounds`` (round trips completed, one document inserted in ``innocent.c`` each)."""

    def __init__(self, srv: Any):
        self.srv = srv
        self.errors: list[BaseException] = []
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        client = self.srv.client(retryWrites=False, retryReads=False)
        coll = client.innocent.c
        try:
            while not self._stop.is_set():
                n = self.rounds
                client.admin.command("ping")
                coll.insert_one({"_id": n, "v": n})
                assert coll.find_one({"_id": n}) == {"_id": n, "v": n}
                self.rounds += 1
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001 - the test asserts on it
            self.errors.append(exc)
        finally:
            client.close()

    def __enter__(self) -> InnocentClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
