"""What a shopper does in the browser, by page structure (ids, classes, roles), never by
wording: the pages are Spanish by default and may be translated."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from checkout.models import Order, OrderStatus
from payments.models import Payment
from tests.e2e.support import Shop
from tests.support import VISA, wait_until

PRODUCT = "taza-talavera"  # $289.00, in stock: within every card method's accepted amounts
CARD_FRAME = "#card-element iframe"
CHALLENGE_FRAME = "#threeds-frame iframe"
PAY_URL = re.compile(r"/pedidos/(ORD-[0-9A-Z]{5})/pagar/$")
PAY_PAGE = re.compile(r"/pagar/$")
DETAILS = {
    "first_name": "Ana",
    "last_name": "Pérez",
    "email": "ana@example.com",
    "phone": "55 1234 5678",
    "street": "Av. Juárez",
    "number": "42",
    "colony": "Centro",
    "city": "Guadalajara",
    "postal_code": "44100",
}


def spaced(number: str) -> str:
    """A card number as a shopper types it: groups of four."""
    return " ".join(re.findall(".{1,4}", number))


class Shopper:
    def __init__(self, page: Any, shop: Shop) -> None:
        self.page = page
        self.shop = shop
        self.reference = ""

    # --- Browsing and checking out -----------------------------------------------------------

    def open_home(self) -> None:
        self.page.goto(f"{self.shop.url}/")
        assert self.page.locator("ul.grid li.card").count() > 0

    def open_product(self, slug: str = PRODUCT) -> None:
        self.page.locator(f'ul.grid li.card a[href$="/productos/{slug}/"]').click()
        self.page.wait_for_url(f"**/productos/{slug}/")

    def add_to_cart(self) -> None:
        self.page.locator("form.add button").click()
        self.page.wait_for_url("**/carrito/")
        assert self.page.locator("table.lines tbody tr").count() == 1

    def go_to_checkout(self) -> None:
        self.page.locator('p.actions a.button.primary[href$="/checkout/"]').click()
        self.page.wait_for_url("**/checkout/")

    def fill_details(self) -> None:
        for name, value in DETAILS.items():
            self.page.locator(f"#id_{name}").fill(value)
        self.page.locator("#id_state").select_option("Jalisco")

    def submit_details(self) -> str:
        self.page.locator("form.details button.primary").click()
        self.page.wait_for_url(PAY_URL)
        match = PAY_URL.search(self.page.url)
        assert match, self.page.url
        self.reference = match.group(1)
        return self.reference

    def reach_payment_page(self) -> str:
        """Home → product → cart → details → the payment page; the order's reference."""
        self.open_home()
        self.open_product()
        self.add_to_cart()
        self.go_to_checkout()
        self.fill_details()
        return self.submit_details()

    # --- Paying ------------------------------------------------------------------------------

    @property
    def card_frame(self) -> Any:
        return self.page.frame_locator(CARD_FRAME)

    def type_card(self, number: str = VISA, exp: str = "12/31", cvv: str = "123") -> None:
        frame = self.card_frame
        frame.locator("#cc-number").fill(spaced(number))
        frame.locator("#cc-exp").fill(exp)
        frame.locator("#cc-csc").fill(cvv)
        frame.locator("#cc-name").fill("Ana Pérez")

    def pay(self) -> None:
        self.page.locator("#pay-button").click()

    @property
    def challenge_frame(self) -> Any:
        return self.page.frame_locator(CHALLENGE_FRAME)

    def wait_for_challenge(self) -> None:
        """The 3-D Secure modal is open with the bank's page (its code input) inside."""
        self.page.locator("#threeds-dialog[open]").wait_for(state="visible")
        self.challenge_frame.locator("#code").wait_for(state="visible")

    def answer_challenge(self, code: str) -> None:
        frame = self.challenge_frame
        frame.locator("#code").fill(code)
        frame.locator('button[name="action"][value="submit"]').click()

    def wait_for_order_page(self) -> None:
        self.page.wait_for_url(re.compile(rf"/pedidos/{self.reference}/$"))

    # --- What the shop and the provider hold -------------------------------------------------

    def order(self) -> Order:
        return Order.objects.get(reference=self.reference)

    def payments(self) -> list[Payment]:
        return list(
            Payment.objects.filter(external_reference=self.reference).order_by("created_at")
        )

    def provider_payments(self) -> list[dict[str, Any]]:
        response = self.shop.api.get(
            "/_sandbox/payments", params={"external_reference": self.reference}
        )
        assert response.status_code == 200, response.text
        return [p for p in response.json() if p.get("external_reference") == self.reference]

    def pending_payment_id(self) -> str:
        """The provider id of the order's payment waiting for 3-D Secure."""

        def pending() -> str:
            found = [p for p in self.payments() if p.status == "pending" and p.provider_id]
            return found[-1].provider_id if found else ""

        return wait_until(pending, timeout=10)


def expect_paid_order_page(shopper: Shopper) -> None:
    """The order page says paid at once; the stored order follows (its task) a moment later."""
    shopper.wait_for_order_page()
    expect(shopper.page.locator("#order-status")).to_have_class(re.compile(r"\bstatus-paid\b"))
    wait_until(lambda: shopper.order().status == OrderStatus.PAID, timeout=30)


def expect_refused(shopper: Shopper) -> None:
    """The payment page says why (an error in #pay-status) and lets the shopper try again."""
    page = shopper.page
    status = page.locator("#pay-status")
    expect(status).to_have_class(re.compile(r"\berror\b"))
    expect(status).not_to_have_text(re.compile(r"^\s*$"))
    expect(page.locator("#pay-button")).to_be_enabled()
    assert PAY_PAGE.search(page.url), page.url
