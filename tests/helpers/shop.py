"""The storefront as the tests drive it: shoppers' browsers (Django test clients) that fill a
cart, place an order and pay through the views; a paid order; and the shop's copy of the
provider's payment methods catalogue."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.contrib.messages import get_messages
from django.contrib.sessions.backends.base import SessionBase
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from checkout.models import Order, Product
from checkout.orders.rules import order_sync_status
from tests.factories import OrderFactory, provider_payment
from tests.helpers.provider import Api, decimal_json

# What a shopper types into the checkout form.
CUSTOMER: dict[str, str] = {
    "first_name": "Ana",
    "last_name": "Pérez",
    "email": "ana@example.com",
    "phone": "55 1234 5678",
    "street": "Avenida Juárez",
    "number": "12",
    "colony": "Centro",
    "city": "Puebla",
    "state": "Puebla",
    "postal_code": "72000",
    "country": "MX",
}


def shopper(**defaults: Any) -> Client:
    """A browser of its own (own cookies, own session), on a host the provider accepts in URLs."""
    defaults.setdefault("SERVER_NAME", "localhost")
    return Client(**defaults)


def add_to_cart(client: Client, product: Product, quantity: int | str = 1) -> HttpResponse:
    return client.post(
        reverse("checkout:cart_add", kwargs={"slug": product.slug}), {"quantity": quantity}
    )


def cart_of(client: Client) -> dict[str, int]:
    return dict(client.session.get("cart") or {})


def place_order(
    client: Client, *lines: tuple[Product, int], customer: dict[str, str] | None = None
) -> Order:
    """Fill the cart and post the checkout form through the views; the placed order."""
    for product, quantity in lines:
        response = add_to_cart(client, product, quantity)
        assert response.status_code == 302
        assert response["Location"] == reverse("checkout:cart"), error_messages(response)
    response = client.post(reverse("checkout:checkout"), customer or CUSTOMER)
    assert response.status_code == 302, response.context and response.context["form"].errors
    reference = response["Location"].rstrip("/").split("/")[-2]
    assert response["Location"] == reverse("checkout:pay", kwargs={"reference": reference})
    return Order.objects.get(reference=reference)


def own(client: Client, order: Order) -> Client:
    """Make `order` one that this browser session placed."""
    session = client.session
    session["orders"] = [*session.get("orders", []), order.reference]
    keep_session(client, session)
    return client


def keep_session(client: Client, session: SessionBase) -> None:
    """Save a session changed outside a request and give the browser its cookie (a shopper's
    session is the cookie's value itself: it changes with what it holds)."""
    session.save()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key


def error_messages(response: HttpResponse) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "error"]


def send_creates() -> None:
    """Send, here and now, the create of each attempt stored and not yet sent, as its task does
    on a worker (what the task queues on commit is left to the test's own capture)."""
    from payments.models import Payment
    from payments.statuses import IN_FLIGHT
    from payments.tasks import payment_send_create_task

    waiting = Payment.objects.filter(status__in=IN_FLIGHT).exclude(create_request="")
    for pk in waiting.order_by("pk").values_list("pk", flat=True):
        payment_send_create_task.apply(args=[pk])


@contextmanager
def creates_sent_here() -> Iterator[None]:
    """Within: the creates that requests queue are not published to the broker; on leaving,
    they are sent here and now (`send_creates`)."""
    from django.db import connection

    start = len(connection.run_on_commit)
    yield
    del connection.run_on_commit[start:]  # their publishing: done here instead
    send_creates()


def paid_order(shop: Api, *lines: tuple[Product, int]) -> Order:
    """An order of `lines` paid with 4242 (`provider_payment`: held with manual capture, charged
    with automatic, as the settings say; the sandbox notifies the shop's receiver), its status
    synced as its task would."""
    from django.conf import settings

    # The products as stored, as checkout reads them (a price given as text is a Decimal there).
    stored = tuple((Product.objects.get(pk=product.pk), quantity) for product, quantity in lines)
    order = OrderFactory(lines=stored)
    payment = provider_payment(
        shop, order=order, capture_method=settings.PAYMENTS_CAPTURE_METHOD, webhook_url=None
    )
    assert payment.status in ("approved", "authorized"), payment.status
    order_sync_status(order_id=order.pk)
    order.refresh_from_db()
    return order


def remote_of(shop: Api, order: Order) -> dict[str, Any]:
    """The sandbox's payment of `order` (there is one)."""
    listed = shop.get("/_sandbox/payments", params={"external_reference": order.reference})
    [remote] = decimal_json(listed)
    return remote


def fill_catalogue() -> None:
    """Store the payment methods catalogue as the refresh task does, from the provider the
    settings name (the pages read only the stored copy)."""
    from payments.catalogue.calls import payment_methods_refresh

    assert payment_methods_refresh() is not None, "the provider gave no catalogue"
