"""Business rules of payments: keyword-only, typed, one transaction each.

No database lock is ever held over an HTTP call: actions claim an intent on the payment with a
compare-and-set update, call the provider, then apply the answer in a short transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.debug import sensitive_variables

from payments import ledger
from payments.client import get_client, new_idempotency_key
from payments.errors import (
    Conflict,
    InvalidAmount,
    OutcomeUnknown,
    PaymentAttemptBlocked,
    PaymentError,
    PaymentInProgress,
    PaymentNotAllowed,
    PaymentOutcomeUnknown,
    PaymentRefused,
    ProviderApiError,
    ProviderDown,
    ProviderUnavailable,
)
from payments.messages import provider_errors, refusal_message
from payments.models import (
    AUTHORIZATION_VALIDITY,
    IN_FLIGHT,
    REACHABLE,
    CaptureMethod,
    Payment,
    PaymentEvent,
    PaymentEventKind,
    PaymentIntent,
    PaymentStatus,
    Refund,
    Subscription,
    SubscriptionStatus,
)
from payments.pesos import pesos
from payments.sealed import seal
from payments.signals import payment_status_changed
from payments.statuses import RANK, UnknownProviderStatus, local_status
from payments.types import CENT, ProviderPayment, ProviderSubscription

logger = logging.getLogger(__name__)
MAX_INSTALLMENTS = 48  # the provider's limit
Actor = AbstractBaseUser | AnonymousUser | None
T = TypeVar("T")
INTENT_TIMEOUT = timedelta(minutes=5)
CONFIRM_TASK = "payments.tasks.payment_confirm_create_task"
FIRST_CONFIRMATION_AFTER = 5  # seconds: the provider may only have been slow


class IllegalTransition(PaymentError):
    """The provider reported a status this payment cannot move to from where it is."""


def _user(actor: Actor) -> Any:
    return actor if actor is not None and getattr(actor, "is_authenticated", False) else None


def _record(
    payment: Payment,
    kind: str,
    *,
    actor: Actor = None,
    old: str = "",
    new: str = "",
    amount: Decimal | None = None,
    message: str = "",
    error_code: str = "",
) -> None:
    PaymentEvent.objects.create(
        payment=payment,
        kind=kind,
        old_status=old,
        new_status=new,
        amount=amount,
        message=message[:500],
        error_code=error_code[:16],
        actor=_user(actor),
    )


def _notify_on_commit(payment: Payment, old: str, new: str) -> None:
    def send() -> None:
        payment_status_changed.send(sender=Payment, payment=payment, old_status=old, new_status=new)

    transaction.on_commit(send)


def check_amount(amount: Decimal, *, maximum: Decimal) -> Decimal:
    """0 < amount <= maximum, with at most two decimals."""
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise InvalidAmount(_("The amount must be a number."))
    if amount != amount.quantize(CENT):
        raise InvalidAmount(_("The amount can have at most two decimals."))
    if amount <= 0:
        raise InvalidAmount(_("The amount must be greater than zero."))
    if amount > maximum:
        raise InvalidAmount(
            _("The amount cannot be more than %(maximum)s.") % {"maximum": pesos(maximum)}
        )
    return amount


# --- Applying provider snapshots -----------------------------------------------------------


def _kept(raw: dict[str, Any]) -> dict[str, Any]:
    """The provider's payment body as stored and shown to staff, without what is secret in it:
    the card token that paid (`payment_method.token`) and the webhook address, whose path is
    the shop's webhook token."""
    kept = {key: value for key, value in raw.items() if key != "webhook_url"}
    method = kept.get("payment_method")
    if isinstance(method, dict):
        kept["payment_method"] = {key: value for key, value in method.items() if key != "token"}
    return kept


