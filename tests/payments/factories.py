"""Helpers that create shop payments through the real services against the live sandbox."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from payments.models import Payment
from payments.services import payment_create
from tests.support import VISA, Api


def order_reference() -> str:
    return f"ORD-{uuid.uuid4().hex[:6].upper()}"


def create_payment(
    provider: Api,
    *,
    number: str = VISA,
    amount: str = "250.00",
    capture_method: str = "automatic",
    reference: str | None = None,
    attempt_key: str | None = None,
    **extra: Any,
) -> Payment:
    """A payment created as checkout does: a card token from the sandbox, then the service."""
    token = provider.card_token(number)["id"]
    return payment_create(
        external_reference=reference or order_reference(),
        attempt_key=attempt_key or uuid.uuid4().hex,
        amount=Decimal(amount),
        currency="MXN",
        description="Taza de barro",
        card_token=token,
        capture_method=capture_method,
        customer={"first_name": "Ana", "last_name": "Pérez", "email": "ana@example.com"},
        prevention_data={"device_finger_print_token": "sess_test"},
        return_url="http://127.0.0.1:8000/checkout/return",
        webhook_url="",
        **extra,
    )
