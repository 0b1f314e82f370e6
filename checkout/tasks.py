"""checkout's side effects, each a task of its own queued once the order's change is committed,
with its own retries: never an HTTP or SMTP call inside another app's request or task."""

from __future__ import annotations

from celery import shared_task

from checkout.services import mail, orders, reservations, retention
from checkout.services.duplicate_charges import ReleasePending, order_release_duplicates


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
    """The safety net of `order_sync_task`: an order whose payments changed since the last run
    but whose status does not say so (its task could not be queued, or was lost) is synced."""
    return orders.orders_follow_payments()


@shared_task(ignore_result=True)
def reservations_expire_task() -> int:
    """Expire the orders not paid within SHOP_RESERVATION_MINUTES: their items go back to stock
    (pages that show stock do it too, at once)."""
    return reservations.reservations_expire()


# --- Mails to the shopper ---------------------------------------------------------------------


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(Exception,),
    retry_backoff=30,
    retry_backoff_max=1800,
    retry_jitter=True,
    max_retries=20,
)
def order_mail_send_task(mail_id: int) -> bool:
    """Send one of the order's mails, once (a redelivery or a second task finds it sent); a
    mail server's failure is tried again later."""
    return mail.order_mail_send(mail_id=mail_id)


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(Exception,),
    retry_backoff=30,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=5,
)
def orders_list_mail_task(email: str, language: str) -> int:
    """Mail an address the list of its orders ("My orders"); nothing if it has none."""
    return mail.orders_list_send(email=email, language=language)


@shared_task(ignore_result=True)
def order_mails_sweep_task() -> int:
    """The safety net of `order_mail_send_task`: a mail unsent for SWEEP_AFTER (its task lost,
    or the broker down when it was queued) is queued again, at most once per SWEEP_LEASE."""
    queued = 0
    for mail_id in mail.order_mails_to_resend():
        order_mail_send_task.delay(mail_id)
        queued += 1
    return queued


# --- Retention (docs/deployment.md, "Retention") ----------------------------------------------


@shared_task(ignore_result=True)
def mails_prune_task() -> int:
    """Blank the text of the mails sent over SHOP_MAIL_KEEP_DAYS ago (beat, hourly)."""
    return retention.mails_prune()


@shared_task(ignore_result=True)
def sessions_prune_task() -> int:
    """Delete the expired browser sessions (beat, daily)."""
    return retention.sessions_prune()
