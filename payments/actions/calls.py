"""Staff actions on payments, the calls to the provider (from the staff actions' task only):
capture, cancel and refund, and what each action of the payments admin does when its task runs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from typing import TypeVar

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.money import pesos
from payments.actions.rules import (
    check_cancel,
    check_capture,
    check_refund,
    claim_payment,
    release_claim,
    release_claimed,
)
from payments.actions.subscription_calls import subscription_cancel, subscription_sync
from payments.models import Payment, PaymentEventKind, PaymentIntent, Refund, Subscription
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
from payments.records import Actor, acting_user, record_event
from payments.rereading.calls import payment_refresh, read_payment
from payments.snapshots import IllegalTransition, apply_in_transaction, apply_snapshot
from payments.statuses import PaymentStatus
from payments.words import (
    ACTION_FAILED,
    REFUND,
    REFUND_UNREAD,
    done_message,
    refusal_message,
    shop_throttled,
)
from staff_actions.kinds import ActionKind, Outcome
from staff_actions.models import StaffAction

# --- Staff actions ------------------------------------------------------------------------
# Staff actions on a payment: capture, cancel and refund. Each is checked against the payment's
# status, claims the payment (payments/actions/rules.py), makes its provider call with no lock
# held, and applies the answer in a short transaction; a failure is recorded in the ledger and
# raised as the shop's error, with the payment refreshed when the answer was lost.
#
# A staff action asked from the admin has claimed its payment already, in the request
# (`claimed=True`), and passes the idempotency key recorded with it: a re-run of its task (a
# worker killed, a redelivery) sends the same request again, which the provider answers as the
# first time, and what was applied once is not applied again.


logger = logging.getLogger(__name__)
T = TypeVar("T")


# What staff read when an action's answer is lost (it may have been done: the payment is read
# again), or when the provider could not be reached at all (then it was not).
NOT_CONFIRMED = {
    "capture": gettext_lazy(
        "The payment service did not confirm the capture. The payment was refreshed; check its "
        "status before trying again."
    ),
    "cancellation": gettext_lazy(
        "The payment service did not confirm the cancellation. The payment was refreshed; "
        "check its status before trying again."
    ),
    "refund": gettext_lazy(
        "The payment service did not confirm the refund. The payment was refreshed; check its "
        "status before trying again."
    ),
}
THROTTLED_ACTION = {
    "capture": gettext_lazy(
        "The payment service asked the shop to slow down; the capture is sent again in a moment."
    ),
    "cancellation": gettext_lazy(
        "The payment service asked the shop to slow down; the cancellation is sent again in a "
        "moment."
    ),
    "refund": gettext_lazy(
        "The payment service asked the shop to slow down; the refund is sent again in a moment."
    ),
}
NOT_SENT = {
    "capture": gettext_lazy("The payment service is not reachable; the capture was not made."),
    "cancellation": gettext_lazy(
        "The payment service is not reachable; the cancellation was not made."
    ),
    "refund": gettext_lazy("The payment service is not reachable; the refund was not made."),
}


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
        return ProviderDown(str(NOT_CONFIRMED[action]))
    if isinstance(error, Conflict):
        # The payment moved at the provider (e.g. captured elsewhere): bring it up to date.
        try:
            payment_refresh(payment=payment, actor=actor)
        except PaymentError:
            pass
        return PaymentRefused(f"{refusal_message(error)} The payment was refreshed.")
    if isinstance(error, ProviderUnavailable):
        return ProviderDown(str(NOT_SENT[action]))
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
        raise shop_throttled(exc, str(THROTTLED_ACTION[action])) from exc
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


# --- Staff runs ---------------------------------------------------------------------------
# What each of the payments admin's actions does when its task runs (`payments.staff`): the
# call to the provider with the action's idempotency key, and what staff read afterwards.


def _payment(action: StaffAction) -> Payment:
    assert action.payment is not None, action
    return action.payment


def _amount(action: StaffAction) -> Decimal | None:
    amount = action.params.get("amount")
    return None if amount in (None, "") else Decimal(str(amount))


def capture_run(action: StaffAction) -> Outcome:
    payment, amount = _payment(action), _amount(action)
    payment_capture(
        payment=payment,
        amount=amount,
        actor=action.actor,
        idempotency_key=action.idempotency_key,
        claimed=True,
    )
    if action.params.get("listed"):
        return Outcome(
            done_message(action.reference, "captured"), log="captured from the payment list"
        )
    captured = amount if amount is not None else payment.amount
    return Outcome(
        done_message(action.reference, "captured", captured), log=f"captured {pesos(captured)}"
    )


def cancel_run(action: StaffAction) -> Outcome:
    payment_cancel(
        payment=_payment(action),
        actor=action.actor,
        idempotency_key=action.idempotency_key,
        claimed=True,
    )
    verb = "cancelled" if action.params.get("listed") else "cancelled the authorization"
    log = "cancelled from the payment list" if action.params.get("listed") else verb
    return Outcome(done_message(action.reference, verb), log=log)


def refund_run(action: StaffAction) -> Outcome:
    refund = payment_refund(
        payment=_payment(action),
        amount=_amount(action),
        reason=str(action.params.get("reason", "")),
        actor=action.actor,
        idempotency_key=action.idempotency_key,
        claimed=True,
    )
    return Outcome(
        done_message(action.reference, "refunded", refund.amount),
        log=f"refunded {pesos(refund.amount)}",
    )


def refresh_run(action: StaffAction) -> Outcome:
    payment_refresh(payment=_payment(action), actor=action.actor)
    if action.params.get("listed"):
        return Outcome(
            done_message(action.reference, "refreshed"), log="refreshed from the payment list"
        )
    verb = "refreshed from the provider"
    return Outcome(done_message(action.reference, verb), log=verb)


def subscription_cancel_run(action: StaffAction) -> Outcome:
    subscription = Subscription.objects.get(pk=action.target_id)
    subscription_cancel(
        subscription=subscription, actor=action.actor, idempotency_key=action.idempotency_key
    )
    return Outcome(
        _("%(subscription)s: cancelled.") % {"subscription": subscription.provider_id},
        log="cancelled at the provider",
    )


def subscription_import_run(action: StaffAction) -> Outcome:
    subscription = subscription_sync(provider_id=str(action.params["provider_id"]))
    return Outcome(
        _("Imported %(subscription)s.") % {"subscription": subscription},
        log="imported from the provider",
        logged=subscription,
        added=True,
    )


# What each kind of action on payments is called and what runs it (`PaymentsConfig.ready`).
KINDS = (
    ActionKind("payments.capture", gettext_lazy("capture"), capture_run, release=release_claimed),
    ActionKind(
        "payments.cancel", gettext_lazy("cancellation"), cancel_run, release=release_claimed
    ),
    ActionKind("payments.refund", gettext_lazy("refund"), refund_run, release=release_claimed),
    ActionKind(
        "payments.refresh",
        gettext_lazy("refresh"),
        refresh_run,
        reads=True,
        release=release_claimed,
    ),
    ActionKind(
        "payments.subscription_cancel",
        gettext_lazy("subscription cancellation"),
        subscription_cancel_run,
    ),
    ActionKind(
        "payments.subscription_import",
        gettext_lazy("subscription import"),
        subscription_import_run,
        reads=True,
    ),
)
