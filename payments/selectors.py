"""Reads of payments that take more than a line: what the schedules look at."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import F, Q
from django.utils import timezone

from payments.models import EXPIRY_WARNING_DAYS, IN_FLIGHT, Payment, PaymentStatus

PENDING_RECONCILE_AFTER = timedelta(minutes=10)
RESYNC_EVERY = timedelta(hours=6)
APPROVED_WATCHED_FOR = timedelta(days=30)


def payments_to_reconcile(*, now: datetime, limit: int) -> list[Payment]:
    """Not final and possibly moved without a word: pending for over 10 minutes, outcome
    unknown, or authorized or approved (this last month) and not read for six hours. Least
    recently read first."""
    stale_pending = now - PENDING_RECONCILE_AFTER
    not_read_since = Q(last_synced_at__isnull=True) | Q(last_synced_at__lt=stale_pending)
    not_read_lately = Q(last_synced_at__isnull=True) | Q(last_synced_at__lt=now - RESYNC_EVERY)
    wanted = (
        Q(status=PaymentStatus.PENDING, created_at__lt=stale_pending) & not_read_since
        | Q(status=PaymentStatus.UNKNOWN)
        | Q(status=PaymentStatus.AUTHORIZED) & not_read_lately
        # A refund or a cancellation whose notification was lost would otherwise never show.
        | Q(status=PaymentStatus.APPROVED, created_at__gt=now - APPROVED_WATCHED_FOR)
        & not_read_lately
    )
    return list(
        Payment.objects.filter(wanted, provider_id__isnull=False).order_by(
            F("last_synced_at").asc(nulls_first=True), "pk"
        )[:limit]
    )


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


def authorizations_expired(*, now: datetime) -> list[Payment]:
    return list(
        Payment.objects.filter(
            status=PaymentStatus.AUTHORIZED,
            provider_id__isnull=False,
            authorization_expires_at__lte=now,
        ).order_by("authorization_expires_at")
    )


def recently_changed_references(*, since: datetime, limit: int) -> list[str]:
    """The external references of the payments changed since `since`, newest first."""
    references = (
        Payment.objects.filter(updated_at__gte=since)
        .exclude(external_reference="")
        .order_by("-updated_at")
        .values_list("external_reference", flat=True)[:limit]
    )
    return list(dict.fromkeys(references))
