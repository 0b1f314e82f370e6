"""The payments app's metrics: an endpoint's ids are templated; each change of a payment's
status counts its outcome once (3-D Secure passed and failed, declines by family, nothing for
a capture); a scheduled check that corrects a payment counts a correction."""

from __future__ import annotations

from decimal import Decimal

import pytest
from prometheus_client import REGISTRY

from payments.metrics import payment_transition_counted, provider_endpoint
from payments.rereading.calls import payments_check
from tests.factories import provider_payment
from tests.helpers.provider import Api


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("path", "endpoint"),
    [
        ("/payments", "/payments"),
        ("/payments/3f2b8c1e-5d4a-4b6f-9e7d-2a1c0b9e8f7d", "/payments/{id}"),
        ("/subscriptions/sub_123", "/subscriptions/{id}"),
        ("/refunds", "/refunds"),
        ("/payment_methods", "/payment_methods"),
    ],
)
def test_provider_endpoints_never_hold_ids(path: str, endpoint: str) -> None:
    assert provider_endpoint(path) == endpoint


@pytest.mark.parametrize(
    ("old", "new", "code", "counted"),
    [
        ("pending", "authorized", "AU-CAP01", [("outcomes", "approved", ""), ("3ds", "passed")]),
        (
            "pending",
            "rejected",
            "RE-3DS01",
            [("outcomes", "declined", "three_ds_failed"), ("3ds", "failed")],
        ),
        ("pending", "cancelled", "CA-3DS01", [("3ds", "failed")]),
        ("creating", "rejected", "RE-FUN01", [("outcomes", "declined", "insufficient_funds")]),
        ("creating", "rejected", "XX-NEW01", [("outcomes", "declined", "other")]),
        ("unknown", "approved", "AP-PAI01", [("outcomes", "approved", "")]),
        ("creating", "pending", "PE-3DS01", [("3ds", "required")]),
        ("creating", "failed", "BR1301", [("outcomes", "not_created", "")]),
        ("authorized", "approved", "AP-PAI01", []),  # a capture: no new outcome
        ("approved", "approved", "AP-PAI01", []),  # a refund's amount: no change of status
        ("approved", "refunded", "RF-REF01", []),
    ],
)
def test_each_change_of_status_counts_what_it_says_once(
    old: str, new: str, code: str, counted: list[tuple[str, ...]]
) -> None:
    everything = [
        ("outcomes", outcome, reason)
        for outcome in ("approved", "declined", "unknown", "not_created")
        for reason in ("", "three_ds_failed", "insufficient_funds", "other", "card_declined")
    ] + [("3ds", result) for result in ("required", "passed", "failed")]

    def read(key: tuple[str, ...]) -> float:
        if key[0] == "outcomes":
            return sample("shop_payment_outcomes_total", outcome=key[1], reason=key[2])
        return sample("shop_payment_three_ds_total", result=key[1])

    before = {key: read(key) for key in everything}
    payment_transition_counted(old=old, new=new, code=code)
    changed = {key for key in everything if read(key) != before[key]}
    assert changed == set(counted)
    assert all(read(key) == before[key] + 1 for key in counted)


@pytest.mark.sandbox
@pytest.mark.django_db
def test_a_scheduled_check_that_corrects_a_payment_counts_one_correction(provider: Api) -> None:
    """A refund made at the provider and found by the scheduled check is one correction; the
    next check, finding nothing new, counts none."""
    payment = provider_payment(provider)
    response = provider.post(
        "/refunds", {"payment_id": payment.provider_id, "amount": Decimal("100.00")}
    )
    assert response.status_code == 201, response.text
    before = sample("shop_reconciliation_corrections_total")

    assert payments_check([payment.pk]).changed == 1
    assert sample("shop_reconciliation_corrections_total") == before + 1
    assert payments_check([payment.pk]).changed == 0
    assert sample("shop_reconciliation_corrections_total") == before + 1
