"""Helpers of the storefront tests (the shop's own, for every app, are in tests/shop.py)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import requests
from django.contrib.messages import get_messages
from django.http import HttpResponse

from checkout.models import Order, Product
from tests.html_tree import html
from tests.shop import creates_sent_here
from tests.support import Api, decimal_json

# An order's reference: ORD- and five of Crockford's base-32 digits.
REFERENCE_RE = re.compile(r"^ORD-[0-9A-HJKMNP-TV-Z]{5}$")


def all_messages(response: HttpResponse) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def header_cart_count(response: HttpResponse) -> int:
    return int(html(response).one("a", cls="cart-link").one("span", cls="count").text)


def pay_order(order: Order, *, attempt_id: str, card_token: str, **options: Any) -> Any:
    """Pay `order` through the payment page's service and send the create as its task does:
    the outcome the page then reads."""
    from checkout.services import order_check_payment, order_pay

    with creates_sent_here():
        stored = order_pay(
            order=order,
            card_token=card_token,
            attempt_id=attempt_id,
            prevention_data=options.pop("prevention_data", {}),
            return_url=options.pop("return_url", ""),
            **options,
        )
    assert stored.result in ("processing", "unknown", "failed"), stored
    if stored.result != "processing":
        return stored
    return order_check_payment(order=order, refresh=False)


def open_challenge(provider: Any, order: Order) -> Any:
    """Pay `order` with the 3-D Secure test card through the payment page's service: the
    outcome, pending, with its challenge's address (the challenge is left open)."""
    from tests.support import THREE_DS

    pending = pay_order(order, card_token=provider.card_token(THREE_DS)["id"], attempt_id="a" * 32)
    assert pending.result == "pending", pending
    return pending


def expect_given_back(provider: Any, order: Order, capture: str, charged: Decimal) -> None:
    """The order's latest payment was given back whole: its hold released, or (automatic
    capture) the `charged` amount refunded, which the provider reports as cancelled (a void on
    the day)."""
    from checkout.selectors import order_payments
    from payments.models import PaymentStatus

    payment = order_payments(order)[-1]
    assert payment.status == PaymentStatus.CANCELLED
    assert provider.payment(payment.provider_id)["status"] == "cancelled"
    if capture == "automatic":
        assert payment.refunded_amount == charged


def pass_challenge(pending: Any) -> None:
    """The shopper passes the challenge `open_challenge` left open, on the bank's page."""
    answer = requests.post(
        pending.three_ds_url, data={"action": "submit", "code": "123456"}, timeout=10
    )
    assert answer.status_code == 200


def remote_of(shop: Api, order: Order) -> dict[str, Any]:
    """The sandbox's payment of `order` (there is one)."""
    listed = shop.get("/_sandbox/payments", params={"external_reference": order.reference})
    [remote] = decimal_json(listed)
    return remote


def stock(product: Product) -> int:
    """The product's stock as the database holds it now."""
    product.refresh_from_db()
    return product.stock
