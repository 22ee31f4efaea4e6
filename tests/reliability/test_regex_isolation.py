"""A catastrophic regex cannot freeze the server: it matches with the GIL released and in bounded
slices, so other clients keep their latency, maxTimeMS and killOp stop it, and a match past PCRE's
match limit is "no match" in a filter (51156 in $regexMatch) — while MongoDB's PCRE syntax and options
keep working."""

from __future__ import annotations

import re
import threading
import time

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

# Exponential backtracking on every engine that backtracks (Python's re: minutes for this subject).
EVIL = "^(a|aa)+$"
SUBJECT = "a" * 40 + "!"


class Pinger:
    """Pings from another client while the test runs; ``worst`` is the slowest round trip."""

    def __init__(self, server):
        self.client = server.client()
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self._stop.is_set():
            started = time.perf_counter()
            self.client.admin.command("ping")
            self.latencies.append(time.perf_counter() - started)
            time.sleep(0.01)

    def stop(self) -> float:
        self._stop.set()
        self.thread.join(10)
        self.client.close()
        return max(self.latencies)


@pytest.fixture
def evil(db):
    db.s.insert_many([{"_id": i, "s": SUBJECT} for i in range(2)])
    return db.s


@pytest.mark.slow
@pytest.mark.commands("find", "aggregate", "ping")
def test_catastrophic_regex_neither_freezes_others_nor_ignores_max_time_ms(server, evil):
    pinger = Pinger(server)
    started = time.monotonic()
    with pytest.raises(ExecutionTimeout) as err:
        list(evil.find({"s": {"$regex": EVIL}}, max_time_ms=100))
    assert err.value.code == 50
    assert time.monotonic() - started < 3  # the failure being fixed: seconds to minutes
    started = time.monotonic()
    assert list(evil.find({"s": {"$regex": EVIL}})) == []  # past the match limit: no match, like mongod
    assert time.monotonic() - started < 30
    with pytest.raises(OperationFailure) as err:
        list(evil.aggregate([{"$project": {"m": {"$regexMatch": {"input": "$s", "regex": EVIL}}}}]))
    assert err.value.code == 51156 and "match limit" in str(err.value)
    worst = pinger.stop()
    assert len(pinger.latencies) > 10
    assert worst < 1.0, f"a ping waited {worst:.2f} s behind the regex"


@pytest.mark.commands("find", "currentOp", "killOp")
def test_kill_op_stops_a_running_regex(client, evil):
    evil.insert_many([{"s": SUBJECT} for _ in range(30)])  # ~1 s each: half a minute unbounded
    errors: list[BaseException] = []

    def run():
        try:
            list(evil.find({"s": {"$regex": EVIL}}, comment="evil-regex"))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    ops = []
    while not ops and time.monotonic() < deadline:
        ops = client.admin.command({"currentOp": 1, "command.comment": "evil-regex"})["inprog"]
    assert ops, "the regex query never showed up in currentOp"
    client.admin.command("killOp", op=ops[0]["opid"])
    thread.join(10)
    assert not thread.is_alive()
    assert errors and errors[0].code == 11601


@pytest.mark.commands("find", "aggregate")
def test_pcre_syntax_and_options(db):
    db.r.insert_many([
        {"_id": 1, "s": "Hello World"},
        {"_id": 2, "s": "line one\nline two\n"},
        {"_id": 3, "s": "aaa"},
        {"_id": 4, "s": "tail\n"},
    ])

    def ids(flt):
        return sorted(d["_id"] for d in db.r.find(flt))

    assert ids({"s": {"$regex": "^hello", "$options": "i"}}) == [1]
    assert ids({"s": {"$regex": "^line two$", "$options": "m"}}) == [2]
    assert ids({"s": {"$regex": "one.line", "$options": "s"}}) == [2]
    assert ids({"s": {"$regex": "h e l l o # comment", "$options": "ix"}}) == [1]
    assert ids({"s": {"$regex": "(?<first>\\w+) (?<second>World)"}}) == [1]  # PCRE named groups
    assert ids({"s": {"$regex": "a++a"}}) == []  # possessive quantifier: never gives back
    assert ids({"s": {"$regex": "tail\\Z"}}) == [4]  # PCRE \Z: before a final newline
    assert ids({"s": {"$regex": "tail\\z"}}) == []  # \z: the very end
    assert ids({"s": re.compile("^HELLO", re.IGNORECASE)}) == [1]
    assert ids({"s": {"$in": [re.compile("^aa"), "zzz"]}}) == [3]
    found = list(db.r.aggregate([{"$match": {"_id": 1}},
                                 {"$project": {"f": {"$regexFind": {"input": "$s", "regex": "(?<w>o)(r)?"}},
                                               "all": {"$regexFindAll": {"input": "$s", "regex": "o"}}}}]))
    assert found[0]["f"] == {"match": "o", "idx": 4, "captures": ["o", None]}
    assert [m["idx"] for m in found[0]["all"]] == [4, 7]
    for flt, code in (({"s": {"$regex": "("}}, 51091), ({"s": {"$regex": "a", "$options": "q"}}, 51108),
                      ({"s": {"$regex": "a\x00"}}, 2), ({"s": {"$regex": "a" * 40000}}, 51091)):
        with pytest.raises(OperationFailure) as err:
            list(db.r.find(flt))
        assert err.value.code == code, flt
    for spec, code in (({"input": "$s", "regex": "("}, 51111), ({"input": "$s", "regex": "a", "options": "q"}, 51108),
                       ({"input": "$s", "regex": "a\x00"}, 51109)):
        with pytest.raises(OperationFailure) as err:
            list(db.r.aggregate([{"$project": {"m": {"$regexMatch": spec}}}]))
        assert err.value.code == code, spec
