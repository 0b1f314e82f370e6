"""Reading payments again, the calls to the provider (from tasks only): reading one payment, and
the reconciliation that brings local payments in line with the provider when the shopper's page
and the notifications are not enough."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from core.ledger import Actor
from core.task_queue import send_now
from payments.metrics import reconciliation_corrected
from payments.models import CaptureMethod, Payment, PaymentEventKind
from payments.provider.client import get_client
from payments.provider.errors import (
    NotFound,
    PaymentError,
    PaymentInProgress,
    PaymentNotAllowed,
    PaymentRefused,
    ProviderDown,
)
from payments.provider.types import ProviderPayment
from payments.rereading.rules import (
    SCHEDULE_FIELDS,
    payments_lease_checks,
    read_budget_spend,
    read_schedule_advance,
    reads_left,
)
from payments.rereading.selectors import (
    SYNC_COMPARED,
    payment_held,
    payments_due_for_check,
    payments_unresolved,
)
from payments.snapshots import apply_in_transaction, payment_apply
from payments.statuses import IN_FLIGHT
from payments.task_names import CHECK_TASK
from payments.words import provider_errors

# --- Refresh ------------------------------------------------------------------------------
# Reading one payment from the provider again.


def read_payment(provider_id: str, *, counted: bool = True) -> ProviderPayment:
    """One read of the payment at the provider, counted in the read budget unless it was
    reserved there already (its errors are the client's: wrap it in `provider_errors()` for the
    shop's messages)."""
    if counted:
        read_budget_spend()
    return get_client().get_payment(provider_id)


def payment_refresh(*, payment: Payment, actor: Actor = None, scheduled: bool = False) -> Payment:
    """Fetch the payment from the provider and apply it if it is not older than what we hold.
    `scheduled`: a read of its schedule (payments.rereading.rules), which moves on to the next
    step when it finds nothing new (its read was counted when it was handed out); any other read
    starts the schedule again."""
    if not payment.provider_id:
        raise PaymentNotAllowed(
            _(
                "This payment has no provider id yet; it is reconciled when the provider "
                "notifies it."
            )
        )
    with provider_errors():
        remote = read_payment(payment.provider_id, counted=not scheduled)
    return apply_in_transaction(
        payment.pk, remote, kind=PaymentEventKind.SYNCED, actor=actor, scheduled=scheduled
    )


# --- Reconciliation -----------------------------------------------------------------------
# Bringing local payments in line with the provider when the shopper's page is not enough:
# by provider id (what a notification names), and on a schedule for payments whose
# notifications never came.
#
# A notification is a hint, never proof: these services always read the payment from the provider
# and apply it monotonically through `payment_apply`.


logger = logging.getLogger(__name__)


class SyncOutcome(StrEnum):
    UPDATED = "updated"  # a payment we hold, and it changed
    UNCHANGED = "unchanged"  # a payment we hold, already up to date
    ADOPTED = "adopted"  # unknown here, but its external_reference is one of ours
    UNMATCHED = "unmatched"  # the provider's payment belongs to no order of ours
    NOT_FOUND = "not_found"  # the provider has no payment with this id


@dataclass(frozen=True)
class SyncResult:
    outcome: SyncOutcome
    payment: Payment | None = None
    note: str = ""


def _fetch(provider_id: str) -> ProviderPayment | None:
    with provider_errors():
        try:
            return read_payment(provider_id)
        except NotFound:
            return None


def _amounts(payment: Payment) -> tuple[object, ...]:
    return tuple(getattr(payment, field) for field in SYNC_COMPARED)


def payment_sync(*, provider_id: str, known: Payment | None = None) -> SyncResult:
    """Read one payment from the provider by its id and bring the shop in line with it: apply it
    to the payment we hold, adopt it if it is ours but unknown here, or report it unmatched.
    `known`: the payment held under this id as the caller has just read it (`payment_held`);
    read here otherwise."""
    remote = _fetch(provider_id)
    local = known if known is not None else payment_held(provider_id)
    if remote is None:
        if local is not None:
            raise PaymentRefused(f"The provider no longer finds payment {provider_id}.")
        return SyncResult(SyncOutcome.NOT_FOUND, note="the provider has no payment with this id")
    if local is None:
        return payment_adopt(remote=remote)
    return _apply_held(local, remote)


def _reference_is_ours(reference: str) -> bool:
    if not reference:
        return False
    if Payment.objects.filter(external_reference=reference).exists():
        return True
    return bool(import_string(settings.PAYMENTS_REFERENCE_OWNER_FUNCTION)(reference))


def _apply_held(held: Payment, remote: ProviderPayment) -> SyncResult:
    before = _amounts(held)
    held = payment_apply(payment=held, remote=remote)
    return SyncResult(
        SyncOutcome.UPDATED if _amounts(held) != before else SyncOutcome.UNCHANGED, held
    )


def payment_adopt(*, remote: ProviderPayment) -> SyncResult:
    """Attach a provider payment the shop holds no id for. If an attempt for its reference is
    still unconfirmed (its create's answer was lost, or has not come back yet), that attempt is
    it; otherwise, if the reference is one of ours, a local record is made for it. If the
    shopper's own request records the payment's id meanwhile (its answer arrived while this
    ran), that record is the payment: it is applied there, once."""
    try:
        return _adopt(remote)
    except IntegrityError as exc:
        held = payment_held(remote.id)
        if held is None:
            raise PaymentInProgress(
                f"another payment attempt for {remote.external_reference} is running"
            ) from exc
        return _apply_held(held, remote)


def _adopt(remote: ProviderPayment) -> SyncResult:
    reference = remote.external_reference
    with transaction.atomic():
        held = payment_held(remote.id)
        if held is not None:  # the create's own answer got here first
            return _apply_held(held, remote)
        attempt = (
            Payment.objects.select_for_update()
            .filter(external_reference=reference, provider_id__isnull=True, status__in=IN_FLIGHT)
            .first()
            if reference
            else None
        )
        if attempt is None:
            if not _reference_is_ours(reference):
                return SyncResult(
                    SyncOutcome.UNMATCHED,
                    note=f"reference {reference or '(none)'!r} matches no order of this shop",
                )
            customer = remote.raw.get("customer") if isinstance(remote.raw, dict) else None
            email = str((customer or {}).get("email") or "")[:254]
            try:
                with transaction.atomic():
                    attempt = Payment.objects.create(
                        external_reference=reference,
                        idempotency_key=f"adopted-{remote.id}"[:64],
                        capture_method=remote.capture_method
                        if remote.capture_method in CaptureMethod.values
                        else CaptureMethod.AUTOMATIC,
                        amount=remote.amount,
                        currency=remote.currency or "MXN",
                        description=remote.description[:255],
                        customer_email=email if "@" in email else "",
                    )
            except IntegrityError as exc:
                # Another attempt for the order started this instant: try again shortly.
                raise PaymentInProgress(
                    f"another payment attempt for {reference} is running"
                ) from exc
        payment = payment_apply(payment=attempt, remote=remote, kind=PaymentEventKind.ADOPTED)
    logger.warning(
        "payment %s adopted for reference %s from a notification (%s)",
        payment.pk,
        reference,
        payment.status,
    )
    return SyncResult(SyncOutcome.ADOPTED, payment)


# --- On a schedule -----------------------------------------------------------------------------


# A due payment handed to a check task is not handed out again for this long: if that task is
# lost (a worker killed, the broker down), the payment is due again once it is over.
CHECK_LEASE = timedelta(minutes=10)


@dataclass
class ReconcileReport:
    queued: int = 0  # payments handed to check tasks
    unresolved: int = 0
    left_for_later: bool = False  # more were due than this minute's read budget allows


@dataclass
class CheckReport:
    checked: int = 0
    changed: int = 0
    failed: int = 0
    stopped_early: bool = False  # the provider is down: the rest wait for their lease to end


def payments_reconcile(
    *, limit: int | None = None, now: datetime | None = None, per_task: int | None = None
) -> ReconcileReport:
    """Hand the payments whose scheduled read is due (payments.rereading.rules: a handful of reads
    in a payment's life, decaying with the time since its last change) to check tasks of
    `per_task` payments (PAYMENTS_CHECKS_PER_TASK), which the provider-reads workers run side by
    side: as many as this minute's read budget leaves (`limit` instead, when given), reserved in
    the budget now. The creates whose outcome is unknown are sent again by their own task and
    its sweep."""
    now = now or timezone.now()
    per_task = per_task or settings.PAYMENTS_CHECKS_PER_TASK
    report = ReconcileReport(unresolved=payments_unresolved(now=now))
    if report.unresolved:
        # Nothing to read them by until the provider's INSERT notification names them.
        logger.warning(
            "%d payment attempt(s) have an unknown outcome and no provider id yet",
            report.unresolved,
        )
    allowance = reads_left() if limit is None else limit
    due = [payment.pk for payment in payments_due_for_check(now=now, limit=allowance + 1)]
    report.left_for_later = len(due) > allowance
    claimed = payments_lease_checks(due[:allowance], now=now, until=now + CHECK_LEASE)
    read_budget_spend(len(claimed))
    for start in range(0, len(claimed), per_task):
        chunk = claimed[start : start + per_task]
        _send_check(chunk)  # their lease is committed: a lost task only delays them
    report.queued = len(claimed)
    if claimed:
        logger.info(
            "reconciliation: %d payment(s) to read%s",
            report.queued,
            " (more due: left for the next run)" if report.left_for_later else "",
        )
    return report


def _send_check(payment_ids: list[int]) -> None:
    try:
        send_now(CHECK_TASK, (payment_ids,))
    except Exception as exc:  # their lease ends and the next runs hand them out again
        logger.warning("check of %d payment(s) not queued: %s", len(payment_ids), exc)


def payments_check(payment_ids: list[int]) -> CheckReport:
    """Read these payments (handed out by `payments_reconcile`, their reads already counted),
    one after the other. Stops at the first sign that the provider is down, so a schedule never
    hammers it: the others are read once their lease is over."""
    report = CheckReport()
    found = Payment.objects.in_bulk(payment_ids)
    # In the order they were handed out: the longest overdue first.
    for payment in (found[pk] for pk in payment_ids if pk in found):
        before = _amounts(payment)
        report.checked += 1
        try:
            refreshed = payment_refresh(payment=payment, scheduled=True)
        except ProviderDown:
            report.stopped_early = True
            logger.warning("reconciliation stopped: the payment service is not reachable")
            break
        except PaymentError as exc:
            report.failed += 1
            _postpone(payment, timezone.now())
            logger.warning("reconciliation of payment %s failed: %s", payment.pk, exc.message)
            continue
        if _amounts(refreshed) != before:
            report.changed += 1
            reconciliation_corrected()
    if report.checked:
        logger.info(
            "reconciliation: %d checked, %d changed, %d failed",
            report.checked,
            report.changed,
            report.failed,
        )
    return report


def _postpone(payment: Payment, now: datetime) -> None:
    """A scheduled read the provider refused (not found, an anomaly): the schedule moves on
    rather than asking again every run."""
    read_schedule_advance(payment, now=now)
    Payment.objects.filter(pk=payment.pk).update(
        **{field: getattr(payment, field) for field in SCHEDULE_FIELDS}
    )
