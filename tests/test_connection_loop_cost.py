"""The event loop's fixed cost per command (issue 23): a request through ``Connection`` in process, with
a stand-in transport. A request that never waits runs in ``data_received`` (no task, no second turn of
the loop); one that waits goes on in the connection's one worker task (not one per request); and a
budget of Python calls per ``ping`` that the loop makes (the count the CPU per command follows,
machine-independent)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest
import uvloop
from bson.binary import Binary
from harness.server_state import InProcessServer

from tidemark.connection import STEP_IN_DATA_RECEIVED, Connection
from tidemark.dispatch import Dispatcher
from tidemark.protocol.messages import OpMsg, decode_message, encode_op_msg_request

# Python-level and C calls on the loop (uvloop) for one ping with an lsid, data_received to the reply's
# write: 130 when this was written, 151 before (a task per request, a second reading check, dataclass
# requests, bson's Python wrappers, interrupt's bind/unbind functions, maxTimeMS parsed when absent).
# The margin lets small, justified additions through; a new per-command layer will not fit. 143 since
# mongod 7.0's checks of the body were added (a repeated field name answers 40413: the body's element heads
# are counted, a C call or two per field; sections read before the checksum, as op_msg.cpp reads them).
# 128 since dispatch, the session cache, the OP_MSG parse and the reply encode dropped their redundant calls.
# 107 (123 before) since a request that never waits runs in data_received (no worker wake-up, no Future),
# the OP_MSG is handled without a second coroutine layer and parsed without a _parse_sections call (116
# where the worker steps every request: asyncio >= 3.12, STEP_IN_DATA_RECEIVED).
PING_CALL_BUDGET = 111 if STEP_IN_DATA_RECEIVED else 120


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


async def _setup(path: Any, test_commands: bool = False) -> tuple[Connection, _Transport]:
    state = InProcessServer(path)
    if test_commands:  # (configureFailPoint: read when the dispatcher builds its table)
        state.params.assign("enableTestCommands", True)
    transport = _Transport()
    connection = Connection(state, Dispatcher(state), lambda _: None)
    connection.connection_made(transport)  # type: ignore[arg-type]
    return connection, transport


async def _request(connection: Connection, transport: _Transport, frame: bytes) -> bytes:
    transport.waiter = asyncio.get_running_loop().create_future()
    connection.data_received(frame)
    return await transport.waiter


@pytest.mark.skipif(not STEP_IN_DATA_RECEIVED, reason="the worker steps every request (asyncio >= 3.12)")
def test_requests_that_never_wait_run_in_data_received_without_a_task(tmp_path: Any) -> None:
    async def main() -> None:
        connection, transport = await _setup(tmp_path)
        tasks = len(asyncio.all_tasks())
        for i in range(5):
            transport.written.clear()
            connection.data_received(encode_op_msg_request(_PING, i + 1))
            # answered before data_received returned: no turn of the loop, no task
            assert len(transport.written) == 1
            reply = decode_message(transport.written[0])
            assert isinstance(reply, OpMsg) and reply.command == {"ok": 1.0}
        assert connection._worker is None and len(asyncio.all_tasks()) == tasks

    asyncio.run(main())


def _response_to(frame: bytes) -> int:
    return int.from_bytes(frame[8:12], "little")


def test_a_request_that_waits_is_carried_on_by_one_worker_in_order_and_in_its_context(tmp_path: Any) -> None:
    """A blocked ping (failCommand's blockConnection: an await inside the command's operation, between
    its ContextVar's set and reset) goes on in the worker task; what arrives meanwhile, in the same read
    or a later one, waits behind it: replies in request order, one task for the connection's life."""
    async def main() -> None:
        connection, transport = await _setup(tmp_path, test_commands=True)
        loop = asyncio.get_running_loop()
        arm = {"configureFailPoint": "failCommand", "mode": {"times": 1}, "$db": "admin",
               "data": {"failCommands": ["ping"], "blockConnection": True, "blockTimeMS": 50}}
        connection.data_received(encode_op_msg_request(arm, 1))
        while not transport.written:  # (at once where requests are stepped in data_received)
            await asyncio.sleep(0.01)
        assert decode_message(transport.written[-1]).command["ok"] == 1.0  # type: ignore[union-attr]
        transport.written.clear()
        connection.data_received(encode_op_msg_request(_PING, 2) + encode_op_msg_request(_PING, 3))
        assert transport.written == []  # the first waits; the second stays behind it
        worker = connection._worker
        assert worker is not None and not worker.done()
        connection.data_received(encode_op_msg_request(_PING, 4))
        assert transport.written == []
        deadline = loop.time() + 5
        while len(transport.written) < 3 and loop.time() < deadline:
            await asyncio.sleep(0.01)
        assert [_response_to(frame) for frame in transport.written] == [2, 3, 4]
        for frame in transport.written:
            assert decode_message(frame).command == {"ok": 1.0}  # type: ignore[union-attr]
        tasks = len(asyncio.all_tasks())
        transport.written.clear()
        connection.data_received(encode_op_msg_request(_PING, 5))  # the worker idles: run at once
        while not STEP_IN_DATA_RECEIVED and not transport.written:  # (else the worker steps it)
            await asyncio.sleep(0.01)
        assert [_response_to(frame) for frame in transport.written] == [5]
        assert connection._worker is worker and not worker.done() and len(asyncio.all_tasks()) == tasks
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
