"""Interest-free monthly installments (meses sin intereses) as a shopper meets them: offered under
the card form only for a card whose BIN has them, on an order of at least $1,500.00; chosen with
the mouse or the keyboard; paid, and shown on the order page."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from playwright.sync_api import expect

from payments.statuses import PaymentStatus
from tests.e2e.helpers import Shop, Shopper, open_page
from tests.helpers.provider import INSTALLMENTS_VISA, VISA
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

REBOZO = "rebozo-seda"  # $12,500.00: 6 x $2,083.33, 12 x $1,041.67
TAZA = "taza-talavera"  # $289.00: below the minimum total
LABELS = {
    "es": {
        "legend": "Meses sin intereses",
        "full": "Pago en una sola exhibición",
        "six": "6 meses sin intereses de $2,083.33",
        "twelve": "12 meses sin intereses de $1,041.67",
        "shown": "6 × $2,083.33, meses sin intereses",
    },
    "en": {
        "legend": "Interest-free monthly payments",
        "full": "Pay in full",
        "six": "6 interest-free monthly payments of $2,083.33",
        "twelve": "12 interest-free monthly payments of $1,041.67",
        "shown": "6 × $2,083.33, interest-free",
    },
}


def reach_payment_page(shopper: Shopper, slug: str) -> str:
    shopper.open_home()
    shopper.open_product(slug)
    shopper.add_to_cart()
    shopper.go_to_checkout()
    shopper.fill_details()
    return shopper.submit_details()


@pytest.fixture(params=["es", "en"])
def language(request: Any) -> str:
    return request.param


@pytest.fixture
def browser_page(e2e_browser: Any, language: str) -> Any:
    page = open_page(e2e_browser, locale="es-MX" if language == "es" else "en-US")
    yield page
    page.context.close()


def test_a_card_with_installments_pays_in_six_months(
    browser_page: Any, shop: Shop, language: str
) -> None:
    """Given an order of $12,500.00, when the shopper types 4152 3100 0000 0001, then the choice
    appears (paying in full chosen), and choosing "6 months" and paying makes a payment in 6
    installments at the provider, shown on the order page as "6 × $2,083.33"."""
    text = LABELS[language]
    shopper = Shopper(browser_page, shop)
    reach_payment_page(shopper, REBOZO)
    plans = browser_page.get_by_role("group", name=text["legend"])
    expect(plans).to_be_hidden()

    shopper.type_card(INSTALLMENTS_VISA)

    expect(plans).to_be_visible()
    expect(plans.get_by_role("radio", name=text["full"])).to_be_checked()
    expect(plans.get_by_role("radio", name=text["twelve"])).to_be_visible()
    plans.get_by_role("radio", name=text["six"]).check()
    shopper.pay()

    shopper.wait_for_order_page()
    expect(browser_page.locator("#order-installments")).to_have_text(text["shown"])
    [payment] = shopper.payments()
    assert (payment.status, payment.installments) == (PaymentStatus.APPROVED, 6)
    assert payment.installment_amount == Decimal("2083.33")
    [remote] = shopper.provider_payments()
    assert (remote["installments"], remote["installment_amount"]) == (6, 2083.33)


def test_the_choice_leaves_with_a_card_without_installments(
    browser_page: Any, shop: Shop, language: str
) -> None:
    """Given the choice shown for 4152 3100 0000 0001 with 6 months chosen, when the shopper
    changes the number to 4242 4242 4242 4242, the choice disappears and the payment is made
    in full."""
    text = LABELS[language]
    shopper = Shopper(browser_page, shop)
    reach_payment_page(shopper, REBOZO)
    plans = browser_page.get_by_role("group", name=text["legend"])
    shopper.type_card(INSTALLMENTS_VISA)
    plans.get_by_role("radio", name=text["six"]).check()

    shopper.card_frame.locator("#cc-number").fill("4242 4242 4242 4242")

    expect(plans).to_be_hidden()
    shopper.pay()
    shopper.wait_for_order_page()
    expect(browser_page.locator("#order-installments")).to_have_count(0)
    [payment] = shopper.payments()
    assert (payment.status, payment.installments) == (PaymentStatus.APPROVED, 1)
    assert shopper.provider_payments()[0]["installments"] == 1


def test_no_choice_for_a_card_without_installments_or_a_small_order(page: Any, shop: Shop) -> None:
    """With 4242 4242 4242 4242 on a $12,500.00 order, or with 4152 3100 0000 0001 on a $289.00
    order, no installment choice is offered."""
    shopper = Shopper(page, shop)
    reach_payment_page(shopper, REBOZO)
    shopper.type_card(VISA)
    shopper.card_frame.locator("#cc-name").press("Tab")
    expect(page.locator("#installments")).to_be_hidden()

    small = Shopper(open_page(page.context.browser), shop)
    reach_payment_page(small, TAZA)
    small.type_card(INSTALLMENTS_VISA)
    expect(small.page.locator("#pay-button")).to_be_enabled()
    expect(small.page.locator("#installments")).to_have_count(0)
    small.page.context.close()


def test_the_plans_are_chosen_with_the_keyboard(page: Any, shop: Shop) -> None:
    """The choice is a radio group: Tab reaches it, the arrow keys move the choice, and the
    payment is made with the plan chosen that way."""
    shopper = Shopper(page, shop)
    reach_payment_page(shopper, REBOZO)
    shopper.type_card(INSTALLMENTS_VISA)
    full = page.get_by_role("radio", name=LABELS["es"]["full"])
    expect(full).to_be_visible()

    full.focus()
    page.keyboard.press("ArrowDown")  # 3 months
    page.keyboard.press("ArrowDown")  # 6 months

    expect(page.get_by_role("radio", name=LABELS["es"]["six"])).to_be_checked()
    page.keyboard.press("Tab")
    expect(page.locator("#pay-button")).to_be_focused()
    page.keyboard.press("Enter")
    shopper.wait_for_order_page()
    wait_until(lambda: [p.installments for p in shopper.payments()] == [6], timeout=10)
    expect(page.locator("#order-installments")).to_have_text(re.compile(r"^6 × \$2,083\.33"))
