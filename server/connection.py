"""One client connection: bytes -> frames -> requests -> dispatch -> reply bytes.

An asyncio ``Protocol`` (uvloop's fast path). Invariants:
- Incoming bytes accumulate in one ``bytearray``; complete frames are sliced off by their length and
  the consumed prefix is deleted once per ``data_received``, so a burst of small messages costs one
  copy, not one per message.
- A frame of ``OFF_LOOP_BYTES`` or more that starts the buffer is handed over without a copy (the
  buffer becomes the frame), so a 48 MB message costs 48 MB, not twice that.
- Requests on a connection run strictly in order, one at a time (replies must come back in request
  order; w:0 writes must apply in order). While no request is in flight, the requests a read completes
  run at once, in ``data_received`` itself, each stepped like a task's first step (in the connection's
  own ``contextvars.Context``): a request that never waits — nearly all — costs no future, no task and
  no second turn of the event loop between its bytes arriving and its reply's write. The first one
  that must wait (the thread pool, a client not reading its replies, an exhaust stream, an awaitable
  hello) is carried on by the connection's one worker task, which owns the queue until it empties: it
  starts then and lives until the connection closes, waiting on a future while there is no work (a
  task per request would register it in a WeakSet and name it, both in Python). (Python 3.11 only:
  from 3.12 asyncio.wait_for needs a current task, and the worker steps every request:
  ``STEP_IN_DATA_RECEIVED``.)
- Back-pressure, both ways: reading pauses while too many frames or bytes are queued, and while the
  unsent replies exceed ``WRITE_BUFFER_HIGH`` (the transport's ``pause_writing``) no further request
  runs and nothing is read until they drain below ``WRITE_BUFFER_LOW``. A client that pipelines
  requests and never reads costs at most the queue bounds plus one reply, like mongod, which answers
  one request at a time per connection.
- Large frames are decoded, and large replies compressed, in the thread pool (decoding slices its
  C-level work, so the event loop keeps the GIL often enough to serve other clients).
- Exhaust (OP_MSG ``exhaustAllowed``): a getMore whose cursor stays open, or an awaitable hello, is
  answered with ``moreToCome`` and run again by the server (the hello with the topologyVersion it just
  sent, each reply's ``responseTo`` the previous reply's id, as mongod) until the cursor is exhausted,
  a reply is an error, or the client leaves; nothing else runs on that connection meanwhile.
- A malformed frame never takes the server down: non-fatal parse errors get an ordinary error reply,
  fatal ones (bad length, illegal flags, checksum mismatch, unknown opcode) close this connection only.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import itertools
import sys
import types
from typing import TYPE_CHECKING, Any, cast

from bson.int64 import Int64

from tidemark import log, tls
from tidemark.auth.session import UNIX_SOCKET_PEER
from tidemark.context import LARGE_REQUEST_BYTES, CloseConnection, ConnectionInfo, ServerState, run_in_pool
from tidemark.dispatch import Dispatcher, error_reply
from tidemark.protocol import codec, compression
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.framing import MAX_BSON_OBJECT_SIZE, MAX_COMMAND_SIZE, ParseError, frame_length
from tidemark.protocol.messages import (
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    QUERY_FAILURE,
    OpMsg,
    OpQuery,
    decode_message,
    encode_op_msg,
    encode_op_reply,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Generator

# Reading pauses above these and resumes below the low-water marks.
MAX_QUEUED_FRAMES = 64
MAX_QUEUED_BYTES = 64 * 1024 * 1024
RESUME_QUEUED_FRAMES = 16
# Unsent reply bytes of one connection: above HIGH its requests stop running (and reading stops)
# until the client has read the replies down to LOW.
WRITE_BUFFER_HIGH = 8 * 1024 * 1024
WRITE_BUFFER_LOW = 1024 * 1024
# Frames at least this large are decoded, and replies compressed, in the thread pool; a frame this
# large at the start of the buffer is taken over without a copy.
OFF_LOOP_BYTES = LARGE_REQUEST_BYTES

# Requests are stepped in data_received (outside any task) only where asyncio lets a coroutine await
# with no current task: 3.11's wait_for (awaitable hello, awaitData, blocked commands) needs none; from
# 3.12 it runs under asyncio.timeout, which refuses to (RuntimeError), so there the worker steps them all.
STEP_IN_DATA_RECEIVED = sys.version_info < (3, 12)

# Commands an OP_QUERY may carry (the legacy handshake, and auth that may follow it).
# what mongod 7.0 still runs over OP_QUERY (check_allowed_op_query_cmd.cpp: the handshakes, and
# "temporarily allowed" commands old drivers and tools send)
OP_QUERY_COMMANDS = frozenset({"hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate",
                               "buildinfo", "buildInfo", "_isSelf"})
LEGACY_OPCODE_ADVICE = ("The client driver may require an upgrade. For more details see "
                        "https://dochub.mongodb.org/core/legacy-opcode-removal")
# Replies to these are never compressed (the handshake spec forbids compressing them).
UNCOMPRESSIBLE = frozenset(
    {
        "hello",
        "isMaster",
        "ismaster",
        "saslStart",
        "saslContinue",
        "getnonce",
        "authenticate",
        "createUser",
        "updateUser",
    }
)

_reply_ids = itertools.count(1)
_connection_ids = itertools.count(1)


class Connection(asyncio.Protocol):
    def __init__(self, state: ServerState, dispatcher: Dispatcher, on_close: Callable[[Connection], None]):
        self.state = state
        self.dispatcher = dispatcher
        self._on_close = on_close
        self.transport: asyncio.Transport | None = None
        self.info = ConnectionInfo(id=next(_connection_ids), peer="")
        self._buffer = bytearray()
        self._pending: collections.deque[bytes | bytearray] = collections.deque()
        self._pending_bytes = 0
        self._worker: asyncio.Task[None] | None = None
        self._idle: asyncio.Future[None] | None = None  # set while the worker waits for a request
        # a request started in data_received that waits, and what it waits on: the worker carries it on
        self._carried: tuple[Coroutine[Any, Any, None], Any] | None = None
        # every step of every request runs in this one context (a request's ContextVar tokens are reset
        # in the context that set them, whether data_received or the worker ran the step)
        self._context = contextvars.copy_context()
        self._paused = False  # reading paused (queue full or replies unsent)
        self._write_paused = False  # the transport's write buffer is above WRITE_BUFFER_HIGH
        self._writable = asyncio.Event()
        self._writable.set()
        self._closing = False
        # With TLS disabled, the first bytes are checked once: a TLS ClientHello is refused at once.
        self._check_tls = state.options.tls_mode == "disabled"

    # -- asyncio.Protocol ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's TCPTransport
        self.transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH, low=WRITE_BUFFER_LOW)
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        if isinstance(local, str):  # the Unix domain socket: its clients are unnamed, as mongod names them
            peer = f"{UNIX_SOCKET_PEER}:{self.state.options.port}"
        self.info.peer = _format_address(peer)
        if self.info.tls:
            self.info.peer_certificate = transport.get_extra_info("peercert") or None
        self.info.local = _format_address(local)
        self.state.connections_current += 1
        self.state.connections_total += 1
        self.state.operations.connection_opened(self.info)
        log.log(
            log.INFO,
            "NETWORK",
            22943,
            "Connection accepted",
            ctx="listener",
            attr={
                "remote": self.info.peer,
                "connectionId": self.info.id,
                "connectionCount": self.state.connections_current,
            },
            chatter=True,
        )

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self.state.bytes_in += len(data)
        self._buffer += data
        if self._check_tls and len(self._buffer) >= tls.HEADER_BYTES:
            self._check_tls = False
            if tls.looks_like_tls(self._buffer):
                tls.refuse(self.info.peer, "SSL handshake received but server is started without SSL support")
                self._closing = True
                cast(asyncio.Transport, self.transport).close()  # data arrives once connected
                return
        try:
            self._slice_frames()
        except ParseError as exc:
            self._fatal(exc)
            return
        if self._pending and (self._worker is None or self._idle is not None):  # no request in flight
            if STEP_IN_DATA_RECEIVED:
                self._run_ready()
            else:
                self._carry(None)
        # (with nothing queued and reading on, nothing can need a pause: a partial frame is below the
        # byte bound, and unsent replies pause reading as they pass the mark: pause_writing)
        if self._pending or self._paused:
            self._update_reading()

    def _run_ready(self) -> None:
        """Run the queued requests here while each completes without waiting (the worker's loop, one
        step each); hand the first that waits, and with it the queue, to the worker (``_carry``). With
        requests queued while the client reads no replies, the worker waits for it as it would."""
        pending = self._pending
        while pending and not self._closing:
            if self._write_paused:
                self._carry(None)
                return
            self._pending_bytes -= len(pending[0])
            coro = self._handle(pending.popleft())
            try:
                waiting = self._context.run(coro.send, None)
            except StopIteration:
                continue
            except Exception as exc:
                self._failed(exc)
                return
            self._carry((coro, waiting))
            return

    def _carry(self, carried: tuple[Coroutine[Any, Any, None], Any] | None) -> None:
        """The worker takes over: the request ``data_received`` started and what it waits on (None:
        only the queue), started or woken now."""
        self._carried = carried
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._drain(), context=self._context)
        else:
            self._wake()

    def _wake(self) -> None:
        """Wake the worker if it waits for a request (it then runs one, or ends when closing)."""
        idle = self._idle
        if idle is not None:
            self._idle = None
            if not idle.done():
                idle.set_result(None)

    def _slice_frames(self) -> None:
        """Move every complete frame from the buffer to the queue. Small frames are copied out (one
        copy per frame; the consumed prefix is deleted once); a large frame at the start of the buffer
        becomes the frame itself, only the bytes after it are copied into a new buffer."""
        while True:
            buffer = self._buffer
            offset = 0
            large = 0
            with memoryview(buffer) as view:
                size = len(view)
                while size - offset >= 4:  # (a length to read: frame_length checks it)
                    length = frame_length(view, offset)
                    assert length is not None  # (four bytes are there)
                    if size - offset < length:
                        break
                    if offset == 0 and length >= OFF_LOOP_BYTES:
                        large = length
                        break
                    self._pending.append(bytes(view[offset : offset + length]))
                    offset += length
                    self._pending_bytes += length
            if offset:
                del buffer[:offset]
            if not large:
                return
            rest = bytearray(buffer[large:])
            del buffer[large:]
            self._pending.append(buffer)
            self._pending_bytes += large
            self._buffer = rest

    def _update_reading(self) -> None:
        """Pause reading while the queue is full or replies are unsent; resume below the low marks."""
        if self.transport is None or self._closing or self.transport.is_closing():
            return
        queued = self._pending_bytes + len(self._buffer)
        if not self._paused:
            if self._write_paused or len(self._pending) > MAX_QUEUED_FRAMES or queued > MAX_QUEUED_BYTES:
                self._paused = True
                self.transport.pause_reading()
        elif not self._write_paused and len(self._pending) < RESUME_QUEUED_FRAMES and queued <= MAX_QUEUED_BYTES // 2:
            self._paused = False
            self.transport.resume_reading()

    def pause_writing(self) -> None:
        self._write_paused = True
        self._writable.clear()
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._writable.set()
        self._update_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self.info.closed = True
        if self.info.on_close is not None:  # an awaitable hello waiting for nothing
            self.info.on_close()
        self._pending.clear()
        self._writable.set()  # a worker waiting for the client to read must not wait forever
        self._wake()  # nor one waiting for a request
        self.state.connections_current -= 1
        self.state.operations.connection_closed(self.info)
        log.log(
            log.INFO,
            "NETWORK",
            22944,
            "Connection ended",
            ctx=f"conn{self.info.id}",
            attr={
                "remote": self.info.peer,
                "connectionId": self.info.id,
                "connectionCount": self.state.connections_current,
            },
            chatter=True,
        )
        self._on_close(self)

    # -- lifecycle used by tidemark.app ----------------------------------------------------------
    async def shutdown(self) -> None:
        """Stop reading, let the in-flight command finish, drop queued ones, close the socket."""
        self._closing = True
        self._pending.clear()
        self._writable.set()
        self._wake()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()
        if self._worker is not None:
            try:
                await self._worker
            except Exception:
                pass
        if self.transport is not None:
            self.transport.close()

    # -- request processing --------------------------------------------------------------------
    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                carried = self._carried
                if carried is not None:  # (a request in flight finishes, even on a closing connection)
                    self._carried = None
                    try:
                        await _carry_on(*carried)
                    except Exception as exc:
                        self._failed(exc)
                    continue
                if self._closing:
                    return
                if not self._pending:
                    self._idle = loop.create_future()
                    await self._idle  # data_received (or the connection's end) wakes it
                    continue
                if self._write_paused:
                    await self._writable.wait()  # the client is not reading its replies
                    continue
                self._pending_bytes -= len(self._pending[0])
                try:
                    # no local keeps the frame: _handle drops it once decoded (a 48 MB frame's
                    # bytearray is not kept beside the bytes the request holds)
                    await self._handle(self._pending.popleft())
                except Exception as exc:
                    self._failed(exc)
        finally:
            self._worker = None
            self._idle = None

    def _failed(self, exc: Exception) -> None:
        """A request raised out of ``_handle``: the connection closes (quietly for failCommand's
        closeConnection; a bug outside dispatch is logged and drops this connection, not the server)."""
        if not isinstance(exc, CloseConnection):
            log.exception("NETWORK", 22989, "Unexpected error handling a message", exc, ctx=f"conn{self.info.id}")
        self._closing = True
        self._pending.clear()
        if self.transport is not None:
            self.transport.close()

    async def _handle(self, frame: bytes | bytearray) -> None:
        """One request: decode, run, answer (an OP_MSG here, with its exhaust stream; the legacy
        opcodes apart). Every command passes: the OP_MSG is not a further coroutine layer."""
        self.state.num_requests += 1
        if self._paused:  # a request left the queue: reading may resume (it cannot need to pause)
            self._update_reading()
        size = len(frame)
        try:
            if size >= OFF_LOOP_BYTES:
                request = await run_in_pool(self.state, None, decode_message, frame)
            else:
                request = decode_message(frame)
        except ParseError as exc:
            if exc.fatal:
                self._fatal(exc)
            else:
                # The header parsed (frames are length-checked), so the reply can reach the request.
                self._send(encode_op_msg(codec.encode(exc.to_reply()), next(_reply_ids), exc.request_id))
            return
        compressor_id = request.compressor_id
        if compressor_id is not None:
            self._count_compression(compressor_id, 2, size, compression.uncompressed_size(frame))
        del frame
        self.state.connections_active += 1
        try:
            if type(request) is not OpMsg:
                if type(request) is OpQuery:
                    await self._handle_op_query(request)
                else:  # OP_GET_MORE: mongod's GetMoreOpRunner
                    self._send_legacy_failure(request.request_id, "OP_GET_MORE is no longer supported")
                return
            cmd = request.command
            response_to = request.request_id
            more_to_come = request.flags & MORE_TO_COME
            exhaust_allowed = request.flags & EXHAUST_ALLOWED
            trailer: dict[str, Any] | None = None
            repeated, sequence_ids = request.repeated, request.sequence_ids
            while True:
                if trailer is not None:  # the empty last batch of an exhaust stream
                    reply, trailer = trailer, None
                else:
                    reply = await self.dispatcher.execute(self.info, cmd, size, repeated, sequence_ids)
                    repeated, sequence_ids = None, ()  # (what follows in an exhaust stream is the server's getMore)
                if more_to_come:
                    return
                follow = _exhaust_next(cmd, reply) if exhaust_allowed and not self._closing else None
                if follow is None and exhaust_allowed and reply is not None:
                    reply, trailer = _split_last_batch(cmd, reply)
                    follow = cmd if trailer is not None else None
                document = self._encode_reply(reply)
                reply_id = next(_reply_ids)
                message = encode_op_msg(document, reply_id, response_to, MORE_TO_COME if follow else 0)
                if compressor_id is not None and next(iter(cmd), "") not in UNCOMPRESSIBLE:
                    plain = len(message)
                    if plain >= OFF_LOOP_BYTES:  # zlib and zstd release the GIL while they work
                        message = await run_in_pool(self.state, None, compression.compress, message,
                                                    compressor_id)
                    else:
                        message = compression.compress(message, compressor_id)
                    self._count_compression(compressor_id, 0, plain, len(message))
                self._send(message)
                if follow is None:
                    return
                cmd, response_to = follow, reply_id  # exhaust: the server sends the next reply unasked
                if self._write_paused:
                    await self._writable.wait()  # the client is not reading the stream
                if self._closing:
                    return
        finally:
            self.state.connections_active -= 1

    async def _handle_op_query(self, request: OpQuery) -> None:
        rid = request.request_id
        if not request.full_collection_name.endswith(".$cmd"):
            self._send_legacy_failure(rid, "OP_QUERY is no longer supported")
            return
        cmd = request.query
        repeated = request.repeated
        if (
            len(cmd) >= 1
            and next(iter(cmd)) in ("$query", "query")
            and isinstance(next(iter(cmd.values())), dict)
        ):
            cmd = dict(next(iter(cmd.values())))
            repeated = None  # (the wrapper's names; a wrapped command's own repeats are not seen)
        name = next(iter(cmd), "")
        if request.number_to_return not in (1, -1):
            reply: dict[str, Any] = MongoError(
                16979,
                f"Bad numberToReturn ({request.number_to_return}) for $cmd type ns - can only be 1 or -1",
            ).to_reply()
        elif name not in OP_QUERY_COMMANDS:
            reply = MongoError(
                ErrorCode.UnsupportedOpQueryCommand,
                f"Unsupported OP_QUERY command: {name}. {LEGACY_OPCODE_ADVICE}",
            ).to_reply()
        elif "$db" in cmd:
            reply = MongoError(40621, "$db is not allowed in OP_QUERY requests").to_reply()
        else:
            cmd["$db"] = request.database
            if repeated is not None:
                repeated = (*repeated, ("$db", request.database))
            reply = await self.dispatcher.execute(self.info, cmd, 0, repeated)
        self._send(encode_op_reply(self._encode_reply(reply), next(_reply_ids), rid))

    def _send_legacy_failure(self, request_id: int, what: str) -> None:
        """mongod's makeErrorResponseToUnsupportedOpQuery: an OP_REPLY with QueryFailure set."""
        failure = {"$err": f"{what}. {LEGACY_OPCODE_ADVICE}", "code": 5739101, "ok": 0.0}
        self._send(encode_op_reply(codec.encode(failure), next(_reply_ids), request_id, QUERY_FAILURE))

    def _encode_reply(self, reply: dict[str, Any]) -> bytes:
        try:
            document = codec.encode_reply(reply)  # (a cursor batch written as its elements' bytes)
        except Exception as exc:  # a handler returned something BSON cannot hold
            return codec.encode(error_reply(exc, context=f"conn{self.info.id}"))
        if len(document) > MAX_COMMAND_SIZE:
            return codec.encode(
                MongoError(
                    ErrorCode.BSONObjectTooLarge,
                    f"BSONObj size: {len(document)} (0x{len(document):X}) is invalid. "
                    f"Size must be between 0 and {MAX_BSON_OBJECT_SIZE}(16MB)",
                ).to_reply()
            )
        return document

    def _count_compression(self, cid: int, side: int, given: int, produced: int) -> None:
        """Add to serverStatus' network.compression: ``side`` 0 the compressor, 2 the decompressor."""
        counters = self.state.compression_bytes.get(compression.name_of(cid))
        if counters is not None:  # (the noop compressor is not counted)
            counters[side] += given
            counters[side + 1] += produced

    def _send(self, message: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.state.bytes_out += len(message)
            self.transport.write(message)

    def _fatal(self, exc: ParseError) -> None:
        log.warning(
            "NETWORK",
            22988,
            "Closing connection after a malformed message",
            ctx=f"conn{self.info.id}",
            remote=self.info.peer,
            error=f"{exc.code_name}: {exc.message}",
        )
        self._closing = True
        self._pending.clear()
        self._wake()
        if self.transport is not None:
            self.transport.close()


@types.coroutine
def _carry_on(coro: Coroutine[Any, Any, None], waiting: Any) -> Generator[Any, Any, None]:
    """Await ``coro``, which was stepped outside any task (``data_received``) until it yielded
    ``waiting`` (a future, or None for a bare yield): the worker task gets that first, then the rest
    of ``coro``'s steps, each value or exception sent back in, as if the task had awaited it from its
    start (cancellation too)."""
    while True:
        try:
            sent = yield waiting
        except BaseException as exc:  # noqa: BLE001 - thrown into the task: the request's own await gets it
            try:
                waiting = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waiting = coro.send(sent)
            except StopIteration:
                return


_HELLO_NAMES = frozenset({"hello", "isMaster", "ismaster"})


def _exhaust_next(cmd: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any] | None:
    """The command an exhaust stream runs next after ``reply`` (None: the stream ends here): the same
    getMore while its cursor is open, the awaitable hello with the topologyVersion just answered."""
    if reply.get("ok") != 1.0:
        return None
    name = next(iter(cmd), "")
    if name == "getMore":
        cursor = reply.get("cursor")
        return cmd if isinstance(cursor, dict) and cursor.get("id") else None
    if name in _HELLO_NAMES and "topologyVersion" in cmd and "maxAwaitTimeMS" in cmd \
            and "topologyVersion" in reply:
        return {**cmd, "topologyVersion": reply["topologyVersion"]}
    return None


def _split_last_batch(cmd: dict[str, Any], reply: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """An exhaust getMore whose batch ended the cursor exactly at its ``batchSize``: as on mongod, whose
    scans stop pulling when the batch is full and learn they are done only on the next pull, the batch
    goes out with the cursor's id and moreToCome, and an empty batch with id 0 ends the stream (pymongo
    counts one getMore per reply). A batch that ended short of its size (or had none) met the end while
    filling, so mongod closes the cursor in that same reply, and so does this: a client that stops
    reading after it (pymongo on an error) finds nothing left on the socket. Otherwise ``(reply, None)``."""
    cursor = reply.get("cursor")
    if (next(iter(cmd), "") != "getMore" or reply.get("ok") != 1.0 or not isinstance(cursor, dict)
            or cursor.get("id") or not cursor.get("nextBatch")):
        return reply, None
    batch_size = cmd.get("batchSize")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0 \
            or len(cursor["nextBatch"]) < batch_size:
        return reply, None
    last = {"cursor": {"nextBatch": [], "id": Int64(0), "ns": cursor.get("ns")}, "ok": 1.0}
    return {**reply, "cursor": {**cursor, "id": Int64(cmd["getMore"])}}, last


def _format_address(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address or "")
