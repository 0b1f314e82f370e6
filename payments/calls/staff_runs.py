"""What each of the payments admin's actions does when its task runs (`payments.staff`): the
call to the provider with the action's idempotency key, and what staff read afterwards."""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext as _

from payments.calls.refresh import payment_refresh
from payments.calls.staff_actions import payment_cancel, payment_capture, payment_refund
from payments.calls.subscriptions import subscription_cancel, subscription_sync
from payments.models import Payment, StaffAction, Subscription
from payments.pesos import pesos
from payments.staff.kinds import Outcome, done_message


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
