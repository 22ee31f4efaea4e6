"""Server lifecycle in process: graceful shutdown finishes in-flight commands; slow-operation logging."""

from __future__ import annotations

import asyncio
import json

import pytest

from tidemark import app as app_module
from tidemark import log
from tidemark.context import CommandSpec, ServerOptions
from tidemark.dispatch import Dispatcher, build_table
from tidemark.protocol.messages import decode_reply, encode_op_msg_request


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    header = await reader.readexactly(4)
    return header + await reader.readexactly(int.from_bytes(header, "little") - 4)


@pytest.fixture
def slow_command(monkeypatch):
    """Adds a `testSlow` command that waits until the test releases it."""
    started = asyncio.Event()
    release = asyncio.Event()

    async def test_slow(ctx, cmd):
        started.set()
        await release.wait()
        return {"finished": True}

    class SlowDispatcher(Dispatcher):
        def __init__(self, state):
            table = dict(build_table())
            table["testSlow"] = CommandSpec("testSlow", test_slow, help="test only")
            super().__init__(state, table)

    monkeypatch.setattr(app_module, "Dispatcher", SlowDispatcher)
    return started, release


async def test_shutdown_finishes_the_in_flight_command_and_closes_storage(tmp_path, slow_command):
    started, release = slow_command
    app = app_module.App(ServerOptions(port=0, dbpath=str(tmp_path / "db"), argv=["tidemark"]))
    await app.start()
    engine = app.state.engine
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    writer.write(encode_op_msg_request({"testSlow": 1, "$db": "admin"}, 1))
    await writer.drain()
    await started.wait()
    shutdown = asyncio.ensure_future(app.shutdown())
    await asyncio.sleep(0)
    assert not shutdown.done(), "shutdown waits for the in-flight command"
    release.set()
    reply = decode_reply(await _read_frame(reader))
    assert reply == {"finished": True, "ok": 1.0}
    await shutdown
    assert app.state is None
    with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
        await _read_frame(reader)
    writer.close()
    # The storage engine was closed: the dbpath lock is free for a new engine.
    from tidemark.storage.engine import open_engine

    reopened = open_engine(str(tmp_path / "db"))
    reopened.close()
    assert engine is not None


async def test_listener_stops_accepting_after_shutdown(tmp_path):
    app = app_module.App(ServerOptions(port=0, dbpath=str(tmp_path / "db"), argv=["tidemark"]))
    await app.start()
    port = app.port
    await app.shutdown()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_operations_slower_than_slowms_are_logged(tmp_path, slow_command):
    started, release = slow_command
    release.set()
    app = app_module.App(ServerOptions(port=0, dbpath=str(tmp_path / "db"), slowms=-1, argv=["tidemark"]))
    await app.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
        writer.write(encode_op_msg_request({"testSlow": 1, "$db": "admin"}, 1))
        await writer.drain()
        assert decode_reply(await _read_frame(reader))["ok"] == 1.0
        writer.close()
    finally:
        await app.shutdown()
    lines, _ = log.recent_lines()
    slow = [json.loads(line) for line in lines if '"Slow query"' in line]
    assert any(entry["attr"]["command"] == {"testSlow": 1, "$db": "admin"} and entry["id"] == 51803
               and entry["attr"]["durationMillis"] >= 0 for entry in slow)


async def test_unexpected_error_outside_dispatch_closes_only_that_connection(tmp_path, monkeypatch):
    from tidemark import connection as connection_module

    app = app_module.App(ServerOptions(port=0, dbpath=str(tmp_path / "db"), argv=["tidemark"]))
    await app.start()
    real_encode = connection_module.encode_op_msg
    calls = {"n": 0}

    def flaky_encode(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("simulated bug")
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(connection_module, "encode_op_msg", flaky_encode)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
        writer.write(encode_op_msg_request({"ping": 1, "$db": "admin"}, 1))
        await writer.drain()
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await _read_frame(reader)
        writer.close()
        reader2, writer2 = await asyncio.open_connection("127.0.0.1", app.port)
        writer2.write(encode_op_msg_request({"ping": 1, "$db": "admin"}, 2))
        await writer2.drain()
        assert decode_reply(await _read_frame(reader2)) == {"ok": 1.0}
        writer2.close()
    finally:
        await app.shutdown()
