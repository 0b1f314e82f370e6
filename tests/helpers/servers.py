"""Local servers and ports: a free port, a webhook receiver that records what it is sent, a
static site on an origin of its own, a stand-in provider answering JSON, a TCP proxy that
can take a server away, and the requests a server's clients gave up on."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Received:
    body: Any
    headers: dict[str, str]
    at: float


@dataclass
class WebhookReceiver:
    """A real HTTP server that records notifications; `plan` scripts its next answers."""

    port: int = field(default_factory=free_port)
    received: list[Received] = field(default_factory=list)
    plan: list[tuple[int, float]] = field(default_factory=list)  # (status, delay seconds)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/payments"

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with receiver._lock:
                    status, delay = receiver.plan.pop(0) if receiver.plan else (200, 0.0)
                    receiver.received.append(
                        Received(json.loads(raw or b"null"), dict(self.headers), time.monotonic())
                    )
                if delay:  # answer late: hold it until the sender gives up, `delay` at most
                    self.connection.settimeout(delay)
                    with contextlib.suppress(TimeoutError):
                        self.connection.recv(1)  # b"" as soon as the sender hangs up
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.received]

    def wait_for(self, count: int, timeout: float = 15) -> list[Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.received) >= count:
                return self.bodies()
            time.sleep(0.05)
        raise AssertionError(f"expected {count} notifications, got {self.bodies()}")


class StaticSite:
    """A tiny web server for test pages, on an origin of its own (its own port)."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page = site.pages.get(self.path.split("?")[0])
                if page is None:
                    self.send_error(404)
                    return
                raw = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.pages = pages
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def abandoned_requests(base_url: str) -> int:
    """How many requests to the server at `base_url` (on this machine) its clients gave up on
    while it still works on them: their connections, closed by the client, stay half-closed
    (CLOSE_WAIT) on the server's side until it has answered. Read from Linux's table of TCP
    sockets."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        raise RuntimeError("abandoned_requests reads Linux's /proc/net/tcp")
    port = urlsplit(base_url).port
    close_wait = "08"
    count = 0
    for line in table.read_text().splitlines()[1:]:
        fields = line.split()  # sl, local address:port (hex), remote address:port, state, ...
        local, state = fields[1], fields[3]
        if int(local.rsplit(":", 1)[1], 16) == port and state == close_wait:
            count += 1
    return count


class JsonAnswering(BaseHTTPRequestHandler):
    """A stand-in provider answering every GET `status` with `{"message": message}`; a subclass
    says what it keeps of each request (`seen`)."""

    status = 404
    message = "not found"

    def seen(self) -> None:
        """What to keep of the request being answered."""

    def do_GET(self) -> None:
        self.seen()
        body = json.dumps({"message": self.message}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


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
