"""What the browser tests share: the live shop they drive, pages opened in fresh browser
contexts (a shopper's, or a staff member's logged in to the admin), what a shopper does in
the browser (by page structure: ids, classes, roles, never by wording, since the pages are
Spanish by default and may be translated), whole-page screenshots, the accessibility check,
and a scan for card numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect

from checkout.models import Order, OrderStatus
from payments.models import Payment
from tests.helpers.provider import VISA, Api
from tests.helpers.staff import authenticator, current_code
from tests.helpers.waiting import wait_until

DESKTOP = {"width": 1280, "height": 900}
MOBILE = {"width": 390, "height": 844}


@dataclass
class Shop:
    """The live shop (`url`, no trailing slash) and the sandbox it pays through (`api`)."""

    url: str
    api: Api


def open_page(browser: Any, viewport: dict[str, int] | None = None, **options: Any) -> Any:
    """A page in a fresh context (no cookies), in Spanish like the shop's shoppers unless
    another `locale` is given."""
    options.setdefault("locale", "es-MX")
    context = browser.new_context(viewport=viewport or DESKTOP, **options)
    page = context.new_page()
    page.set_default_timeout(15_000)
    return page


def type_password(page: Any, shop: Shop, username: str, password: str) -> None:
    """The admin's password page, filled and sent."""
    page.goto(f"{shop.url}{reverse('admin:login')}")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    with page.expect_navigation():
        page.locator("#login-form [type=submit]").click()


def type_code(page: Any, code: str) -> None:
    """The code page (or the enrolment page), filled and sent."""
    page.locator("#id_code").fill(code)
    with page.expect_navigation():
        page.locator("#code-form [type=submit]").click()


def log_in(
    e2e_browser: Any, shop: Shop, username: str, password: str, locale: str = "es-MX"
) -> Any:
    """A page of its own, signed in to the admin as `username` with its password and the code
    its authenticator shows (an authenticator is given to an account without one)."""
    device = authenticator(get_user_model().objects.get(username=username))
    page = open_page(e2e_browser, locale=locale)
    type_password(page, shop, username, password)
    page.wait_for_url(re.compile(re.escape(f"{shop.url}{reverse('admin:staff_signin_code')}")))
    type_code(page, current_code(device))
    page.wait_for_url(f"{shop.url}{reverse('admin:index')}")
    return page


def success(page: Any) -> Any:
    """The admin's success messages on the page."""
    return page.locator("ul.messagelist li.success")


# --- What a shopper does in the browser ---------------------------------------------------------


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


# --- Card numbers written on a page -------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """The Luhn check, written here again: the tests do not take the shop's word for it."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


# Runs of 13-19 digits, optionally grouped by single spaces or dashes, not inside a longer
# word (so hex ids and CSRF tokens do not count).
CARD_LIKE = re.compile(r"(?<![0-9A-Za-z])\d(?:[ -]?\d){12,18}(?![0-9A-Za-z])")


def card_numbers_in(text: str) -> list[str]:
    """The card numbers (Luhn-valid runs of 13 to 19 digits) written in `text`."""
    found = []
    for match in CARD_LIKE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            found.append(digits)
    return found


# --- Screenshots and the accessibility check ------------------------------------------------------


TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def full_page_screenshot(page: Any, path: Path) -> None:
    """The whole page in one shot. Rather than Playwright's full_page (which resizes and
    captures at once, sometimes before the provider's out-of-process iframes repaint), the
    viewport is made as tall as the page, every frame paints twice, then it is captured."""
    viewport = page.viewport_size
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": viewport["width"], "height": max(height, viewport["height"])})
    try:
        for frame in page.frames:
            frame.evaluate(TWO_FRAMES)
        page.screenshot(path=str(path))
    finally:
        page.set_viewport_size(viewport)


BLOCKING = ("serious", "critical")

# Rules axe rates minor that the shop keeps clean all the same (the cart once had an empty
# header for its actions column).
ALSO_BLOCKING = ("empty-table-header",)

# Every frame is checked on its own (the provider's frames by running axe inside them), so
# axe does not reach into frames from the page around them. label-content-name-mismatch (a
# control's name must contain its visible text) is experimental, so off by default, in axe-core
# 4.12 and on by default in 4.14: turned on here.
AXE_RUN = """async () => {
  const results = await axe.run(document, {
    iframes: false, resultTypes: ["violations"],
    rules: {"label-content-name-mismatch": {enabled: true}},
  });
  return results.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    targets: v.nodes.map((n) => n.target.join(" ")),
  }));
}"""


@cache
def axe_source() -> str:
    """axe-core's script as axe-playwright-python ships it (axe-core 4.12.1 in its 0.1.8); only
    the script is taken from the package, run by AXE_RUN above."""
    return (files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")


def violations(frame: Any) -> list[dict[str, Any]]:
    """The serious and critical axe violations of a page or a frame (and the few others the
    shop keeps clean). The script is evaluated,
    not added as a <script> tag, so the pages' CSP (no inline or foreign scripts) allows it."""
    if not frame.evaluate("typeof window.axe !== 'undefined'"):
        frame.evaluate(axe_source())
    found = frame.evaluate(AXE_RUN)
    return [v for v in found if v["impact"] in BLOCKING or v["id"] in ALSO_BLOCKING]