def _copy(payment: Payment, remote: ProviderPayment, new: str, now: datetime) -> None:
    """Take the provider's snapshot into the payment (not saved)."""
    payment.provider_id = remote.id
    payment.status = new
    payment.status_code = remote.status_detail.code
    payment.status_message = remote.status_detail.message[:128]
    payment.captured_amount = remote.captured_amount
    payment.refunded_amount = remote.amount_refunded
    if remote.card:
        payment.card_last_digits = remote.card.last_digits[-4:]
    payment.card_brand = remote.payment_method_id or payment.card_brand
    payment.installments = remote.installments
    payment.installment_amount = remote.installment_amount if remote.installments > 1 else None
    payment.three_ds_url = remote.three_ds_url if new == PaymentStatus.PENDING else ""
    payment.provider_version = remote.version
    payment.snapshot = _kept(remote.raw)
    payment.last_synced_at = now
    payment.last_error = ""
    if new == PaymentStatus.AUTHORIZED and payment.authorized_at is None:
        payment.authorized_at = now
        payment.authorization_expires_at = now + AUTHORIZATION_VALIDITY


def _apply(
    payment: Payment,
    remote: ProviderPayment,
    *,
    kind: str,
    actor: Actor = None,
    amount: Decimal | None = None,
) -> bool:
    """Apply a snapshot to a locked payment if it is not older than what is held (version,
    then status order). True when the payment changed. Illegal moves raise."""
    now = timezone.now()
    try:
        new = local_status(remote)
    except UnknownProviderStatus as exc:
        raise IllegalTransition(str(exc)) from exc
    old = payment.status
    held = (payment.provider_version, RANK[old]) if payment.provider_id else (-1, -1)
    if (remote.version, RANK[new]) < held:
        payment.last_synced_at = now
        payment.save(update_fields=["last_synced_at", "updated_at"])
        return False
    if new != old and new not in REACHABLE[old]:
        raise IllegalTransition(ledger.ILLEGAL_MOVE(new=new, old=old))
    amounts_before = (payment.captured_amount, payment.refunded_amount)
    _copy(payment, remote, new, now)
    payment.save()
    status_changed = new != old
    changed = status_changed or (payment.captured_amount, payment.refunded_amount) != amounts_before
    if changed:
        _record(
            payment,
            kind,
            actor=actor,
            old=old,
            new=new,
            amount=amount,
            message=f"{remote.status_detail.code} {remote.status_detail.message}".strip(),
        )
    if changed:  # a partial refund keeps the status but changes the order (partially refunded)
        _notify_on_commit(payment, old, new)
    return changed


def _apply_in_transaction(
    payment_pk: int,
    remote: ProviderPayment,
    *,
    kind: str,
    actor: Actor = None,
    amount: Decimal | None = None,
    release_intent: bool = False,
) -> Payment:
    try:
        with transaction.atomic():
            payment = Payment.objects.select_for_update().get(pk=payment_pk)
            _apply(payment, remote, kind=kind, actor=actor, amount=amount)
            if release_intent:
                _release(payment)
            return payment
    except IllegalTransition as exc:
        with transaction.atomic():
            payment = Payment.objects.select_for_update().get(pk=payment_pk)
            _record(
                payment,
                PaymentEventKind.ANOMALY,
                actor=actor,
                old=payment.status,
                new=remote.status,
                message=str(exc),
            )
            if release_intent:
                _release(payment)
        logger.error("payment %s: %s", payment_pk, exc)
        raise


def payment_apply(
    *,
    payment: Payment,
    remote: ProviderPayment,
    actor: Actor = None,
    kind: str = PaymentEventKind.SYNCED,
) -> Payment:
    """Apply a snapshot fetched elsewhere (e.g. by a webhook task) if it is not older than what
    is held; illegal moves are recorded as anomalies and raise `IllegalTransition`."""
    return _apply_in_transaction(payment.pk, remote, kind=kind, actor=actor)


# --- Create --------------------------------------------------------------------------------


