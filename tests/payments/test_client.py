"""Contract tests of the typed provider client: the live sandbox over real HTTP, `responses`
for faults the sandbox cannot easily make, Hypothesis for exact money, and its logging."""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
import responses
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from payments.client import PaymentsClient, default_retry, get_client
from payments.errors import (
    Conflict,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
    ProviderApiError,
    ProviderUnavailable,
    Unauthorized,
)
from payments.types import ProviderPayment
from tests.support import (
    AMEX,
    CVV_FOR,
    DECLINED,
    INSUFFICIENT_FUNDS,
    MASTER,
    PROVIDER_ERROR,
    PUBLIC_KEY,
    SECRET_KEY,
    THREE_DS,
    VISA,
    Api,
    free_port,
    wait_until,
)

# A subscription seeded by every sandbox reset (sandbox/provider/subscriptions.py).
SEEDED_SUBSCRIPTION = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"
REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")
FAKE_URL = "http://provider.test"
PAYMENT_ID = "3f9d6c1e-8a2b-4c5d-9e0f-1a2b3c4d5e6f"


# --- Helpers -------------------------------------------------------------------------------


def key() -> str:
    return uuid.uuid4().hex


def token_for(client: PaymentsClient, number: str = VISA) -> str:
    return client.create_card_token(
        number=number,
        exp_month="12",
        exp_year="2031",
        cvv=CVV_FOR.get(number, "123"),
        holder_name="Ana Pérez",
    ).id


def payment_body(token: str, *, amount: str = "250.00", capture_method: str = "automatic"):
    return {
        "amount": Decimal(amount),
        "currency": "MXN",
        "description": "Taza de barro",
        "capture_method": capture_method,
        "payment_method": {"token": token},
        "customer": {"first_name": "Ana", "last_name": "Pérez", "email": "ana@example.com"},
    }


def pay(client: PaymentsClient, number: str = VISA, **kwargs: Any) -> ProviderPayment:
    return client.create_payment(
        body=payment_body(token_for(client, number), **kwargs), idempotency_key=key()
    )


def add_fault(provider: Api, **fault: Any) -> int:
    response = provider.post("/_sandbox/faults", fault)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def fault(provider: Api, fault_id: int) -> dict[str, Any]:
    return next(f for f in provider.get("/_sandbox/faults").json() if f["id"] == fault_id)


def assert_provider_error(
    exc: ProviderApiError, kind: type[ProviderApiError], status: int, code: str
) -> None:
    assert type(exc) is kind, f"{type(exc).__name__}: {exc}"
    assert exc.http_status == status
    assert exc.error_code == code
    assert isinstance(exc.message, str) and exc.message
    assert isinstance(exc.detail, list) and all(isinstance(d, str) for d in exc.detail)
    assert REQUEST_ID.match(exc.request_id), exc.request_id


def fake_client(**kwargs: Any) -> PaymentsClient:
    return PaymentsClient(
        base_url=FAKE_URL,
        public_key="pk",
        access_token="tok",
        retry=default_retry(2),
        **kwargs,
    )


def payment_json(amount: str = "250.00", **fields: Any) -> dict[str, Any]:
    return {
        "id": PAYMENT_ID,
        "status": "approved",
        "status_detail": {"code": "AP-PAI01", "message": "paid"},
        "capture_method": "automatic",
        "amount": Decimal(amount),
        "paid_amount": Decimal(amount),
        "captured_amount": Decimal(amount),
        "amount_refunded": Decimal("0.00"),
        "currency": "MXN",
        "pending_action": {},
        "payment_method": {"id": "visa", "type": "credit_card", "token": "tok_card"},
        "created_at": "2025-03-01T12:00:00.123456Z",
        "approved_at": "2025-03-01T12:00:01.5-06:00",
        "refunds": [],
        "version": 2,
        **fields,
    }


def dumps(data: Any) -> str:
    import simplejson

    return simplejson.dumps(data, use_decimal=True)


def error_body(code: str, message: str = "Something", detail: str = "more") -> str:
    return json.dumps({"error_code": code, "message": message, "detail": [detail]})


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


# --- 1. Against the live sandbox -----------------------------------------------------------


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("number", "method"),
    [
        (VISA, "visa"),
        (MASTER, "master"),
        (AMEX, "amex"),
        (THREE_DS, "visa"),
        (DECLINED, "visa"),
        (INSUFFICIENT_FUNDS, "visa"),
        (PROVIDER_ERROR, "visa"),
    ],
)
def test_create_card_token_for_each_test_card(provider: Api, number: str, method: str) -> None:
    """Every test card becomes a typed card token: id, masked card, method, aware expiry."""
    before = datetime.now(UTC)

    token = PaymentsClient.from_settings().create_card_token(
        number=number,
        exp_month="12",
        exp_year="2031",
        cvv=CVV_FOR.get(number, "123"),
        holder_name="Ana Pérez",
    )

    assert token.id
    assert token.payment_method_id == method
    assert token.card is not None
    assert (token.card.bin, token.card.last_digits) == (number[:6], number[-4:])
    assert token.expires_at is not None and token.expires_at.tzinfo is not None
    assert before < token.expires_at <= before + timedelta(minutes=16)


