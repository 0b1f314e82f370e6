"""A read that finds a payment as the shop holds it (a notification after the create's own
answer, on a sale day the usual case) is recorded without locking the payment: one UPDATE that
takes effect only while the row is the version that was read. A payment that moved in between
is applied under the lock, from what it now is."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from payments.models import Payment, PaymentEventKind
from payments.rereading.selectors import payment_held
from payments.snapshots import payment_apply
from payments.statuses import PaymentStatus
from tests.factories import PaymentFactory
from tests.payments.test_rereading_refresh import AMOUNT, snapshot

pytestmark = pytest.mark.django_db


def approved_payment() -> tuple[Payment, str]:
    """A payment the provider approved (version 1), as the create's answer left it."""
    provider_id = str(uuid.uuid4())
    payment = PaymentFactory(capture_method="manual", amount=AMOUNT, status=PaymentStatus.CREATING)
    payment_apply(
        payment=payment,
        remote=snapshot(provider_id, 1, "approved", "AP-PAI01", captured=AMOUNT),
    )
    return Payment.objects.get(pk=payment.pk), provider_id


def test_a_read_that_finds_nothing_new_is_recorded_without_the_lock() -> None:
    """Given an approved payment last read an hour ago, when a notification's read finds it
    the same, then its read and its schedule are recorded from now, in one UPDATE (no row lock,
    no transaction of its own), and its ledger gets nothing."""
    payment, provider_id = approved_payment()
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Payment.objects.filter(pk=payment.pk).update(
        last_synced_at=an_hour_ago, checks_from=an_hour_ago
    )
    entries = payment.events.count()
    held = payment_held(provider_id)
    assert held is not None

    with CaptureQueriesContext(connection) as queries:
        payment_apply(
            payment=held,
            remote=snapshot(provider_id, 1, "approved", "AP-PAI01", captured=AMOUNT),
        )

    statements = [query["sql"] for query in queries.captured_queries]
    assert len(statements) == 1 and statements[0].startswith("UPDATE"), statements
    assert "FOR UPDATE" not in statements[0] and "xmin" in statements[0]
    payment.refresh_from_db()
    assert payment.last_synced_at > an_hour_ago + timedelta(minutes=59)
    assert payment.checks_from == payment.last_synced_at
    assert payment.next_check_at == payment.checks_from + timedelta(hours=1)
    assert payment.events.count() == entries


def test_a_payment_that_moved_since_it_was_read_is_applied_from_what_it_now_is() -> None:
    """Given an approved payment read by a notification's task, when it is refunded in full
    before that task applies its (now old) read, then the old read changes nothing: the payment
    stays refunded, with no read scheduled (a refunded payment is not read again), and no
    anomaly."""
    payment, provider_id = approved_payment()
    held = payment_held(provider_id)
    assert held is not None
    refunded = snapshot(provider_id, 2, "refunded", "RF-REF01", captured=AMOUNT, refunded=AMOUNT)
    payment_apply(payment=Payment.objects.get(pk=payment.pk), remote=refunded)

    payment_apply(
        payment=held,
        remote=snapshot(provider_id, 1, "approved", "AP-PAI01", captured=AMOUNT),
    )

    payment.refresh_from_db()
    assert (payment.status, payment.provider_version) == (PaymentStatus.REFUNDED, 2)
    assert payment.refunded_amount == Decimal(AMOUNT)
    assert payment.next_check_at is None
    assert not payment.events.filter(kind=PaymentEventKind.ANOMALY).exists()


def test_a_read_that_brings_news_is_applied_under_the_lock() -> None:
    """Given an approved payment read by a notification's task, when the provider's answer is
    a refund, then it is applied under the row's lock and written in the ledger."""
    payment, provider_id = approved_payment()
    held = payment_held(provider_id)
    assert held is not None
    refunded = snapshot(provider_id, 2, "refunded", "RF-REF01", captured=AMOUNT, refunded=AMOUNT)

    with CaptureQueriesContext(connection) as queries:
        payment_apply(payment=held, remote=refunded)

    assert any("FOR UPDATE" in query["sql"] for query in queries.captured_queries)
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.REFUNDED
    assert payment.events.filter(new_status=PaymentStatus.REFUNDED).count() == 1
