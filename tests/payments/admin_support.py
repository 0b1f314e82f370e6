"""Helpers of the payments admin tests.

Action tests create payments through the real services (PaymentFactory with the live sandbox as
`provider`); list tests write rows directly with PaymentFactory to stay fast. Provider
calls are counted with a latency-only fault (its `hits`), read back from GET /_sandbox/faults.
"""

from __future__ import annotations

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

from payments.models import CaptureMethod, Payment, PaymentStatus
from tests.factories import PaymentFactory
from tests.support import Api

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
    payment = PaymentFactory(provider=provider, capture_method="manual", amount=amount)
    assert payment.status == PaymentStatus.AUTHORIZED
    return payment


def approved(provider: Api, amount: str = "250.00") -> Payment:
    payment = PaymentFactory(provider=provider, capture_method="automatic", amount=amount)
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