@pytest.mark.sandbox
def test_create_payment_automatic_is_approved(provider: Api) -> None:
    """Automatic capture: a typed approved payment with exact Decimal amounts."""
    payment = pay(PaymentsClient.from_settings(), amount="1234.56")

    assert (payment.status, payment.status_detail.code) == ("approved", "AP-PAI01")
    assert payment.amount == Decimal("1234.56") and isinstance(payment.amount, Decimal)
    assert payment.captured_amount == Decimal("1234.56")
    assert payment.capture_method == "automatic"
    assert payment.payment_method_id == "visa"
    assert payment.card is not None and payment.card.last_digits == "4242"
    assert payment.created_at is not None and payment.created_at.tzinfo is not None
    assert payment.approved_at is not None and payment.approved_at.tzinfo is not None
    assert payment.three_ds_url == ""


@pytest.mark.sandbox
def test_create_payment_manual_is_authorized(provider: Api) -> None:
    """Manual capture: the payment is authorized with AU-CAP01 and nothing captured."""
    payment = pay(get_client(), MASTER, capture_method="manual")

    assert (payment.status, payment.status_detail.code) == ("authorized", "AU-CAP01")
    assert payment.capture_method == "manual"
    assert payment.captured_amount == Decimal("0.00")


@pytest.mark.sandbox
def test_create_payment_three_ds_is_pending_with_url(provider: Api) -> None:
    """The 3-D Secure card leaves the payment pending PE-3DS01 with the challenge's URL."""
    payment = pay(get_client(), THREE_DS)

    assert (payment.status, payment.status_detail.code) == ("pending", "PE-3DS01")
    assert payment.three_ds_url.startswith(f"{provider.base_url}/3ds/")


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("number", "code"), [(DECLINED, "RE-DEC01"), (INSUFFICIENT_FUNDS, "RE-FUN01")]
)
def test_create_payment_declined_is_rejected(provider: Api, number: str, code: str) -> None:
    """A declined card gives a rejected payment (a result, not an error)."""
    payment = pay(get_client(), number)

    assert (payment.status, payment.status_detail.code) == ("rejected", code)


@pytest.mark.sandbox
def test_get_payment_reads_what_was_created(provider: Api) -> None:
    """get_payment returns the same payment, typed, as the sandbox holds it."""
    client = get_client()
    created = pay(client, amount="99.90")

    read = client.get_payment(created.id)

    assert read.id == created.id
    assert (read.status, read.amount, read.currency) == ("approved", Decimal("99.90"), "MXN")
    assert read.created_at == created.created_at
    assert provider.payment(created.id)["amount"] == Decimal("99.90")


@pytest.mark.sandbox
def test_capture_payment_in_full(provider: Api) -> None:
    """A full capture of an authorization approves it for the whole amount."""
    client = get_client()
    authorized = pay(client, capture_method="manual", amount="500.00")

    captured = client.capture_payment(
        authorized.id, amount=Decimal("500.00"), idempotency_key=key()
    )

    assert (captured.status, captured.status_detail.code) == ("approved", "AP-PAI01")
    assert captured.captured_amount == Decimal("500.00")


@pytest.mark.sandbox
def test_capture_payment_partially(provider: Api) -> None:
    """A partial capture charges only the amount asked for."""
    client = get_client()
    authorized = pay(client, capture_method="manual", amount="1000.00")

    captured = client.capture_payment(
        authorized.id, amount=Decimal("800.01"), idempotency_key=key()
    )

    assert captured.status == "approved"
    assert captured.captured_amount == Decimal("800.01")
    assert captured.amount == Decimal("1000.00")
    assert client.get_payment(authorized.id).captured_amount == Decimal("800.01")


@pytest.mark.sandbox
def test_cancel_payment_releases_authorization(provider: Api) -> None:
    """cancel_payment turns an authorization into cancelled CA-MER01, nothing captured."""
    client = get_client()
    authorized = pay(client, capture_method="manual")

    cancelled = client.cancel_payment(authorized.id, idempotency_key=key())

    assert (cancelled.status, cancelled.status_detail.code) == ("cancelled", "CA-MER01")
    assert cancelled.captured_amount == Decimal("0.00")


@pytest.mark.sandbox
def test_refund_partial_then_rest(provider: Api) -> None:
    """refund gives a typed refund; a partial one keeps approved, the rest closes the charge."""
    client = get_client()
    payment = pay(client, amount="250.00")

    refund = client.refund(
        payment.id, amount=Decimal("100.10"), reason="requested_by_customer", idempotency_key=key()
    )

    assert refund.id and refund.payment_id == payment.id
    assert refund.amount == Decimal("100.10")
    assert refund.created_at is not None and refund.created_at.tzinfo is not None
    after = client.get_payment(payment.id)
    assert (after.status, after.amount_refunded) == ("approved", Decimal("100.10"))
    assert [r.amount for r in after.refunds] == [Decimal("100.10")]

    rest = client.refund(payment.id, amount=None, reason="", idempotency_key=key())

    assert rest.amount == Decimal("149.90")
    final = client.get_payment(payment.id)
    assert final.status in ("cancelled", "refunded")
    assert final.amount_refunded == Decimal("250.00")


