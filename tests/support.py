"""Test support: a live provider sandbox process, an API helper, and a webhook receiver."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
# Debian's Chromium, driven by Playwright (no browser is ever downloaded).
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PUBLIC_KEY = "pk_test_suite_public"
SECRET_KEY = "sk_test_suite_secret"

# DESIGN.md test cards.
VISA = "4242424242424242"
MASTER = "5555555555554444"
AMEX = "378282246310005"
# A Visa whose BIN the catalogue's installment_pattern names (meses sin intereses).
INSTALLMENTS_VISA = "4152310000000001"
THREE_DS = "4000000000003220"
DECLINED = "4000000000000002"
INSUFFICIENT_FUNDS = "4000000000009995"
PROVIDER_ERROR = "4000000000000119"
CVV_FOR = {VISA: "123", MASTER: "123", AMEX: "1234"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def unreachable_database(alias: str) -> Any:
    """A connection like the default one, to a database that cannot be reached: a closed port
    (on SQLite, a file in a folder that does not exist)."""
    from django.db import connections

    default = connections["default"]
    if default.vendor == "sqlite":
        away = {**default.settings_dict, "NAME": "/nonexistent/folder/shop.sqlite3"}
    else:
        away = {**default.settings_dict, "HOST": "127.0.0.1", "PORT": str(free_port())}
    return type(default)(away, alias=alias)


def decimal_json(response: requests.Response) -> Any:
    return json.loads(response.text, parse_float=Decimal)


def sandbox_database_url(name: str) -> str | None:
    """A PostgreSQL database of its own for the sandbox when the suite runs on PostgreSQL."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    _drop_database(url, name, recreate=True)
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def drop_sandbox_database(url: str | None) -> None:
    """Remove the sandbox's database once the session is over (nothing is left behind)."""
    if url:
        _drop_database(url, urlsplit(url).path.strip("/"))


def _drop_database(url: str, name: str, *, recreate: bool = False) -> None:
    import psycopg

    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if recreate:
            conn.execute(f'CREATE DATABASE "{name}"')


def fill_catalogue() -> None:
    """Store the payment methods catalogue as the refresh task does, from the provider the
    settings name (the pages read only the stored copy)."""
    from payments.catalogue.calls import payment_methods_refresh

    assert payment_methods_refresh() is not None, "the provider gave no catalogue"


def clear_cache() -> None:
    """Forget the shop's own cache keys (rate limits, markers, the catalogue): with Redis, only
    the keys under the cache's prefix, never the rest of its database."""
    from django.core.cache import cache

    delete_pattern = getattr(cache, "delete_pattern", None)
    if delete_pattern is None:  # the demo's file cache holds nothing but ours
        cache.clear()
    else:
        delete_pattern("*")


@dataclass
class SandboxProcess:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    database_url: str | None
    var_dir: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def run_sandbox(
    tmp_dir: Path, *, database_url: str | None = None, extra_env: dict[str, str] | None = None
) -> Iterator[SandboxProcess]:
    port = free_port()
    env = {
        **os.environ,
        "SANDBOX_PUBLIC_KEY": PUBLIC_KEY,
        "SANDBOX_SECRET_KEY": SECRET_KEY,
        "SANDBOX_VAR_DIR": str(tmp_dir),
        "SANDBOX_WEBHOOK_BACKOFF_BASE": "0.2",
        "SANDBOX_WEBHOOK_BACKOFF_MAX": "1",
        "SANDBOX_WEBHOOK_TIMEOUT": "2",
        "SANDBOX_WEBHOOK_MAX_ATTEMPTS": "4",
        **(extra_env or {}),
    }
    env.pop("SANDBOX_DATABASE_URL", None)
    if database_url:
        env["SANDBOX_DATABASE_URL"] = database_url
    log_path = tmp_dir / "sandbox.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "sandbox.manage", "runsandbox", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}"
    sandbox = SandboxProcess(base_url, process, log_path, database_url, tmp_dir)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"sandbox exited early:\n{sandbox.log()}")
            try:
                if requests.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"sandbox did not start:\n{sandbox.log()}")
            time.sleep(0.2)
        yield sandbox
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


