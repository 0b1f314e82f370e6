"""Reading payments again, the rules (no call to the provider here): when the shop reads a payment
again on its own (the schedule, and handing its due reads out), and how many reads a minute it
allows itself (the read budget). Which payments the schedules take: `payments.rereading.selectors`.
The reads themselves are made by `payments.rereading.calls`, from tasks only."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.cache_redis import WindowCounter
from payments.models import Payment
from payments.statuses import PaymentStatus

logger = logging.getLogger(__name__)

# --- Read schedule ------------------------------------------------------------------------
# When the shop reads a payment again on its own, in case it moved without a notification (a
# refund or a capture made in the provider's console, a notification lost).
#
# A payment that can still move is read at fixed times after its last change: 1 hour, 6 hours,
# 1, 3, 7, 14 and 29 days (an attempt still pending or unknown also 10 minutes after), a handful
# of reads in its life whatever the shop's history. A read that finds it changed, and a read a
# notification, a staff member or the shopper's page asked for, start the count again from then.
# Settled payments (rejected, cancelled, refunded, not created) are never read on a schedule.
#
# The reads themselves share the provider read budget (`payments.rereading.rules`).


RECHECK_AFTER: tuple[timedelta, ...] = (
    timedelta(hours=1),
    timedelta(hours=6),
    timedelta(days=1),
    timedelta(days=3),
    timedelta(days=7),
    timedelta(days=14),
    timedelta(days=29),
)
IN_FLIGHT_FIRST_CHECK = timedelta(minutes=10)
SCHEDULE_FIELDS = ["checks_from", "checks_done", "next_check_at"]

_OFFSETS: dict[str, tuple[timedelta, ...]] = {
    PaymentStatus.PENDING: (IN_FLIGHT_FIRST_CHECK, *RECHECK_AFTER),
    PaymentStatus.UNKNOWN: (IN_FLIGHT_FIRST_CHECK, *RECHECK_AFTER),
    PaymentStatus.AUTHORIZED: RECHECK_AFTER,
    PaymentStatus.APPROVED: RECHECK_AFTER,
}


def offsets(status: str) -> tuple[timedelta, ...]:
    """The times after its last change at which a payment in `status` is read."""
    return _OFFSETS.get(status, ())


def next_check(status: str, *, since: datetime, done: int) -> datetime | None:
    """When the read after `done` reads without news, counted from `since`, is due; None when
    there is none."""
    steps = offsets(status)
    return since + steps[done] if done < len(steps) else None


def _set(payment: Payment, *, since: datetime, done: int) -> None:
    payment.checks_from = since
    payment.checks_done = done
    payment.next_check_at = (
        next_check(payment.status, since=since, done=done) if payment.provider_id else None
    )


def read_schedule_restart(payment: Payment, *, now: datetime) -> None:
    """The payment changed, or a read was asked for it: count its schedule from `now` (not
    saved)."""
    _set(payment, since=now, done=0)


def read_schedule_advance(payment: Payment, *, now: datetime) -> None:
    """A scheduled read found nothing new: the next one is the following step (not saved)."""
    since = payment.checks_from
    if since is None:
        read_schedule_restart(payment, now=now)
        return
    done = payment.checks_done + 1
    # A read made late stands for the steps it overtook: no two reads in a row.
    while (due := next_check(payment.status, since=since, done=done)) is not None and due <= now:
        done += 1
    _set(payment, since=since, done=done)


def schedule_from_last_change(cursor: Any, table: str, *, now: datetime | None = None) -> None:
    """Give every payment that can still move, and whose schedule is not over, the next step of
    its schedule counted from its last change (`updated_at`), the steps already past skipped:
    for payments written without the schedule (before it existed, or generated in bulk). One
    statement per group of statuses."""
    moment = now or timezone.now()
    groups: dict[tuple[timedelta, ...], list[str]] = {}
    for status, steps in _OFFSETS.items():
        groups.setdefault(steps, []).append(str(status))
    for steps, statuses in groups.items():
        cursor.execute(
            f"""
            UPDATE {table} AS p
            SET checks_from = p.updated_at, checks_done = nxt.done,
                next_check_at = p.updated_at + nxt.step
            FROM {table} AS q
            CROSS JOIN LATERAL (
                SELECT o.ord - 1 AS done, o.step
                FROM unnest(%s::interval[]) WITH ORDINALITY AS o(step, ord)
                WHERE q.updated_at + o.step > %s
                ORDER BY o.ord
                LIMIT 1
            ) AS nxt
            WHERE q.id = p.id AND p.status = ANY(%s) AND p.provider_id IS NOT NULL
              AND p.updated_at > %s::timestamptz - %s::interval
            """,  # noqa: S608 (the table's name is the model's, never input)
            [list(steps), moment, statuses, moment, steps[-1]],
        )


SCHEDULE_BATCH = 500


def schedule_unscheduled(
    *, now: datetime | None = None, batch: int = SCHEDULE_BATCH, seconds: float = 5.0
) -> int:
    """Give the payments written without a schedule (by the release before it, which knows
    nothing of it) the next step counted from their last change, the steps already past
    skipped; a settled one, or one past its last step, gets an empty schedule. In batches of
    `batch`, newest first, each its own short transaction, until a batch ends past `seconds`:
    idempotent, and resumed by the next run where this one stopped. How many were scheduled."""
    moment = now or timezone.now()
    started, done = time.monotonic(), 0
    while True:
        with transaction.atomic():
            payments = list(
                Payment.objects.filter(checks_from__isnull=True, provider_id__isnull=False)
                .order_by("-updated_at")
                .select_for_update(skip_locked=True)
                .only("pk", "status", "provider_id", "updated_at", *SCHEDULE_FIELDS)[:batch]
            )
            for payment in payments:
                _from_last_change(payment, now=moment)
            Payment.objects.bulk_update(payments, SCHEDULE_FIELDS)
        done += len(payments)
        if len(payments) < batch or time.monotonic() - started >= seconds:
            return done


def _from_last_change(payment: Payment, *, now: datetime) -> None:
    steps = offsets(payment.status)
    since = payment.updated_at
    done = next((i for i, step in enumerate(steps) if since + step > now), len(steps))
    _set(payment, since=since, done=done)


# A due payment is handed to one check task at a time: its next check moved past the task's lease.


def payments_lease_checks(payment_ids: list[int], *, now: datetime, until: datetime) -> list[int]:
    """Of these payments, those still due at `now`, their next check moved to `until` (two runs
    never hand out the same payment); their ids, the longest due first."""
    if not payment_ids:
        return []
    with transaction.atomic():
        due = list(
            Payment.objects.select_for_update(skip_locked=True)
            .filter(pk__in=payment_ids, next_check_at__lte=now)
            .order_by("next_check_at", "pk")
            .values_list("pk", flat=True)
        )
        Payment.objects.filter(pk__in=due).update(next_check_at=until)
    return due


# --- Read budget --------------------------------------------------------------------------
# The provider read budget: how many payment reads a minute the shop allows itself in all
# (`PAYMENTS_PROVIDER_READS_PER_MINUTE`), so that what it reads in the background stays well under
# the provider's rate limit however long the shop's history grows.
#
# Every read of a payment is counted, in the cache, per minute. The reads a notification, a staff
# member or a shopper's page ask for are never held back (they are what the shop is doing now); the
# schedule (the reconciliation, the expired authorizations: `payments.rereading.calls`) takes only
# what they left of this minute, and waits for the next minute otherwise. With the cache away the
# count is unknown: the schedule then allows itself half the budget, so that together with the
# reads it cannot see it stays under it.


# The reads of the provider made in each minute of the clock.
READS = WindowCounter("payments:provider-reads", seconds=60, keep=180)


def read_budget_spend(reads: int = 1) -> None:
    """Count `reads` reads of the provider made now (best effort)."""
    try:
        READS.add(reads)
    except Exception as exc:  # the cache is away: the schedule plays safe (reads_left)
        logger.debug("provider reads not counted: %s", exc)


def spent_this_minute() -> int | None:
    """The reads counted this minute; None if the cache cannot say."""
    try:
        return READS.count()
    except Exception:
        return None


def reads_left() -> int:
    """How many reads the schedule may make now, within this minute's budget."""
    budget = settings.PAYMENTS_PROVIDER_READS_PER_MINUTE
    spent = spent_this_minute()
    if spent is None:
        return budget // 2
    return max(budget - spent, 0)