@sensitive_variables("card_token", "body", "webhook_url")
def payment_create(
    *,
    external_reference: str,
    attempt_key: str,
    amount: Decimal,
    currency: str,
    description: str,
    card_token: str,
    capture_method: str,
    customer: dict[str, Any],
    prevention_data: dict[str, str],
    return_url: str,
    webhook_url: str | None = None,
    installments: int = 1,
) -> Payment:
    """Create the payment for one checkout attempt, in `installments` interest-free monthly
    payments when more than 1. The attempt (and its idempotency key) is stored before the
    provider is called, so the same attempt never makes a second payment; an answer that never
    came leaves it `unknown` and blocks new attempts for the order. `webhook_url` None: the
    webhooks app's receiver (PAYMENTS_WEBHOOK_URL_FUNCTION)."""
    _check_attempt(amount, capture_method, installments)
    attempt = Payment(
        external_reference=external_reference,
        idempotency_key=attempt_key,
        capture_method=capture_method,
        amount=amount,
        currency=currency,
        description=description[:255],
        customer_email=customer.get("email", ""),
        installments=installments,
    )
    payment, opened = _attempt_open(attempt)
    if not opened:  # this very attempt, already made (a double click, a retried request)
        return payment
    body = _create_body(
        payment,
        description=description,
        card_token=card_token,
        customer=customer,
        prevention_data=prevention_data,
        addresses={"return_url": return_url, "webhook_url": webhook_url},
    )
    try:
        remote = get_client().create_payment(body=body, idempotency_key=attempt_key)
    except ProviderApiError as exc:
        error = _create_failed(payment, exc, body)
        if error is None:  # the provider's notification named the payment meanwhile
            return payment
        raise error from exc
    return _apply_in_transaction(payment.pk, remote, kind=PaymentEventKind.CREATED)


@sensitive_variables("card_token")
def _create_body(
    payment: Payment,
    *,
    description: str,
    card_token: str,
    customer: dict[str, Any],
    prevention_data: dict[str, str],
    addresses: dict[str, str | None],
) -> dict[str, Any]:
    """The provider's create request for the attempt. A `webhook_url` of None is the webhooks
    app's receiver; optional addresses are left out rather than sent empty."""
    if addresses.get("webhook_url") is None:
        addresses["webhook_url"] = import_string(settings.PAYMENTS_WEBHOOK_URL_FUNCTION)()
    return {
        "amount": payment.amount,
        "currency": payment.currency,
        "description": description,
        "capture_method": payment.capture_method,
        "payment_method": {"token": card_token},
        "customer": customer,
        "prevention_data": prevention_data,
        "external_reference": payment.external_reference,
        **({"installments": payment.installments} if payment.installments > 1 else {}),
        **{name: address for name, address in addresses.items() if address},
    }


def _check_attempt(amount: Decimal, capture_method: str, installments: int) -> None:
    check_amount(amount, maximum=Decimal("9999999999.99"))
    if capture_method not in CaptureMethod.values:
        raise PaymentNotAllowed(_("Unknown capture method."))
    if not 1 <= installments <= MAX_INSTALLMENTS:
        raise PaymentNotAllowed(
            _("Installments go from 1 to %(maximum)d.") % {"maximum": MAX_INSTALLMENTS}
        )


def _attempt_open(attempt: Payment) -> tuple[Payment, bool]:
    """Store the attempt unless the order is paid or has an attempt in flight: (the attempt,
    True), or (the same attempt made earlier, False)."""
    key, reference = attempt.idempotency_key, attempt.external_reference
    existing = Payment.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing, False
    with transaction.atomic():
        others = list(Payment.objects.select_for_update().filter(external_reference=reference))
        same_attempt = next((p for p in others if p.idempotency_key == key), None)
        if same_attempt is not None:  # the twin request of this very attempt got here first
            return same_attempt, False
        if any(p.status in IN_FLIGHT for p in others):
            raise PaymentAttemptBlocked(
                _(
                    "An earlier payment attempt for this order is still being confirmed. "
                    "Please wait a moment before trying again."
                )
            )
        if any(p.status in (PaymentStatus.AUTHORIZED, PaymentStatus.APPROVED) for p in others):
            raise PaymentNotAllowed(_("This order is already paid."))
        try:
            with transaction.atomic():
                attempt.save(force_insert=True)
        except IntegrityError:
            existing = Payment.objects.filter(idempotency_key=key).first()
            if existing is not None:
                return existing, False
            raise PaymentInProgress(
                _("Another payment attempt for this order is running.")
            ) from None
    return attempt, True


