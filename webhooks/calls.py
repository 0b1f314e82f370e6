"""Processing the notifications waiting for a payment: claim them, read the payment from the
provider once (through `payments.rereading.calls.payment_sync`) and apply it monotonically; hold
them for a retry while the provider is unreachable, or give up. Only the webhooks' tasks import
this module (the receiver's view must not reach the provider's client; what never reaches the
network is in `webhooks.rules`).

A notification is a hint, never proof: processing always reads the payment from the provider.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from enum import StrEnum

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from core.task_queue import unmark
from payments.models import Payment
from payments.provider.errors import PaymentError, PaymentInProgress, ProviderDown
from payments.rereading.calls import SyncOutcome, payment_sync
from payments.rereading.selectors import payment_held
from webhooks.metrics import notifications_finished, notifications_given_up
from webhooks.models import DEFERRED, GAVE_UP, WebhookEvent, WebhookState
from webhooks.task_names import marker

logger = logging.getLogger(__name__)


class ProcessOutcome(StrEnum):
    COALESCED = "coalesced"  # nothing waiting: an earlier refetch already covered it
    PROCESSED = "processed"
    UNMATCHED = "unmatched"
    DEFERRED = "deferred"
    FAILED = "failed"


class RetryLater(Exception):
    """The provider could not answer yet; the claimed events stay with the task."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def claim_events(payment_id: str, task_id: str, now: datetime) -> list[int]:
    """Take the events waiting for this payment (and any this task already held before a retry
    or a crash). Rows another task or the relay has locked are skipped, not waited for: that
    task is claiming them, and a second claimer has nothing to add."""
    return sorted(_claim(payment_id, task_id, now))


# One statement, its own transaction: the rows the sub-select takes (skipping those another
# transaction holds) are the rows it updates, and their ids and arrivals come back with it.
_CLAIM_SQL = """
    UPDATE webhooks_webhookevent
       SET state = %(processing)s, task_id = %(task_id)s, claimed_at = %(now)s,
           attempts = attempts + 1
     WHERE id IN (
           SELECT id FROM webhooks_webhookevent
            WHERE provider_payment_id = %(payment_id)s
              AND (state = %(received)s OR (state = %(processing)s AND task_id = %(task_id)s))
            ORDER BY id
              FOR UPDATE SKIP LOCKED)
 RETURNING id, received_at
"""


def _claim(payment_id: str, task_id: str, now: datetime) -> dict[int, datetime]:
    """`claim_events`: the events claimed, with when each was received."""
    with connection.cursor() as cursor:
        cursor.execute(
            _CLAIM_SQL,
            {
                "processing": WebhookState.PROCESSING,
                "received": WebhookState.RECEIVED,
                "task_id": task_id,
                "now": now,
                "payment_id": payment_id,
            },
        )
        return dict(cursor.fetchall())


def _finish(
    claimed: dict[int, datetime], state: str, *, error: str = "", payment: Payment | None = None
) -> None:
    values: dict[str, object] = {"state": state, "last_error": error[:500]}
    if state in (WebhookState.PROCESSED, WebhookState.UNMATCHED, WebhookState.FAILED):
        values["processed_at"] = now = timezone.now()
        notifications_finished(claimed.values(), state, now=now)
    if payment is not None:
        values["payment"] = payment
    WebhookEvent.objects.filter(pk__in=list(claimed)).update(**values)


def _unknown_lookup_allowed() -> bool:
    """A budget of provider lookups per minute for ids the shop does not know, so that a flood
    of random ids cannot turn into a flood of provider calls."""
    key = f"webhooks:unknown-lookups:{int(time.time() // 60)}"
    try:
        cache.add(key, 0, timeout=120)
        return cache.incr(key) <= settings.WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE
    except Exception:  # no cache: then the task could not have been queued either
        return True


def webhook_process(*, payment_id: str, task_id: str) -> ProcessOutcome:
    """Refetch the payment for every notification waiting for it: one provider call however
    many there are. Raises `RetryLater` while the provider is unreachable."""
    unmark(marker(payment_id))  # from here on, a new notification queues a new task
    ids = _claim(payment_id, task_id, timezone.now())
    if not ids:
        return ProcessOutcome.COALESCED
    held = payment_held(payment_id)
    if held is None:
        looked_up = WebhookEvent.objects.filter(
            provider_payment_id=payment_id, state=WebhookState.UNMATCHED
        ).first()
        if looked_up is not None:  # unknown ids are fetched once
            _finish(ids, WebhookState.UNMATCHED, error=looked_up.last_error)
            return ProcessOutcome.UNMATCHED
        if not _unknown_lookup_allowed():
            WebhookEvent.objects.filter(pk__in=list(ids)).update(
                state=WebhookState.RECEIVED,
                task_id="",
                relayed_at=timezone.now(),
                last_error=DEFERRED,
            )
            return ProcessOutcome.DEFERRED
    try:
        result = payment_sync(provider_id=payment_id, known=held)
    except (ProviderDown, PaymentInProgress) as exc:
        WebhookEvent.objects.filter(pk__in=list(ids)).update(last_error=exc.message[:500])
        raise RetryLater(exc.message) from exc
    except PaymentError as exc:
        logger.error("webhook for payment %s failed: %s", payment_id, exc.message)
        _finish(ids, WebhookState.FAILED, error=exc.message)
        return ProcessOutcome.FAILED
    if result.outcome in (SyncOutcome.UNMATCHED, SyncOutcome.NOT_FOUND):
        logger.warning("webhook for unmatched payment %s: %s", payment_id, result.note)
        _finish(ids, WebhookState.UNMATCHED, error=f"Unmatched: {result.note}.")
        return ProcessOutcome.UNMATCHED
    _finish(ids, WebhookState.PROCESSED, payment=result.payment)
    return ProcessOutcome.PROCESSED


def _claimed_by(payment_id: str, task_id: str) -> QuerySet[WebhookEvent]:
    return WebhookEvent.objects.filter(
        provider_payment_id=payment_id, state=WebhookState.PROCESSING, task_id=task_id
    )


def webhook_hold(*, payment_id: str, task_id: str, until: datetime) -> int:
    """The task will retry at `until`: its events stay claimed by it, and their lease
    (`WEBHOOKS_CLAIM_LEASE`) runs from then, so that the relay leaves them to the retry."""
    return _claimed_by(payment_id, task_id).update(claimed_at=until)


def webhook_give_up(*, payment_id: str, task_id: str, error: str) -> int:
    """Retries ran out: the task's events are marked failed, where staff see them; the relay
    tries them again once their wait is over (`webhook_relay`)."""
    logger.error("webhook for payment %s failed after retries: %s", payment_id, error)
    given_up = _claimed_by(payment_id, task_id).update(
        state=WebhookState.FAILED,
        last_error=f"{GAVE_UP}{error}"[:500],
        processed_at=timezone.now(),
    )
    notifications_given_up(given_up)
    return given_up
