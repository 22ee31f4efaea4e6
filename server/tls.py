"""TLS for client connections: ``--tlsMode disabled|allowTLS|preferTLS|requireTLS``.

- :func:`server_context` builds the one ``ssl.SSLContext`` (standard library, TLS 1.2 or newer,
  the server's certificate and key from ``--tlsCertificateKeyFile``; with ``--tlsCAFile`` client
  certificates are requested and verified — required unless ``--tlsAllowConnectionsWithoutCertificates``,
  not verified with ``--tlsAllowInvalidCertificates``).
- A connection speaks TLS or plaintext from its first bytes. Like mongod, the first 16 bytes decide:
  a wire message header has ``responseTo`` 0 (or -1); a TLS ClientHello does not
  (:func:`looks_like_tls`). :class:`TlsListener` (every mode but ``disabled``) accepts a socket,
  peeks at those bytes without consuming them, then hands the socket to the event loop as a TLS or
  a plain connection — or, under ``requireTLS``, closes a plaintext one at once. With TLS disabled,
  ``server.connection`` closes a connection whose first bytes are a ClientHello at once, so a TLS
  client fails fast instead of waiting for a reply that never comes.
- ``allowTLS`` and ``preferTLS`` accept both (they differ only for outgoing cluster connections,
  which Tidemark does not make).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Callable
from typing import Any

from server import log

HEADER_BYTES = 16
PEEK_RETRY_SECONDS = 0.005
PARTIAL_HEADER_SECONDS = 10.0  # a client that sent part of a header and stalls is dropped after this
HANDSHAKE_TIMEOUT_SECONDS = 30.0


def server_context(options: Any) -> ssl.SSLContext | None:
    """The server's TLS context (None with TLS disabled). Raises ValueError with a clear message."""
    if options.tls_mode == "disabled":
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(options.tls_certificate_key_file, password=options.tls_certificate_key_file_password)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cannot use tlsCertificateKeyFile {options.tls_certificate_key_file}: {exc}") from None
    if options.tls_ca_file:
        try:
            context.load_verify_locations(cafile=options.tls_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot use tlsCAFile {options.tls_ca_file}: {exc}") from None
        if options.tls_allow_invalid_certificates:
            context.verify_mode = ssl.CERT_NONE
        elif options.tls_allow_connections_without_certificates:
            context.verify_mode = ssl.CERT_OPTIONAL
        else:
            context.verify_mode = ssl.CERT_REQUIRED
    return context


def looks_like_tls(header: bytes | bytearray | memoryview) -> bool:
    """True when the first 16 bytes of a connection are not a wire message header (mongod's test:
    a request's ``responseTo`` is 0 or -1; a TLS ClientHello puts other bytes there)."""
    response_to = int.from_bytes(bytes(header[8:12]), "little", signed=True)
    return response_to not in (0, -1)


def refuse(remote: str, reason: str) -> None:
    log.warning("NETWORK", 22988, "Error receiving request from client. Ending connection from remote",
                ctx="listener", error=f"SSLHandshakeFailed: {reason}", remote=remote)


def _remote(conn: socket.socket) -> str:
    try:
        host, port = conn.getpeername()[:2]
    except OSError:
        return ""
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


class TlsListener:
    """One listening socket that serves TLS and (unless ``require``) plaintext connections.

    ``factory(tls: bool)`` makes the protocol of an accepted connection. ``sockets`` and ``close()``
    mirror ``asyncio.Server`` for ``server.app``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 factory: Callable[[bool], asyncio.Protocol], context: ssl.SSLContext, require: bool):
        self._loop, self._sock, self._factory = loop, sock, factory
        self._context, self._require = context, require
        self._sniffing: set[asyncio.Task] = set()
        self.sockets = [sock]
        self._task = loop.create_task(self._accept())

    @classmethod
    async def listen(cls, factory: Callable[[bool], asyncio.Protocol], host: str, port: int, backlog: int,
                     context: ssl.SSLContext, require: bool) -> TlsListener:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return cls(loop, sock, factory, context, require)

    def close(self) -> None:
        self._task.cancel()
        for task in list(self._sniffing):
            task.cancel()
        self._sock.close()

    async def _accept(self) -> None:
        while True:
            try:
                conn, _ = await self._loop.sock_accept(self._sock)
            except asyncio.CancelledError:
                raise
            except OSError as exc:  # e.g. EMFILE: keep serving the others
                log.warning("NETWORK", 23024, "Error accepting new connection", ctx="listener", error=str(exc))
                await asyncio.sleep(0.01)
                continue
            task = self._loop.create_task(self._sniff(conn))
            self._sniffing.add(task)
            task.add_done_callback(self._sniffing.discard)

    async def _sniff(self, conn: socket.socket) -> None:
        conn.setblocking(False)
        handed_over = False
        try:
            header = await self._peek(conn)
            if header is None:
                return
            if looks_like_tls(header):
                await self._loop.connect_accepted_socket(
                    lambda: self._factory(True), conn, ssl=self._context,
                    ssl_handshake_timeout=HANDSHAKE_TIMEOUT_SECONDS)
                handed_over = True
            elif self._require:
                refuse(_remote(conn), "The server is configured to only allow SSL connections")
            else:
                await self._loop.connect_accepted_socket(lambda: self._factory(False), conn)
                handed_over = True
        except (TimeoutError, OSError, ssl.SSLError) as exc:
            refuse(_remote(conn), str(exc) or type(exc).__name__)
        finally:
            if not handed_over:
                conn.close()

    async def _peek(self, conn: socket.socket) -> bytes | None:
        """The first 16 bytes, left unread for the protocol that takes the socket (None on EOF, or
        when a partial header does not complete in time)."""
        deadline = None
        while True:
            await self._readable(conn)
            try:
                data = conn.recv(HEADER_BYTES, socket.MSG_PEEK)
            except BlockingIOError:
                continue
            if not data:
                return None
            if len(data) >= HEADER_BYTES:
                return data
            # A partial header: the rest is on its way (the socket stays readable, so poll briefly).
            now = self._loop.time()
            deadline = deadline or now + PARTIAL_HEADER_SECONDS
            if now > deadline:
                return None
            await asyncio.sleep(PEEK_RETRY_SECONDS)

    async def _readable(self, conn: socket.socket) -> None:
        ready = self._loop.create_future()
        fd = conn.fileno()
        self._loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(fd)
