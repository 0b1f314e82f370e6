"""Capturing, cancelling and refunding a payment at the provider, from tasks only: a staff
action's run (`payments.actions.kinds`, checkout's order actions) or checkout's release of a
second charge.

Each is checked against the payment's status, claims the payment (payments/actions/rules.py),
makes its provider call with no lock held, and applies the answer in a short transaction; a
failure is recorded in the ledger and raised as the shop's error, with the payment refreshed
when the answer was lost. A 429 is neither: the shop's `ProviderThrottled`, for the task to try
again after the wait asked for.

A staff action asked from the admin has claimed its payment already, in the request
(`claimed=True`), and passes the idempotency key recorded with it: a re-run of its task (a
worker killed, a redelivery) sends the same request again, which the provider answers as the
first time, and what was applied once is not applied again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from typing import TypeVar

from django.db import transaction

from core.ledger import Actor
from payments.actions.rules import (
    check_cancel,
    check_capture,
    check_refund,
    claim_payment,
    release_claim,
)
from payments.models import Payment, PaymentEventKind, PaymentIntent, Refund
from payments.provider.client import get_client, new_idempotency_key
from payments.provider.errors import (
    Conflict,
    OutcomeUnknown,
    PaymentError,
    PaymentRefused,
    ProviderApiError,
    ProviderDown,
    ProviderUnavailable,
    Throttled,
)
from payments.provider.types import ProviderPayment
from payments.records import acting_user, record_event
from payments.rereading.calls import payment_refresh, read_payment
from payments.snapshots import IllegalTransition, apply_in_transaction, apply_snapshot
from payments.statuses import PaymentStatus
from payments.words import (
    ACTION_FAILED,
    ACTION_NOT_CONFIRMED,
    ACTION_NOT_SENT,
    ACTION_THROTTLED,
    REFUND,
    REFUND_UNREAD,
    refusal_message,
    shop_throttled,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _action_failed(
    payment: Payment, error: ProviderApiError, *, actor: Actor, action: str
) -> PaymentError:
    """Record a failed staff action and the domain error to show; learn the truth if unknown."""
    kind = (
        PaymentEventKind.OUTCOME_UNKNOWN
        if isinstance(error, OutcomeUnknown)
        else (PaymentEventKind.FAILED)
    )
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        record_event(
            locked,
            kind,
            actor=actor,
            old=locked.status,
            new=locked.status,
            message=ACTION_FAILED(action=action, error=error.message),
            error_code=error.error_code,
        )
        locked.last_error = f"{action}: {error}"[:500]
        locked.save(update_fields=["last_error", "updated_at"])
        release_claim(locked)
    payment.refresh_from_db()
    if isinstance(error, OutcomeUnknown):
        try:
            payment_refresh(payment=payment, actor=actor)
        except PaymentError:
            pass
        return ProviderDown(str(ACTION_NOT_CONFIRMED[action]))
    if isinstance(error, Conflict):
        # The payment moved at the provider (e.g. captured elsewhere): bring it up to date.
        try:
            payment_refresh(payment=payment, actor=actor)
        except PaymentError:
            pass
        return PaymentRefused(f"{refusal_message(error)} The payment was refreshed.")
    if isinstance(error, ProviderUnavailable):
        return ProviderDown(str(ACTION_NOT_SENT[action]))
    return PaymentRefused(refusal_message(error))


def _claimed_call(
    payment: Payment,
    call: Callable[[], T],
    *,
    intent: str,
    status: str,
    action: str,
    actor: Actor,
    claimed: bool,
) -> T:
    """Claim the payment for a staff action (unless it was claimed when asked) and make its
    provider call; a failure is recorded in the ledger, the claim released, and raised as the
    shop's error."""
    if not claimed:
        claim_payment(payment, intent, status)
    try:
        return call()
    except Throttled as exc:
        # Not done, not refused: the action's task tries again after the wait asked for, with
        # its key (staff_actions.calls); the claim taken when it was asked stays meanwhile.
        if not claimed:
            release_claim(payment)
        raise shop_throttled(exc, str(ACTION_THROTTLED[action])) from exc
    except ProviderApiError as exc:
        raise _action_failed(payment, exc, actor=actor, action=action) from exc


