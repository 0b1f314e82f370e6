"""What staff do with an order, against the live sandbox: ship (capturing a held payment in full,
or for the items shipped with the rest of the hold released), cancel (the hold cancelled or the
charge refunded, the items back in stock), refund (with returned items back in stock), refresh;
each refused readably when the order or its payment no longer allows it, and recorded with who
did it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from checkout.fulfilment.calls import order_cancel, order_refresh, order_refund, order_ship
from checkout.fulfilment.rules import OrderActionRefused
from checkout.models import Fulfilment, OrderEvent, OrderStatus, Product
from checkout.orders.rules import order_sync_status
from payments.models import Payment, PaymentEvent
from tests.checkout.helpers import stock
from tests.helpers.provider import Api
from tests.helpers.shop import paid_order, place_order, remote_of, shopper

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox, pytest.mark.usefixtures("in_english")]


@pytest.fixture
def clerk(db: None) -> Any:
    return get_user_model().objects.create_user("clerk", password="a-long-test-password")


# --- Ship -------------------------------------------------------------------------------------


def test_shipping_everything_captures_the_hold_in_full(
    shop: Api, blusa: Product, taza: Product, clerk: Any
) -> None:
    order = paid_order(shop, (blusa, 1), (taza, 2))
    assert order.status == OrderStatus.AUTHORIZED

    shipment = order_ship(order_id=order.pk, quantities=None, actor=clerk)

    assert (shipment.charged, shipment.released, shipment.complete) == (
        Decimal("1868.00"),
        Decimal("0.00"),
        True,
    )
    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.SHIPPED
    assert remote_of(shop, order)["status"] == "approved"
    assert remote_of(shop, order)["captured_amount"] == Decimal("1868.00")
    event = OrderEvent.objects.get(order=order, kind="shipped")
    assert event.actor == clerk
    assert PaymentEvent.objects.filter(kind="captured", actor=clerk).count() == 1
    assert (stock(blusa), stock(taza)) == (4, 8)


def test_a_partial_shipment_captures_the_items_shipped_and_releases_the_rest(
    shop: Api, blusa: Product, taza: Product, clerk: Any
) -> None:
    """Shipping the blusa of a blusa + 2 tazas order captures $1,290.00, releases $578.00, and
    puts the tazas (which will not ship: their money is released) back in stock."""
    order = paid_order(shop, (blusa, 1), (taza, 2))
    blusa_item = order.items.get(product=blusa)

    shipment = order_ship(order_id=order.pk, quantities={blusa_item.pk: 1}, actor=clerk)

    assert (shipment.charged, shipment.released) == (Decimal("1290.00"), Decimal("578.00"))
    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.PARTIALLY_SHIPPED
    remote = remote_of(shop, order)
    assert (remote["status"], remote["captured_amount"]) == ("approved", Decimal("1290.00"))
    assert (stock(blusa), stock(taza)) == (4, 10)
    assert [i.quantity_restocked for i in order.items.order_by("pk")] == [0, 2]
    shipped = OrderEvent.objects.get(order=order, kind="shipped").message
    assert "$1,290.00" in shipped and "$578.00" in shipped


def test_shipping_a_charged_order_records_the_shipment_only(
    shop: Api, settings: Any, blusa: Product, taza: Product, clerk: Any
) -> None:
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    order = paid_order(shop, (blusa, 1), (taza, 2))
    taza_item = order.items.get(product=taza)

    first = order_ship(order_id=order.pk, quantities={taza_item.pk: 1}, actor=clerk)
    second = order_ship(order_id=order.pk, quantities=None, actor=clerk)

    assert (first.charged, first.complete, second.charged, second.complete) == (
        Decimal("0.00"),
        False,
        Decimal("0.00"),
        True,
    )
    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.SHIPPED
    assert [i.quantity_shipped for i in order.items.order_by("pk")] == [1, 2]
    assert remote_of(shop, order)["captured_amount"] == Decimal("1868.00")


@pytest.mark.parametrize(
    "quantities", [{"taza": 3}, {"taza": 0}, {"other": 1}], ids=["too many", "none", "not its"]
)
def test_shipping_more_than_is_left_or_nothing_is_refused(
    shop: Api, blusa: Product, taza: Product, clerk: Any, quantities: dict[str, int]
) -> None:
    order = paid_order(shop, (blusa, 1), (taza, 2))
    ids = {"taza": order.items.get(product=taza).pk, "other": 987654}
    chosen = {ids[name]: count for name, count in quantities.items()}

    with pytest.raises(OrderActionRefused):
        order_ship(order_id=order.pk, quantities=chosen, actor=clerk)

    assert remote_of(shop, order)["status"] == "authorized"
    assert not OrderEvent.objects.filter(order=order).exists()


def test_an_order_without_a_held_or_charged_payment_cannot_ship(
    shop: Api, blusa: Product, clerk: Any
) -> None:
    order = place_order(shopper(), (blusa, 1))

    with pytest.raises(OrderActionRefused) as refused:
        order_ship(order_id=order.pk, quantities=None, actor=clerk)

    assert "cannot ship" in refused.value.message


def test_the_providers_answer_decides_a_capture(shop: Api, blusa: Product, clerk: Any) -> None:
    """Cancelled at the provider behind the shop's back, the hold cannot be captured: the
    provider's refusal is the message, nothing is recorded as shipped."""
    order = paid_order(shop, (blusa, 1))
    payment = Payment.objects.get(external_reference=order.reference)
    cancelled = shop.patch(f"/payments/{payment.provider_id}", {"status": "cancelled"})
    assert cancelled.status_code == 200, cancelled.text

    with pytest.raises(OrderActionRefused):
        order_ship(order_id=order.pk, quantities=None, actor=clerk)

    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.UNFULFILLED
    assert not OrderEvent.objects.filter(order=order, kind="shipped").exists()


