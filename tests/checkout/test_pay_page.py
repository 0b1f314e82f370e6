"""The payment page: the provider's card methods for the order's total, and when it cannot pay."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

import payments.catalogue.rules
from checkout.models import Order, OrderStatus, Product
from payments.catalogue.rules import CATALOGUE_CACHE_KEY, payment_methods_for
from payments.provider.client import PaymentsClient
from payments.task_names import METHODS_REFRESH_TASK as REFRESH_TASK
from payments.tasks import payment_methods_refresh_task
from tests.factories import OrderFactory
from tests.helpers.broker import take_queued
from tests.helpers.html import Node, html
from tests.helpers.provider import PUBLIC_KEY, Api
from tests.helpers.servers import free_port
from tests.helpers.shop import own, place_order, shopper

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]


def pay_page(client: Client, order: Order) -> Any:
    return client.get(reverse("checkout:pay", args=[order.reference]))


def methods(page: Node) -> dict[str, Node]:
    items = page.one("ul", cls="methods").find_all("li", cls="method")
    return {li.attrs["data-method"]: li for li in items if "data-method" in li.attrs}


def available(li: Node) -> bool:
    return "unavailable" not in li.classes


def order_of(client: Client, make_product, price: str, quantity: int = 1) -> Order:
    product: Product = make_product(price=price, stock=5)
    return place_order(client, (product, quantity))


def without_catalogue(page: Node) -> bool:
    """The page says the methods cannot be shown, and offers no card form."""
    items = page.one("ul", cls="methods").find_all("li")
    return (
        len(items) == 1
        and "data-method" not in items[0].attrs
        and page.find("button", id="pay-button") is None
    )


@pytest.fixture
def catalogue_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every read of the provider's catalogue (the real call is made), by country."""
    reads: list[str] = []
    original = PaymentsClient.list_payment_methods

    def counting(self: PaymentsClient, country: str = "MX") -> Any:
        reads.append(country)
        return original(self, country)

    monkeypatch.setattr(PaymentsClient, "list_payment_methods", counting)
    yield reads


def test_pay_page_lists_the_card_methods(provider: Api, browser: Client, make_product) -> None:
    """The page shows the catalogue's cards as available, cash as unavailable, and a pay button."""
    order = order_of(browser, make_product, "289.00", 2)
    response = pay_page(browser, order)
    assert response.status_code == 200
    page = html(response)
    found = methods(page)
    assert set(found) == {"visa", "master", "amex", "cashpay"}
    for card in ("visa", "master", "amex"):
        assert available(found[card]), card
        assert not found[card].find_all("span", cls="reason")
        assert found[card].one("span", cls="name").text
    assert not available(found["cashpay"])
    assert found["cashpay"].one("span", cls="reason").text
    bounds = found["amex"].one("span", cls="range").text.split()
    assert (bounds[0], bounds[-1]) == ("$10.00", "$150,000.00")
    button = page.one("button", id="pay-button")
    assert "$578.00" in button.text
    section = page.one("section", id="payment")
    assert section.attrs["data-public-key"] == PUBLIC_KEY
    assert section.attrs["data-attempt-url"] == reverse(
        "checkout:pay_attempt", args=[order.reference]
    )
    assert section.attrs["data-status-url"] == reverse(
        "checkout:payment_status", args=[order.reference]
    )
    assert section.attrs["data-csrf"]
    assert page.find("script", src=f"{provider.base_url}/sdk/v1/checkout.js") is not None
    page.one("dialog", id="threeds-dialog")


def test_amex_unavailable_above_its_maximum(provider: Api, browser: Client, make_product) -> None:
    """A total above American Express's maximum (150,000.00) marks it unavailable, with a reason."""
    order = order_of(browser, make_product, "160000.00")
    page = html(pay_page(browser, order))
    found = methods(page)
    assert not available(found["amex"])
    assert found["amex"].one("span", cls="reason").text
    assert available(found["visa"])
    assert available(found["master"])
    page.one("button", id="pay-button")


def test_amex_available_at_exactly_its_maximum(
    provider: Api, browser: Client, make_product
) -> None:
    """The maximum itself is accepted (2 rebozos of 75,000.00 make 150,000.00)."""
    order = order_of(browser, make_product, "75000.00", 2)
    assert available(methods(html(pay_page(browser, order)))["amex"])


