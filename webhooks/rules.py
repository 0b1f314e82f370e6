"""Rules of the webhooks app (never the network): store a notification and queue its processing,
relay those the broker never got, let staff retry or replay them, and delete the finished ones
after WEBHOOKS_KEEP_DAYS. Processing (reading the payment from the provider) is in
`webhooks.calls`, which only the tasks import: the receiver's view and the admin never reach the
provider's client.

Retention (docs/deployment.md, "Retention"): a notification is kept `WEBHOOKS_KEEP_DAYS` after
its processing finished (processed, or unmatched: its payment belongs to no order of this shop),
then deleted. Failed ones stay until they are resolved (the relay's or staff's retry makes them
processed, and they age from then); received and processing ones are never deleted. Payments and
their ledger, which say what each notification changed, are kept with the other financial
records."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core.retention import prune_oldest
from core.task_queue import mark, send_each, send_once, unmark
from webhooks.metrics import notification_received
from webhooks.models import DEFERRED, FINISHED, GAVE_UP, WebhookEvent, WebhookState
from webhooks.notifications import Notification
from webhooks.task_names import PROCESS_TASK, marker

logger = logging.getLogger(__name__)

# The longest wait between two schedule retries: after an outage ends, a notification given up
# on is tried again within this (and a relay's interval), the bound the README states.
FAILED_RETRY_MAX = timedelta(minutes=10)


def webhook_receive(*, notification: Notification, remote_addr: str | None) -> int:
    """Store the notification (one INSERT: in autocommit it is committed when this returns)
    and queue its processing once it is committed; its event id. A database error is raised:
    the receiver answers 503 and the provider sends the notification again."""
    event = WebhookEvent.objects.create(
        provider_payment_id=notification.payment_id,
        event_type=notification.event_type,
        remote_addr=remote_addr,
    )
    notification_received(notification.event_type)
    transaction.on_commit(partial(enqueue_processing, notification.payment_id))
    return event.pk


# --- Relay, retry, replay ----------------------------------------------------------------------


def enqueue_processing(payment_id: str) -> bool:
    """Make sure the payment's notifications will be processed: queue its task, after
    `WEBHOOKS_COALESCE_SECONDS`, unless one is already on its way (a burst of notifications for
    one payment is read once). False (logged) if the cache or the broker is down: the row stays
    `received` and the relay queues it later. The marker outlives a lost task no longer than
    the relay's wait."""
    return send_once(
        PROCESS_TASK,
        marker(payment_id),
        (payment_id,),
        ttl=settings.WEBHOOKS_RELAY_AFTER,
        countdown=settings.WEBHOOKS_COALESCE_SECONDS,
        what=f"webhook for payment {payment_id}",
    )


def queue_now(payment_ids: Iterable[str]) -> int:
    """Queue a processing task for each payment at once, whatever is on its way (the relay,
    staff's retry): a task that finds nothing left to claim costs one query."""
    ids = list(dict.fromkeys(payment_ids))
    for payment_id in ids:
        mark(marker(payment_id), settings.WEBHOOKS_RELAY_AFTER)
    sent = send_each(PROCESS_TASK, [(payment_id,) for payment_id in ids])
    for payment_id in ids[sent:]:
        unmark(marker(payment_id))
    return sent


def _requeue_on_commit(payment_ids: Iterable[str]) -> None:
    ids = list(payment_ids)
    transaction.on_commit(lambda: queue_now(ids))


