"""Helpers of the provider client's tests: requests to the sandbox through the client, faults
injected at the sandbox, typed errors checked, and a client and answers for `responses`."""

from __future__ import annotations

import json
import re
import uuid
from decimal import Decimal
from typing import Any

from payments.provider.client import PaymentsClient, default_retry
from payments.provider.errors import ProviderApiError
from payments.provider.types import ProviderPayment
from tests.support import CVV_FOR, VISA

# A subscription seeded by every sandbox reset (sandbox/provider/subscriptions.py).
SEEDED_SUBSCRIPTION = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"
REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")
FAKE_URL = "http://provider.test"
PAYMENT_ID = "3f9d6c1e-8a2b-4c5d-9e0f-1a2b3c4d5e6f"


def key() -> str:
    return uuid.uuid4().hex


def token_for(client: PaymentsClient, number: str = VISA) -> str:
    return client.create_card_token(
        number=number,
        exp_month="12",
        exp_year="2031",
        cvv=CVV_FOR.get(number, "123"),
        holder_name="Ana Pérez",
    ).id


def payment_body(token: str, *, amount: str = "250.00", capture_method: str = "automatic"):
    return {
        "amount": Decimal(amount),
        "currency": "MXN",
        "description": "Taza de barro",
        "capture_method": capture_method,
        "payment_method": {"token": token},
        "customer": {"first_name": "Ana", "last_name": "Pérez", "email": "ana@example.com"},
    }


def pay(client: PaymentsClient, number: str = VISA, **kwargs: Any) -> ProviderPayment:
    return client.create_payment(
        body=payment_body(token_for(client, number), **kwargs), idempotency_key=key()
    )


def assert_provider_error(
    exc: ProviderApiError, kind: type[ProviderApiError], status: int, code: str
) -> None:
    assert type(exc) is kind, f"{type(exc).__name__}: {exc}"
    assert exc.http_status == status
    assert exc.error_code == code
    assert isinstance(exc.message, str) and exc.message
    assert isinstance(exc.detail, list) and all(isinstance(d, str) for d in exc.detail)
    assert REQUEST_ID.match(exc.request_id), exc.request_id


def fake_client(**kwargs: Any) -> PaymentsClient:
    return PaymentsClient(
        base_url=FAKE_URL,
        public_key="pk",
        access_token="tok",
        retry=default_retry(2),
        **kwargs,
    )


def payment_json(amount: str = "250.00", **fields: Any) -> dict[str, Any]:
    return {
        "id": PAYMENT_ID,
        "status": "approved",
        "status_detail": {"code": "AP-PAI01", "message": "paid"},
        "capture_method": "automatic",
        "amount": Decimal(amount),
        "paid_amount": Decimal(amount),
        "captured_amount": Decimal(amount),
        "amount_refunded": Decimal("0.00"),
        "currency": "MXN",
        "pending_action": {},
        "payment_method": {"id": "visa", "type": "credit_card", "token": "tok_card"},
        "created_at": "2025-03-01T12:00:00.123456Z",
        "approved_at": "2025-03-01T12:00:01.5-06:00",
        "refunds": [],
        "version": 2,
        **fields,
    }


def dumps(data: Any) -> str:
    import simplejson

    return simplejson.dumps(data, use_decimal=True)


def error_body(code: str, message: str = "Something", detail: str = "more") -> str:
    return json.dumps({"error_code": code, "message": message, "detail": [detail]})
