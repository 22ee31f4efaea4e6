"""Back-pressure: a client that pipelines requests and never reads its replies makes the server stop
running its requests and stop reading from it once its unsent replies pass a bound, instead of
buffering every reply (mongod answers one request at a time per connection). Other clients are
unaffected, and the hostile connection still gets every reply, in order, once it reads."""

from __future__ import annotations

import socket
import time

import psutil
import pytest
from wire_client import WireClient

MB = 1 << 20


def _rss(server) -> int:
    return psutil.Process(server.process.pid).memory_info().rss


@pytest.mark.slow
@pytest.mark.commands("find", "ping")
def test_a_client_that_never_reads_costs_bounded_memory(start_server):
    srv = start_server()
    client = srv.client()
    client.bp.big.insert_many([{"_id": i, "pad": "x" * MB} for i in range(4)])  # a 4 MB reply per find
    before = _rss(srv)
    hostile = WireClient(srv.port, timeout=5)
    hostile.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    frame = hostile.command_frame({"find": "big", "batchSize": 10, "$db": "bp"})
    hostile.sock.setblocking(False)
    sent = 0
    deadline = time.monotonic() + 8
    pending = b""
    while sent < 150 and time.monotonic() < deadline:  # 600 MB of replies if nothing pushed back
        if not pending:
            pending = frame
        try:
            n = hostile.sock.send(pending)
            pending = pending[n:]
            if not pending:
                sent += 1
        except BlockingIOError:
            time.sleep(0.01)
    time.sleep(1.0)
    growth = _rss(srv) - before
    assert growth < 128 * MB, f"the server holds {growth / MB:.0f} MB for a client that does not read"
    assert client.admin.command("ping")["ok"] == 1.0
    assert client.bp.big.count_documents({}) == 4
    hostile.sock.setblocking(True)
    hostile.sock.settimeout(30)
    if pending:
        hostile.sock.sendall(pending)
        sent += 1
    for _ in range(sent):  # every reply arrives, in order, once the client reads
        reply = hostile.recv()
        assert reply["ok"] == 1.0 and len(reply["cursor"]["firstBatch"]) == 4
    hostile.close()
    client.close()
