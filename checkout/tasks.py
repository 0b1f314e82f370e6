"""checkout's side effects, each a task of its own queued once the order's change is committed,
with its own retries: never an HTTP or SMTP call inside another app's request or task."""

from __future__ import annotations

from celery import shared_task

from checkout.services import orders
from checkout.services.duplicate_charges import ReleasePending, order_release_duplicates
from checkout.services.mail import order_send_confirmation


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(ReleasePending,),
    retry_backoff=5,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=50,
)
def order_release_duplicates_task(reference: str) -> int:
    """Give back an order's second charge (refund it, or cancel its authorization)."""
    return order_release_duplicates(reference=reference)


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(Exception,),
    retry_backoff=30,
    retry_backoff_max=1800,
    retry_jitter=True,
    max_retries=20,
)
def order_send_confirmation_task(order_id: int) -> bool:
    """Mail the order's confirmation once; a mail server's failure is tried again later."""
    return order_send_confirmation(order_id=order_id)


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(Exception,),
    retry_backoff=2,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=20,
)
def order_sync_task(order_id: int) -> str | None:
    """Move the order to what its payments say (idempotent: run twice, it lands in the same
    place)."""
    order = orders.order_sync_status(order_id=order_id)
    return order.status if order is not None else None


@shared_task(ignore_result=True)
def orders_follow_payments_task() -> int:
    """The safety net of `order_sync_task`: an order whose payments changed recently but whose
    status does not say so (its task could not be queued, or was lost) is synced here."""
    synced = 0
    for order_id in orders.orders_out_of_step():
        orders.order_sync_status(order_id=order_id)
        synced += 1
    return synced
