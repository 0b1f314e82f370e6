"""A checkout attempt's payment: creating it at the provider (the attempt and its idempotency key
stored first), recording an attempt that failed or whose answer was lost (`mark_attempt`), and
closing, at staff's word, an attempt whose outcome stayed unknown."""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_variables

from payments import ledger
from payments.client import get_client
from payments.errors import (
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
from payments.messages import refusal_message
from payments.models import IN_FLIGHT, CaptureMethod, Payment, PaymentEventKind, PaymentStatus
from payments.sealed import seal
from payments.services.records import (
    Actor,
    acting_user,
    check_amount,
    notify_status_changed_on_commit,
    record_event,
)
from payments.services.snapshots import apply_in_transaction

logger = logging.getLogger(__name__)
MAX_INSTALLMENTS = 48  # the provider's limit
CONFIRM_TASK = "payments.tasks.payment_confirm_create_task"
FIRST_CONFIRMATION_AFTER = 5  # seconds: the provider may only have been slow
UNCONFIRMED_CLOSABLE_AFTER = timedelta(minutes=30)


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
    return apply_in_transaction(payment.pk, remote, kind=PaymentEventKind.CREATED)


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
        if not mark_attempt(payment, unknown, kind, error, request=body):
            return None
        return PaymentOutcomeUnknown(
            _(
                "We could not confirm your payment with the bank yet. We are checking it; you "
                "will not be charged twice."
            )
        )
    mark_attempt(payment, PaymentStatus.FAILED, PaymentEventKind.FAILED, error)
    if isinstance(error, ProviderUnavailable):  # never reached the provider
        return ProviderDown(
            _(
                "The payment service is not reachable right now; nothing was charged. Please "
                "try again in a moment."
            )
        )
    return PaymentRefused(refusal_message(error))


def mark_attempt(
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
        record_event(
            locked, kind, old=old, new=status, message=error.message, error_code=error.error_code
        )
        if old != status:
            notify_status_changed_on_commit(locked, old, status)
    payment.refresh_from_db()
    return True


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
        record_event(
            locked,
            PaymentEventKind.FAILED,
            actor=actor,
            old=old,
            new=PaymentStatus.FAILED,
            message=ledger.CLOSED_NOT_CREATED(),
        )
        notify_status_changed_on_commit(locked, old, PaymentStatus.FAILED)
    logger.warning(
        "payment %s closed as not created by %s", locked.pk, acting_user(actor) or "system"
    )
    payment.refresh_from_db()
    return payment
