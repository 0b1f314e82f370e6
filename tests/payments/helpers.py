"""Helpers of the payments tests: the admin's (its addresses, messages, log and amounts; its
actions asked and run as a worker would) and the provider client's (requests through the
client, typed errors checked, and a client and answers for `responses`).

Action tests make payments the live sandbox knows (tests.factories.provider_payment); list
tests write rows straight to the database with PaymentFactory, to stay fast. Provider calls
are counted with a latency-only fault (its `hits`), read back from GET /_sandbox/faults.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.contrib.messages import get_messages
from django.test import TestCase
from django.urls import reverse

from payments.models import CaptureMethod, Payment
from payments.provider.client import PaymentsClient
from payments.provider.errors import ProviderApiError
from payments.provider.retries import default_retry
from payments.provider.types import ProviderPayment
from payments.statuses import PaymentStatus
from tests.factories import PaymentFactory, provider_payment
from tests.helpers.provider import CVV_FOR, VISA, Api

# --- The admin ------------------------------------------------------------------------------------


VIEW_PAYMENTS = ("view_payment", "view_paymentevent", "view_refund")
CHANGELIST = "admin:payments_payment_changelist"


def stored_payment(reference: str, **fields: Any) -> Payment:
    """A payment row written directly (no provider), for list tests."""
    values: dict[str, Any] = {
        "external_reference": reference,
        "idempotency_key": uuid.uuid4().hex,
        "capture_method": CaptureMethod.AUTOMATIC,
        "status": PaymentStatus.APPROVED,
        "amount": Decimal("100.00"),
        "captured_amount": Decimal("100.00"),
        "provider_id": str(uuid.uuid4()),
        "customer_email": "cliente@example.com",
        "card_brand": "visa",
        "card_last_digits": "4242",
        **fields,
    }
    return PaymentFactory(**values)


def count_calls(provider: Api, path: str = "/", method: str | None = None) -> Callable[[], int]:
    """Count the shop's calls to the provider below `path` with a latency-only fault."""
    body: dict[str, Any] = {"path": path, "latency_ms": 1}
    if method:
        body["method"] = method
    response = provider.post("/_sandbox/faults", body)
    assert response.status_code == 201, response.text
    fault_id = response.json()["id"]

    def hits() -> int:
        faults = provider.get("/_sandbox/faults").json()
        return next(f["hits"] for f in faults if f["id"] == fault_id)

    return hits


def messages_of(response: Any) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def log_entries(obj: Any) -> Any:
    return LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(type(obj)), object_id=str(obj.pk)
    )


def action_url(action: str, payment: Payment) -> str:
    return reverse(f"admin:payments_payment_{action}", args=[payment.pk])


def change_url(payment: Payment) -> str:
    return reverse("admin:payments_payment_change", args=[payment.pk])


def snapshot(payment: Payment) -> tuple[Any, ...]:
    payment.refresh_from_db()
    return (
        payment.status,
        payment.captured_amount,
        payment.refunded_amount,
        payment.provider_version,
        payment.intent,
    )


def money(text: str) -> Decimal:
    """An amount as the admin writes it everywhere: $1,290.00."""
    assert re.fullmatch(r"\$\d{1,3}(,\d{3})*\.\d{2}", text), text
    return Decimal(text.removeprefix("$").replace(",", ""))


def action_choices(response: Any) -> set[str]:
    form = response.context.get("action_form")
    if form is None:
        return set()
    return {value for value, _ in form.fields["action"].choices if value}


def authorized(provider: Api, amount: str = "250.00") -> Payment:
    payment = provider_payment(provider, capture_method="manual", amount=amount)
    assert payment.status == PaymentStatus.AUTHORIZED
    return payment


def approved(provider: Api, amount: str = "250.00") -> Payment:
    payment = provider_payment(provider, capture_method="automatic", amount=amount)
    assert payment.status == PaymentStatus.APPROVED
    return payment


def asked_then_done(client: Any, response: Any, run_queued: Callable[[], list[str]]) -> Any:
    """After an action's POST (answered at once, back to the payment's page): run its queued
    task as a worker would, and open the page again, which says what happened."""
    assert response.status_code == 302, response
    ran = run_queued()
    assert ran, "no task was queued"
    return client.get(response.url)


def ask(client: Any, url: str, data: dict[str, Any] | None = None, **extra: Any) -> Any:
    """POST an action; what its transaction does on commit (queueing its task) is done as a
    commit would (the test's own transaction never commits)."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data or {}, **extra)


# --- The provider client --------------------------------------------------------------------------


# A subscription seeded by every sandbox reset (sandbox/provider/subscriptions.py).
SEEDED_SUBSCRIPTION = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"
REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")
FAKE_URL = "http://provider.test"
PAYMENT_ID = "3f9d6c1e-8a2b-4c5d-9e0f-1a2b3c4d5e6f"


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
