"""Staff actions on payments, the rules (no call to the provider here): what an action needs of the
payment, checked before anything is queued or sent, and the claim it takes on the payment so
that exactly one of several actions asked at once proceeds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from payments.models import Payment, PaymentIntent, Subscription, SubscriptionStatus
from payments.provider.errors import PaymentInProgress, PaymentNotAllowed
from payments.records import check_amount
from payments.statuses import PaymentStatus
from staff_actions.models import OPEN_ACTION_STATES, StaffAction
from staff_actions.rules import Asked

# --- Guards -------------------------------------------------------------------------------
# What a staff action on a payment needs of it, checked before anything is queued or sent (and
# again by a call made with no earlier claim): its status, and an amount within what it allows.


def _status(payment: Payment) -> str:
    return str(payment.get_status_display()).lower()


def check_capture(payment: Payment, amount: Decimal | None = None) -> Decimal:
    """An authorization, captured for at most its amount (all of it when None)."""
    if not payment.can_capture():
        raise PaymentNotAllowed(
            _("Only an authorized payment can be captured; this one is %(status)s.")
            % {"status": _status(payment)}
        )
    return check_amount(payment.amount if amount is None else amount, maximum=payment.amount)


def check_cancel(payment: Payment) -> None:
    """An authorization (nothing charged yet)."""
    if not payment.can_cancel():
        raise PaymentNotAllowed(
            _("Only an authorized payment can be cancelled; this one is %(status)s.")
            % {"status": _status(payment)}
        )


def check_refund(payment: Payment, amount: Decimal | None = None) -> Decimal:
    """A charge with money left to refund, refunded for at most what is left (all when None)."""
    if not payment.can_refund():
        raise PaymentNotAllowed(
            _(
                "Only a charged payment with money left to refund can be refunded; this one is "
                "%(status)s."
            )
            % {"status": _status(payment)}
        )
    left = payment.refundable_amount
    return check_amount(left if amount is None else amount, maximum=left)


# --- Claims -------------------------------------------------------------------------------
# A staff action's claim on a payment (its `intent`), taken with a compare-and-set update before
# the provider is called, so that exactly one of several simultaneous actions proceeds, and
# released once the answer is applied. No row lock is held while the provider is called; a claim
# older than `INTENT_TIMEOUT` (its worker died) may be taken over, unless a staff action that holds
# it is still open (queued or running): that action's task, run again by its redelivery or by the
# sweep, finishes it with the same idempotency key and releases the claim.


INTENT_TIMEOUT = timedelta(minutes=5)


def claim_payment(payment: Payment, intent: str, allowed_status: str) -> None:
    """Compare-and-set the intent: exactly one of several simultaneous actions proceeds."""
    now = timezone.now()
    open_action = StaffAction.objects.filter(payment=OuterRef("pk"), state__in=OPEN_ACTION_STATES)
    stale = Q(intent_started_at__lt=now - INTENT_TIMEOUT) & ~Exists(open_action)
    claimed = Payment.objects.filter(
        Q(intent="") | stale,
        pk=payment.pk,
        status=allowed_status,
    ).update(intent=intent, intent_started_at=now)
    if not claimed:
        payment.refresh_from_db()
        if payment.intent:
            raise PaymentInProgress(
                _(
                    "Another action (%(action)s) is already running on this payment. Refresh "
                    "the page in a moment."
                )
                % {"action": str(payment.get_intent_display()).lower()}
            )
        raise PaymentNotAllowed(
            _("The payment is now %(status)s.")
            % {"status": str(payment.get_status_display()).lower()}
        )


def release_claim(payment: Payment) -> None:
    """Let the next action on the payment proceed."""
    Payment.objects.filter(pk=payment.pk).update(intent="", intent_started_at=None)
    payment.intent = ""
    payment.intent_started_at = None


# --- What each action asks ------------------------------------------------------------------
# Once its form is valid: the action's parameters, and the claim it takes on the payment as it
# is recorded (`staff_actions.rules.staff_action_request`).


def claim(payment: Payment, intent: str, allowed_status: str) -> Callable[[], None]:
    return lambda: claim_payment(payment, intent, allowed_status)


def release_claimed(action: StaffAction) -> None:
    """Let the next action on the action's payment proceed (its run is done)."""
    if action.payment is not None:
        release_claim(action.payment)


def capture_asked(payment: Payment, amount: Decimal | None, *, listed: bool = False) -> Asked:
    payment.refresh_from_db()
    checked = check_capture(payment, amount)
    return Asked(
        params={"amount": None if listed else str(checked), "listed": listed},
        payment=payment,
        claim=claim(payment, PaymentIntent.CAPTURE, PaymentStatus.AUTHORIZED),
    )


def cancel_asked(payment: Payment, *, listed: bool = False) -> Asked:
    payment.refresh_from_db()
    check_cancel(payment)
    return Asked(
        params={"listed": listed},
        payment=payment,
        claim=claim(payment, PaymentIntent.CANCEL, PaymentStatus.AUTHORIZED),
    )


def refund_asked(payment: Payment, amount: Decimal, reason: str) -> Asked:
    payment.refresh_from_db()
    checked = check_refund(payment, amount)
    return Asked(
        params={"amount": str(checked), "reason": reason},
        payment=payment,
        claim=claim(payment, PaymentIntent.REFUND, PaymentStatus.APPROVED),
    )


def refresh_asked(payment: Payment, *, listed: bool = False) -> Asked:
    if not payment.provider_id:
        raise PaymentNotAllowed(
            _(
                "This payment has no provider id yet; it is reconciled when the provider "
                "notifies it."
            )
        )
    return Asked(params={"listed": listed}, payment=payment)


def subscription_cancel_asked(subscription: Subscription) -> Asked:
    if subscription.status == SubscriptionStatus.INACTIVE:
        raise PaymentNotAllowed(_("This subscription is already inactive."))
    return Asked()
