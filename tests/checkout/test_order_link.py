"""An order the shopper can open anywhere: its signed link (/pedido/<reference>/<token>/),
"Mis pedidos" by email address, and a payment page that survives the browser (no-store, a paid
order's page instead, a pending 3-D Secure challenge opened again)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import requests
from django.contrib.sessions.backends.db import SessionStore
from django.core import mail
from django.http import Http404
from django.test import RequestFactory, override_settings
from django.urls import resolve, reverse

from checkout.links import order_link, order_link_path, order_token, token_matches
from checkout.models import Order, OrderStatus, Product
from checkout.ownership import linked_order
from payments.statuses import PaymentStatus
from tests.checkout.helpers import open_challenge
from tests.factories import OrderFactory, PaymentFactory, ProductFactory
from tests.helpers.html import html
from tests.helpers.provider import Api
from tests.helpers.shop import own, place_order, shopper


@pytest.fixture
def mug(db: None) -> Product:
    return ProductFactory(slug="taza", name="Taza de talavera", price=Decimal("289.00"), stock=9)


# --- The order's link -----------------------------------------------------------------------


def test_the_link_opens_the_order_in_a_browser_that_did_not_place_it(mug: Product) -> None:
    order = place_order(shopper(), (mug, 2))
    stranger = shopper()
    own_page = reverse("checkout:order", kwargs={"reference": order.reference})
    assert stranger.get(own_page).status_code == 404

    response = stranger.get(order_link_path(order.reference))
    assert response.status_code == 200
    page = html(response)
    assert order.reference in page.one("h1").text
    assert "Taza de talavera" in page.one("table", cls="lines").text
    assert "no-store" in response["Cache-Control"]
    # That browser may now follow and pay it like the one that placed it.
    assert stranger.get(own_page).status_code == 200
    pay = stranger.get(reverse("checkout:pay", kwargs={"reference": order.reference}))
    assert pay.status_code == 200


@pytest.mark.parametrize(
    "token",
    ["x", "wrong-token", "A" * 27, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "%20"],
)
def test_a_wrong_token_opens_nothing(mug: Product, token: str) -> None:
    order = place_order(shopper(), (mug, 1))
    client = shopper()
    url = f"/pedido/{order.reference}/{token}/"
    # The router hands the token to the view: the 404 below is the token check's own.
    assert resolve(url).url_name == "order_link"
    assert client.get(url).status_code == 404
    assert client.get(reverse("checkout:order", args=[order.reference])).status_code == 404


def test_an_empty_token_opens_nothing(mug: Product, rf: RequestFactory) -> None:
    """No address carries an empty token (the router answers /pedido/<reference>// with 404
    before any view), so the check is asked directly: it refuses, and the browser is not
    given the order."""
    order = place_order(shopper(), (mug, 1))
    request = rf.get("/")
    request.session = SessionStore()
    with pytest.raises(Http404):
        linked_order(request, order.reference, "")
    assert not token_matches(order.reference, "")
    assert not request.session.keys()


def test_a_token_opens_only_its_own_order(mug: Product) -> None:
    first = place_order(shopper(), (mug, 1))
    second = place_order(shopper(), (mug, 1))
    client = shopper()
    url = f"/pedido/{second.reference}/{order_token(first.reference)}/"
    assert client.get(url).status_code == 404
    assert client.get(f"/pedido/ORD-ZZZZZ/{order_token('ORD-ZZZZZ')}/").status_code == 404


def test_tokens_depend_on_the_secret_key_and_survive_its_rotation(settings: Any) -> None:
    settings.SECRET_KEY = "old-key-" + "x" * 50
    old = order_token("ORD-ABCDE")
    assert len(old) >= 40
    settings.SECRET_KEY = "new-key-" + "y" * 50
    assert order_token("ORD-ABCDE") != old
    assert not token_matches("ORD-ABCDE", old)
    settings.SECRET_KEY_FALLBACKS = ["old-key-" + "x" * 50]
    assert token_matches("ORD-ABCDE", old)
    assert not token_matches("ORD-ABCDF", old)


@override_settings(SHOP_BASE_URL="https://tienda.example/")
def test_the_mailed_link_is_absolute_on_the_shops_address() -> None:
    assert order_link("ORD-ABCDE") == (
        f"https://tienda.example/pedido/ORD-ABCDE/{order_token('ORD-ABCDE')}/"
    )


# --- Mis pedidos ----------------------------------------------------------------------------


def _ask(client: Any, email: str) -> Any:
    return client.post(reverse("checkout:my_orders"), {"email": email})


def test_my_orders_says_the_same_whether_the_address_has_orders_or_not(
    mug: Product, run_queued: Any
) -> None:
    first = OrderFactory(lines=[(mug, 1)], email="ana@example.com")
    second = OrderFactory(lines=[(mug, 2)], email="ana@example.com")
    OrderFactory(lines=[(mug, 1)], email="otra@example.com")
    answers = []
    for address in ("ana@example.com", "nadie@example.com"):
        client = shopper()
        response = _ask(client, address)
        assert response.status_code == 302
        assert response["Location"] == reverse("checkout:my_orders")
        answers.append(html(client.get(response["Location"])).one(cls="messages").text)
    assert answers[0].replace("ana@", "X@") == answers[1].replace("nadie@", "X@")

    mail.outbox.clear()
    run_queued()
    [sent] = mail.outbox
    assert sent.to == ["ana@example.com"]
    for order in (first, second):
        assert order_link(order.reference) in sent.body
    assert "otra@example.com" not in sent.body


@pytest.mark.parametrize(
    ("email", "message"),
    [("", "Escribe tu correo electrónico."), ("ana", "Escribe un correo como ana@example.com.")],
)
def test_my_orders_refuses_what_is_not_an_address(
    db: None, email: str, message: str, run_queued: Any
) -> None:
    response = _ask(shopper(), email)
    assert response.status_code == 200
    assert message in html(response).one(id="error-summary").text
    assert run_queued() == []


def test_my_orders_is_rate_limited(db: None, settings: Any, run_queued: Any) -> None:
    settings.SHOP_ORDER_LISTS_PER_SESSION = "2/h"
    client = shopper()
    assert _ask(client, "ana@example.com").status_code == 302
    assert _ask(client, "ana@example.com").status_code == 302
    response = _ask(client, "ana@example.com")
    assert response.status_code == 429
    assert "Demasiadas solicitudes" in html(response).one(id="error-summary").text
    assert len(run_queued()) == 2


# --- A payment page that survives the browser -----------------------------------------------


def test_the_payment_page_is_never_stored_by_the_browser(mug: Product) -> None:
    client = shopper()
    order = place_order(client, (mug, 1))
    response = client.get(reverse("checkout:pay", kwargs={"reference": order.reference}))
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]


@pytest.mark.parametrize("status", [PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED])
def test_the_payment_page_of_a_paid_order_sends_to_the_order(mug: Product, status: str) -> None:
    """Also before the order's own sync has run (the shopper presses back at once)."""
    client = shopper()
    order = place_order(client, (mug, 1))
    PaymentFactory(order=order, status=status)
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT
    response = client.get(reverse("checkout:pay", kwargs={"reference": order.reference}))
    assert response.status_code == 302
    assert response["Location"] == reverse("checkout:order", args=[order.reference])


