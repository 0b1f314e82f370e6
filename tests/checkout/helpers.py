"""Helpers of the storefront tests (the shop's own, for every folder, are in
tests/helpers/shop.py)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import requests
from django.contrib.messages import get_messages
from django.core.mail.backends.locmem import EmailBackend
from django.http import HttpResponse

from checkout.models import Order, Product
from tests.factories import provider_payment
from tests.helpers.html import html
from tests.helpers.provider import THREE_DS, VISA, Api

# An order's reference: ORD- and five of Crockford's base-32 digits.
REFERENCE_RE = re.compile(r"^ORD-[0-9A-HJKMNP-TV-Z]{5}$")


def all_messages(response: HttpResponse) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def header_cart_count(response: HttpResponse) -> int:
    return int(html(response).one("a", cls="cart-link").one("span", cls="count").text)


def pay_order(provider: Api, order: Order, number: str = VISA) -> Any:
    """Pay `order` with the card `number` as its payment page does (`provider_payment`: held or
    charged as the settings say; the sandbox notifies the shop's receiver): the outcome the page
    then reads."""
    from django.conf import settings

    from checkout.paying.rules import order_check_payment

    provider_payment(
        provider,
        order=order,
        number=number,
        capture_method=settings.PAYMENTS_CAPTURE_METHOD,
        prevention_data={},
        return_url="",
        webhook_url=None,
    )
    return order_check_payment(order=order, refresh=False)


def open_challenge(provider: Any, order: Order) -> Any:
    """Pay `order` with the 3-D Secure test card (`pay_order`): the outcome, pending, with its
    challenge's address (the challenge is left open)."""
    pending = pay_order(provider, order, THREE_DS)
    assert pending.result == "pending", pending
    return pending


def expect_given_back(provider: Any, order: Order, capture: str, charged: Decimal) -> None:
    """The order's latest payment was given back whole: its hold released, or (automatic
    capture) the `charged` amount refunded, which the provider reports as cancelled (a void on
    the day)."""
    from checkout.orders.selectors import order_payments
    from payments.statuses import PaymentStatus

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


def stock(product: Product) -> int:
    """The product's stock as the database holds it now."""
    product.refresh_from_db()
    return product.stock


class FailsOnce(EmailBackend):
    """A mail server that refuses the first mail it is given, then takes them."""

    failed = False

    def send_messages(self, messages: Any) -> int:
        if not FailsOnce.failed:
            FailsOnce.failed = True
            raise ConnectionRefusedError("the mail server is down")
        return super().send_messages(messages)
