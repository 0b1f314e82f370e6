"""How long notifications are kept (docs/deployment.md, "Retention").

A notification is kept `WEBHOOKS_KEEP_DAYS` after its processing finished (processed, or
unmatched: its payment belongs to no order of this shop), then deleted. Failed ones stay until
they are resolved (the relay's or staff's retry makes them processed, and they age from then);
received and processing ones are never deleted. Payments and their ledger, which say what each
notification changed, are kept with the other financial records.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from core.retention import prune_oldest
from webhooks.models import FINISHED, WebhookEvent


def webhooks_prune(*, now: datetime | None = None) -> int:
    """Delete the notifications that finished over `WEBHOOKS_KEEP_DAYS` ago, oldest first, a
    batch per statement, within a run's budget (`core.retention`); how many were deleted.
    A row a staff replay takes in between is no longer finished, and is left alone."""
    before = (now or timezone.now()) - timedelta(days=settings.WEBHOOKS_KEEP_DAYS)
    # The conditions of the index `webhook_finished`, and its column's range.
    old = WebhookEvent.objects.filter(state__in=FINISHED, processed_at__lt=before)
    return prune_oldest(old, by="processed_at", change=_delete)


def _delete(rows: QuerySet[WebhookEvent]) -> int:
    deleted, _ = rows.delete()
    return deleted
