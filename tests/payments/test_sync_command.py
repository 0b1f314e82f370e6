"""`manage.py payments_sync`: staff read payments by provider id, as a notification would."""

from __future__ import annotations

import uuid
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from payments.models import Payment
from payments.statuses import PaymentStatus
from tests.factories import provider_payment
from tests.helpers.provider import Api

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]


def test_it_reports_each_payment_it_reads(provider: Api) -> None:
    """Given a payment the shop holds and an id the provider does not know, the command applies
    the first and reports both, one line each."""
    payment = provider_payment(provider, capture_method="manual")
    provider.patch(
        f"/payments/{payment.provider_id}",
        {"status": "cancelled"},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    unknown = str(uuid.uuid4())
    out = StringIO()

    call_command("payments_sync", payment.provider_id, unknown, stdout=out)

    lines = out.getvalue().splitlines()
    assert lines == [
        f"{payment.provider_id}: updated -> payment #{payment.pk}",
        f"{unknown}: not_found (the provider has no payment with this id)",
    ]
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.CANCELLED


def test_it_fails_when_the_provider_cannot_be_read(provider: Api, settings: Any) -> None:
    """With the provider unreachable the command says so and exits with an error; nothing
    changes."""
    payment = provider_payment(provider)
    settings.PAYMENTS_API_BASE_URL = "http://127.0.0.1:9"
    err = StringIO()

    with pytest.raises(CommandError, match="1 of 1 could not be read"):
        call_command("payments_sync", payment.provider_id, stderr=err)

    assert "not reachable" in err.getvalue()
    assert Payment.objects.get(pk=payment.pk).status == PaymentStatus.APPROVED