@pytest.mark.django_db(transaction=True)
def test_a_reload_finds_the_challenge_the_provider_still_has_pending(
    provider: Api, run_queued: Any
) -> None:
    """A reload opens again the challenge the shop last heard is pending, and queues a read of
    the payment: once the read finds the challenge over at the provider, a reload opens
    nothing."""
    mug = ProductFactory(price=Decimal("289.00"), stock=3)
    client = shopper()
    order = place_order(client, (mug, 1))
    pending = open_challenge(provider, order)
    response = own(client, order).get(reverse("checkout:pay", args=[order.reference]))
    section = html(response).one(id="payment")
    assert section.attrs["data-resume-payment"] == pending.payment_id
    assert section.attrs["data-resume-url"] == pending.three_ds_url

    # The provider no longer has it pending (failed): the page answers from the shop's records
    # until the queued read has run, then has nothing to open again.
    answer = requests.post(pending.three_ds_url, data={"action": "cancel"}, timeout=10)
    assert answer.status_code == 200
    section = html(client.get(reverse("checkout:pay", args=[order.reference]))).one(id="payment")
    assert section.attrs["data-resume-payment"] == pending.payment_id
    assert "payments.tasks.payment_refresh_task" in run_queued()
    section = html(client.get(reverse("checkout:pay", args=[order.reference]))).one(id="payment")
    assert "data-resume-payment" not in section.attrs