def _failed_wait(attempts: int) -> timedelta:
    """How long events given up on wait before the schedule tries them again: the longest
    retry wait, doubled for every earlier round of retries, at most ten minutes."""
    rounds = max(attempts // (settings.WEBHOOKS_MAX_RETRIES + 1), 1)
    base = timedelta(seconds=settings.WEBHOOKS_RETRY_BACKOFF_MAX)
    return min(base * 2 ** min(rounds - 1, 10), FAILED_RETRY_MAX)


def _failed_wait_over(now: datetime) -> Q:
    """Events given up on whose wait (`_failed_wait`, by their attempts) is over, as one
    condition for the database: a few ranges of attempts (as many as the wait has steps below
    its ten minutes), each with its wait. Only rows the relay will take are read."""
    per_round = settings.WEBHOOKS_MAX_RETRIES + 1
    # The shortest wait first, alone: the range the index `webhook_given_up` is read in.
    shortest = Q(processed_at__lt=now - _failed_wait(0))
    over = Q(processed_at__lt=now - FAILED_RETRY_MAX)
    for rounds in range(1, 12):
        wait = _failed_wait(rounds * per_round)
        if wait >= FAILED_RETRY_MAX:
            break
        # Rounds 0 and 1 wait the same; every later round waits at least as long.
        over |= Q(attempts__lt=(rounds + 1) * per_round, processed_at__lt=now - wait)
    return shortest & over


def webhook_relay(
    *, limit: int = 500, older_than: timedelta | None = None, now: datetime | None = None
) -> int:
    """Queue again the events left behind: received but never queued (the broker was down, a
    process died), claimed by a task that did not finish within `WEBHOOKS_CLAIM_LEASE` (its
    worker died), or given up on while the provider could not be reached, once their wait
    (`_failed_wait`) is over: nothing waits for staff. Rows are locked with SKIP LOCKED, so
    relays running at once share the work. Two indexed selects and one update however many
    rows: failed events left for staff, or still waiting their turn, are not read at all.
    Events deferred over the budget of unknown ids' lookups are queued no faster than that
    budget looks them up (the rest would only be deferred again): those over it wait for a
    later run, as if relayed. Returns how many events were queued."""
    now = now or timezone.now()
    if older_than is None:
        older_than = timedelta(seconds=settings.WEBHOOKS_RELAY_AFTER)
    with transaction.atomic():
        lost, retried = _left_behind(now, now - older_than, limit)
        pks = [pk for pk, *_ in lost] + [pk for pk, _ in retried]
        if not pks:
            return 0
        WebhookEvent.objects.filter(pk__in=pks).update(
            state=WebhookState.RECEIVED, task_id="", relayed_at=now, processed_at=None
        )
        queued = _within_lookups(lost) + [payment_id for _, payment_id in retried]
        _requeue_on_commit(queued)
    logger.info("relayed %d webhook event(s)", len(queued))
    return len(queued)


def _left_behind(
    now: datetime, cutoff: datetime, limit: int
) -> tuple[list[tuple[int, str, str, str]], list[tuple[int, str]]]:
    """The rows the relay takes, locked (SKIP LOCKED): those received or claimed and left
    behind (pk, payment id, state, last error), then those given up on whose wait is over (pk,
    payment id), apart so that failed rows never crowd the others out; `limit` in all."""
    left_behind = Q(state=WebhookState.RECEIVED, received_at__lt=cutoff) & (
        Q(relayed_at__isnull=True) | Q(relayed_at__lt=cutoff)
    ) | Q(
        state=WebhookState.PROCESSING,
        claimed_at__lt=now - timedelta(seconds=settings.WEBHOOKS_CLAIM_LEASE),
    )
    # The conditions of the index `webhook_given_up`, as they are written there.
    given_up = Q(state=WebhookState.FAILED, last_error__startswith=GAVE_UP)
    locked = WebhookEvent.objects.select_for_update(skip_locked=True)
    lost = list(
        locked.filter(left_behind)
        .order_by("received_at", "pk")
        .values_list("pk", "provider_payment_id", "state", "last_error")[:limit]
    )
    retried: list[tuple[int, str]] = []
    if len(lost) < limit:  # given up on, the longest waiting first
        retried = list(
            locked.filter(given_up)
            .filter(_failed_wait_over(now))
            .order_by("processed_at", "pk")
            .values_list("pk", "provider_payment_id")[: limit - len(lost)]
        )
    return lost, retried


def _within_lookups(rows: list[tuple[int, str, str, str]]) -> list[str]:
    """The payment ids to queue for `rows` (pk, payment id, state, last error) left behind:
    every one, but of the events deferred over the budget of unknown ids' lookups only as many
    as the budget looks up between two relays."""
    per_run = settings.WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE * settings.WEBHOOKS_RELAY_EVERY // 60
    left, queued = max(1, per_run), []
    for _, payment_id, state, error in rows:
        if state == WebhookState.RECEIVED and error == DEFERRED:
            if left == 0:
                continue
            left -= 1
        queued.append(payment_id)
    return queued


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


# --- Retention ----------------------------------------------------------------------------------


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