def test_total_above_every_card_has_no_pay_button(
    provider: Api, browser: Client, make_product
) -> None:
    """When no card accepts the total, every method is unavailable and there is no pay button."""
    order = order_of(browser, make_product, "300000.01")
    page = html(pay_page(browser, order))
    assert not any(available(li) for li in methods(page).values())
    assert page.find("button", id="pay-button") is None
    assert page.one("section", id="payment").find_all("p", cls="error")
    assert not page.find_all("script", src=f"{provider.base_url}/sdk/v1/checkout.js")


def test_methods_for_total_as_the_service_sees_them(provider: Api) -> None:
    """payment_methods_for gives each method's bounds and availability for the total."""
    from decimal import Decimal

    options = {m.id: m for m in payment_methods_for(total=Decimal("160000.00"))}
    assert options["amex"].maximum == Decimal("150000.00")
    assert options["amex"].minimum == Decimal("10.00")
    assert (options["amex"].available, bool(options["amex"].reason)) == (False, True)
    assert (options["visa"].available, options["visa"].reason) == (True, "")
    assert options["cashpay"].available is False
    small = {m.id: m for m in payment_methods_for(total=Decimal("9.99"))}
    assert not any(m.available for m in small.values())


def test_provider_down_still_renders_with_a_notice(
    provider: Api, browser: Client, make_product, settings: Any
) -> None:
    """With no stored catalogue (the provider down: no refresh could store one) the page renders
    a notice instead of methods, and no button."""
    order = order_of(browser, make_product, "289.00")
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{free_port()}"
    cache.delete(CATALOGUE_CACHE_KEY)
    response = pay_page(browser, order)
    assert response.status_code == 200
    page = html(response)
    items = page.one("ul", cls="methods").find_all("li")
    assert len(items) == 1
    assert "unavailable" in items[0].classes
    assert "data-method" not in items[0].attrs
    assert len(items[0].text) > 10
    assert page.find("button", id="pay-button") is None
    assert not page.find_all("div", id="card-element")
    assert not [s for s in page.find_all("script") if "checkout.js" in s.attrs.get("src", "")]
    assert cache.get(CATALOGUE_CACHE_KEY) is None


def test_the_page_shows_the_stored_catalogue_without_the_provider(
    provider: Api, browser: Client, make_product, settings: Any, catalogue_reads: list[str]
) -> None:
    """Given the catalogue stored by the refresh, when the provider is away, then the page still
    shows its methods and the pay button, and never asks the provider."""
    order = order_of(browser, make_product, "289.00")
    assert cache.get(CATALOGUE_CACHE_KEY) is not None
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{free_port()}"

    page = html(pay_page(browser, order))

    assert set(methods(page)) == {"visa", "master", "amex", "cashpay"}
    page.one("button", id="pay-button")
    assert catalogue_reads == []


