"""The provider's JSON shapes of what the sandbox keeps (every documented field, always)."""

from __future__ import annotations

import itertools
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sandbox.provider.clock import iso
from sandbox.provider.models import (
    CardToken,
    Invoice,
    Payment,
    PaymentMethod,
    PaymentStatus,
    Refund,
    SandboxState,
)

CENT = Decimal("0.01")


def money(value: Decimal) -> Decimal:
    return value.quantize(CENT)


_answers = itertools.count()


def vary_case(message: str) -> str:
    """The spec warns the letter case of PE-3DS01's message varies between answers: each answer
    takes the next of three (as written, lower case, upper case)."""
    return (message, message.lower(), message.upper())[next(_answers) % 3]


def _validations_json(validations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    served = []
    for item in validations:
        metadata = dict(item.get("metadata") or {})
        if item.get("name") == "accepted_amount":
            metadata = {key: money(Decimal(str(value))) for key, value in metadata.items()}
        served.append({"name": item.get("name"), "metadata": metadata})
    return served


def payment_method_json(method: PaymentMethod, base_url: str) -> dict[str, Any]:
    return {
        "id": method.id,
        "logo": f"{base_url}/static/sandbox/logos/{method.logo_file}",
        "name": method.name,
        "status": method.status,
        "type": method.type,
        "validations": _validations_json(method.validations),
    }


def card_json(token: CardToken) -> dict[str, str]:
    return {
        "bin": token.bin,
        "issuer": token.issuer,
        "name": token.holder_name,
        "country": token.country,
        "last_digits": token.last_digits,
        "exp_year": token.exp_year,
        "exp_month": token.exp_month,
    }


def card_token_json(token: CardToken) -> dict[str, Any]:
    return {
        "id": str(token.id),
        "card": card_json(token),
        "payment_method_id": token.method_id,
        "payment_method_type": token.method.type,
        "created_at": iso(token.created_at),
        "expires_at": iso(token.expires_at),
        "used": token.used_at is not None,
    }


def refund_json(refund: Refund) -> dict[str, Any]:
    return {
        "id": str(refund.id),
        "payment_id": str(refund.payment_id),
        "amount": money(refund.amount),
        "reason": refund.reason,
        "status": refund.status,
        "created_at": iso(refund.created_at),
    }


def _served_status(payment: Payment, quirks: dict[str, Any]) -> str:
    """The status as the sandbox's quirks show it."""
    if payment.status == PaymentStatus.AUTHORIZED and quirks.get("authorized_as_approved"):
        # The spec's sample authorization: status `approved` with detail AU-CAP01.
        return PaymentStatus.APPROVED
    return payment.status


def _status_detail_json(payment: Payment) -> dict[str, str]:
    message = payment.status_message
    if payment.status_code == "PE-3DS01":
        message = vary_case(message)
    return {"code": payment.status_code, "message": message}


def _pending_action_json(payment: Payment, base_url: str) -> dict[str, str]:
    """The 3-D Secure challenge a pending payment waits for, or nothing."""
    if payment.status == PaymentStatus.PENDING and payment.challenge_id:
        return {"type": "open_modal", "url": f"{base_url}/3ds/{payment.challenge_id}"}
    return {}


def _installment_amount(payment: Payment) -> Decimal:
    """The amount divided by the installments, rounded to cents (half up, as shops write it)."""
    return (payment.amount / payment.installments).quantize(CENT, ROUND_HALF_UP)


def payment_json(
    payment: Payment, base_url: str, quirks: dict[str, Any] | None = None
) -> dict[str, Any]:
    quirks = quirks if quirks is not None else SandboxState.load().quirks
    status = _served_status(payment, quirks)
    status_detail = _status_detail_json(payment)
    pending_action = _pending_action_json(payment, base_url)
    return {
        "id": str(payment.id),
        "amount": money(payment.amount),
        "tip_amount": money(payment.tip_amount),
        "amount_refunded": money(payment.amount_refunded),
        "installment_amount": _installment_amount(payment),
        "installments": payment.installments,
        "capture_method": payment.capture_method,
        "net_amount": money(payment.captured_amount - payment.amount_refunded),
        "paid_amount": money(payment.paid_amount),
        "captured_amount": money(payment.captured_amount),
        "binary_mode": payment.binary_mode,
        "approved_at": iso(payment.approved_at),
        "country": payment.country,
        "currency": payment.currency,
        "description": payment.description,
        "external_reference": payment.external_reference,
        "customer": payment.customer,
        "payment_method": {
            "id": payment.method_id,
            "type": payment.method.type,
            "token": str(payment.token_id),
            "card": payment.card,
        },
        "pending_action": pending_action,
        "receipt_no": payment.receipt_no,
        "claims": [],
        "refunds": [refund_json(r) for r in payment.refund_records.all()],
        "statement_descriptor": payment.statement_descriptor,
        "status": status,
        "status_detail": status_detail,
        "metadata": payment.metadata,
        "return_url": payment.return_url,
        "webhook_url": payment.webhook_url,
        "created_at": iso(payment.created_at),
        "version": payment.version,
    }


def invoice_json(invoice: Invoice) -> dict[str, Any]:
    return {
        "id": str(invoice.id),
        "subscription_id": str(invoice.subscription_id),
        "payment_request_id": invoice.payment_request_id,
        "payment_request_code": invoice.payment_request_code,
        "amount": money(invoice.amount),
        "currency": invoice.currency,
        "due_date": iso(invoice.due_date),
        "status": invoice.status,
        "payment": invoice.payment,
        "payment_method": invoice.payment_method,
        "additional_information": invoice.additional_information,
        "period": invoice.period,
        "paid_at": iso(invoice.paid_at),
    }


def subscription_json(subscription: Any) -> dict[str, Any]:
    return {
        "id": str(subscription.id),
        "price_id": subscription.price_id,
        "customer": subscription.customer,
        "status": subscription.status,
        "additional_information": subscription.additional_information,
        "invoices": [invoice_json(i) for i in subscription.invoices.all()],
        "start_date": iso(subscription.start_date),
        "end_date": iso(subscription.end_date),
        "created_at": iso(subscription.created_at),
        "updated_at": iso(subscription.updated_at),
        "payment_method": subscription.payment_method,
    }
