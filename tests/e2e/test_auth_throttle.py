"""Failed authentications are throttled (issue 21, defect 7b): their log lines (20249) are bounded per
second with a "suppressed" count, and an address that keeps failing waits before each failure answer
(capped at 1 s) while a correct login from it is answered at once and resets it."""

from __future__ import annotations

import json
import threading
import time

import pytest
from pymongo.errors import OperationFailure

from tidemark.auth.throttle import (
    FREE_FAILURES,
    LOG_LINES_PER_SECOND,
    MAX_DELAY,
    SUPPRESSED_ID,
    AuthThrottle,
    delay_after,
    source_address,
)

pytestmark = pytest.mark.commands("authenticate", "saslStart", "saslContinue")


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_back_off_grows_per_address_is_capped_and_resets_on_success():
    clock = _Clock()
    throttle = AuthThrottle(clock)
    delays = [throttle.failed("10.0.0.1") for _ in range(30)]
    assert delays[:FREE_FAILURES] == [0.0] * FREE_FAILURES
    assert delays[FREE_FAILURES] > 0 and delays == sorted(delays) and max(delays) == MAX_DELAY
    assert throttle.failed("10.0.0.2") == 0.0  # another address is not slowed down
    throttle.succeeded("10.0.0.1")
    assert throttle.failed("10.0.0.1") == 0.0
    clock.now += 3600  # a quiet address is forgotten
    for _ in range(FREE_FAILURES):
        throttle.failed("10.0.0.2")
    clock.now += 3600
    assert throttle.failed("10.0.0.2") == 0.0
    assert delay_after(FREE_FAILURES + 1) > 0 and delay_after(10_000) == MAX_DELAY
    assert source_address("127.0.0.1:5555") == "127.0.0.1" and source_address("[::1]:5") == "::1"


def test_log_lines_are_bounded_and_the_rest_counted():
    clock = _Clock()
    throttle = AuthThrottle(clock)
    summaries: list[int] = []
    logged = sum(throttle.should_log(summaries.append, None) for _ in range(500))
    assert logged == LOG_LINES_PER_SECOND and summaries == []
    clock.now += 1.0
    assert throttle.should_log(summaries.append, None)  # a new second: the count of the last one first
    assert summaries == [500 - LOG_LINES_PER_SECOND]


@pytest.fixture
def auth_only(start_server):
    server = start_server(args=("--auth",))
    with server.client() as bootstrap:
        bootstrap.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
    return server


def _fail_once(client) -> float:
    started = time.monotonic()
    with pytest.raises(OperationFailure) as err:
        client.admin.command("authenticate", 1, mechanism="MONGODB-X509")
    assert err.value.code == 18
    return time.monotonic() - started


def _lines(server, since: int) -> list[dict]:
    return [json.loads(line) for line in server.log_text().splitlines()[since:] if line.startswith("{")]


@pytest.mark.slow
def test_repeated_failures_slow_down_and_a_correct_login_is_not(auth_only):
    with auth_only.client() as anonymous:
        anonymous.admin.command("ping")
        quick = [_fail_once(anonymous) for _ in range(FREE_FAILURES)]
        assert max(quick) < 0.5
        slowed = [_fail_once(anonymous) for _ in range(6)]
        assert slowed[-1] >= 0.2 and slowed[-1] > max(quick)  # the 16th failure waited (0.32 s)
        started = time.monotonic()
        with auth_only.client(username="root", password="rootpw") as root:  # same address, right after
            assert root.admin.command("ping")["ok"] == 1
        assert time.monotonic() - started < MAX_DELAY  # never delayed
        assert _fail_once(anonymous) < 0.3  # the success reset the address (else 0.64 s)


@pytest.mark.slow
def test_a_burst_of_failures_writes_a_bounded_number_of_log_lines(auth_only):
    since = len(auth_only.log_text().splitlines())
    threads, per_thread = 40, 5
    client = auth_only.client(maxPoolSize=threads)
    client.admin.command("ping")
    started = time.monotonic()
    workers = [threading.Thread(target=lambda: [_fail_once(client) for _ in range(per_thread)])
               for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    elapsed = time.monotonic() - started
    time.sleep(1.3)  # the last second's "suppressed" line
    client.close()
    lines = _lines(auth_only, since)
    failed = [line for line in lines if line["id"] == 20249]
    suppressed = [line["attr"]["suppressed"] for line in lines if line["id"] == SUPPRESSED_ID]
    assert len(failed) + sum(suppressed) == threads * per_thread  # every failure is accounted for
    assert len(failed) <= LOG_LINES_PER_SECOND * (elapsed + 2)
    assert suppressed and sum(suppressed) > 0  # the burst went over the budget: counted, not written
