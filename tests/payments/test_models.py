"""Both ledgers, a payment's (PaymentEvent) and an order's (OrderEvent), are records of what
happened: an entry is written once, and is never changed or deleted afterwards."""

from __future__ import annotations

from typing import Any

import pytest

from checkout.models import OrderEvent, OrderEventKind
from payments.models import PaymentEvent, PaymentEventKind
from tests.factories import OrderFactory, PaymentFactory

pytestmark = pytest.mark.django_db


def payment_entry() -> PaymentEvent:
    return PaymentEvent.objects.create(
        payment=PaymentFactory(), kind=PaymentEventKind.CREATED, new_status="approved"
    )


def order_entry() -> OrderEvent:
    return OrderEvent.objects.create(
        order=OrderFactory(), kind=OrderEventKind.SHIPPED, message="shipped"
    )


@pytest.mark.parametrize("make", [payment_entry, order_entry], ids=["payment", "order"])
def test_an_entry_is_written_once_and_never_changed_or_deleted(make: Any) -> None:
    """Given a ledger entry, saving it again or deleting it is refused, and it stays as it was
    written."""
    entry = make()
    written = {f.attname: getattr(entry, f.attname) for f in entry._meta.concrete_fields}
    entry.message = "rewritten"

    with pytest.raises(ValueError, match="append-only"):
        entry.save()
    with pytest.raises(ValueError, match="append-only"):
        entry.delete()

    stored = type(entry).objects.get(pk=entry.pk)
    assert {f.attname: getattr(stored, f.attname) for f in stored._meta.concrete_fields} == written
