"""Exact money and aware timestamps (Hypothesis): amounts round-trip through the client and its
typed results exactly, floats are refused, and timestamps are timezone-aware."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
import responses
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from payments.provider.types import ProviderPayment
from tests.payments.helpers import FAKE_URL, PAYMENT_ID, dumps, fake_client, payment_json

TWO_PLACES = st.decimals(
    min_value=Decimal("0.01"),
    max_value=Decimal("9999999999.99"),
    places=2,
    allow_nan=False,
    allow_infinity=False,
)


@hypothesis_settings(max_examples=150, deadline=None)
@given(amount=TWO_PLACES)
def test_amount_round_trip_is_exact(amount: Decimal) -> None:
    """Any two-place amount is sent exactly in a capture and parsed back exactly."""
    seen: list[Decimal] = []

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        sent = json.loads(request.body, parse_float=Decimal)["paid_amount"]
        seen.append(sent)
        return 200, {}, dumps(payment_json(str(sent)))

    with responses.RequestsMock() as rsps:
        rsps.add_callback(responses.PATCH, f"{FAKE_URL}/payments/{PAYMENT_ID}", callback=answer)
        payment = fake_client().capture_payment(PAYMENT_ID, amount=amount, idempotency_key="k")

    assert seen == [amount] and str(seen[0]) == str(amount)
    assert payment.amount == amount and str(payment.amount) == str(amount)
    assert payment.captured_amount == amount


@given(amount=TWO_PLACES)
def test_from_json_parses_decimal_amounts_exactly(amount: Decimal) -> None:
    """A payment answer's amount parsed as Decimal becomes exactly that amount."""
    text = dumps(payment_json(str(amount)))

    payment = ProviderPayment.from_json(json.loads(text, parse_float=Decimal))

    assert payment.amount == amount and payment.paid_amount == amount


@pytest.mark.parametrize("field", ["amount", "paid_amount", "captured_amount", "amount_refunded"])
def test_from_json_refuses_float_amounts(field: str) -> None:
    """A float amount (a JSON parse that lost exactness) is refused, never rounded."""
    data = payment_json()
    data[field] = 0.1

    with pytest.raises(ValueError, match="float"):
        ProviderPayment.from_json(data)


@pytest.mark.parametrize(
    "text",
    ["2025-03-01T12:00:00.123456Z", "2025-03-01T12:00:00.123+00:00", "2025-03-01T06:00:00-06:00"],
)
def test_timestamps_parse_timezone_aware(text: str) -> None:
    """Provider timestamps become timezone-aware datetimes at the right instant."""
    payment = ProviderPayment.from_json(payment_json(created_at=text))

    assert payment.created_at is not None and payment.created_at.tzinfo is not None
    assert payment.created_at.astimezone(UTC).replace(microsecond=0) == datetime(
        2025, 3, 1, 12, 0, tzinfo=UTC
    )


def test_naive_timestamp_is_refused() -> None:
    """A timestamp without a zone is refused rather than guessed."""
    with pytest.raises(ValueError, match="timezone-aware"):
        ProviderPayment.from_json(payment_json(created_at="2025-03-01T12:00:00.123"))


OFFSETS = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


@given(
    moment=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=OFFSETS
    )
)
def test_any_aware_timestamp_round_trips(moment: datetime) -> None:
    """Any ISO 8601 timestamp with an offset parses to the same aware instant."""
    payment = ProviderPayment.from_json(payment_json(created_at=moment.isoformat()))

    assert payment.created_at == moment
    assert payment.created_at is not None
    assert payment.created_at.utcoffset() == moment.utcoffset()