def _create_failed(
    payment: Payment, error: ProviderApiError, body: dict[str, Any]
) -> PaymentError | None:
    """Record why a create did not give a payment; the error to show the shopper, or None if
    the provider's INSERT notification named the payment while its answer was awaited."""
    if isinstance(error, OutcomeUnknown):
        # Sent again with its key until the provider says what happened (payments/confirmation).
        unknown, kind = PaymentStatus.UNKNOWN, PaymentEventKind.OUTCOME_UNKNOWN
        if not _mark(payment, unknown, kind, error, request=body):
            return None
        return PaymentOutcomeUnknown(
            _(
                "We could not confirm your payment with the bank yet. We are checking it; you "
                "will not be charged twice."
            )
        )
    _mark(payment, PaymentStatus.FAILED, PaymentEventKind.FAILED, error)
    if isinstance(error, ProviderUnavailable):  # never reached the provider
        return ProviderDown(
            _(
                "The payment service is not reachable right now; nothing was charged. Please "
                "try again in a moment."
            )
        )
    return PaymentRefused(refusal_message(error))


def _mark(
    payment: Payment,
    status: str,
    kind: str,
    error: ProviderApiError,
    *,
    request: dict[str, Any] | None = None,
) -> bool:
    """Record an attempt's failure, or its unknown outcome with the request to send again.
    False (nothing recorded) if the provider has named the payment meanwhile: its status, from
    the provider, is the answer."""
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        if locked.provider_id:
            payment.refresh_from_db()
            return False
        old = locked.status
        locked.status = status
        locked.last_error = str(error)[:500]
        locked.create_request = seal(request) if request is not None else ""
        locked.save(update_fields=["status", "last_error", "create_request", "updated_at"])
        if request is not None:
            pk = locked.pk
            transaction.on_commit(
                lambda: current_app.send_task(
                    CONFIRM_TASK, args=(pk,), countdown=FIRST_CONFIRMATION_AFTER
                )
            )
        _record(
            locked, kind, old=old, new=status, message=error.message, error_code=error.error_code
        )
        if old != status:
            _notify_on_commit(locked, old, status)
    payment.refresh_from_db()
    return True


# --- Refresh ---------------------------------------------------------------------------------


def payment_refresh(*, payment: Payment, actor: Actor = None) -> Payment:
    """Fetch the payment from the provider and apply it if it is not older than what we hold."""
    if not payment.provider_id:
        raise PaymentNotAllowed(
            _(
                "This payment has no provider id yet; it is reconciled when the provider "
                "notifies it."
            )
        )
    with provider_errors():
        remote = get_client().get_payment(payment.provider_id)
    return _apply_in_transaction(payment.pk, remote, kind=PaymentEventKind.SYNCED, actor=actor)


# --- Closing an attempt that was never created ------------------------------------------------

UNCONFIRMED_CLOSABLE_AFTER = timedelta(minutes=30)