def test_a_page_without_the_stored_catalogue_queues_one_refresh_and_calls_no_provider(
    provider: Api,
    browser: Client,
    make_product,
    celery_app: Any,
    empty_broker: None,
    catalogue_reads: list[str],
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Given no stored catalogue (a fresh shop, or Redis emptied), when the payment page is
    loaded twice, then neither load calls the provider, both render without the catalogue, and
    exactly one refresh task is queued (the second load finds it on its way)."""
    order = order_of(browser, make_product, "289.00")
    take_queued(celery_app)
    cache.delete(CATALOGUE_CACHE_KEY)

    with django_capture_on_commit_callbacks(execute=True):  # as at the end of a request
        first = pay_page(browser, order)
        second = pay_page(browser, order)

    assert (first.status_code, second.status_code) == (200, 200)
    assert without_catalogue(html(first)) and without_catalogue(html(second))
    assert catalogue_reads == []
    assert [name for name, _args in take_queued(celery_app)] == [REFRESH_TASK]


def test_the_queued_refresh_stores_the_catalogue_and_the_next_page_shows_it(
    provider: Api,
    browser: Client,
    make_product,
    celery_app: Any,
    empty_broker: None,
    catalogue_reads: list[str],
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Given a page that found no stored catalogue and queued its refresh, when a worker runs
    the refresh task, then it reads the provider once and stores the catalogue, and the next
    page shows the methods and the pay button without calling the provider."""
    order = order_of(browser, make_product, "289.00")
    take_queued(celery_app)
    cache.delete(CATALOGUE_CACHE_KEY)
    with django_capture_on_commit_callbacks(execute=True):
        assert without_catalogue(html(pay_page(browser, order)))
    queued = [name for name, _args in take_queued(celery_app)]
    assert queued == [REFRESH_TASK]

    payment_methods_refresh_task.apply()  # as a worker runs it

    assert catalogue_reads == ["MX"]
    assert cache.get(CATALOGUE_CACHE_KEY) is not None
    with django_capture_on_commit_callbacks(execute=True):
        page = html(pay_page(browser, order))
    assert set(methods(page)) == {"visa", "master", "amex", "cashpay"}
    page.one("button", id="pay-button")
    assert catalogue_reads == ["MX"]
    assert take_queued(celery_app) == []


class BrokenCache:
    """A cache whose Redis is unreachable."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("Redis is down")

        return fail


def test_without_redis_the_page_renders_without_the_catalogue(
    provider: Api,
    browser: Client,
    make_product,
    monkeypatch: pytest.MonkeyPatch,
    catalogue_reads: list[str],
) -> None:
    """Given the cache (Redis) unreachable in a process that never read the catalogue, the
    payment page still renders (no 500), without the catalogue, and does not call the provider
    (a refresh could not store its answer)."""
    order = order_of(browser, make_product, "289.00")
    monkeypatch.setattr(payments.catalogue.rules._LastRead, "entries", None)
    monkeypatch.setattr(payments.catalogue.rules, "cache", BrokenCache())

    response = pay_page(browser, order)

    assert response.status_code == 200
    assert without_catalogue(html(response))
    assert catalogue_reads == []


def test_without_redis_the_page_shows_the_catalogue_the_process_read_last(
    provider: Api,
    browser: Client,
    make_product,
    monkeypatch: pytest.MonkeyPatch,
    catalogue_reads: list[str],
) -> None:
    """Given a process that showed the stored catalogue, when the cache (Redis) becomes
    unreachable, its payment page shows the same methods, and still calls no provider."""
    order = order_of(browser, make_product, "289.00")
    monkeypatch.setattr(payments.catalogue.rules._LastRead, "entries", None)
    before = html(pay_page(browser, order))
    monkeypatch.setattr(payments.catalogue.rules, "cache", BrokenCache())

    response = pay_page(browser, order)

    assert response.status_code == 200
    assert not without_catalogue(before)
    assert not without_catalogue(html(response))
    assert html(response).one("button", id="pay-button")
    assert catalogue_reads == []


@pytest.mark.parametrize(
    "closed",
    [OrderStatus.PAID, OrderStatus.AUTHORIZED, OrderStatus.CANCELLED, OrderStatus.REFUNDED],
)
def test_closed_orders_redirect_to_the_order_page(make_product, closed: str) -> None:
    """The pay page of a paid, held or closed order redirects to the order page."""
    order = OrderFactory(lines=[(make_product(stock=5), 1)], status=closed)
    browser = own(shopper(), order)
    response = pay_page(browser, order)
    assert response.status_code == 302
    assert response["Location"] == reverse("checkout:order", args=[order.reference])
    assert browser.get(response["Location"]).status_code == 200


@pytest.mark.parametrize(
    "payable",
    [OrderStatus.AWAITING_PAYMENT, OrderStatus.AWAITING_AUTHENTICATION, OrderStatus.PAYMENT_FAILED],
)
def test_payable_orders_show_the_pay_page(provider: Api, make_product, payable: str) -> None:
    """Orders awaiting payment, awaiting the bank or with a failed payment can be paid."""
    order = OrderFactory(lines=[(make_product(stock=5), 1)], status=payable)
    browser = own(shopper(), order)
    response = pay_page(browser, order)
    assert response.status_code == 200
    html(response).one("button", id="pay-button")


def test_pay_page_in_english(provider: Api, make_product) -> None:
    """A shopper browsing in English gets the card form in English."""
    browser = shopper(HTTP_ACCEPT_LANGUAGE="en")
    order = place_order(browser, (make_product(stock=5), 1))
    page = html(pay_page(browser, order))
    assert page.one("section", id="payment").attrs["data-locale"] == "en"
    assert page.one("html").attrs["lang"] == "en"


def test_pay_page_refuses_post(browser: Client, make_product) -> None:
    """The pay page itself is read-only."""
    order = place_order(browser, (make_product(stock=5), 1))
    assert browser.post(reverse("checkout:pay", args=[order.reference])).status_code == 405