@pytest.mark.sandbox
def test_list_payment_methods(provider: Api) -> None:
    """The catalogue has four typed entries with Decimal accepted amounts and accepts()."""
    methods = get_client().list_payment_methods()

    assert sorted(m.id for m in methods) == ["amex", "cashpay", "master", "visa"]
    for method in methods:
        bounds = method.accepted_amount
        assert bounds is not None
        low, high = bounds
        assert isinstance(low, Decimal) and isinstance(high, Decimal) and low < high
        assert method.accepts(low) and method.accepts(high)
        assert not method.accepts(low - Decimal("0.01"))
        assert not method.accepts(high + Decimal("0.01"))
        assert method.is_active
    by_id = {m.id: m for m in methods}
    assert by_id["visa"].is_card and not by_id["cashpay"].is_card
    assert set(by_id["cashpay"].validations) == {"accepted_amount"}


@pytest.mark.sandbox
def test_get_and_cancel_seeded_subscription(provider: Api) -> None:
    """A seeded subscription reads active and cancel_subscription makes it inactive."""
    client = get_client()

    subscription = client.get_subscription(SEEDED_SUBSCRIPTION)

    assert (subscription.id, subscription.status) == (SEEDED_SUBSCRIPTION, "active")
    assert subscription.price_id == "price_cafe_mensual"
    assert subscription.customer["email"] == "maria@example.com"
    assert subscription.invoices

    cancelled = client.cancel_subscription(SEEDED_SUBSCRIPTION, idempotency_key=key())

    assert (cancelled.id, cancelled.status) == (SEEDED_SUBSCRIPTION, "inactive")
    assert client.get_subscription(SEEDED_SUBSCRIPTION).status == "inactive"


@pytest.mark.sandbox
def test_bad_credentials_raise_unauthorized(provider: Api, settings: Any) -> None:
    """Refused credentials raise Unauthorized 401 CL1501 with message, detail, request id."""
    settings.PAYMENTS_ACCESS_TOKEN = base64.b64encode(f"{PUBLIC_KEY}:wrong".encode()).decode()

    with pytest.raises(Unauthorized) as caught:
        PaymentsClient.from_settings().get_payment(str(uuid.uuid4()))

    assert_provider_error(caught.value, Unauthorized, 401, "CL1501")


@pytest.mark.sandbox
def test_unknown_payment_raises_not_found(provider: Api) -> None:
    """An unknown payment id raises NotFound 404 BR1301."""
    with pytest.raises(NotFound) as caught:
        get_client().get_payment(str(uuid.uuid4()))

    assert_provider_error(caught.value, NotFound, 404, "BR1301")


@pytest.mark.sandbox
def test_capture_twice_raises_conflict(provider: Api) -> None:
    """A second capture (another key) raises Conflict 409 CL2206."""
    client = get_client()
    authorized = pay(client, capture_method="manual")
    client.capture_payment(authorized.id, amount=Decimal("250.00"), idempotency_key=key())

    with pytest.raises(Conflict) as caught:
        client.capture_payment(authorized.id, amount=Decimal("250.00"), idempotency_key=key())

    assert_provider_error(caught.value, Conflict, 409, "CL2206")


@pytest.mark.sandbox
def test_capture_above_authorized_raises_invalid_request(provider: Api) -> None:
    """Capturing more than authorized raises InvalidRequest 400 CL2205; nothing captured."""
    client = get_client()
    authorized = pay(client, capture_method="manual", amount="250.00")

    with pytest.raises(InvalidRequest) as caught:
        client.capture_payment(authorized.id, amount=Decimal("250.01"), idempotency_key=key())

    assert_provider_error(caught.value, InvalidRequest, 400, "CL2205")
    assert client.get_payment(authorized.id).status == "authorized"


@pytest.mark.sandbox
def test_provider_error_card_raises_outcome_unknown(provider: Api) -> None:
    """The 0119 card's 500 AI1899 raises OutcomeUnknown: a server failure is not proof that
    nothing was created. Nothing was."""
    with pytest.raises(ProviderApiError) as caught:
        pay(get_client(), PROVIDER_ERROR)

    assert_provider_error(caught.value, OutcomeUnknown, 500, "AI1899")
    assert provider.payments() == []