def payment_close_unconfirmed(*, payment: Payment, actor: Actor = None) -> Payment:
    """Staff, after looking the order up at the provider and finding no payment: mark an
    attempt whose outcome is unknown (and that no notification has named) as not created, so
    the order can be paid again. Should the provider notify it later after all, the payment is
    adopted as one of the order's (and a second charge is released)."""
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        if locked.provider_id or locked.status not in IN_FLIGHT:
            raise PaymentNotAllowed(
                _(
                    "Only an attempt whose outcome is unknown and that has no provider id can be "
                    "closed; refresh this one instead."
                )
            )
        if locked.created_at > timezone.now() - UNCONFIRMED_CLOSABLE_AFTER:
            raise PaymentNotAllowed(
                _(
                    "This attempt is less than 30 minutes old: the provider may still confirm it. "
                    "Try again later."
                )
            )
        old = locked.status
        locked.status = PaymentStatus.FAILED
        locked.last_error = "closed by staff: not found at the provider"
        locked.create_request = ""  # no longer to be sent again
        locked.save(update_fields=["status", "last_error", "create_request", "updated_at"])
        _record(
            locked,
            PaymentEventKind.FAILED,
            actor=actor,
            old=old,
            new=PaymentStatus.FAILED,
            message=ledger.CLOSED_NOT_CREATED(),
        )
        _notify_on_commit(locked, old, PaymentStatus.FAILED)
    logger.warning("payment %s closed as not created by %s", locked.pk, _user(actor) or "system")
    payment.refresh_from_db()
    return payment


# --- Staff actions: capture, cancel, refund ---------------------------------------------------


def _claim(payment: Payment, intent: str, allowed_status: str) -> None:
    """Compare-and-set the intent: exactly one of several simultaneous actions proceeds."""
    now = timezone.now()
    claimed = Payment.objects.filter(
        Q(intent="") | Q(intent_started_at__lt=now - INTENT_TIMEOUT),
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


def _release(payment: Payment) -> None:
    Payment.objects.filter(pk=payment.pk).update(intent="", intent_started_at=None)
    payment.intent = ""
    payment.intent_started_at = None


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
        _record(
            locked,
            kind,
            actor=actor,
            old=locked.status,
            new=locked.status,
            message=ledger.ACTION_FAILED(action=action, error=error.message),
            error_code=error.error_code,
        )
        locked.last_error = f"{action}: {error}"[:500]
        locked.save(update_fields=["last_error", "updated_at"])
        _release(locked)
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
) -> T:
    """Claim the payment for a staff action and make its provider call; a failure is recorded
    in the ledger, the claim released, and raised as the shop's error."""
    _claim(payment, intent, status)
    try:
        return call()
    except ProviderApiError as exc:
        raise _action_failed(payment, exc, actor=actor, action=action) from exc


def payment_capture(
    *, payment: Payment, amount: Decimal | None = None, actor: Actor = None
) -> Payment:
    """Capture an authorization, in full or in part (0 < amount <= authorized amount)."""
    payment.refresh_from_db()
    if not payment.can_capture():
        raise PaymentNotAllowed(
            _("Only an authorized payment can be captured; this one is %(status)s.")
            % {"status": str(payment.get_status_display()).lower()}
        )
    amount = payment.amount if amount is None else amount
    check_amount(amount, maximum=payment.amount)
    remote = _claimed_call(
        payment,
        lambda: get_client().capture_payment(
            payment.provider_id or "", amount=amount, idempotency_key=new_idempotency_key()
        ),
        intent=PaymentIntent.CAPTURE,
        status=PaymentStatus.AUTHORIZED,
        action="capture",
        actor=actor,
    )
    return _apply_in_transaction(
        payment.pk,
        remote,
        kind=PaymentEventKind.CAPTURED,
        actor=actor,
        amount=amount,
        release_intent=True,
    )


def payment_cancel(*, payment: Payment, actor: Actor = None) -> Payment:
    """Cancel an authorization: the hold is released and nothing is charged."""
    payment.refresh_from_db()
    if not payment.can_cancel():
        raise PaymentNotAllowed(
            _("Only an authorized payment can be cancelled; this one is %(status)s.")
            % {"status": str(payment.get_status_display()).lower()}
        )
    remote = _claimed_call(
        payment,
        lambda: get_client().cancel_payment(
            payment.provider_id or "", idempotency_key=new_idempotency_key()
        ),
        intent=PaymentIntent.CANCEL,
        status=PaymentStatus.AUTHORIZED,
        action="cancellation",
        actor=actor,
    )
    return _apply_in_transaction(
        payment.pk, remote, kind=PaymentEventKind.CANCELLED, actor=actor, release_intent=True
    )


