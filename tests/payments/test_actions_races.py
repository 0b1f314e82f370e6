"""Races for real: threads released together by a barrier, each with its own database
connection, against the live sandbox; the provider's fault `hits` count its calls."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from payments.actions.calls import payment_cancel, payment_capture, payment_refund
from payments.attempts.calls import payment_send_create
from payments.attempts.rules import payment_attempt_store
from payments.models import Payment, PaymentEventKind, Refund
from payments.provider.errors import (
    InvalidAmount,
    PaymentInProgress,
    PaymentNotAllowed,
    PaymentOutcomeUnknown,
)
from payments.statuses import PaymentStatus
from payments.task_names import SEND_CREATE_TASK
from tests.factories import order_reference, provider_payment
from tests.helpers.broker import take_queued
from tests.helpers.provider import Api
from tests.helpers.threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)

LOSERS = (PaymentInProgress, PaymentNotAllowed)


def split(results: list[Any]) -> tuple[list[Any], list[BaseException]]:
    errors = [r for r in results if isinstance(r, BaseException)]
    return [r for r in results if not isinstance(r, BaseException)], errors


def test_two_captures_at_once_make_one_provider_call(provider: Api, admin_user) -> None:
    """Two simultaneous captures of one authorization make one PATCH; the other is refused."""
    # Given an authorization and a provider that takes 300 ms to answer a PATCH
    payment = provider_payment(provider, capture_method="manual")
    patches = provider.add_fault(path="/payments", method="PATCH", latency_ms=300)

    # When two staff members capture it at the same moment
    def capture() -> Payment:
        return payment_capture(
            payment=Payment.objects.get(pk=payment.pk), amount=None, actor=admin_user
        )

    results = run_together(capture, capture)

    # Then the provider saw one capture; one call succeeded, the other was told why not
    assert provider.fault_hits(patches) == 1
    done, errors = split(results)
    assert len(done) == 1 and len(errors) == 1, results
    assert isinstance(errors[0], LOSERS), repr(errors[0])
    assert done[0].status == PaymentStatus.APPROVED
    payment.refresh_from_db()
    assert (payment.status, payment.intent) == (PaymentStatus.APPROVED, "")
    assert payment.captured_amount == Decimal("250.00")
    assert payment.events.filter(kind=PaymentEventKind.CAPTURED).count() == 1


def test_capture_and_cancel_at_once_make_one_provider_call(provider: Api, admin_user) -> None:
    """A capture and a cancel of one authorization at once: one PATCH, and the states agree."""
    # Given an authorization and a provider that takes 300 ms to answer a PATCH
    payment = provider_payment(provider, capture_method="manual")
    patches = provider.add_fault(path="/payments", method="PATCH", latency_ms=300)

    # When one staff member captures it while another cancels it
    results = run_together(
        lambda: payment_capture(
            payment=Payment.objects.get(pk=payment.pk), amount=None, actor=admin_user
        ),
        lambda: payment_cancel(payment=Payment.objects.get(pk=payment.pk), actor=admin_user),
    )

    # Then the provider saw one call; exactly one action won, and both sides agree on it
    assert provider.fault_hits(patches) == 1
    done, errors = split(results)
    assert len(done) == 1 and len(errors) == 1, results
    assert isinstance(errors[0], LOSERS), repr(errors[0])
    payment.refresh_from_db()
    assert payment.status in (PaymentStatus.APPROVED, PaymentStatus.CANCELLED)
    assert payment.status == done[0].status == provider.payment(payment.provider_id)["status"]
    assert payment.intent == ""


def test_two_refunds_at_once_make_one_provider_call(provider: Api, admin_user) -> None:
    """Two simultaneous refunds that together exceed the charge make one provider refund."""
    # Given a charge of 250.00 and a provider that takes 300 ms to answer a refund
    payment = provider_payment(provider)
    refunds = provider.add_fault(path="/refunds", method="POST", latency_ms=300)

    # When two staff members refund 150.00 each at the same moment
    def refund() -> Refund:
        return payment_refund(
            payment=Payment.objects.get(pk=payment.pk), amount=Decimal("150.00"), actor=admin_user
        )

    results = run_together(refund, refund)

    # Then one refund was made; the other was refused (in progress, or above what is left)
    assert provider.fault_hits(refunds) == 1
    done, errors = split(results)
    assert len(done) == 1 and len(errors) == 1, results
    assert isinstance(errors[0], (*LOSERS, InvalidAmount)), repr(errors[0])
    payment.refresh_from_db()
    assert payment.refunded_amount == Decimal("150.00")
    assert payment.intent == ""
    assert Refund.objects.filter(payment=payment).count() == 1
    assert provider.payment(payment.provider_id)["amount_refunded"] == Decimal("150.00")


# The second submission trails the first by 0-8 ms: the interleavings a double click makes.
@pytest.mark.parametrize("lag_ms", range(9))
@pytest.mark.usefixtures("empty_broker")
def test_two_creates_with_the_same_attempt_key_make_one_provider_payment(
    provider: Api, celery_app: Any, lag_ms: int
) -> None:
    """The same checkout attempt submitted twice at once is one attempt, given to both, whose
    create is queued once; its create sent twice at once (its task and the sweep's) makes one
    provider payment."""
    # Given one attempt (key and card token) and a provider that takes 300 ms to create
    key = uuid.uuid4().hex
    reference = order_reference()
    token = provider.card_token()["id"]
    creates = provider.add_fault(path="/payments", method="POST", latency_ms=300)

    def store() -> Payment:
        return payment_attempt_store(
            external_reference=reference,
            attempt_key=key,
            amount=Decimal("250.00"),
            currency="MXN",
            description="Taza de barro",
            card_token=token,
            capture_method="automatic",
            customer={"email": "ana@example.com"},
            prevention_data={},
            return_url="",
            webhook_url="",
        )

    def send() -> Payment:
        return payment_send_create(payment=Payment.objects.get(idempotency_key=key))

    def later(call: Callable[[], Payment]) -> Callable[[], Payment]:
        def delayed() -> Payment:
            time.sleep(lag_ms / 1000)
            return call()

        return delayed

    # When it is submitted twice at (nearly) the same moment
    stored = run_together(store, later(store))

    # Then the shop holds one attempt, given to both submissions (never "blocked"), and one
    # send of its create is queued
    payment = Payment.objects.get(idempotency_key=key)
    assert [getattr(r, "pk", r) for r in stored] == [payment.pk, payment.pk]
    assert Payment.objects.filter(external_reference=reference).count() == 1
    assert take_queued(celery_app) == [(SEND_CREATE_TASK, [payment.pk])]

    # When its create is sent twice at (nearly) the same moment
    sent = run_together(send, later(send))

    # Then the provider made one payment, approved here, with nothing left to send; a send
    # that met the other still in progress was told to try again
    assert len(provider.payments()) == 1
    assert provider.fault_hits(creates) <= 2
    payment.refresh_from_db()
    assert payment.provider_id == provider.payments()[0]["id"]
    assert (payment.status, payment.create_request) == (PaymentStatus.APPROVED, "")
    done, errors = split(sent)
    assert done and all(r.pk == payment.pk for r in done), sent
    assert all(isinstance(e, PaymentOutcomeUnknown) for e in errors), sent
    # And sending it again (the task's retry) changes nothing
    assert payment_send_create(payment=payment).status == PaymentStatus.APPROVED
    assert len(provider.payments()) == 1
