"""Exhaust cursors and the awaitable, streamed hello (issue 25): OP_MSG ``exhaustAllowed`` gets replies
with ``moreToCome`` until the cursor is exhausted; a hello with the server's topologyVersion waits up to
maxAwaitTimeMS, and with ``exhaustAllowed`` keeps streaming; the waits block nothing else."""

from __future__ import annotations

import struct
import threading
import time

import pytest
from pymongo import CursorType, MongoClient, monitoring
from wire_client import WireClient

from tidemark.protocol.messages import EXHAUST_ALLOWED, MORE_TO_COME

pytestmark = pytest.mark.commands("hello", "isMaster", "getMore", "find")


def _flags(frame: bytes) -> int:
    return struct.unpack_from("<i", frame, 16)[0]


def _ids(frame: bytes) -> tuple[int, int]:
    return struct.unpack_from("<ii", frame, 4)


@pytest.mark.parametrize("documents, batches", [
    (10, [3, 3, 2]),     # the last batch ends short of batchSize: the scan met its end, id 0 in that reply
    (11, [3, 3, 3, 0]),  # it ends exactly full: as mongod's scans, an empty batch with id 0 follows
])
def test_exhaust_get_more_streams_until_the_cursor_is_exhausted(server, documents, batches):
    client = MongoClient(server.uri)
    coll = client.exhaust_raw.c
    coll.drop()
    coll.insert_many([{"_id": i} for i in range(documents)])
    with WireClient(server.port) as wire:
        first = wire.command({"find": "c", "batchSize": 2, "$db": "exhaust_raw"})
        cursor_id = first["cursor"]["id"]
        frame = wire.command_frame({"getMore": cursor_id, "collection": "c", "batchSize": 3, "$db": "exhaust_raw"},
                                   flags=EXHAUST_ALLOWED)
        request_id = _ids(frame)[0]
        wire.send(frame)
        seen, replies = [d["_id"] for d in first["cursor"]["firstBatch"]], []
        while True:
            reply = wire.recv_frame()
            replies.append(reply)
            doc = wire_decode(reply)
            seen += [d["_id"] for d in doc["cursor"]["nextBatch"]]
            if not _flags(reply) & MORE_TO_COME:
                assert doc["cursor"]["id"] == 0
                break
            assert doc["cursor"]["id"] == cursor_id
        assert seen == list(range(documents))
        assert [len(wire_decode(r)["cursor"]["nextBatch"]) for r in replies] == batches
        # the first reply answers the request, each next one the reply before it
        assert _ids(replies[0])[1] == request_id
        for before, after in zip(replies, replies[1:], strict=False):
            assert _ids(after)[1] == _ids(before)[0]
        assert wire.command({"ping": 1, "$db": "admin"})["ok"] == 1.0  # the connection goes on: nothing is left
    client.close()


def wire_decode(frame: bytes) -> dict:
    from tidemark.protocol.messages import decode_reply

    return decode_reply(frame)


@pytest.mark.slow
def test_awaitable_hello_waits_and_streams_without_blocking_others(server):
    with WireClient(server.port) as wire:
        hello = wire.command({"hello": 1, "$db": "admin"})
        version = hello["topologyVersion"]
        assert set(version) == {"processId", "counter"} and version["counter"] == 0
        # another process's version: answered at once
        started = time.monotonic()
        other = dict(version, processId=type(version["processId"])())
        assert wire.command({"hello": 1, "topologyVersion": other, "maxAwaitTimeMS": 5000,
                             "$db": "admin"})["isWritablePrimary"] is True
        assert time.monotonic() - started < 2
        # the server's own version: waits maxAwaitTimeMS, while other clients are served
        started = time.monotonic()
        wire.send(wire.command_frame({"hello": 1, "topologyVersion": version, "maxAwaitTimeMS": 600,
                                      "$db": "admin"}))
        with WireClient(server.port) as other_client:
            for _ in range(5):
                assert other_client.command({"ping": 1, "$db": "admin"})["ok"] == 1.0
        assert time.monotonic() - started < 0.5
        reply = wire.recv()
        assert reply["ok"] == 1.0 and 0.55 < time.monotonic() - started < 5
        assert reply["topologyVersion"] == version
        # exhaustAllowed: the server keeps sending replies with moreToCome
        started = time.monotonic()
        wire.send(wire.command_frame({"hello": 1, "topologyVersion": version, "maxAwaitTimeMS": 200,
                                      "$db": "admin"}, flags=EXHAUST_ALLOWED))
        frames = [wire.recv_frame() for _ in range(3)]
        assert all(_flags(f) & MORE_TO_COME for f in frames)
        assert all(wire_decode(f)["topologyVersion"] == version for f in frames)
        assert 0.55 < time.monotonic() - started < 5
    # mongod's argument checks
    with WireClient(server.port) as wire:
        for command, code in (({"topologyVersion": version}, 31368), ({"maxAwaitTimeMS": 1}, 31368),
                              ({"topologyVersion": dict(version, counter=-1), "maxAwaitTimeMS": 1}, 31372),
                              ({"topologyVersion": version, "maxAwaitTimeMS": -1}, 51024),
                              ({"topologyVersion": dict(version, counter=5), "maxAwaitTimeMS": 1}, 31382)):
            reply = wire.command({"hello": 1, **command, "$db": "admin"})
            assert reply["code"] == code, reply


@pytest.mark.slow
def test_pymongo_streaming_monitor_and_exhaust_cursor(server):
    class Listener(monitoring.ServerHeartbeatListener):
        def __init__(self):
            self.awaited = []
            self.failed = []

        def started(self, event):
            pass

        def succeeded(self, event):
            self.awaited.append(event.awaited)

        def failed(self, event):
            self.failed.append(event)

    listener = Listener()
    client = MongoClient(server.uri, heartbeatFrequencyMS=500, event_listeners=[listener])
    coll = client.exhaust_pymongo.c
    coll.drop()
    coll.insert_many([{"_id": i, "x": "y" * 100} for i in range(500)])
    assert [d["_id"] for d in coll.find(cursor_type=CursorType.EXHAUST, batch_size=7)] == list(range(500))
    deadline = time.monotonic() + 10
    while listener.awaited.count(True) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert listener.awaited.count(True) >= 2, listener.awaited  # streaming heartbeats, as against mongod
    assert not listener.failed
    done = threading.Event()

    def reads():
        for _ in range(20):
            assert coll.find_one({"_id": 3})["_id"] == 3
        done.set()

    threading.Thread(target=reads).start()
    assert done.wait(10)
    client.close()