def payment_capture(
    *,
    payment: Payment,
    amount: Decimal | None = None,
    actor: Actor = None,
    idempotency_key: str = "",
    claimed: bool = False,
) -> Payment:
    """Capture an authorization, in full or in part (0 < amount <= authorized amount)."""
    payment.refresh_from_db()
    if claimed:
        amount = payment.amount if amount is None else amount
    else:
        amount = check_capture(payment, amount)
    key = idempotency_key or new_idempotency_key()
    remote = _claimed_call(
        payment,
        lambda: get_client().capture_payment(
            payment.provider_id or "", amount=amount, idempotency_key=key
        ),
        intent=PaymentIntent.CAPTURE,
        status=PaymentStatus.AUTHORIZED,
        action="capture",
        actor=actor,
        claimed=claimed,
    )
    return apply_in_transaction(
        payment.pk,
        remote,
        kind=PaymentEventKind.CAPTURED,
        actor=actor,
        amount=amount,
        release_intent=True,
    )


def payment_cancel(
    *,
    payment: Payment,
    actor: Actor = None,
    idempotency_key: str = "",
    claimed: bool = False,
) -> Payment:
    """Cancel an authorization: the hold is released and nothing is charged."""
    payment.refresh_from_db()
    if not claimed:
        check_cancel(payment)
    key = idempotency_key or new_idempotency_key()
    remote = _claimed_call(
        payment,
        lambda: get_client().cancel_payment(payment.provider_id or "", idempotency_key=key),
        intent=PaymentIntent.CANCEL,
        status=PaymentStatus.AUTHORIZED,
        action="cancellation",
        actor=actor,
        claimed=claimed,
    )
    return apply_in_transaction(
        payment.pk, remote, kind=PaymentEventKind.CANCELLED, actor=actor, release_intent=True
    )


def payment_refund(
    *,
    payment: Payment,
    amount: Decimal | None = None,
    reason: str = "",
    actor: Actor = None,
    idempotency_key: str = "",
    claimed: bool = False,
) -> Refund:
    """Refund a charge, in full or in part (0 < amount <= what is left to refund)."""
    payment.refresh_from_db()
    if claimed:
        amount = payment.refundable_amount if amount is None else amount
    else:
        amount = check_refund(payment, amount)
    key = idempotency_key or new_idempotency_key()
    remote_refund = _claimed_call(
        payment,
        lambda: get_client().refund(
            payment.provider_id or "", amount=amount, reason=reason[:255], idempotency_key=key
        ),
        intent=PaymentIntent.REFUND,
        status=PaymentStatus.APPROVED,
        action="refund",
        actor=actor,
        claimed=claimed,
    )
    # The same key answers with the same refund: a re-run records it once.
    refund, created = Refund.objects.get_or_create(
        provider_id=remote_refund.id,
        defaults={
            "payment": payment,
            "amount": remote_refund.amount,
            "status": remote_refund.status,
            "reason": reason[:255],
            "actor": acting_user(actor),
        },
    )
    recorded = payment.events.filter(
        kind=PaymentEventKind.REFUNDED, created_at__gte=refund.created_at
    ).exists()
    _refund_settle(payment, refund, actor=actor, record=created or not recorded)
    payment.refresh_from_db()
    return refund


def _refund_settle(payment: Payment, refund: Refund, *, actor: Actor, record: bool = True) -> None:
    """After a refund: read the payment's new amounts, record the refund once in the ledger
    (unless `record` is False: a re-run recorded it already), release the claim. If the read
    fails, the refund is recorded and the amounts arrive with the payment's next refresh."""
    try:
        remote: ProviderPayment | None = read_payment(payment.provider_id or "")
        message = REFUND(refund=refund.provider_id)
    except ProviderApiError as exc:
        remote = None
        message = REFUND_UNREAD(refund=refund.provider_id, error=exc.message)
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        old = locked.status
        recorded = False
        if remote is not None:
            try:
                recorded = apply_snapshot(
                    locked,
                    remote,
                    kind=PaymentEventKind.REFUNDED,
                    actor=actor,
                    amount=refund.amount,
                )
            except IllegalTransition as exc:
                logger.error("payment %s after refund: %s", payment.pk, exc)
        if record and not recorded:
            record_event(
                locked,
                PaymentEventKind.REFUNDED,
                actor=actor,
                old=old,
                new=locked.status,
                amount=refund.amount,
                message=message,
            )
        release_claim(locked)