@pytest.mark.sandbox
def test_get_retried_after_injected_503s(provider: Api) -> None:
    """A GET that meets two 503s is retried and succeeds on the third call."""
    client = get_client()
    payment = pay(client)
    failing = add_fault(provider, path="/payments", method="GET", status=503, times=2)
    # Taken only once the 503 fault is used up: it counts the call that got through.
    counter = add_fault(provider, path="/payments", method="GET", latency_ms=1)

    read = client.get_payment(payment.id)

    assert read.id == payment.id
    # `hits` counts the calls a fault answered: 2 faulted + 1 passed through = 3 calls.
    assert (fault(provider, failing)["hits"], fault(provider, failing)["remaining"]) == (2, 0)
    assert fault(provider, counter)["hits"] == 1


@pytest.mark.sandbox
def test_get_always_503_raises_provider_unavailable(provider: Api) -> None:
    """A GET that always meets 503 raises ProviderUnavailable after 1 + 3 attempts."""
    client = get_client()
    payment = pay(client)
    failing = add_fault(provider, path="/payments", method="GET", status=503)

    with pytest.raises(ProviderUnavailable) as caught:
        client.get_payment(payment.id)

    assert type(caught.value) is ProviderUnavailable
    assert caught.value.http_status == 503
    assert REQUEST_ID.match(caught.value.request_id)
    assert fault(provider, failing)["hits"] == 4


@pytest.mark.sandbox
def test_same_idempotency_key_twice_creates_one_payment(provider: Api) -> None:
    """The same Idempotency-Key sent twice returns the same payment; the sandbox holds one."""
    client = get_client()
    body = payment_body(token_for(client))
    attempt = key()

    first = client.create_payment(body=body, idempotency_key=attempt)
    second = client.create_payment(body=body, idempotency_key=attempt)

    assert second.id == first.id
    assert [p["id"] for p in provider.payments()] == [first.id]


@pytest.mark.sandbox
def test_lost_post_answer_is_retried_with_same_key(provider: Api) -> None:
    """A POST processed but answered 502 is retried with its key and returns that payment."""
    client = get_client()
    body = payment_body(token_for(client))
    lost = add_fault(
        provider, path="/payments", method="POST", status=502, times=1, after_processing=True
    )

    payment = client.create_payment(body=body, idempotency_key=key())

    assert payment.status == "approved"
    assert [p["id"] for p in provider.payments()] == [payment.id]
    assert fault(provider, lost)["hits"] == 1


@pytest.mark.sandbox
def test_post_timing_out_every_attempt_raises_outcome_unknown(provider: Api, settings: Any) -> None:
    """A create whose every attempt times out raises OutcomeUnknown: it may have happened."""
    settings.PAYMENTS_READ_TIMEOUT = 0.5
    client = PaymentsClient.from_settings()
    body = payment_body(token_for(client))
    slow = add_fault(provider, path="/payments", method="POST", latency_ms=1500)

    with pytest.raises(ProviderApiError) as caught:
        client.create_payment(body=body, idempotency_key=key())

    assert type(caught.value) is OutcomeUnknown, repr(caught.value)
    assert not isinstance(caught.value, InvalidRequest)
    # And it did happen: the slow sandbox created exactly one payment (the retries replayed).
    wait_until(lambda: len(provider.payments()) == 1, timeout=10)
    hits = fault(provider, slow)["hits"]
    assert 2 <= hits <= 4
    time.sleep(1.6)  # let the sandbox finish the requests the client gave up on
    assert len(provider.payments()) == 1


@pytest.mark.sandbox
def test_post_answered_500_after_processing_is_sent_again_and_returns_the_payment(
    provider: Api,
) -> None:
    """A create processed but answered 500 is sent again with its key; the provider replays
    what it did: the one payment, not a second."""
    client = get_client()
    body = payment_body(token_for(client))
    lost = add_fault(
        provider, path="/payments", method="POST", status=500, times=1, after_processing=True
    )

    payment = client.create_payment(body=body, idempotency_key=key())

    assert payment.status == "approved"
    assert [p["id"] for p in provider.payments()] == [payment.id]
    assert fault(provider, lost)["hits"] == 1


@pytest.mark.sandbox
def test_post_always_500_raises_outcome_unknown_after_sending_it_again(provider: Api) -> None:
    """A create that only ever meets 500 AI1899 is sent 1 + 3 times, then raises OutcomeUnknown
    (what happened is still to be learned), not a refusal."""
    client = get_client()
    body = payment_body(token_for(client))
    failing = add_fault(provider, path="/payments", method="POST", status=500)

    with pytest.raises(ProviderApiError) as caught:
        client.create_payment(body=body, idempotency_key=key())

    assert_provider_error(caught.value, OutcomeUnknown, 500, "AI1899")
    assert fault(provider, failing)["hits"] == 4
    assert provider.payments() == []


@pytest.mark.sandbox
def test_get_client_follows_settings(provider: Api, settings: Any) -> None:
    """get_client keeps one client per configuration and a new one when settings change."""
    first = get_client()
    assert get_client() is first
    assert first.base_url == provider.base_url

    settings.PAYMENTS_READ_TIMEOUT = 7

    assert get_client() is not first
    assert get_client().timeout[1] == 7