# --- Cancel -----------------------------------------------------------------------------------


def test_cancelling_a_held_order_cancels_the_hold_and_restocks(
    shop: Api, blusa: Product, taza: Product, clerk: Any
) -> None:
    order = paid_order(shop, (blusa, 1), (taza, 2))
    assert (stock(blusa), stock(taza)) == (4, 8)

    order_cancel(order_id=order.pk, actor=clerk)
    order_sync_status(order_id=order.pk)  # as the payment's task does: nothing goes back twice

    order.refresh_from_db()
    assert (order.status, order.fulfilment) == (OrderStatus.CANCELLED, Fulfilment.CANCELLED)
    assert remote_of(shop, order)["status"] == "cancelled"
    assert (stock(blusa), stock(taza)) == (5, 10)
    assert OrderEvent.objects.get(order=order, kind="cancelled").actor == clerk


def test_cancelling_a_charged_order_refunds_it_in_full(
    shop: Api, settings: Any, blusa: Product, clerk: Any
) -> None:
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    order = paid_order(shop, (blusa, 2))

    order_cancel(order_id=order.pk, actor=clerk)

    remote = remote_of(shop, order)
    assert remote["amount_refunded"] == Decimal("2580.00")
    assert stock(blusa) == 5
    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.CANCELLED


def test_a_shipped_order_cannot_be_cancelled(shop: Api, blusa: Product, clerk: Any) -> None:
    order = paid_order(shop, (blusa, 1))
    order_ship(order_id=order.pk, quantities=None, actor=clerk)

    with pytest.raises(OrderActionRefused) as refused:
        order_cancel(order_id=order.pk, actor=clerk)

    assert "refund" in refused.value.message
    assert stock(blusa) == 4


# --- Refund and refresh -----------------------------------------------------------------------


def test_a_partial_refund_with_a_returned_item(
    shop: Api, settings: Any, blusa: Product, taza: Product, clerk: Any
) -> None:
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    order = paid_order(shop, (blusa, 1), (taza, 2))
    taza_item = order.items.get(product=taza)

    refund = order_refund(
        order_id=order.pk,
        amount=Decimal("289.00"),
        reason="Taza rota",
        returned={taza_item.pk: 1},
        actor=clerk,
    )

    assert (refund.amount, refund.actor) == (Decimal("289.00"), clerk)
    assert remote_of(shop, order)["amount_refunded"] == Decimal("289.00")
    assert stock(taza) == 9
    assert OrderEvent.objects.filter(order=order, kind="refunded", actor=clerk).exists()


def test_refunding_more_than_was_charged_is_refused_by_the_payment(
    shop: Api, settings: Any, blusa: Product, clerk: Any
) -> None:
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    order = paid_order(shop, (blusa, 1))

    with pytest.raises(OrderActionRefused):
        order_refund(
            order_id=order.pk, amount=Decimal("1290.01"), reason="", returned={}, actor=clerk
        )

    assert remote_of(shop, order)["amount_refunded"] == Decimal("0")


def test_refresh_reads_the_orders_payments(shop: Api, blusa: Product, clerk: Any) -> None:
    order = paid_order(shop, (blusa, 1))
    payment = Payment.objects.get(external_reference=order.reference)
    shop.patch(f"/payments/{payment.provider_id}", {"status": "cancelled"})

    assert order_refresh(order_id=order.pk, actor=clerk) == 1

    payment.refresh_from_db()
    assert payment.status == "cancelled"
