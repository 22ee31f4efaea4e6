"""TLS for client connections: ``--tlsMode disabled|allowTLS|preferTLS|requireTLS``.

- :func:`server_context` builds the one ``ssl.SSLContext`` (standard library, TLS 1.2 or newer,
  the server's certificate and key from ``--tlsCertificateKeyFile``; with ``--tlsCAFile`` client
  certificates are requested and verified — required unless ``--tlsAllowConnectionsWithoutCertificates``,
  not verified with ``--tlsAllowInvalidCertificates``).
- A connection speaks TLS or plaintext from its first bytes. Like mongod, the first 16 bytes decide:
  a wire message header has ``responseTo`` 0 (or -1); a TLS ClientHello does not
  (:func:`looks_like_tls`). :class:`TlsListener` (every mode but ``disabled``) accepts a socket,
  peeks at those bytes without consuming them, then hands the socket to the event loop as a TLS or
  a plain connection — or, under ``requireTLS``, closes a plaintext one at once. While it waits for
  those bytes a connection costs no CPU (the kernel wakes the loop only once 16 bytes are queued:
  ``SO_RCVLOWAT``); one that has not sent them within ``SNIFF_TIMEOUT_SECONDS`` (30 s) is closed.
  mongod has no such timeout, but an idle connection costs it nothing either. With TLS disabled,
  ``tidemark.connection`` closes a connection whose first bytes are a ClientHello at once, so a TLS
  client fails fast instead of waiting for a reply that never comes.
- :func:`certificate_warnings`: at start-up, mongod's warnings for a server certificate that has expired,
  is not yet valid, expires within 30 days or has no Subject Alternative Name (severity W).
- :class:`ServerCertificates` holds the context new connections get; ``rotateCertificates`` builds a new
  one from the same files (mongod's SSLManagerCoordinator::rotate): connections accepted from then on
  use it, established ones keep theirs; a file that no longer loads leaves the current one in place.
- ``allowTLS`` and ``preferTLS`` accept both (they differ only for outgoing cluster connections,
  which Tidemark does not make).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import select
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from tidemark import log

HEADER_BYTES = 16
# A connection must send its first 16 bytes within this time (server parameter
# tlsSniffTimeoutSecs, test-only); it costs no CPU while it waits (SO_RCVLOWAT), only a socket.
SNIFF_TIMEOUT_SECONDS = 30.0
PEEK_RETRY_SECONDS = 0.005  # backoff after a wake-up with fewer than 16 bytes and the peer still there
PEEK_RETRY_MAX_SECONDS = 1.0
HANDSHAKE_TIMEOUT_SECONDS = 30.0
EXPIRY_WARNING_DAYS = 30  # mongod warns when the server certificate expires within 30 days


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
    certificate_warnings(options.tls_certificate_key_file)
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


class ServerCertificates:
    """The TLS context of the connections accepted from now on (None with TLS disabled).

    State: ``context`` only, replaced whole by :meth:`rotate` on the event loop; a listener reads it at
    each handshake, so a connection keeps the context it was accepted with."""

    def __init__(self, options: Any):
        self._options = options
        self.context = server_context(options)  # ValueError: the start-up refuses the files

    def rotate(self) -> None:
        """Reload the certificate, key and CA files. Raises ValueError (the current context stays)."""
        if self.context is not None:
            self.context = server_context(self._options)


def certificate_warnings(path: str, now: float | None = None) -> list[int]:
    """mongod's start-up warnings about the server certificate (the first in ``path``), as severity W
    log lines kept among the start-up warnings; returns their log ids.

    - expired: 23785 "Server certificate has expired" (``certExpiration``);
    - not yet valid: 28652 "The provided SSL certificate is expired or not yet valid" (``notBefore``,
      ``notAfter``; mongod's text for a certificate outside its validity period);
    - expiring within 30 days: 23786 "Server certificate will expire soon" (``certExpiration``,
      ``validDuration`` in hours), as mongod's CertificateExpirationMonitor;
    - no Subject Alternative Name: 551190.

    mongod refuses to start with an expired or not-yet-valid server certificate (InvalidSSLConfiguration);
    Tidemark starts and warns, so that a lapsed certificate does not take the data offline."""
    try:  # the stdlib's own decoder (the certificate's fields as getpeercert() shows them); no extra package
        decoded = ssl._ssl._test_decode_cert(path)  # type: ignore[attr-defined]
        not_before = ssl.cert_time_to_seconds(decoded["notBefore"])
        not_after = ssl.cert_time_to_seconds(decoded["notAfter"])
    except (AttributeError, KeyError, OSError, ValueError, ssl.SSLError):
        return []
    now = time.time() if now is None else now
    logged = []
    if not_after <= now:
        log.warning("NETWORK", 23785, "Server certificate has expired", ctx="main", startup=True,
                    certExpiration=_iso(not_after))
        logged.append(23785)
    elif now < not_before:
        log.warning("NETWORK", 28652, "The provided SSL certificate is expired or not yet valid", ctx="main",
                    startup=True, notBefore=_iso(not_before), notAfter=_iso(not_after))
        logged.append(28652)
    elif not_after - now <= EXPIRY_WARNING_DAYS * 86400:
        log.warning("NETWORK", 23786, "Server certificate will expire soon", ctx="main", startup=True,
                    certExpiration=_iso(not_after), validDuration=int((not_after - now) // 3600))
        logged.append(23786)
    if not decoded.get("subjectAltName"):
        log.warning("NETWORK", 551190, "Server certificate has no compatible Subject Alternative Name. This may "
                    "prevent TLS clients from connecting", ctx="main", startup=True)
        logged.append(551190)
    return logged


def _iso(seconds: float) -> str:
    """mongod's dateToISOStringUTC: 2024-05-01T00:00:00.000Z."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def looks_like_tls(header: bytes | bytearray | memoryview) -> bool:
    """True when the first 16 bytes of a connection are not a wire message header (mongod's test:
    a request's ``responseTo`` is 0 or -1; a TLS ClientHello puts other bytes there)."""
    response_to = int.from_bytes(bytes(header[8:12]), "little", signed=True)
    return response_to not in (0, -1)


def refuse(remote: str, reason: str) -> None:
    log.warning("NETWORK", 22988, "Error receiving request from client. Ending connection from remote",
                ctx="listener", error=f"SSLHandshakeFailed: {reason}", remote=remote)


def _remote(conn: socket.socket, unix_peer: str) -> str:
    if conn.family == socket.AF_UNIX:  # its peer has no address: mongod's name for such a client
        return unix_peer
    try:
        host, port = conn.getpeername()[:2]
    except OSError:
        return ""
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


class TlsListener:
    """One listening socket that serves TLS and (unless ``require``) plaintext connections: a TCP
    socket (:meth:`listen`) or mongod's Unix domain socket (:meth:`on_socket` with the bound socket),
    sniffed alike — mongod's sessions on either decide TLS from the same first bytes, so ``requireTLS``
    refuses a plaintext client on the Unix socket too.

    ``factory(tls: bool)`` makes the protocol of an accepted connection. ``sockets`` and ``close()``
    mirror ``asyncio.Server`` for ``tidemark.app``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 factory: Callable[[bool], asyncio.Protocol], certificates: ServerCertificates, require: bool,
                 sniff_timeout: float = SNIFF_TIMEOUT_SECONDS):
        self._loop, self._sock, self._factory = loop, sock, factory
        self._certificates, self._require, self._sniff_timeout = certificates, require, sniff_timeout
        self._sniffing: set[asyncio.Task] = set()
        self.unix_peer = ""  # the remote logged for a refused client on the Unix socket (on_socket)
        self.sockets = [sock]
        self._task = loop.create_task(self._accept())

    @classmethod
    async def listen(cls, factory: Callable[[bool], asyncio.Protocol], host: str, port: int, backlog: int,
                     certificates: ServerCertificates, require: bool,
                     sniff_timeout: float = SNIFF_TIMEOUT_SECONDS) -> TlsListener:
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
        return cls(loop, sock, factory, certificates, require, sniff_timeout)

    @classmethod
    def on_socket(cls, sock: socket.socket, factory: Callable[[bool], asyncio.Protocol],
                  certificates: ServerCertificates, require: bool, unix_peer: str,
                  sniff_timeout: float = SNIFF_TIMEOUT_SECONDS) -> TlsListener:
        """Serve ``sock``, already bound and listening: the Unix domain socket, whose clients are
        logged as ``unix_peer``."""
        sock.setblocking(False)
        listener = cls(asyncio.get_running_loop(), sock, factory, certificates, require, sniff_timeout)
        listener.unix_peer = unix_peer
        return listener

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
                    lambda: self._factory(True), conn, ssl=self._certificates.context,
                    ssl_handshake_timeout=HANDSHAKE_TIMEOUT_SECONDS)
                handed_over = True
            elif self._require:
                refuse(_remote(conn, self.unix_peer), "The server is configured to only allow SSL connections")
            else:
                await self._loop.connect_accepted_socket(lambda: self._factory(False), conn)
                handed_over = True
        except (TimeoutError, OSError, ssl.SSLError) as exc:
            refuse(_remote(conn, self.unix_peer), str(exc) or type(exc).__name__)
        finally:
            if not handed_over:
                conn.close()

    async def _peek(self, conn: socket.socket) -> bytes | None:
        """The first 16 bytes, left unread for the protocol that takes the socket (None on EOF, or
        when they do not all arrive within the sniffing timeout).

        No polling: ``SO_RCVLOWAT`` = 16 makes the kernel report the socket readable only once 16
        bytes are queued (or the peer shut down / failed), so a client that sends one byte and stalls
        costs nothing until the timeout closes it. A wake-up with fewer bytes and the peer still
        there (memory pressure, or a kernel that ignores the low-water mark for poll) backs off."""
        fd = conn.fileno()
        try:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, HEADER_BYTES)
            lowered = True
        except OSError:
            lowered = False
        deadline = self._loop.time() + self._sniff_timeout
        backoff = PEEK_RETRY_SECONDS
        try:
            while True:
                remaining = deadline - self._loop.time()
                if remaining <= 0 or not await self._readable(fd, remaining):
                    return None
                try:
                    data = conn.recv(HEADER_BYTES, socket.MSG_PEEK)
                except (BlockingIOError, InterruptedError):
                    continue
                if not data:
                    return None
                if len(data) >= HEADER_BYTES:
                    return data
                if _peer_gone(fd):
                    return None
                await asyncio.sleep(min(backoff, max(remaining, 0.0)))
                backoff = min(backoff * 2, PEEK_RETRY_MAX_SECONDS)
        finally:
            if lowered:
                with contextlib.suppress(OSError):
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)

    async def _readable(self, fd: int, timeout: float) -> bool:
        """Wait until ``fd`` is readable (True) or ``timeout`` seconds pass (False)."""
        ready = self._loop.create_future()

        def settle(value: bool) -> None:
            if not ready.done():
                ready.set_result(value)

        self._loop.add_reader(fd, settle, True)
        timer = self._loop.call_later(timeout, settle, False)
        try:
            return await ready
        finally:
            timer.cancel()
            with contextlib.suppress(Exception):
                self._loop.remove_reader(fd)


def _peer_gone(fd: int) -> bool:
    """Whether the peer of ``fd`` shut down its side or the socket failed (a poll that does not wait)."""
    events = getattr(select, "POLLRDHUP", 0) | select.POLLHUP | select.POLLERR
    poller = select.poll()
    poller.register(fd, select.POLLIN | events)
    return any(mask & events for _, mask in poller.poll(0))