# --- Real sockets for what neither the sandbox nor `responses` can do ----------------------


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


# --- 2. Against `responses` ----------------------------------------------------------------


def test_connection_error_on_get_raises_provider_unavailable(
    mocked: responses.RequestsMock,
) -> None:
    """A GET whose connection fails raises ProviderUnavailable (never OutcomeUnknown)."""
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=requests.ConnectionError("reset"))

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is ProviderUnavailable
    assert caught.value.http_status is None


@pytest.mark.parametrize(
    "error",
    [
        requests.ConnectionError("Connection aborted: RemoteDisconnected"),
        requests.ReadTimeout("read timed out"),
    ],
    ids=["connection-error", "read-timeout"],
)
def test_connection_error_or_timeout_on_post_raises_outcome_unknown(
    mocked: responses.RequestsMock, error: Exception
) -> None:
    """A POST sent without an answer (reset, read timeout) raises OutcomeUnknown."""
    mocked.post(f"{FAKE_URL}/payments", body=error)

    with pytest.raises(OutcomeUnknown):
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())


@pytest.mark.parametrize(
    "error",
    [
        requests.ConnectionError(
            "HTTPConnectionPool(host='provider.test', port=80): Max retries exceeded (Caused by "
            "NewConnectionError(': Failed to establish a new connection: "
            "[Errno 111] Connection refused'))"
        ),
        requests.ConnectTimeout("connect timed out"),
    ],
    ids=["refused", "connect-timeout"],
)
def test_post_never_sent_raises_provider_unavailable(
    mocked: responses.RequestsMock, error: Exception
) -> None:
    """A POST refused or timed out before connecting raises plain ProviderUnavailable."""
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=error)

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().cancel_payment(PAYMENT_ID, idempotency_key=key())

    assert type(caught.value) is ProviderUnavailable


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (401, "CL1501", Unauthorized),
        (404, "BR1301", NotFound),
        (409, "CL2206", Conflict),
        (400, "CL2205", InvalidRequest),
    ],
)
def test_error_bodies_become_typed_errors(
    mocked: responses.RequestsMock, status: int, code: str, kind: type[ProviderApiError]
) -> None:
    """Error bodies become the matching typed error with status, code, message, detail, id."""
    mocked.patch(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        status=status,
        body=error_body(code, "What happened", "why it happened"),
        headers={"X-Request-Id": "req-abc"},
    )

    with pytest.raises(ProviderApiError) as caught:
        fake_client().capture_payment(PAYMENT_ID, amount=Decimal("1.00"), idempotency_key=key())

    exc = caught.value
    assert type(exc) is kind
    assert (exc.http_status, exc.error_code) == (status, code)
    assert (exc.message, exc.detail, exc.request_id) == (
        "What happened",
        ["why it happened"],
        "req-abc",
    )
    assert len(mocked.calls) == 1


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [(404, "BR1301", NotFound), (500, "AI1899", ProviderUnavailable)],
)
def test_error_bodies_on_get_become_typed_errors(
    mocked: responses.RequestsMock, status: int, code: str, kind: type[ProviderApiError]
) -> None:
    """Reads map error bodies to typed errors; a server failure answering a read (500 AI1899)
    is the provider being unavailable, to read again later, not a refusal."""
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", status=status, body=error_body(code))

    with pytest.raises(kind) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is kind
    assert caught.value.error_code == code


def test_409_cl2209_raises_outcome_unknown(mocked: responses.RequestsMock) -> None:
    """409 CL2209 (same write still in progress) raises OutcomeUnknown, not Conflict."""
    mocked.post(f"{FAKE_URL}/payments", status=409, body=error_body("CL2209", "In progress"))

    with pytest.raises(OutcomeUnknown) as caught:
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())

    assert (caught.value.http_status, caught.value.error_code) == (409, "CL2209")


def test_502_on_post_raises_outcome_unknown_after_retries(
    mocked: responses.RequestsMock,
) -> None:
    """A POST that only ever meets 502 is retried with its key, then raises OutcomeUnknown."""
    mocked.post(f"{FAKE_URL}/payments", status=502, body="<html>Bad Gateway</html>")
    attempt = key()

    with pytest.raises(OutcomeUnknown) as caught:
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=attempt)

    assert caught.value.http_status == 502
    assert len(mocked.calls) == 3
    assert {c.request.headers["Idempotency-Key"] for c in mocked.calls} == {attempt}


def test_html_500_on_get_raises_provider_unavailable(mocked: responses.RequestsMock) -> None:
    """An HTML 500 without the provider's error body on a GET raises ProviderUnavailable."""
    mocked.get(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        status=500,
        body="<html><h1>Internal Server Error</h1></html>",
        content_type="text/html",
    )

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is ProviderUnavailable
    assert (caught.value.http_status, caught.value.error_code) == (500, "")
    assert len(mocked.calls) == 3  # a read is retried on 5xx


