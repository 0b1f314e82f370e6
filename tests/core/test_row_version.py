"""A row's version (`core.row_version`): a write conditioned on it takes effect only while
nobody has written the row since it was read, also when the other write is still under way as
it is made (PostgreSQL waits for it, then checks the condition on the row as it now is)."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from core.row_version import row_version_is, with_row_version
from payments.models import Payment
from tests.factories import PaymentFactory
from tests.helpers.threads import in_thread

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_write_on_the_version_read_takes_effect_once_and_not_after_another_write() -> None:
    payment = PaymentFactory()
    read = with_row_version(Payment.objects.filter(pk=payment.pk)).get()

    first = Payment.objects.filter(pk=payment.pk).filter(row_version_is(Payment, read.row_version))
    assert first.update(status_message="first") == 1
    again = Payment.objects.filter(pk=payment.pk).filter(row_version_is(Payment, read.row_version))
    assert again.update(status_message="second") == 0  # the row moved: its version with it

    payment.refresh_from_db()
    assert payment.status_message == "first"


def test_a_write_made_while_another_holds_the_row_waits_and_then_sees_it_moved() -> None:
    """Given a payment read with its version, and another transaction that has written the row
    and not committed yet, when a write conditioned on the version read is made, then it waits
    for the other, and once that commits, it writes nothing."""
    payment = PaymentFactory()
    read = with_row_version(Payment.objects.filter(pk=payment.pk)).get()
    holding, release = threading.Event(), threading.Event()

    def other_writer() -> None:
        with transaction.atomic():
            Payment.objects.filter(pk=payment.pk).update(status_message="other")
            holding.set()
            release.wait(timeout=30)

    written: list[int] = []

    def conditioned_writer() -> None:
        rows = Payment.objects.filter(pk=payment.pk).filter(
            row_version_is(Payment, read.row_version)
        )
        written.append(rows.update(status_message="stale"))

    other = threading.Thread(target=in_thread(other_writer))
    other.start()
    assert holding.wait(timeout=30)
    stale = threading.Thread(target=in_thread(conditioned_writer))
    stale.start()
    stale.join(timeout=1)
    assert stale.is_alive(), "the conditioned write did not wait for the row's lock"
    release.set()
    other.join(timeout=30)
    stale.join(timeout=30)

    assert written == [0]
    payment.refresh_from_db()
    assert payment.status_message == "other"
