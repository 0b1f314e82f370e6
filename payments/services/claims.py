"""A staff action's claim on a payment (its `intent`), taken with a compare-and-set update before
the provider is called, so that exactly one of several simultaneous actions proceeds, and
released once the answer is applied. No row lock is held while the provider is called; a claim
older than `INTENT_TIMEOUT` (its worker died) may be taken over, unless a staff action that holds
it is still open (queued or running): that action's task, run again by its redelivery or by the
sweep, finishes it with the same idempotency key and releases the claim."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from payments.errors import PaymentInProgress, PaymentNotAllowed
from payments.models import OPEN_ACTION_STATES, Payment, StaffAction

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