def test_500_on_capture_raises_outcome_unknown_after_retries_with_its_key(
    mocked: responses.RequestsMock,
) -> None:
    """A capture answered 500 AI1899 is sent again with the same key, then raises
    OutcomeUnknown keeping the provider's code: the capture may have happened."""
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", status=500, body=error_body("AI1899"))
    attempt = key()

    with pytest.raises(ProviderApiError) as caught:
        fake_client().capture_payment(PAYMENT_ID, amount=Decimal("1.00"), idempotency_key=attempt)

    assert type(caught.value) is OutcomeUnknown
    assert (caught.value.http_status, caught.value.error_code) == (500, "AI1899")
    assert len(mocked.calls) == 3
    assert {c.request.headers["Idempotency-Key"] for c in mocked.calls} == {attempt}


def test_html_500_on_post_raises_outcome_unknown(mocked: responses.RequestsMock) -> None:
    """An HTML 500 to a POST is sent again with its key, then raises OutcomeUnknown."""
    mocked.post(f"{FAKE_URL}/payments", status=500, body="<html>oops</html>")
    attempt = key()

    with pytest.raises(OutcomeUnknown):
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=attempt)

    assert len(mocked.calls) == 3
    assert {c.request.headers["Idempotency-Key"] for c in mocked.calls} == {attempt}


def test_non_json_200_on_get_raises_provider_unavailable(mocked: responses.RequestsMock) -> None:
    """A 200 whose body is not JSON raises ProviderUnavailable on a read."""
    mocked.get(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        status=200,
        body="<html>ok</html>",
        headers={"X-Request-Id": "req-html"},
    )

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is ProviderUnavailable
    assert (caught.value.http_status, caught.value.request_id) == (200, "req-html")


def test_non_json_201_on_post_raises_outcome_unknown(mocked: responses.RequestsMock) -> None:
    """A create answered 201 with an unreadable body did happen: OutcomeUnknown, not 'down'."""
    mocked.post(f"{FAKE_URL}/payments", status=201, body="<html>created</html>")

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())

    assert type(caught.value) is OutcomeUnknown, repr(caught.value)


def test_authorization_header_per_operation(mocked: responses.RequestsMock) -> None:
    """Payments carry `Basic <access token>`; card tokens carry `Bearer <public key>`."""
    mocked.post(
        f"{FAKE_URL}/card_tokens",
        status=201,
        json={"id": "tok_1", "payment_method_id": "visa", "card": None},
    )
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json()))
    client = fake_client()

    client.create_card_token(
        number=VISA, exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
    )
    client.get_payment(PAYMENT_ID)

    tokens, payments = mocked.calls
    assert tokens.request.headers["Authorization"] == "Bearer pk"
    assert payments.request.headers["Authorization"] == "Basic tok"
    assert payments.request.headers["Accept"] == "application/json"


def test_every_write_carries_an_idempotency_key(mocked: responses.RequestsMock) -> None:
    """Every POST/PATCH/PUT carries Idempotency-Key (the caller's when given); GETs do not."""
    subscription = {"id": SEEDED_SUBSCRIPTION, "status": "inactive"}
    refund = {"id": "r1", "payment_id": PAYMENT_ID, "amount": 1, "status": "approved"}
    mocked.post(f"{FAKE_URL}/card_tokens", status=201, json={"id": "tok_1"})
    mocked.post(f"{FAKE_URL}/payments", status=201, body=dumps(payment_json()))
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json()))
    mocked.post(f"{FAKE_URL}/refunds", status=201, json=refund)
    mocked.put(f"{FAKE_URL}/subscriptions/{SEEDED_SUBSCRIPTION}", status=201, json=subscription)
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json()))
    client = fake_client()

    client.create_card_token(number=VISA, exp_month="12", exp_year="2031", cvv="1", holder_name="A")
    client.create_payment(body={"amount": Decimal("1.00")}, idempotency_key="k-create")
    client.capture_payment(PAYMENT_ID, amount=Decimal("1.00"), idempotency_key="k-capture")
    client.cancel_payment(PAYMENT_ID, idempotency_key="k-cancel")
    client.refund(PAYMENT_ID, amount=None, reason="", idempotency_key="k-refund")
    client.cancel_subscription(SEEDED_SUBSCRIPTION, idempotency_key="k-sub")
    client.get_payment(PAYMENT_ID)

    keys = [(c.request.method, c.request.headers.get("Idempotency-Key")) for c in mocked.calls]
    assert keys[0][0] == "POST" and keys[0][1]
    assert keys[1:] == [
        ("POST", "k-create"),
        ("PATCH", "k-capture"),
        ("PATCH", "k-cancel"),
        ("POST", "k-refund"),
        ("PUT", "k-sub"),
        ("GET", None),
    ]


