"""The kinds of staff action on payments and subscriptions (registered by `PaymentsConfig.ready`):
what each is called and what its run does when the staff actions' task runs it: the call with
the action's idempotency key (`payments.actions.calls`, `subscription_calls`, the rereading's
refresh), and what staff read afterwards."""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.money import pesos
from payments.actions.calls import payment_cancel, payment_capture, payment_refund
from payments.actions.rules import release_claimed
from payments.actions.subscription_calls import subscription_cancel, subscription_sync
from payments.models import Payment, Subscription
from payments.rereading.calls import payment_refresh
from payments.words import done_message
from staff_actions.kinds import ActionKind, Outcome
from staff_actions.models import StaffAction


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
