"""Rules of the webhooks app: store a notification, process the ones waiting for a payment,
relay those the broker never got, and let staff retry or replay them.

A notification is a hint, never proof: processing always reads the payment from the provider
(through `payments.reconciliation.payment_sync`) and applies it monotonically.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from functools import partial

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from payments.errors import PaymentError, PaymentInProgress, ProviderDown
from payments.models import Payment
from payments.reconciliation import SyncOutcome, payment_sync
from webhooks.models import WebhookEvent, WebhookState
from webhooks.notifications import Notification
from webhooks.queue import enqueue_processing, queue_now, unmark_queued

logger = logging.getLogger(__name__)

DEFERRED = "Deferred: too many notifications for unknown payments; it is looked up later."
GAVE_UP = "Gave up after retries: "  # the provider could not be reached: the schedule tries again
# The longest wait between two schedule retries: after an outage ends, a notification given up
# on is tried again within this (and a relay's interval), the bound the README states.
FAILED_RETRY_MAX = timedelta(minutes=10)


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


def webhook_receive(*, notification: Notification, remote_addr: str | None) -> int:
    """Store the notification (one INSERT: in autocommit it is committed when this returns)
    and queue its processing once it is committed; its event id. A database error is raised:
    the receiver answers 503 and the provider sends the notification again."""
    event = WebhookEvent.objects.create(
        provider_payment_id=notification.payment_id,
        event_type=notification.event_type,
        remote_addr=remote_addr,
    )
    transaction.on_commit(partial(enqueue_processing, notification.payment_id))
    return event.pk


# --- Processing ---------------------------------------------------------------------------


def claim_events(payment_id: str, task_id: str, now: datetime) -> list[int]:
    """Take the events waiting for this payment (and any this task already held before a retry
    or a crash). Rows another task or the relay has locked are skipped, not waited for: that
    task is claiming them, and a second claimer has nothing to add."""
    with transaction.atomic():
        ids = sorted(
            WebhookEvent.objects.select_for_update(skip_locked=True)
            .filter(provider_payment_id=payment_id)
            .filter(
                Q(state=WebhookState.RECEIVED) | Q(state=WebhookState.PROCESSING, task_id=task_id)
            )
            .values_list("pk", flat=True)
        )
        if ids:
            WebhookEvent.objects.filter(pk__in=ids).update(
                state=WebhookState.PROCESSING,
                task_id=task_id,
                claimed_at=now,
                attempts=F("attempts") + 1,
            )
    return ids


def _finish(
    ids: Iterable[int], state: str, *, error: str = "", payment: Payment | None = None
) -> None:
    values: dict[str, object] = {"state": state, "last_error": error[:500]}
    if state in (WebhookState.PROCESSED, WebhookState.UNMATCHED, WebhookState.FAILED):
        values["processed_at"] = timezone.now()
    if payment is not None:
        values["payment"] = payment
    WebhookEvent.objects.filter(pk__in=list(ids)).update(**values)


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
    unmark_queued(payment_id)  # from here on, a new notification queues a new task
    ids = claim_events(payment_id, task_id, timezone.now())
    if not ids:
        return ProcessOutcome.COALESCED
    if not Payment.objects.filter(provider_id=payment_id).exists():
        looked_up = WebhookEvent.objects.filter(
            provider_payment_id=payment_id, state=WebhookState.UNMATCHED
        ).first()
        if looked_up is not None:  # unknown ids are fetched once
            _finish(ids, WebhookState.UNMATCHED, error=looked_up.last_error)
            return ProcessOutcome.UNMATCHED
        if not _unknown_lookup_allowed():
            WebhookEvent.objects.filter(pk__in=ids).update(
                state=WebhookState.RECEIVED,
                task_id="",
                relayed_at=timezone.now(),
                last_error=DEFERRED,
            )
            return ProcessOutcome.DEFERRED
    try:
        result = payment_sync(provider_id=payment_id)
    except (ProviderDown, PaymentInProgress) as exc:
        WebhookEvent.objects.filter(pk__in=ids).update(last_error=exc.message[:500])
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
    return _claimed_by(payment_id, task_id).update(
        state=WebhookState.FAILED,
        last_error=f"{GAVE_UP}{error}"[:500],
        processed_at=timezone.now(),
    )


# --- Relay, retry, replay ----------------------------------------------------------------------


def _requeue_on_commit(payment_ids: Iterable[str]) -> None:
    ids = list(payment_ids)
    transaction.on_commit(lambda: queue_now(ids))


def _failed_wait(attempts: int) -> timedelta:
    """How long events given up on wait before the schedule tries them again: the longest
    retry wait, doubled for every earlier round of retries, at most ten minutes."""
    rounds = max(attempts // (settings.WEBHOOKS_MAX_RETRIES + 1), 1)
    base = timedelta(seconds=settings.WEBHOOKS_RETRY_BACKOFF_MAX)
    return min(base * 2 ** min(rounds - 1, 10), FAILED_RETRY_MAX)


def webhook_relay(
    *, limit: int = 500, older_than: timedelta | None = None, now: datetime | None = None
) -> int:
    """Queue again the events left behind: received but never queued (the broker was down, a
    process died), claimed by a task that did not finish within `WEBHOOKS_CLAIM_LEASE` (its
    worker died), or given up on while the provider could not be reached, once their wait
    (`_failed_wait`) is over: nothing waits for staff. Rows are locked with SKIP LOCKED, so
    relays running at once share the work. Returns how many events were relayed."""
    now = now or timezone.now()
    if older_than is None:
        older_than = timedelta(seconds=settings.WEBHOOKS_RELAY_AFTER)
    cutoff = now - older_than
    left_behind = Q(state=WebhookState.RECEIVED, received_at__lt=cutoff) & (
        Q(relayed_at__isnull=True) | Q(relayed_at__lt=cutoff)
    ) | Q(
        state=WebhookState.PROCESSING,
        claimed_at__lt=now - timedelta(seconds=settings.WEBHOOKS_CLAIM_LEASE),
    )
    given_up = Q(
        state=WebhookState.FAILED,
        last_error__startswith=GAVE_UP,
        processed_at__lt=now - _failed_wait(0),
    )
    with transaction.atomic():
        locked = WebhookEvent.objects.select_for_update(skip_locked=True)
        rows = list(
            locked.filter(left_behind)
            .order_by("received_at", "pk")
            .values_list("pk", "provider_payment_id")[:limit]
        )
        # Given up on, the longest waiting first; each waits by its rounds of retries. (Apart
        # from the rows above, so that failed rows still waiting never crowd them out.)
        failed = (
            locked.filter(given_up)
            .order_by("processed_at", "pk")
            .values_list("pk", "provider_payment_id", "processed_at", "attempts")
        )
        rows += [
            (pk, payment_id)
            for pk, payment_id, processed_at, attempts in failed[: limit - len(rows)]
            if processed_at < now - _failed_wait(attempts)
        ]
        if not rows:
            return 0
        WebhookEvent.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            state=WebhookState.RECEIVED, task_id="", relayed_at=now, processed_at=None
        )
        _requeue_on_commit(payment_id for _, payment_id in rows)
    logger.info("relayed %d webhook event(s)", len(rows))
    return len(rows)


def webhook_events_retry(*, events: Iterable[WebhookEvent], replay: bool = False) -> int:
    """Staff: process events again. Retry takes failed or unmatched events; replay takes any
    that is not being processed and refetches its payment whatever it said before."""
    states = [WebhookState.FAILED, WebhookState.UNMATCHED]
    if replay:
        states.append(WebhookState.PROCESSED)
    pks = [event.pk for event in events]
    with transaction.atomic():
        rows = list(
            WebhookEvent.objects.select_for_update()
            .filter(pk__in=pks, state__in=states)
            .values_list("pk", "provider_payment_id")
        )
        if not rows:
            return 0
        payment_ids = {payment_id for _, payment_id in rows}
        # An unknown id is looked up once for all its rows: they are all looked up again.
        again = Q(pk__in=[pk for pk, _ in rows]) | Q(
            provider_payment_id__in=payment_ids, state=WebhookState.UNMATCHED
        )
        WebhookEvent.objects.filter(again).update(
            state=WebhookState.RECEIVED, task_id="", last_error="", processed_at=None
        )
        _requeue_on_commit(payment_ids)
    return len(rows)
