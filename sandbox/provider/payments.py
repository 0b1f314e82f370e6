"""The payment state machine of the spec's transition table, with the sandbox contract's
answers where the spec is silent. Every change bumps `version` and, when the status changes,
queues a webhook UPDATE in the same transaction."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction

from sandbox.provider import clock
from sandbox.provider.catalogue import accepted_amount
from sandbox.provider.errors import (
    AMOUNT_NOT_ACCEPTED,
    CAPTURE_ABOVE_AUTHORIZED,
    CURRENCY_NOT_SUPPORTED,
    INSTALLMENTS_NOT_AVAILABLE,
    INTERNAL_ERROR,
    REFUND_ABOVE_BALANCE,
    ApiError,
    payment_not_found,
    transition_not_allowed,
)
from sandbox.provider.models import (
    CaptureMethod,
    CardToken,
    Payment,
    PaymentStatus,
    Refund,
    Scenario,
)
from sandbox.provider.representations import card_json
from sandbox.provider.tokens import card_token_claim, method_not_active
from sandbox.provider.webhooks import webhook_enqueue

AUTHORIZATION_VALIDITY = timedelta(days=30)
CHALLENGE_VALIDITY = timedelta(minutes=30)
CURRENCIES = {"MX": "MXN"}

# Status detail codes: the spec's four, and the sandbox contract's.
DETAILS = {
    "AU-CAP01": "Pending capture",
    "PE-3DS01": "Waiting 3DS",
    "AP-PAI01": "paid",
    "CA-MER01": "Cancelled",
    "CA-EXP01": "Authorization expired",
    "CA-3DS01": "3-D Secure not completed",
    "CA-VOI01": "Voided",
    "RF-REF01": "Refunded",
    "RE-DEC01": "Declined",
    "RE-FUN01": "Insufficient funds",
    "RE-3DS01": "3-D Secure failed",
    "RE-BIN01": "Rejected in binary mode: 3-D Secure required",
}


def _set_status(payment: Payment, status: str, code: str, now: datetime) -> None:
    payment.status = status
    payment.status_code = code
    payment.status_message = DETAILS[code]
    if status == PaymentStatus.AUTHORIZED:
        payment.authorized_at = now
    if status == PaymentStatus.APPROVED and payment.approved_at is None:
        payment.approved_at = now


def _charge_in_full(payment: Payment, amount: Decimal, now: datetime) -> None:
    payment.paid_amount = amount
    payment.captured_amount = amount
    _set_status(payment, PaymentStatus.APPROVED, "AP-PAI01", now)


def _save_change(payment: Payment, now: datetime, *, status_changed: bool) -> None:
    payment.version += 1
    payment.updated_at = now
    payment.save()
    if status_changed:
        webhook_enqueue(payment=payment, event_type="UPDATE")


def _find(payment_id: str, *, lock: bool) -> Payment:
    try:
        pk = uuid.UUID(payment_id)
    except ValueError:
        raise payment_not_found() from None
    payments = (
        Payment.objects.select_for_update() if lock else Payment.objects.select_related("method")
    )
    payment = payments.filter(pk=pk).first()
    if payment is None:
        raise payment_not_found()
    return payment


def _lock(payment_id: str) -> Payment:
    return _find(payment_id, lock=True)


def _expiry_due(payment: Payment, now: datetime) -> str | None:
    """The status code of an expiry the clock has reached (authorization after 30 days,
    challenge after 30 minutes), or None."""
    if (
        payment.status == PaymentStatus.AUTHORIZED
        and payment.authorized_at is not None
        and payment.authorized_at + AUTHORIZATION_VALIDITY <= now
    ):
        return "CA-EXP01"
    if (
        payment.status == PaymentStatus.PENDING
        and payment.challenge_expires_at is not None
        and payment.challenge_expires_at <= now
    ):
        return "CA-3DS01"
    return None


def _expire_if_due(payment: Payment, now: datetime) -> bool:
    """Apply an expiry the clock has reached; True when the payment changed."""
    code = _expiry_due(payment, now)
    if code is None:
        return False
    _set_status(payment, PaymentStatus.CANCELLED, code, now)
    _save_change(payment, now, status_changed=True)
    return True


def _refuse_unpayable(token: CardToken, data: dict[str, Any]) -> None:
    """Raise the provider's refusal of a payment this token cannot make (or its failure)."""
    method = token.method
    if method.status != "active":
        raise method_not_active(method.id)
    country = data.get("country", "MX")
    if data["currency"] != CURRENCIES.get(country):
        raise ApiError(
            400,
            CURRENCY_NOT_SUPPORTED,
            "Currency not supported",
            [f"payments in {country} are in {CURRENCIES.get(country, 'no currency')}"],
        )
    amount: Decimal = data["amount"]
    bounds = accepted_amount(method.validations)
    if bounds and not bounds[0] <= amount <= bounds[1]:
        raise ApiError(
            400,
            AMOUNT_NOT_ACCEPTED,
            "Amount not accepted",
            [f"{method.name} accepts amounts from {bounds[0]} to {bounds[1]}"],
        )
    installments = data.get("installments", 1)
    if installments > 1 and not token.installments_eligible:
        raise ApiError(
            400,
            INSTALLMENTS_NOT_AVAILABLE,
            "Installments not available",
            ["this card has no interest-free installments"],
        )
    if token.scenario == Scenario.PROVIDER_ERROR:
        raise ApiError(500, INTERNAL_ERROR, "Internal error.", [])


