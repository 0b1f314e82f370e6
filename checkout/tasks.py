"""checkout's side effects, each a task of its own queued once the order's change is committed,
with its own retries: never an HTTP or SMTP call inside another app's request or task."""

from __future__ import annotations

from checkout.mails.calls import order_mail_deliver, orders_list_send
from checkout.mails.rules import order_mails_to_resend
from checkout.orders.rules import order_sync_status, orders_follow_payments
from checkout.paying.calls import ReleasePending, order_release_duplicates
from checkout.reservations.rules import reservations_expire
from checkout.retention.rules import mails_prune, sessions_prune
from checkout.task_names import MAIL_SEND_TASK
from core.task_queue import (
    CHARGE_RELEASE,
    MAIL,
    MAIL_ON_REQUEST,
    RECORD_SYNC,
    send_each,
    shop_task,
)


@shop_task("checkout.tasks.order_release_duplicates_task", retry=CHARGE_RELEASE.on(ReleasePending))
def order_release_duplicates_task(reference: str) -> int:
    """Give back an order's second charge (refund it, or cancel its authorization)."""
    return order_release_duplicates(reference=reference)


@shop_task("checkout.tasks.order_sync_task", retry=RECORD_SYNC.on(Exception))
def order_sync_task(order_id: int) -> str | None:
    """Move the order to what its payments say (idempotent: run twice, it lands in the same
    place)."""
    order = order_sync_status(order_id=order_id)
    return order.status if order is not None else None


@shop_task("checkout.tasks.orders_follow_payments_task")
def orders_follow_payments_task() -> int:
    """The safety net of `order_sync_task`: an order whose payments changed since the last run
    but whose status does not say so (its task could not be queued, or was lost) is synced."""
    return orders_follow_payments()


@shop_task("checkout.tasks.reservations_expire_task")
def reservations_expire_task() -> int:
    """Expire the orders not paid within SHOP_RESERVATION_MINUTES: their items go back to stock
    (pages that show stock do it too, at once)."""
    return reservations_expire()


# --- Mails to the shopper ---------------------------------------------------------------------


# Named when `order_mail_deliver` was `order_mail_send`: the running release queues by this name.
@shop_task("checkout.tasks.order_mail_send_task", retry=MAIL.on(Exception))
def order_mail_deliver_task(mail_id: int) -> bool:
    """Send one of the order's mails, once (a redelivery or a second task finds it sent); a
    mail server's failure is tried again later."""
    return order_mail_deliver(mail_id=mail_id)


@shop_task("checkout.tasks.orders_list_mail_task", retry=MAIL_ON_REQUEST.on(Exception))
def orders_list_mail_task(email: str, language: str) -> int:
    """Mail an address the list of its orders ("My orders"); nothing if it has none."""
    return orders_list_send(email=email, language=language)


@shop_task("checkout.tasks.order_mails_sweep_task")
def order_mails_sweep_task() -> int:
    """The safety net of `order_mail_deliver_task`: a mail unsent for SWEEP_AFTER (its task lost,
    or the broker down when it was queued) is queued again, at most once per SWEEP_LEASE."""
    return send_each(MAIL_SEND_TASK, [(mail_id,) for mail_id in order_mails_to_resend()])


# --- Retention (docs/deployment.md, "Retention") ----------------------------------------------


@shop_task("checkout.tasks.mails_prune_task")
def mails_prune_task() -> int:
    """Blank the text of the mails sent over SHOP_MAIL_KEEP_DAYS ago (beat, hourly)."""
    return mails_prune()


@shop_task("checkout.tasks.sessions_prune_task")
def sessions_prune_task() -> int:
    """Delete the expired browser sessions (beat, daily)."""
    return sessions_prune()
