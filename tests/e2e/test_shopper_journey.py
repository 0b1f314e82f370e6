"""Around the payment, as a shopper lives it in the browser: the back button after paying, a
reload or a closed modal during 3-D Secure, the order's link from its mail opened in another
browser, "Mis pedidos", and an order that was not paid in time."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.core.cache import cache
from django.utils import timezone
from playwright.sync_api import expect

from checkout.models import Order, OrderStatus, Product
from checkout.reservations.rules import SOONEST_END
from payments.statuses import PaymentStatus
from tests.e2e.helpers import PRODUCT, Shop, Shopper, open_page
from tests.helpers.provider import THREE_DS, VISA
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

LINK = re.compile(r"https?://[^\s\"<>]+/pedido/(ORD-[0-9A-Z]{5})/[^\s\"<>/]+/")


def _mails_to(address: str) -> list[Any]:
    return [m for m in mail.outbox if address in m.to]


def test_back_after_paying_lands_on_the_order_page(page: Any, shop: Shop) -> None:
    """Given a paid order, when the shopper presses back from the order page, the payment page
    is asked for again (no-store) and sends them to the order page, never a live Pay button."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(VISA)
    shopper.pay()
    shopper.wait_for_order_page()

    page.go_back()
    shopper.wait_for_order_page()
    expect(page.locator("#order-status")).to_have_class(re.compile(r"\bstatus-paid\b"))
    assert page.locator("#pay-button").count() == 0
    assert len(shopper.payments()) == 1


def test_a_reload_during_three_d_secure_opens_the_challenge_again(page: Any, shop: Shop) -> None:
    """Given a 3-D Secure challenge open, when the shopper reloads the page, the same challenge
    opens again (the provider still has it pending), and passing it pays the order once."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(THREE_DS)
    shopper.pay()
    shopper.wait_for_challenge()
    shopper.pending_payment_id()
    challenge_url = page.locator("#threeds-frame iframe").get_attribute("src")

    page.reload()
    shopper.wait_for_challenge()
    assert page.locator("#threeds-frame iframe").get_attribute("src") == challenge_url
    expect(page.locator("#pay-button")).to_be_disabled()
    shopper.answer_challenge("123456")

    shopper.wait_for_order_page()
    expect(page.locator("#order-status")).to_have_class(re.compile(r"\bstatus-paid\b"))
    assert [p.status for p in shopper.payments()] == [PaymentStatus.APPROVED]


def test_closing_the_challenge_says_it_was_not_finished(page: Any, shop: Shop) -> None:
    """Given a 3-D Secure challenge open, when the shopper closes the modal, the page says the
    verification was not finished and nothing was charged, and paying again is possible."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(THREE_DS)
    shopper.pay()
    shopper.wait_for_challenge()

    page.locator("#threeds-close").click()
    expect(page.locator("#threeds-dialog")).not_to_have_attribute("open", "")
    status = page.locator("#pay-status")
    expect(status).to_have_class(re.compile(r"\berror\b"))
    expect(status).to_contain_text("No terminaste la verificación")
    expect(page.locator("#pay-button")).to_be_enabled()

    shopper.type_card(VISA)
    shopper.pay()
    shopper.wait_for_order_page()
    wait_until(lambda: shopper.order().status == OrderStatus.PAID, timeout=30)


def test_the_mailed_link_opens_the_order_in_a_browser_with_no_cookies(
    page: Any, shop: Shop, e2e_browser: Any
) -> None:
    """Given a paid order, its mail carries the order's link; opened in a fresh browser (no
    cookies, not the session that placed it), it shows the order."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(VISA)
    shopper.pay()
    shopper.wait_for_order_page()
    wait_until(lambda: _mails_to("ana@example.com"), timeout=30)
    links = {m.group(0) for msg in _mails_to("ana@example.com") for m in LINK.finditer(msg.body)}
    assert links, [m.body for m in mail.outbox]
    [link] = links
    assert shopper.reference in link

    elsewhere = open_page(e2e_browser)
    try:
        assert elsewhere.context.cookies() == []
        elsewhere.goto(link)
        expect(elsewhere.locator("h1")).to_contain_text(shopper.reference)
        expect(elsewhere.locator("#order-status")).to_have_class(re.compile(r"\bstatus-paid\b"))
        # Without the link, that browser sees nothing of another order.
        elsewhere.goto(link.rsplit("/", 2)[0] + "/wrong-token/")
        assert elsewhere.locator("#order-status").count() == 0
    finally:
        elsewhere.context.close()


def test_my_orders_mails_the_links_of_an_address(page: Any, shop: Shop) -> None:
    """A shopper asks for their orders by address: the page says the same for an address with
    orders and one without, and only the first gets a mail, with the order's link."""
    shopper = Shopper(page, shop)
    reference = shopper.reach_payment_page()
    mail.outbox.clear()

    answers = []
    for address in ("ana@example.com", "nadie@example.com"):
        page.goto(f"{shop.url}/")
        page.locator('nav a[href$="/mis-pedidos/"]').click()
        page.locator("#id_email").fill(address)
        page.locator("form.my-orders button.primary").click()
        page.wait_for_url("**/mis-pedidos/")
        answers.append(page.locator(".messages").inner_text().replace(address, "…"))
    assert answers[0] == answers[1]

    wait_until(lambda: _mails_to("ana@example.com"), timeout=30)
    [sent] = _mails_to("ana@example.com")
    assert reference in sent.body and LINK.search(sent.body)
    assert _mails_to("nadie@example.com") == []


def test_an_unpaid_order_gives_its_items_back_and_says_so(
    page: Any, shop: Shop, e2e_browser: Any
) -> None:
    """Given the last piece in an unpaid order, another shopper sees it sold out; once the
    reservation is over, they see it for sale, and the first shopper's order says it expired."""
    Product.objects.filter(slug=PRODUCT).update(stock=1)
    shopper = Shopper(page, shop)
    reference = shopper.reach_payment_page()
    expect(page.locator("#reserved-until")).to_be_visible()

    other = open_page(e2e_browser)
    try:
        other.goto(f"{shop.url}/productos/{PRODUCT}/")
        expect(other.locator("form.add button")).to_have_count(0)
        # The reservation's time passes (the server's clock cannot be moved): its end is
        # now past, and the shop's note of the soonest end has run out, as it would have then.
        Order.objects.filter(reference=reference).update(
            reserved_until=timezone.now() - timedelta(seconds=1)
        )
        cache.delete(SOONEST_END)
        other.reload()
        expect(other.locator("form.add button")).to_be_enabled()
    finally:
        other.context.close()

    page.reload()
    shopper.wait_for_order_page()
    expect(page.locator("#order-expired")).to_be_visible()
    assert shopper.order().status == OrderStatus.EXPIRED