def _new_payment(token: CardToken, data: dict[str, Any], now: datetime) -> Payment:
    """The payment the request describes, paid with the token's card (not saved, no status)."""
    return Payment(
        capture_method=data.get("capture_method", CaptureMethod.AUTOMATIC),
        amount=data["amount"],
        tip_amount=data.get("tip_amount") or Decimal("0.00"),
        installments=data.get("installments", 1),
        binary_mode=data.get("binary_mode", False),
        currency=data["currency"],
        country=data.get("country", "MX"),
        description=data.get("description", ""),
        external_reference=data.get("external_reference", ""),
        statement_descriptor=data.get("statement_descriptor", ""),
        receipt_no=f"{secrets.randbelow(10**8):08d}",
        customer=data.get("customer", {}),
        prevention_data=data.get("prevention_data", {}),
        metadata=data.get("metadata", {}),
        method=token.method,
        token=token,
        card=card_json(token),
        return_url=data.get("return_url", ""),
        webhook_url=data.get("webhook_url", ""),
        created_at=now,
        updated_at=now,
        version=1,
    )


def _apply_card_outcome(payment: Payment, scenario: str, now: datetime) -> None:
    """Set the status the test card's scenario gives a new payment."""
    if scenario == Scenario.APPROVE:
        if payment.capture_method == CaptureMethod.MANUAL:
            _set_status(payment, PaymentStatus.AUTHORIZED, "AU-CAP01", now)
        else:
            _charge_in_full(payment, payment.amount, now)
    elif scenario == Scenario.THREE_DS and payment.binary_mode:
        _set_status(payment, PaymentStatus.REJECTED, "RE-BIN01", now)
    elif scenario == Scenario.THREE_DS:
        _set_status(payment, PaymentStatus.PENDING, "PE-3DS01", now)
        payment.challenge_id = secrets.token_urlsafe(24)
        payment.challenge_expires_at = now + CHALLENGE_VALIDITY
    elif scenario == Scenario.INSUFFICIENT_FUNDS:
        _set_status(payment, PaymentStatus.REJECTED, "RE-FUN01", now)
    else:
        _set_status(payment, PaymentStatus.REJECTED, "RE-DEC01", now)


def payment_create(*, data: dict[str, Any]) -> Payment:
    """POST /payments: one card token pays once; the test card decides the outcome."""
    with transaction.atomic():
        token = card_token_claim(token_id=data["payment_method"]["token"])
        _refuse_unpayable(token, data)
        now = clock.now()
        payment = _new_payment(token, data, now)
        _apply_card_outcome(payment, token.scenario, now)
        token.used_at = now
        token.save(update_fields=["used_at"])
        payment.save()
        webhook_enqueue(payment=payment, event_type="INSERT")
    return payment


def payment_get(*, payment_id: str) -> Payment:
    """GET /payments/{id}, with any expiry the clock has reached applied first. A read is
    not locked (two statements, no transaction) unless there is an expiry to apply."""
    payment = _find(payment_id, lock=False)
    if _expiry_due(payment, clock.now()) is None:
        return payment
    with transaction.atomic():
        payment = _lock(payment_id)
        _expire_if_due(payment, clock.now())
    return payment


