"""Reading payments again, the selectors (reads only): which payments the schedules take (the
read schedule's due payments, the creates waiting to be sent, the attempts no notification has
named, the authorizations to warn about or past their expiry), the payment held under a
provider id (a notification's), and the references of the payments changed lately (the
orders' sweep)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from core.row_version import with_row_version
from payments.models import EXPIRY_WARNING_DAYS, Payment
from payments.statuses import IN_FLIGHT, PaymentStatus

# What `payment_sync` compares of a payment before and after it applies the provider's.
SYNC_COMPARED = ("status", "provider_version", "captured_amount", "refunded_amount")


def payment_held(provider_id: str) -> Payment | None:
    """The payment held under this provider id (None: none), whole, with its row's version
    (`row_version`): a read that finds nothing new is recorded against that version without
    locking the row (`payments.snapshots.payment_apply`)."""
    return with_row_version(Payment.objects.filter(provider_id=provider_id)).first()


PENDING_RECONCILE_AFTER = timedelta(minutes=10)


def payments_due_for_check(*, now: datetime, limit: int) -> list[Payment]:
    """The payments whose scheduled read (payments.rereading.rules) is due, the longest due
    first (a partial index on `next_check_at` serves it, whatever the table's size)."""
    if limit <= 0:
        return []
    return list(Payment.objects.filter(next_check_at__lte=now).order_by("next_check_at")[:limit])


SEND_WAITING_AFTER = timedelta(seconds=20)


def payments_waiting_to_send(*, limit: int = 500) -> list[int]:
    """Attempts whose create is waiting to be sent (stored, or unanswered, with their request
    kept) for longer than a task takes to start: their ids, oldest first."""
    waiting = Payment.objects.filter(
        status__in=IN_FLIGHT, updated_at__lt=timezone.now() - SEND_WAITING_AFTER
    ).exclude(create_request="")
    return list(waiting.order_by("created_at").values_list("pk", flat=True)[:limit])


def payments_unresolved(*, now: datetime) -> int:
    """Attempts whose outcome is unknown and that no notification has named yet."""
    return Payment.objects.filter(
        status__in=IN_FLIGHT,
        provider_id__isnull=True,
        created_at__lt=now - PENDING_RECONCILE_AFTER,
    ).count()


def authorizations_to_warn(*, now: datetime) -> list[Payment]:
    return list(
        Payment.objects.filter(
            status=PaymentStatus.AUTHORIZED,
            expiry_warned_at__isnull=True,
            authorization_expires_at__gt=now,  # expired ones are refreshed, not announced
            authorization_expires_at__lte=now + timedelta(days=EXPIRY_WARNING_DAYS),
        ).order_by("authorization_expires_at")
    )


def authorizations_expired(*, now: datetime, limit: int) -> list[Payment]:
    return list(
        Payment.objects.filter(
            status=PaymentStatus.AUTHORIZED,
            provider_id__isnull=False,
            authorization_expires_at__lte=now,
        ).order_by("authorization_expires_at")[: max(limit, 0)]
    )


def changed_references(
    *, since: datetime, after: tuple[datetime, int] | None = None, limit: int
) -> tuple[list[str], tuple[datetime, int] | None]:
    """The external references of up to `limit` payments changed since `since`, in the order of
    their change, from just `after` the (updated_at, id) a previous page ended at; and where this
    page ends (None when there is no more)."""
    changed = Payment.objects.filter(updated_at__gte=since)
    if after is not None:
        changed = changed.filter(
            Q(updated_at__gt=after[0]) | Q(updated_at=after[0], pk__gt=after[1])
        )
    rows = list(
        changed.order_by("updated_at", "pk").values_list("updated_at", "pk", "external_reference")[
            :limit
        ]
    )
    references = list(dict.fromkeys(reference for _, _, reference in rows if reference))
    end = (rows[-1][0], rows[-1][1]) if len(rows) == limit else None
    return references, end
