"""A checkout attempt's payment: storing the attempt (its idempotency key and its sealed create
request) and queueing its create, recording an attempt that failed or whose answer was lost
(`mark_attempt`), and closing, at staff's word, an attempt whose outcome stayed unknown."""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_variables

from core.ledger import Actor
from payments.attempts.sealed import seal
from payments.models import CaptureMethod, Payment, PaymentEventKind
from payments.provider.errors import (
    PaymentAttemptBlocked,
    PaymentInProgress,
    PaymentNotAllowed,
    ProviderApiError,
)
from payments.records import (
    acting_user,
    check_amount,
    notify_status_changed_on_commit,
    record_event,
)
from payments.statuses import IN_FLIGHT, PaymentStatus
from payments.task_names import SEND_CREATE_TASK, send_for_payment_on_commit
from payments.words import CLOSED_NOT_CREATED

logger = logging.getLogger(__name__)
MAX_INSTALLMENTS = 48  # the provider's limit
UNCONFIRMED_CLOSABLE_AFTER = timedelta(minutes=30)


@sensitive_variables("card_token", "webhook_url")
def payment_attempt_store(
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
    """Store one checkout attempt (in `installments` interest-free monthly payments when more
    than 1) with its idempotency key and its sealed create request, and queue the create once
    stored: `payments.attempts.calls.payment_send_create` sends it, and sends it again with the
    same key until the provider says what happened. No provider call here. The same attempt
    stored twice (a double click, a retried request) is one attempt. `webhook_url` None: the
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
    attempt.create_request = seal(
        _create_body(
            attempt,
            description=description,
            card_token=card_token,
            customer=customer,
            prevention_data=prevention_data,
            addresses={"return_url": return_url, "webhook_url": webhook_url},
        )
    )
    payment, opened = _attempt_open(attempt)
    if opened:
        send_for_payment_on_commit(SEND_CREATE_TASK, payment.pk)
    return payment


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
    True), or (the same attempt made earlier, False). An attempt's key names its order: the
    order's attempts, read under their lock, hold it if it was made."""
    key, reference = attempt.idempotency_key, attempt.external_reference
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


def mark_attempt(
    payment: Payment,
    status: str,
    kind: str,
    error: ProviderApiError,
    *,
    request: dict[str, Any] | None = None,
    code: str = "",
) -> bool:
    """Record an attempt's failure, or its unknown outcome with the request kept to send again
    (the create task retries it). False (nothing recorded) if the provider has named the
    payment meanwhile: its status, from the provider, is the answer. A failure keeps the
    error's code for the shopper's message (`payments.words.failure_message`)."""
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        if locked.provider_id:
            payment.refresh_from_db()
            return False
        old = locked.status
        locked.status = status
        locked.last_error = str(error)[:500]
        locked.create_request = seal(request) if request is not None else ""
        if status == PaymentStatus.FAILED:
            locked.status_code = error.error_code[:16] or code
        locked.save(
            update_fields=["status", "status_code", "last_error", "create_request", "updated_at"]
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
            message=CLOSED_NOT_CREATED(),
        )
        notify_status_changed_on_commit(locked, old, PaymentStatus.FAILED)
    logger.warning(
        "payment %s closed as not created by %s", locked.pk, acting_user(actor) or "system"
    )
    payment.refresh_from_db()
    return payment
