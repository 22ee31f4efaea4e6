"""The event loop's fixed cost per command (issue 23): a request through ``Connection`` in process, with
a stand-in transport. One worker task per connection (not one per request), and a budget of Python
calls per ``ping`` that the loop makes (the count the CPU per command follows, machine-independent)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import uvloop
from bson.binary import Binary
from harness.server_state import InProcessServer

from tidemark.connection import Connection
from tidemark.dispatch import Dispatcher
from tidemark.protocol.messages import OpMsg, decode_message, encode_op_msg_request

# Python-level and C calls on the loop (uvloop) for one ping with an lsid, data_received to the reply's
# write: 130 when this was written, 151 before (a task per request, a second reading check, dataclass
# requests, bson's Python wrappers, interrupt's bind/unbind functions, maxTimeMS parsed when absent).
# The margin lets small, justified additions through; a new per-command layer will not fit. 143 since
# mongod 7.0's checks of the body were added (a repeated field name answers 40413: the body's element heads
# are counted, a C call or two per field; sections read before the checksum, as op_msg.cpp reads them).
# 128 since dispatch, the session cache, the OP_MSG parse and the reply encode dropped their redundant calls.
PING_CALL_BUDGET = 132


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.waiter: asyncio.Future[bytes] | None = None
        self.closed = False

    def set_write_buffer_limits(self, **_: Any) -> None:
        pass

    def get_extra_info(self, _: str) -> Any:
        return ("127.0.0.1", 5555)

    def is_closing(self) -> bool:
        return self.closed

    def write(self, data: bytes) -> None:
        self.written.append(data)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(data)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


_PING = {"ping": 1, "lsid": {"id": Binary(os.urandom(16), 4)}, "$db": "admin"}


async def _setup(path: Any) -> tuple[Connection, _Transport]:
    state = InProcessServer(path)
    transport = _Transport()
    connection = Connection(state, Dispatcher(state), lambda _: None)
    connection.connection_made(transport)  # type: ignore[arg-type]
    return connection, transport


async def _request(connection: Connection, transport: _Transport, frame: bytes) -> bytes:
    transport.waiter = asyncio.get_running_loop().create_future()
    connection.data_received(frame)
    return await transport.waiter


def test_one_worker_task_serves_every_request_of_a_connection_and_ends_with_it(tmp_path: Any) -> None:
    async def main() -> None:
        connection, transport = await _setup(tmp_path)
        frame = encode_op_msg_request(_PING, 1)
        await _request(connection, transport, frame)
        worker = connection._worker
        assert worker is not None and not worker.done()
        tasks = len(asyncio.all_tasks())
        for _ in range(5):
            reply = decode_message(await _request(connection, transport, frame))
            assert isinstance(reply, OpMsg) and reply.command == {"ok": 1.0}
        assert connection._worker is worker and len(asyncio.all_tasks()) == tasks
        connection.connection_lost(None)
        await asyncio.wait_for(worker, 1)
        assert connection._worker is None

    asyncio.run(main())


def test_a_ping_costs_the_loop_at_most_its_call_budget(tmp_path: Any) -> None:
    async def main() -> int:
        connection, transport = await _setup(tmp_path)
        frame = encode_op_msg_request(_PING, 1)
        for _ in range(3):  # caches, the worker task, the session
            await _request(connection, transport, frame)
        calls = 0

        def count(frame_: Any, event: str, arg: Any) -> None:
            nonlocal calls
            if event in ("call", "c_call"):
                calls += 1

        transport.waiter = asyncio.get_running_loop().create_future()
        sys.setprofile(count)
        try:
            connection.data_received(frame)
            await transport.waiter
        finally:
            sys.setprofile(None)
        return calls

    calls = uvloop.run(main())
    assert calls <= PING_CALL_BUDGET, calls