@pytest.mark.parametrize("first", [502, 503, 504])
def test_retried_write_reuses_its_key(mocked: responses.RequestsMock, first: int) -> None:
    """A write retried after a gateway error sends the same Idempotency-Key again."""
    mocked.post(f"{FAKE_URL}/payments", status=first, body="gateway")
    mocked.post(f"{FAKE_URL}/payments", status=201, body=dumps(payment_json()))

    payment = fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key="k-1")

    assert payment.id == PAYMENT_ID
    assert [c.request.headers["Idempotency-Key"] for c in mocked.calls] == ["k-1", "k-1"]
    assert mocked.calls[0].request.body == mocked.calls[1].request.body


def test_retried_card_token_reuses_its_generated_key(mocked: responses.RequestsMock) -> None:
    """The key the client makes up for a card token is the same on every retry."""
    mocked.post(f"{FAKE_URL}/card_tokens", status=503, body="busy")
    mocked.post(f"{FAKE_URL}/card_tokens", status=201, json={"id": "tok_1"})

    token = fake_client().create_card_token(
        number=VISA, exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
    )

    assert token.id == "tok_1"
    first, second = (c.request.headers["Idempotency-Key"] for c in mocked.calls)
    assert first and first == second


def test_amounts_are_sent_as_exact_json_numbers(mocked: responses.RequestsMock) -> None:
    """Decimal amounts go out as literal JSON numbers (1234.56), never strings or floats."""
    mocked.post(f"{FAKE_URL}/payments", status=201, body=dumps(payment_json("1234.56")))
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json("1234.56")))
    mocked.post(
        f"{FAKE_URL}/refunds",
        status=201,
        body=dumps({"id": "r1", "payment_id": PAYMENT_ID, "amount": Decimal("0.10")}),
    )
    client = fake_client()

    client.create_payment(body={"amount": Decimal("1234.56")}, idempotency_key=key())
    client.capture_payment(PAYMENT_ID, amount=Decimal("1234.56"), idempotency_key=key())
    refund = client.refund(PAYMENT_ID, amount=Decimal("0.10"), reason="", idempotency_key=key())
    assert refund.amount == Decimal("0.10")

    create, capture, refund = (
        c.request.body.decode() if isinstance(c.request.body, bytes) else c.request.body
        for c in mocked.calls
    )
    assert re.search(r'"amount":\s*1234\.56[,}]', create), create
    assert re.search(r'"paid_amount":\s*1234\.56[,}]', capture), capture
    assert re.search(r'"amount":\s*0\.10[,}]', refund), refund
    for body in (create, capture, refund):
        assert '"1234.56"' not in body and "1234.5600000" not in body
        assert "0.1000000" not in body


@pytest.mark.parametrize(
    "bad", ["a/b", "..", ".", "../payments", "x?y=1", "x#y", "%2e%2e", "", "a b"]
)
def test_unsafe_path_segment_is_refused_without_request(
    mocked: responses.RequestsMock, bad: str
) -> None:
    """An id that could change the path is refused with NotFound before any request."""
    client = fake_client()

    for call in (
        lambda: client.get_payment(bad),
        lambda: client.capture_payment(bad, amount=Decimal("1.00"), idempotency_key=key()),
        lambda: client.cancel_payment(bad, idempotency_key=key()),
        lambda: client.get_subscription(bad),
        lambda: client.cancel_subscription(bad, idempotency_key=key()),
    ):
        with pytest.raises(NotFound):
            call()

    assert len(mocked.calls) == 0


# --- 3. Exact money and aware timestamps (Hypothesis) --------------------------------------

TWO_PLACES = st.decimals(
    min_value=Decimal("0.01"),
    max_value=Decimal("9999999999.99"),
    places=2,
    allow_nan=False,
    allow_infinity=False,
)


@hypothesis_settings(max_examples=150, deadline=None)
@given(amount=TWO_PLACES)
def test_amount_round_trip_is_exact(amount: Decimal) -> None:
    """Any two-place amount is sent exactly in a capture and parsed back exactly."""
    seen: list[Decimal] = []

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        sent = json.loads(request.body, parse_float=Decimal)["paid_amount"]
        seen.append(sent)
        return 200, {}, dumps(payment_json(str(sent)))

    with responses.RequestsMock() as rsps:
        rsps.add_callback(responses.PATCH, f"{FAKE_URL}/payments/{PAYMENT_ID}", callback=answer)
        payment = fake_client().capture_payment(PAYMENT_ID, amount=amount, idempotency_key="k")

    assert seen == [amount] and str(seen[0]) == str(amount)
    assert payment.amount == amount and str(payment.amount) == str(amount)
    assert payment.captured_amount == amount


@given(amount=TWO_PLACES)
def test_from_json_parses_decimal_amounts_exactly(amount: Decimal) -> None:
    """A payment answer's amount parsed as Decimal becomes exactly that amount."""
    text = dumps(payment_json(str(amount)))

    payment = ProviderPayment.from_json(json.loads(text, parse_float=Decimal))

    assert payment.amount == amount and payment.paid_amount == amount


