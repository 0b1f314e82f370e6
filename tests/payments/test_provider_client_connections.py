"""The client on real sockets, for what neither the sandbox nor `responses` can do: a closed port,
a connection dropped after the request was sent, and a Retry-After that must not stretch the
wait."""

from __future__ import annotations

import socket
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from payments.provider.client import PaymentsClient
from payments.provider.errors import OutcomeUnknown, ProviderUnavailable
from payments.provider.retries import default_retry
from tests.helpers.servers import free_port
from tests.payments.helpers import PAYMENT_ID, error_body, key


class DropThenRefuse:
    """Accepts one connection, reads the request, stops listening and hangs up unanswered."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.received = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.listener.close()
        with conn:
            conn.settimeout(2)
            try:
                while b"\r\n\r\n" not in self.received or not self.received.endswith(b"}"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    self.received += chunk
            except OSError:
                pass


def test_post_to_closed_port_raises_provider_unavailable() -> None:
    """A POST that could never connect raises ProviderUnavailable: nothing was sent."""
    client = PaymentsClient(
        base_url=f"http://127.0.0.1:{free_port()}",
        public_key="pk",
        access_token="tok",
        retry=default_retry(1),
    )

    with pytest.raises(ProviderUnavailable) as caught:
        client.create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())

    assert type(caught.value) is ProviderUnavailable


def test_post_sent_then_refused_on_retry_raises_outcome_unknown() -> None:
    """A POST that was sent and unanswered stays OutcomeUnknown even if retries are refused."""
    server = DropThenRefuse()
    client = PaymentsClient(
        base_url=f"http://127.0.0.1:{server.port}",
        public_key="pk",
        access_token="tok",
        timeout=(1, 2),
        retry=default_retry(2),
    )

    with pytest.raises(ProviderUnavailable) as caught:
        client.create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())

    server.thread.join(5)
    assert b"POST /payments" in server.received, "the first attempt reached the provider"
    assert type(caught.value) is OutcomeUnknown, repr(caught.value)


class RetryAfter503(BaseHTTPRequestHandler):
    calls = 0

    def do_GET(self) -> None:
        type(self).calls += 1
        body = error_body("AI1899", "Service unavailable").encode()
        self.send_response(503)
        self.send_header("Retry-After", "120")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_retry_after_does_not_stretch_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 503 with Retry-After: 120 is still retried within the backoff bound, not for minutes."""
    RetryAfter503.calls = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), RetryAfter503)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    slept: list[float] = []
    monkeypatch.setattr("urllib3.util.retry.time.sleep", slept.append)
    client = PaymentsClient(
        base_url=f"http://127.0.0.1:{server.server_address[1]}",
        public_key="pk",
        access_token="tok",
    )
    try:
        with pytest.raises(ProviderUnavailable):
            client.get_payment(PAYMENT_ID)
    finally:
        server.shutdown()
        server.server_close()

    assert RetryAfter503.calls == 4
    # default_retry's backoff_max is 3 s: three waits, each at most that.
    assert sum(slept) <= 3 * 3.0, f"the client would have waited {slept} seconds"
