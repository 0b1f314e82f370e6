"""A refund of an invoiced order calls for a credit note: books hears of a payment whose
refunded amount changed (payments' `payment_status_changed`, sent after the commit, for a
staff refund as for one the provider reported) and queues its check."""

from __future__ import annotations

from typing import Any

from core.task_queue import queue_on_commit
from payments.models import Payment
from payments.signals import payment_status_changed

REFUND_CHECK_TASK = "books.tasks.factura_refund_check_task"


def _payment_changed(sender: type[Payment], payment: Payment, **kwargs: Any) -> None:
    if payment.refunded_amount > 0:
        queue_on_commit(REFUND_CHECK_TASK, payment.external_reference)


def connect() -> None:
    payment_status_changed.connect(_payment_changed, dispatch_uid="books.payment_refunded")
