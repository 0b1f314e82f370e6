"""The order follows its payments: every status change, whatever its source (the shopper's
page, a webhook, staff in the admin), lands here and queues the order's sync (a task: checkout
does its work in its own task, never inside the payments app's request or task). If the task
cannot be queued, `orders_follow_payments_task` (beat) syncs the order later."""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import receiver

from checkout.models import Order
from checkout.task_names import ORDER_SYNC_TASK
from core.task_queue import send_now
from payments.models import Payment
from payments.signals import payment_status_changed

logger = logging.getLogger(__name__)


@receiver(payment_status_changed, sender=Payment, dispatch_uid="checkout-order-follows-payment")
def order_follows_payment(sender: type[Payment], payment: Payment, **kwargs: Any) -> None:
    order_id = (
        Order.objects.filter(reference=payment.external_reference)
        .values_list("pk", flat=True)
        .first()
    )
    if order_id is None:
        return
    try:
        send_now(ORDER_SYNC_TASK, (order_id,))
    except Exception:  # the broker is down: the beat's sweep syncs the order
        logger.warning("order %s: sync not queued", payment.external_reference, exc_info=True)
