"""Support for the webhook tests: the tasks waiting in the real broker, a TCP proxy that can make
Redis unreachable on demand, and a Celery worker in a process of its own that a test can kill."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import ROOT, free_port


def take_queued_with_eta(app: Any) -> list[tuple[str, list[Any], str | None]]:
    """The tasks waiting in the broker's queues (each queue in turn), as (task name, args,
    eta); taken off them, so that the next call sees only what was queued since."""
    tasks: list[tuple[str, list[Any], str | None]] = []
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in app.amqp.queues:
            while (message := channel.basic_get(queue=queue, no_ack=True)) is not None:
                args, _kwargs, _options = message.decode()
                tasks.append((message.headers["task"], list(args), message.headers.get("eta")))
    return tasks


def take_queued(app: Any) -> list[tuple[str, list[Any]]]:
    """The tasks waiting in the broker's queues, as (task name, args); taken off them."""
    return [(name, args) for name, args, _eta in take_queued_with_eta(app)]


class TcpProxy:
    """Forwards 127.0.0.1:`port` to `upstream`. `close()` refuses new connections and cuts the
    open ones, as a server that went down; `open()` brings it back on the same port."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self._listener is not None

    def open(self) -> TcpProxy:
        if self._listener is not None:
            return self
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._stopping.clear()
        self._listener = listener
        self._acceptor = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        self._acceptor.start()
        return self

    def close(self) -> None:
        if self._listener is None:
            return
        self._stopping.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout=5)
        self._listener.close()
        self._listener = None
        with self._lock:
            open_sockets = list(self._sockets)
            self._sockets.clear()
        for sock in open_sockets:
            _shut(sock)

    def _accept(self, listener: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.upstream, timeout=2)
            except OSError:
                _shut(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._stopping.is_set():
                    _shut(client)
                    _shut(upstream)
                    return
                self._sockets.update((client, upstream))
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._sockets.discard(source)
                self._sockets.discard(target)
            _shut(source)
            _shut(target)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@dataclass
class WorkerProcess:
    """`celery -A config worker --pool=solo` in a process of its own, as production runs it."""

    env: dict[str, str]
    log_path: Path
    name: str
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> WorkerProcess:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            f"--hostname={self.name}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"worker {self.name} exited early:\n{self.log()}")
            if " ready." in self.log():
                return
            time.sleep(0.1)
        raise AssertionError(f"worker {self.name} did not start:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no acknowledgement, as a machine that lost power."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