class Api:
    """Calls the sandbox as a merchant would; `auth` is 'secret', 'public' or None."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.session = requests.Session()

    def headers(self, auth: str | None) -> dict[str, str]:
        if auth == "secret":
            import base64

            token = base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
            return {"Authorization": f"Basic {token}"}
        if auth == "public":
            return {"Authorization": f"Bearer {PUBLIC_KEY}"}
        return {}

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        auth: str | None = "secret",
        headers: dict[str, str] | None = None,
        raw: bytes | str | None = None,
        params: dict[str, str] | None = None,
    ) -> requests.Response:
        all_headers = {"Content-Type": "application/json", **self.headers(auth), **(headers or {})}
        data = raw if raw is not None else (None if body is None else _dumps(body))
        return self.session.request(
            method,
            f"{self.base_url}{path}",
            data=data,
            headers=all_headers,
            params=params,
            timeout=30,
        )

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, body, **kwargs)

    def patch(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("PATCH", path, body, **kwargs)

    def put(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, body, **kwargs)

    # Shortcuts for the common flows.
    def card_token(self, number: str = VISA, **card: Any) -> dict[str, Any]:
        body = {
            "card": {
                "number": number,
                "exp_month": "12",
                "exp_year": "2031",
                "cvv": CVV_FOR.get(number, "123"),
                "holder_name": "Ana Pérez",
                **card,
            }
        }
        response = self.post("/card_tokens", body, auth="public")
        assert response.status_code == 201, response.text
        return decimal_json(response)

    def create_payment(self, number: str = VISA, **fields: Any) -> dict[str, Any]:
        response = self.create_payment_response(number, **fields)
        assert response.status_code == 201, response.text
        return decimal_json(response)

    def create_payment_response(self, number: str = VISA, **fields: Any) -> requests.Response:
        token = self.card_token(number)["id"]
        body = {
            "amount": Decimal("250.00"),
            "currency": "MXN",
            "description": "Taza de barro",
            "payment_method": {"token": token},
            **fields,
        }
        return self.post("/payments", body)

    def payment(self, payment_id: str) -> dict[str, Any]:
        response = self.get(f"/payments/{payment_id}")
        assert response.status_code == 200, response.text
        return decimal_json(response)

    def add_fault(self, **spec: Any) -> int:
        """A fault of the sandbox (`/_sandbox/faults`: path, method, status, latency_ms,
        times...); its id."""
        response = self.post("/_sandbox/faults", spec)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def fault(self, fault_id: int) -> dict[str, Any]:
        return next(f for f in self.get("/_sandbox/faults").json() if f["id"] == fault_id)

    def fault_hits(self, fault_id: int) -> int:
        """How many requests the fault has matched."""
        return self.fault(fault_id)["hits"]

    def payments(self) -> list[dict[str, Any]]:
        return decimal_json(self.get("/_sandbox/payments"))

    def deliveries(self, payment_id: str | None = None) -> list[dict[str, Any]]:
        params = {"payment_id": payment_id} if payment_id else None
        return decimal_json(self.get("/_sandbox/webhooks", params=params))


def _dumps(body: Any) -> str:
    import simplejson

    return simplejson.dumps(body, use_decimal=True)


def same_payment(payment: dict[str, Any]) -> dict[str, Any]:
    """A payment's JSON as compared between two answers: the letter case of a PE-3DS01
    message varies from one answer to the next (the specification says so), nothing else."""
    detail = payment.get("status_detail") or {}
    message = str(detail.get("message", "")).casefold()
    return {**payment, "status_detail": {**detail, "message": message}}


def assert_error(response: requests.Response, status: int, code: str) -> dict[str, Any]:
    """An error answer with the spec's body: {error_code, message, detail: [...]}."""
    assert response.status_code == status, f"{response.status_code} {response.text}"
    body = response.json()
    assert set(body) == {"error_code", "message", "detail"}, body
    assert body["error_code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["detail"], list) and all(isinstance(d, str) for d in body["detail"])
    return body


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


def wait_until(predicate: Any, timeout: float = 15, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


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


def refuse_provider_calls(monkeypatch: Any) -> list[tuple[str, str]]:
    """From now on every request the shop tries to send to the provider is recorded, as
    (method, path), and none gets out: the provider is down."""
    from payments.provider.client import PaymentsClient
    from payments.provider.errors import ProviderUnavailable

    sent: list[tuple[str, str]] = []

    def down(self: PaymentsClient, method: str, path: str, **kwargs: Any) -> Any:
        sent.append((method, path))
        raise ProviderUnavailable("the provider is down in this test")

    monkeypatch.setattr(PaymentsClient, "_call", down)
    return sent


def shop_schema() -> dict[str, Any]:
    """The shop's OpenAPI document as drf-spectacular generates it (and /api/schema/ serves it),
    as plain JSON data."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


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


def plan_of(sql: str) -> str:
    """PostgreSQL's plan for `sql` when it may not read a whole table (seq scans off): an
    index is named only if one can serve the query."""
    if connection.vendor != "postgresql":
        pytest.skip("the plans are PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SET LOCAL enable_seqscan = on")
    return plan
