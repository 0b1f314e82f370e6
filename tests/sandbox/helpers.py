"""What the sandbox's payment tests share: the amount every test payment is made of, and the
steps that move a payment through the API (capture, cancel, the 3-D Secure challenge page)."""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Any

import requests

from tests.helpers.provider import Api

ZERO = Decimal("0.00")
AMOUNT = Decimal("250.00")

# The challenge page's form that passes 3-D Secure.
PASS = {"action": "submit", "code": "123456"}
ISO_SUBSECOND = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+(Z|[+-]\d{2}:\d{2})$")


def assert_iso_subsecond(value: Any) -> None:
    """An ISO 8601 timestamp with fractions of a second and a UTC offset."""
    assert isinstance(value, str) and ISO_SUBSECOND.match(value), value
    datetime.fromisoformat(value)


def challenge_page(payment: dict[str, Any]) -> requests.Response:
    """The 3-D Secure page at pending_action.url, as the shopper's browser loads it."""
    page = requests.get(payment["pending_action"]["url"], timeout=10)
    assert page.status_code == 200, page.text
    assert 'autocomplete="one-time-code"' in page.text
    return page


def challenge_post(payment: dict[str, Any], form: dict[str, str]) -> requests.Response:
    return requests.post(payment["pending_action"]["url"], data=form, timeout=10)


def complete_challenge(payment: dict[str, Any], form: dict[str, str]) -> requests.Response:
    challenge_page(payment)
    answer = challenge_post(payment, form)
    assert answer.status_code == 200, answer.text
    assert "text/html" in answer.headers["Content-Type"]
    return answer


def capture(api: Api, payment_id: str, paid_amount: Decimal) -> requests.Response:
    return api.patch(f"/payments/{payment_id}", {"status": "approved", "paid_amount": paid_amount})


def cancel(api: Api, payment_id: str) -> requests.Response:
    return api.patch(f"/payments/{payment_id}", {"status": "cancelled"})
