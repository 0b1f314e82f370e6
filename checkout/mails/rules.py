"""Mails to the shopper: one per event of the order (`OrderMail`, unique per order and event
key), created when the change that made it due commits (which mails are due:
`checkout.mails.selectors`), and queued for its task (`checkout.mails.calls` sends it, never
inside the caller's transaction or request); and the sweep's pick of the mails whose task was
lost."""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import timedelta

from django.core.cache import cache
from django.db import IntegrityError, transaction

from checkout.mails.selectors import SWEEP_AFTER, order_mails_due, unsent_for
from checkout.models import Order, OrderMail
from checkout.task_names import MAIL_SEND_TASK
from core.task_queue import queue_on_commit
from payments.models import Payment

logger = logging.getLogger(__name__)

# An unsent mail older than SWEEP_AFTER had its task lost (or the broker was down): the sweep
# queues it again, at most once per SWEEP_LEASE while its own task may still be retrying.
SWEEP_LEASE = timedelta(hours=1)
SWEEP_LIMIT = 500


def queue_order_mails(
    order: Order,
    *,
    new: bool = False,
    attempts: list[Payment] | None = None,
    order_locked: bool = False,
    keys_held: Collection[str] | None = None,
) -> list[int]:
    """Create the order's mails that are now due and not yet there, and queue each new one's
    send task once the caller's transaction commits. Call it inside the transaction that
    changed the order, with the order row locked (`select_for_update`: no other transaction
    creates its mails meanwhile); it may run any number of times (duplicate notifications,
    retries): a mail is created, and queued, once. Returns the ids of the mails it created.
    `new`: the order was created in this transaction (no ledger, no mail yet: nothing is
    read); `attempts`: its payments, when the caller has just read them under the lock;
    `order_locked`: the caller holds the order's row lock, so no other transaction writes its
    mails meanwhile (they are inserted at once; otherwise, in a savepoint that gives way to the
    other transaction's rows); `keys_held`: the keys of its mails, when the caller has just
    read them under that lock (`order_mail_keys`)."""
    due = order_mails_due(order, new=new, attempts=attempts)
    if due and not new:
        if keys_held is None:
            keys = [d.key for d in due]
            keys_held = set(
                OrderMail.objects.filter(order=order, key__in=keys).values_list("key", flat=True)
            )
        due = [d for d in due if d.key not in keys_held]
    if not due:
        return []
    rows = [
        OrderMail(order=order, key=d.key, kind=d.kind, amount=d.amount, released=d.released)
        for d in due
    ]
    if new or order_locked:  # nobody else can be writing its mails
        mails = OrderMail.objects.bulk_create(rows)
    else:
        mails = _create_once(rows)
    for mail in mails:
        queue_on_commit(MAIL_SEND_TASK, mail.pk)
    logger.info("order %s: %d mail(s) queued", order.reference, len(mails))
    return [mail.pk for mail in mails]


def _create_once(rows: list[OrderMail]) -> list[OrderMail]:
    """Insert the mails in one statement; if another transaction wrote one of them meanwhile (a
    caller without the order's lock), the unique (order, event) says so, and each is then
    created only where it is still missing: the mails this transaction created."""
    try:
        with transaction.atomic():
            return OrderMail.objects.bulk_create(rows)
    except IntegrityError:
        created = []
        for row in rows:
            mail, new = OrderMail.objects.get_or_create(
                order=row.order,
                key=row.key,
                defaults={"kind": row.kind, "amount": row.amount, "released": row.released},
            )
            if new:
                created.append(mail)
        return created


# --- The sweep ----------------------------------------------------------------------------------


def order_mails_to_resend(
    *, older_than: timedelta = SWEEP_AFTER, limit: int = SWEEP_LIMIT
) -> list[int]:
    """Mails due for longer than `older_than` and still not sent (their task was lost, the
    broker was down, or the mail server has been failing), oldest first: each at most once per
    SWEEP_LEASE, so a mail whose own task is still retrying does not gather more."""
    unsent = (
        OrderMail.objects.filter(unsent_for(older_than))
        .order_by("created_at", "id")
        .values_list("pk", flat=True)[:limit]
    )
    return [pk for pk in unsent if _lease(pk)]


def _lease(mail_id: int) -> bool:
    try:
        return bool(
            cache.add(f"order-mail-resent:{mail_id}", 1, timeout=SWEEP_LEASE.total_seconds())
        )
    except Exception:  # no cache: resend anyway (sending is claimed, so at worst it is a no-op)
        logger.warning("mail sweep: cache unavailable", exc_info=True)
        return True