def payment_update(*, payment_id: str, status: str, paid_amount: Decimal | None) -> Payment:
    """PATCH /payments/{id}: capture (`approved`, up to the authorized amount) or cancel an
    authorization (`cancelled`). Anything else from the current status: 409 CL2206."""
    with transaction.atomic():
        payment = _lock(payment_id)
        now = clock.now()
        _expire_if_due(payment, now)
        if payment.status != PaymentStatus.AUTHORIZED:
            raise transition_not_allowed(payment.status, status)
        if status == PaymentStatus.APPROVED:
            assert paid_amount is not None
            if paid_amount > payment.amount:
                raise ApiError(
                    400,
                    CAPTURE_ABOVE_AUTHORIZED,
                    "Capture above the authorized amount",
                    [f"paid_amount {paid_amount} is above the authorized {payment.amount}"],
                )
            _charge_in_full(payment, paid_amount, now)
        else:
            _set_status(payment, PaymentStatus.CANCELLED, "CA-MER01", now)
        _save_change(payment, now, status_changed=True)
    return payment


class ChallengeClosed(Exception):
    """The 3-D Secure challenge was already completed, or has expired."""


def challenge_payment(*, challenge_id: str) -> Payment | None:
    with transaction.atomic():
        payment = Payment.objects.select_for_update().filter(challenge_id=challenge_id).first()
        if payment is not None:
            _expire_if_due(payment, clock.now())
    return payment


def challenge_complete(*, challenge_id: str, passed: bool) -> Payment:
    """The shopper finished the challenge: approved (authorized for manual capture) or rejected."""
    with transaction.atomic():
        payment = Payment.objects.select_for_update().filter(challenge_id=challenge_id).first()
        if payment is None:
            raise ChallengeClosed("unknown challenge")
        now = clock.now()
        _expire_if_due(payment, now)
        if payment.status != PaymentStatus.PENDING or payment.challenge_completed_at is not None:
            raise ChallengeClosed("this challenge is over")
        payment.challenge_completed_at = now
        if not passed:
            _set_status(payment, PaymentStatus.REJECTED, "RE-3DS01", now)
        elif payment.capture_method == CaptureMethod.MANUAL:
            _set_status(payment, PaymentStatus.AUTHORIZED, "AU-CAP01", now)
        else:
            _charge_in_full(payment, payment.amount, now)
        _save_change(payment, now, status_changed=True)
    return payment


def refund_create(*, payment_id: str, amount: Decimal | None, reason: str) -> Refund:
    """POST /refunds: never above what is left. A full refund on the day of approval voids the
    charge (`cancelled`); otherwise a full refund gives `refunded`; a partial one keeps
    `approved` and raises `amount_refunded`."""
    with transaction.atomic():
        payment = _lock(payment_id)
        now = clock.now()
        if payment.status != PaymentStatus.APPROVED:
            raise transition_not_allowed(payment.status, "refunded")
        left = payment.captured_amount - payment.amount_refunded
        amount = left if amount is None else amount
        if amount > left:
            raise ApiError(
                400,
                REFUND_ABOVE_BALANCE,
                "Refund above the refundable amount",
                [f"amount {amount} is above the {left} left to refund"],
            )
        refund = Refund.objects.create(
            payment=payment, amount=amount, reason=reason, created_at=now
        )
        first_refund = payment.amount_refunded == 0
        payment.amount_refunded += amount
        status_changed = payment.amount_refunded == payment.captured_amount
        if status_changed:
            same_day = payment.approved_at is not None and payment.approved_at.date() == now.date()
            if first_refund and same_day:
                _set_status(payment, PaymentStatus.CANCELLED, "CA-VOI01", now)
            else:
                _set_status(payment, PaymentStatus.REFUNDED, "RF-REF01", now)
        _save_change(payment, now, status_changed=status_changed)
    return refund


def payments_expire_due() -> int:
    """Expire what the sandbox clock has reached; each payment in its own transaction."""
    now = clock.now()
    due = Payment.objects.filter(
        status=PaymentStatus.AUTHORIZED, authorized_at__lte=now - AUTHORIZATION_VALIDITY
    ).values_list("pk", flat=True)
    stale = Payment.objects.filter(
        status=PaymentStatus.PENDING, challenge_expires_at__lte=now
    ).values_list("pk", flat=True)
    expired = 0
    for pk in [*due, *stale]:
        with transaction.atomic():
            payment = Payment.objects.select_for_update().get(pk=pk)
            expired += _expire_if_due(payment, now)
    return expired