@pytest.mark.parametrize("field", ["amount", "paid_amount", "captured_amount", "amount_refunded"])
def test_from_json_refuses_float_amounts(field: str) -> None:
    """A float amount (a JSON parse that lost exactness) is refused, never rounded."""
    data = payment_json()
    data[field] = 0.1

    with pytest.raises(ValueError, match="float"):
        ProviderPayment.from_json(data)


@pytest.mark.parametrize(
    "text",
    ["2025-03-01T12:00:00.123456Z", "2025-03-01T12:00:00.123+00:00", "2025-03-01T06:00:00-06:00"],
)
def test_timestamps_parse_timezone_aware(text: str) -> None:
    """Provider timestamps become timezone-aware datetimes at the right instant."""
    payment = ProviderPayment.from_json(payment_json(created_at=text))

    assert payment.created_at is not None and payment.created_at.tzinfo is not None
    assert payment.created_at.astimezone(UTC).replace(microsecond=0) == datetime(
        2025, 3, 1, 12, 0, tzinfo=UTC
    )


def test_naive_timestamp_is_refused() -> None:
    """A timestamp without a zone is refused rather than guessed."""
    with pytest.raises(ValueError, match="timezone-aware"):
        ProviderPayment.from_json(payment_json(created_at="2025-03-01T12:00:00.123"))


OFFSETS = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


@given(
    moment=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=OFFSETS
    )
)
def test_any_aware_timestamp_round_trips(moment: datetime) -> None:
    """Any ISO 8601 timestamp with an offset parses to the same aware instant."""
    payment = ProviderPayment.from_json(payment_json(created_at=moment.isoformat()))

    assert payment.created_at == moment
    assert payment.created_at is not None
    assert payment.created_at.utcoffset() == moment.utcoffset()


# --- 4. Logging ----------------------------------------------------------------------------


@pytest.mark.sandbox
def test_calls_are_logged_without_credentials(
    provider: Api, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Each call logs method, path, status and request id; no token, secret or card token."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.INFO, logger="payments.client")
    client = PaymentsClient.from_settings()
    card_token = token_for(client)
    payment = client.create_payment(body=payment_body(card_token), idempotency_key=key())
    client.get_payment(payment.id)
    with pytest.raises(NotFound) as missing:
        client.get_payment(str(uuid.uuid4()))
    settings.PAYMENTS_ACCESS_TOKEN = "bm90LWEtcmVhbC10b2tlbg=="
    with pytest.raises(Unauthorized):
        PaymentsClient.from_settings().get_payment(payment.id)

    lines = [r.getMessage() for r in caplog.records if r.name == "payments.client"]
    assert len(lines) == 5, lines
    expected = [
        r"POST /card_tokens -> 201 ",
        r"POST /payments -> 201 ",
        rf"GET /payments/{payment.id} -> 200 ",
        r"GET /payments/[0-9a-f-]+ -> 404 .*\(BR1301\)",
        rf"GET /payments/{payment.id} -> 401 .*\(CL1501\)",
    ]
    for line, pattern in zip(lines, expected, strict=True):
        assert re.search(pattern, line), line
        assert re.search(r"request_id=[0-9a-f]{32}", line), line
    assert f"request_id={missing.value.request_id}" in lines[3]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "payments.client")

    everything = caplog.text + "\n".join(r.getMessage() for r in caplog.records)
    access_token = base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
    for secret in (access_token, SECRET_KEY, card_token, "bm90LWEtcmVhbC10b2tlbg=="):
        assert secret not in everything


def test_logs_carry_request_id_and_error_code(
    mocked: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    """Logs name the provider's request id and error code, and never the Authorization value."""
    caplog.set_level(logging.DEBUG)
    mocked.get(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        body=dumps(payment_json()),
        headers={"X-Request-Id": "req-ok-1"},
    )
    mocked.post(
        f"{FAKE_URL}/card_tokens",
        status=409,
        body=error_body("CL2206"),
        headers={"X-Request-Id": "req-bad-2"},
    )
    mocked.post(f"{FAKE_URL}/payments", body=requests.ReadTimeout("read timed out"))
    client = PaymentsClient(
        base_url=FAKE_URL,
        public_key="pk_live_visible",
        access_token="tok_secret_value",
        retry=default_retry(0),
    )

    client.get_payment(PAYMENT_ID)
    with pytest.raises(Conflict):
        client.create_card_token(
            number=VISA, exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
        )
    with pytest.raises(OutcomeUnknown):
        client.create_payment(
            body={"payment_method": {"token": "tok_card_9"}}, idempotency_key=key()
        )

    lines = [r.getMessage() for r in caplog.records if r.name == "payments.client"]
    assert len(lines) == 3, lines
    assert re.search(rf"GET /payments/{PAYMENT_ID} -> 200 .*request_id=req-ok-1", lines[0])
    assert re.search(r"POST /card_tokens -> 409 .*request_id=req-bad-2.*\(CL2206\)", lines[1])
    assert re.search(r"POST /payments -> ReadTimeout", lines[2])
    for secret in ("tok_secret_value", "Basic tok", "tok_card_9", VISA):
        assert secret not in caplog.text
