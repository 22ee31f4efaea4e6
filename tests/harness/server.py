"""A Tidemark server in a child process, started the way a user starts it (``python -m tidemark``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tidemark.protocol.messages import decode_reply, encode_op_msg_request

ROOT = Path(__file__).resolve().parents[2]
PYTHON = (
    str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
)
EXIT_NET_ERROR = 48


def free_port() -> int:
    """A TCP port that was free a moment ago (the server retries on the rare collision)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def recv_frame(sock: socket.socket) -> bytes:
    """Read one complete wire frame from ``sock`` (raises ConnectionError on EOF)."""
    data = b""
    while len(data) < 4 or len(data) < int.from_bytes(data[:4], "little"):
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("server closed the connection")
        data += chunk
    return data


def raw_command(port: int, command: dict[str, Any] | bytes, *, timeout: float = 5.0,
                sequences: dict[str, list] | None = None, ssl_context: Any = None) -> dict[str, Any]:
    """Send one OP_MSG command on a fresh socket (no driver) and return the reply document
    (``command``: a dict, or BSON bytes for a body a dict cannot hold, such as a repeated name);
    ``sequences``: kind-1 document sequences (e.g. an insert's ``documents``); ``ssl_context``: talk
    TLS (an ``ssl.SSLContext`` that trusts the server)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as plain:
        sock = ssl_context.wrap_socket(plain, server_hostname="localhost") if ssl_context else plain
        sock.sendall(encode_op_msg_request(command, 1, sequences=sequences))
        return decode_reply(recv_frame(sock))


class ServerProcess:
    """One ``python -m tidemark`` child: ``start()``, ``terminate()`` (SIGTERM, graceful), ``kill()``
    (SIGKILL, a crash), ``restart()`` (same port and dbpath). ``uri`` is a direct-connection URI;
    the process log goes to ``log_path``."""

    def __init__(
        self,
        dbpath: str | os.PathLike[str],
        *,
        port: int | None = None,
        params: dict[str, Any] | None = None,
        args: tuple[str, ...] = (),
        log_path: str | os.PathLike[str] | None = None,
        ssl_context: Any = None,
    ):
        self.ssl_context = ssl_context  # readiness pings over TLS (servers started with --tlsMode requireTLS)
        self.dbpath = str(dbpath)
        self.port = port or free_port()
        self._fixed_port = port is not None
        self.params = dict(params or {})
        self.args = tuple(args)
        self.log_path = Path(log_path) if log_path else Path(self.dbpath).parent / f"tidemark-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def command_line(self) -> list[str]:
        argv = [PYTHON, "-m", "tidemark", "--port", str(self.port), "--dbpath", self.dbpath]
        for name, value in self.params.items():
            argv += ["--setParameter", f"{name}={value}"]
        return argv + list(self.args)

    def start(self, timeout: float = 30.0) -> ServerProcess:
        for _attempt in range(3):
            os.makedirs(self.dbpath, exist_ok=True)
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    self.command_line(), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
                )
            if self._wait_ready(timeout):
                return self
            if self.process.poll() == EXIT_NET_ERROR and not self._fixed_port:
                self.port = free_port()  # lost a race for the port: try another
                continue
            break
        code = self.process.poll() if self.process else None
        self.kill()
        raise RuntimeError(f"server did not start (exit code {code}); log:\n{self.log_text()[-4000:]}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                ping = {"ping": 1, "$db": "admin"}
                if raw_command(self.port, ping, timeout=1.0, ssl_context=self.ssl_context).get("ok") == 1.0:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def terminate(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait: the exit code (0 for a clean shutdown)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise
        return self.process.returncode

    def kill(self) -> int | None:
        """SIGKILL (simulates a crash) and wait."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        return self.process.returncode

    def restart(self, timeout: float = 30.0) -> ServerProcess:
        if self.running:
            self.terminate()
        self._fixed_port = True  # clients hold the URI: keep the port
        return self.start(timeout)

    def client(self, **kwargs: Any):
        import pymongo

        kwargs.setdefault("serverSelectionTimeoutMS", 10_000)
        return pymongo.MongoClient(self.uri, **kwargs)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


def patched(proc: ServerProcess, patch: str, name: str) -> ServerProcess:
    """A server on ``proc``'s dbpath and port whose process first runs ``patch`` (Python source: a fault
    injected into a module, or an older version's behaviour forged), then the server as usual; ``name``
    tells its launcher and log apart from ``proc``'s."""
    launcher = f"{proc.dbpath}-{name}.py"
    with open(launcher, "w") as f:
        f.write(f"import runpy, sys\n{patch}\nsys.argv[0] = 'tidemark'\n"
                "runpy.run_module('tidemark', run_name='__main__')\n")
    server = ServerProcess(proc.dbpath, port=proc.port, log_path=f"{proc.dbpath}-{name}.log")
    server.command_line = lambda: [PYTHON, launcher, "--port", str(server.port), "--dbpath", server.dbpath]
    return server