def payment_refund(
    *, payment: Payment, amount: Decimal | None = None, reason: str = "", actor: Actor = None
) -> Refund:
    """Refund a charge, in full or in part (0 < amount <= what is left to refund)."""
    payment.refresh_from_db()
    if not payment.can_refund():
        raise PaymentNotAllowed(
            _(
                "Only a charged payment with money left to refund can be refunded; this one is "
                "%(status)s."
            )
            % {"status": str(payment.get_status_display()).lower()}
        )
    left = payment.refundable_amount
    amount = left if amount is None else amount
    check_amount(amount, maximum=left)
    remote_refund = _claimed_call(
        payment,
        lambda: get_client().refund(
            payment.provider_id or "",
            amount=amount,
            reason=reason[:255],
            idempotency_key=new_idempotency_key(),
        ),
        intent=PaymentIntent.REFUND,
        status=PaymentStatus.APPROVED,
        action="refund",
        actor=actor,
    )
    refund = Refund.objects.create(
        payment=payment,
        provider_id=remote_refund.id,
        amount=remote_refund.amount,
        status=remote_refund.status,
        reason=reason[:255],
        actor=_user(actor),
    )
    _refund_settle(payment, refund, actor=actor)
    payment.refresh_from_db()
    return refund


def _refund_settle(payment: Payment, refund: Refund, *, actor: Actor) -> None:
    """After a refund: read the payment's new amounts, record the refund once in the ledger,
    release the claim. If the read fails, the refund is recorded and the amounts arrive with
    the payment's next refresh."""
    try:
        remote: ProviderPayment | None = get_client().get_payment(payment.provider_id or "")
        message = ledger.REFUND(refund=refund.provider_id)
    except ProviderApiError as exc:
        remote = None
        message = ledger.REFUND_UNREAD(refund=refund.provider_id, error=exc.message)
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        old = locked.status
        recorded = False
        if remote is not None:
            try:
                recorded = _apply(
                    locked,
                    remote,
                    kind=PaymentEventKind.REFUNDED,
                    actor=actor,
                    amount=refund.amount,
                )
            except IllegalTransition as exc:
                logger.error("payment %s after refund: %s", payment.pk, exc)
        if not recorded:
            _record(
                locked,
                PaymentEventKind.REFUNDED,
                actor=actor,
                old=old,
                new=locked.status,
                amount=refund.amount,
                message=message,
            )
        _release(locked)


# --- Subscriptions ---------------------------------------------------------------------------


def _store_subscription(remote: ProviderSubscription) -> Subscription:
    subscription, _ = Subscription.objects.update_or_create(
        provider_id=remote.id,
        defaults={
            "price_id": remote.price_id,
            "customer": remote.customer,
            "customer_email": str(remote.customer.get("email") or "")[:254],
            "status": remote.status if remote.status in SubscriptionStatus.values else "inactive",
            "invoices": list(remote.invoices),
            "snapshot": remote.raw,
            "last_synced_at": timezone.now(),
        },
    )
    return subscription


def subscription_sync(*, provider_id: str) -> Subscription:
    """Import (or update) a subscription from the provider by its id."""
    with provider_errors(not_found="The provider has no subscription with this id."):
        remote = get_client().get_subscription(provider_id.strip())
    with transaction.atomic():
        return _store_subscription(remote)


def subscription_cancel(*, subscription: Subscription, actor: Actor = None) -> Subscription:
    """Set a subscription inactive at the provider (it cannot be activated again)."""
    if subscription.status == SubscriptionStatus.INACTIVE:
        raise PaymentNotAllowed("This subscription is already inactive.")
    with provider_errors(unreachable="The payment service is not reachable; nothing changed."):
        remote = get_client().cancel_subscription(
            subscription.provider_id, idempotency_key=new_idempotency_key()
        )
    logger.info(
        "subscription %s cancelled by %s", subscription.provider_id, _user(actor) or "system"
    )
    with transaction.atomic():
        return _store_subscription(remote)
