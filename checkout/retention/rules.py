"""What the shop keeps of its own data, and for how long (docs/deployment.md, "Retention").

- A mail keeps the text it sent (subject and plain-text body) `SHOP_MAIL_KEEP_DAYS` after it
  was sent, then loses it: its row (kind, event, amounts, dates) stays with its order.
- Browser sessions are deleted once expired (what `clearsessions` does, in batches).

Orders, their ledger, payments, their ledger and refunds are financial records: nothing here, or
anywhere in the shop, deletes them.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.sessions.models import Session
from django.db.models import QuerySet
from django.utils import timezone

from checkout.models import OrderMail
from core.retention import prune_oldest


def mails_prune(*, now: datetime | None = None) -> int:
    """Blank the subject and body of the mails sent over `SHOP_MAIL_KEEP_DAYS` ago, oldest
    first, a batch per statement, within a run's budget (`core.retention`); how many were
    blanked."""
    before = (now or timezone.now()) - timedelta(days=settings.SHOP_MAIL_KEEP_DAYS)
    # The conditions of the index `order_mail_text_kept`, and its column's range.
    old = OrderMail.objects.exclude(body="").filter(sent_at__lt=before)
    return prune_oldest(old, by="sent_at", change=lambda rows: rows.update(subject="", body=""))


def sessions_prune(*, now: datetime | None = None) -> int:
    """Delete the browser sessions that have expired (through the index on their expiry),
    oldest first, a batch per statement, within a run's budget; how many were deleted.
    Sessions still valid, a shopper's cart or a staff member's login, are left alone."""
    expired = Session.objects.filter(expire_date__lt=now or timezone.now())
    return prune_oldest(expired, by="expire_date", change=_delete)


def _delete(rows: QuerySet[Session]) -> int:
    deleted, _ = rows.delete()
    return deleted
