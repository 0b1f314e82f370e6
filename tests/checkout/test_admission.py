"""The sale day's admission (checkout.admission): at most SHOP_ADMISSION_LIMIT shoppers shop at
once; the others get a waiting page that says where they stand, in their language, and are let
in by turn as places free (an order placed, a shopper gone silent). Paying is never held back,
and a Redis that is away lets everyone in."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkout import admission
from checkout.models import Product
from tests.helpers.shop import place_order, shopper

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def limit_two(settings: Any) -> None:
    settings.SHOP_ADMISSION_LIMIT = 2
    settings.SHOP_ADMISSION_IDLE_SECONDS = 120
    settings.SHOP_ADMISSION_REFRESH_SECONDS = 3


def position(response: Any) -> int | None:
    value = response.headers.get("X-Shop-Queue-Position")
    return int(value) if value else None


@pytest.mark.usefixtures("limit_two")
def test_past_the_limit_shoppers_wait_their_turn_and_are_let_in_by_it(taza: Product) -> None:
    # Given two shoppers in the shop (the limit)
    first, second, third, fourth = (shopper() for _ in range(4))
    for browser in (first, second):
        assert position(browser.get(reverse("checkout:home"))) is None

    # When two more come: they wait, third first, on a page that says so and asks again
    waiting = third.get(reverse("checkout:home"))
    assert (waiting.status_code, position(waiting)) == (200, 1)
    assert waiting.headers["Refresh"] == "3"
    assert "no-store" in waiting.headers["Cache-Control"]
    text = waiting.content.decode()
    assert "Hay una fila corta para comprar" in text and "Sigues tú." in text
    assert taza.name not in text  # not the shop's page
    assert position(fourth.get(reverse("checkout:product", args=[taza.slug]))) == 2
    assert position(third.get(reverse("checkout:home"))) == 1  # asking again keeps its place

    # And the shoppers let in keep shopping
    assert position(first.get(reverse("checkout:cart"))) is None

    # When the first places its order (then pays: never held back)
    order = place_order(first, (taza, 1))
    assert position(first.get(reverse("checkout:pay", args=[order.reference]))) is None

    # Then the third is let in, and the fourth is next
    let_in = third.get(reverse("checkout:home"))
    assert (let_in.status_code, position(let_in)) == (200, None)
    assert taza.name in let_in.content.decode()
    assert position(fourth.get(reverse("checkout:home"))) == 1


@pytest.mark.usefixtures("limit_two", "in_english")
def test_the_waiting_page_speaks_english_and_counts(taza: Product) -> None:
    browsers = [shopper() for _ in range(4)]
    answers = [b.get(reverse("checkout:home"), HTTP_ACCEPT_LANGUAGE="en") for b in browsers]
    assert [position(a) for a in answers] == [None, None, 1, 2]
    text = answers[3].content.decode()
    assert "There is a short queue to shop" in text
    assert "Your place in the queue: 2." in text
    assert "fila" not in text


@pytest.mark.usefixtures("limit_two")
def test_a_silent_shopper_gives_its_place_up(settings: Any, taza: Product) -> None:
    settings.SHOP_ADMISSION_IDLE_SECONDS = 1
    first, second, third = shopper(), shopper(), shopper()
    first.get(reverse("checkout:home"))
    second.get(reverse("checkout:home"))
    assert position(third.get(reverse("checkout:home"))) == 1
    time.sleep(1.1)
    second.get(reverse("checkout:home"))  # the second is still there; the first went quiet
    assert position(third.get(reverse("checkout:home"))) is None


@pytest.mark.usefixtures("limit_two")
def test_a_waiting_browser_that_left_leaves_the_queue(settings: Any, taza: Product) -> None:
    settings.SHOP_ADMISSION_REFRESH_SECONDS = 1
    in_shop = [shopper(), shopper()]
    for browser in in_shop:
        browser.get(reverse("checkout:home"))
    gone, staying = shopper(), shopper()
    assert position(gone.get(reverse("checkout:home"))) == 1
    assert position(staying.get(reverse("checkout:home"))) == 2
    time.sleep(3.1)  # the first waiting browser closed its page: it asks no more
    assert position(staying.get(reverse("checkout:home"))) == 1


@pytest.mark.usefixtures("limit_two")
def test_the_turn_is_a_cookie_of_its_own_not_a_session(taza: Product) -> None:
    browser = shopper()
    response = browser.get(reverse("checkout:home"))
    cookie = response.cookies[admission.COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and len(cookie.value) >= 20
    again = browser.get(reverse("checkout:home"))
    assert admission.COOKIE not in again.cookies  # set once


@pytest.mark.usefixtures("limit_two")
def test_redis_away_lets_everyone_in(monkeypatch: pytest.MonkeyPatch, taza: Product) -> None:
    def away() -> Any:
        raise ConnectionError("Redis is away")

    monkeypatch.setattr(admission, "_redis", away)
    answers = [shopper().get(reverse("checkout:home")) for _ in range(5)]
    assert [(a.status_code, position(a)) for a in answers] == [(200, None)] * 5


def test_no_limit_lets_everyone_in(settings: Any, taza: Product) -> None:
    settings.SHOP_ADMISSION_LIMIT = 0
    answers = [shopper().get(reverse("checkout:home")) for _ in range(5)]
    assert [position(a) for a in answers] == [None] * 5


@pytest.mark.usefixtures("limit_two")
def test_admin_and_health_are_never_held_back(admin_user: Any, taza: Product) -> None:
    for browser in (shopper(), shopper()):
        browser.get(reverse("checkout:home"))
    staff = Client()
    staff.force_login(admin_user)
    assert position(staff.get("/admin/")) is None
    assert position(shopper().get("/healthz")) is None


@pytest.mark.usefixtures("limit_two")
def test_metrics_say_how_many_are_in_and_waiting(settings: Any, taza: Product) -> None:
    from monitoring.gauges import ShopStateCollector

    for _ in range(5):
        shopper().get(reverse("checkout:home"))
    families = {f.name: f for f in ShopStateCollector().collect()}
    samples = {s.labels["state"]: s.value for s in families["shop_admission_shoppers"].samples}
    assert samples == {"in": 2.0, "waiting": 3.0}
