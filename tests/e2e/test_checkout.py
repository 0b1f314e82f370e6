"""The shopper's checkout end to end: Chromium on the live shop, paying through a live
provider sandbox (its card form and 3-D Secure page on the sandbox's own origin)."""

from __future__ import annotations

import os
import re
import struct
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pytest
from playwright.sync_api import expect

from checkout.models import OrderStatus
from payments.statuses import PaymentStatus
from tests.e2e.helpers import (
    CARD_FRAME,
    CHALLENGE_FRAME,
    DESKTOP,
    MOBILE,
    Shop,
    Shopper,
    card_numbers_in,
    expect_paid_order_page,
    expect_refused,
    full_page_screenshot,
    open_page,
    spaced,
)
from tests.helpers.paths import ROOT
from tests.helpers.provider import DECLINED, THREE_DS, VISA
from tests.helpers.servers import StaticSite
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_approved_card_pays_the_order(page: Any, shop: Shop) -> None:
    """Given a cart, when the shopper pays with 4242 4242 4242 4242, the order is paid."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()

    shopper.type_card(VISA)
    shopper.pay()

    expect_paid_order_page(shopper)
    [payment] = shopper.payments()
    assert payment.status == PaymentStatus.APPROVED
    assert payment.card_last_digits == "4242"


def test_manual_capture_holds_the_amount(page: Any, shop: Shop, settings: Any) -> None:
    """Given manual capture, when the shopper pays, the order page shows the amount held."""
    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()

    shopper.type_card(VISA)
    shopper.pay()

    shopper.wait_for_order_page()
    expect(page.locator("#order-status")).to_have_class(re.compile(r"\bstatus-authorized\b"))
    wait_until(lambda: shopper.order().status == OrderStatus.AUTHORIZED, timeout=30)
    assert [p.status for p in shopper.payments()] == [PaymentStatus.AUTHORIZED]


def test_three_d_secure_passed_in_the_modal_pays_the_order(page: Any, shop: Shop) -> None:
    """Given a 3-D Secure card, when the shopper types 123456 in the bank's modal, it is paid."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(THREE_DS)
    shopper.pay()

    shopper.wait_for_challenge()
    assert page.locator("#threeds-dialog").evaluate("d => d.open && d.matches(':modal')")
    shopper.answer_challenge("123456")

    expect_paid_order_page(shopper)


def test_a_failed_challenge_lets_the_shopper_pay_with_another_card(page: Any, shop: Shop) -> None:
    """Given a failed 3-D Secure code, when the shopper pays with another card, it is paid."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(THREE_DS)
    shopper.pay()
    shopper.wait_for_challenge()

    shopper.answer_challenge("000000")

    expect_refused(shopper)
    expect(page.locator("#threeds-dialog")).to_be_hidden()
    wait_until(lambda: shopper.order().status == OrderStatus.PAYMENT_FAILED, timeout=30)

    shopper.type_card(VISA)
    shopper.pay()

    expect_paid_order_page(shopper)
    assert [p.status for p in shopper.payments()] == [
        PaymentStatus.REJECTED,
        PaymentStatus.APPROVED,
    ]
    assert len(shopper.provider_payments()) == 2


def test_a_declined_card_says_why_and_allows_another_try(page: Any, shop: Shop) -> None:
    """Given a declined card, when the shopper pays, the page explains and the order failed."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()

    shopper.type_card(DECLINED)
    shopper.pay()

    expect_refused(shopper)
    wait_until(lambda: shopper.order().status == OrderStatus.PAYMENT_FAILED, timeout=30)
    assert [p.status for p in shopper.payments()] == [PaymentStatus.REJECTED]


def test_a_double_click_on_pay_charges_once(page: Any, shop: Shop) -> None:
    """Given a filled card form, when Pay fires twice at once, the provider has one payment."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(VISA)
    attempts: list[str] = []
    page.on("request", lambda r: attempts.append(r.url) if r.url.endswith("/pagos/") else None)

    # The second click is dispatched right after the first, with the button re-enabled as if
    # it arrived before the page disabled it: only the page's own guard and the server's
    # per-attempt idempotency stand between it and a second charge.
    clicks = page.evaluate(
        """() => {
          const button = document.getElementById("pay-button");
          let clicks = 0;
          button.addEventListener("click", () => { clicks += 1; });
          button.click();
          button.disabled = false;
          button.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true}));
          return clicks;
        }"""
    )
    assert clicks == 2

    expect_paid_order_page(shopper)
    # The page sent one attempt (Playwright has every request event of the clicks by now: it
    # has been called since), and the provider holds one payment.
    assert attempts == [f"{shop.url}/pedidos/{shopper.reference}/pagos/"], attempts
    assert len(shopper.provider_payments()) == 1
    assert [p.status for p in shopper.payments()] == [PaymentStatus.APPROVED]


def challenge_open_without_csp(e2e_browser: Any, shop: Shop) -> tuple[Any, Shopper, str]:
    """A shopper's page (its CSP bypassed) with a 3-D Secure challenge open; its payment id."""
    page = open_page(e2e_browser, bypass_csp=True)
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(THREE_DS)
    shopper.pay()
    shopper.wait_for_challenge()
    return page, shopper, shopper.pending_payment_id()


def test_a_forged_challenge_message_moves_nothing(
    e2e_browser: Any, shop: Shop, foreign_site: StaticSite
) -> None:
    """Given an open challenge, when other origins post its payment id, nothing moves. (The
    shop's CSP would refuse to frame the third origin at all; it is bypassed here to prove that
    the page's own origin check holds even if a frame got in.)"""
    page, shopper, payment_id = challenge_open_without_csp(e2e_browser, shop)
    page.evaluate(
        """() => {
          window.__forged = [];
          window.addEventListener("message", (event) => {
            if (event.data && event.data.paymentId) window.__forged.push(event.origin);
          });
        }"""
    )

    # A third origin framed into the shop's page posts to the top window...
    page.evaluate(
        """(url) => {
          const frame = document.createElement("iframe");
          frame.src = url;
          document.body.appendChild(frame);
        }""",
        foreign_site.url(f"/forge?id={payment_id}"),
    )
    # ...and the shop's page posts to itself.
    page.evaluate("(id) => window.postMessage({paymentId: id}, '*')", payment_id)
    page.wait_for_function("window.__forged.length >= 2")
    assert sorted(page.evaluate("window.__forged")) == sorted([foreign_site.origin, shop.url])
    # The page's own listener came first (it was added when the challenge opened) and acts at
    # once: had it believed a message, it would already say it is checking.

    wait_until(lambda: shopper.order().status == OrderStatus.AWAITING_AUTHENTICATION, timeout=30)
    expect(page.locator("#threeds-dialog[open]")).to_be_visible()
    expect(shopper.challenge_frame.locator("#code")).to_be_visible()
    checking = page.locator("#payment").get_attribute("data-text-checking")
    expect(page.locator("#pay-status")).not_to_have_text(checking or "")
    expect(page.locator("#pay-button")).to_be_disabled()

    shopper.answer_challenge("123456")

    expect_paid_order_page(shopper)
    page.context.close()


def test_a_challenge_frame_taken_to_another_origin_is_not_believed(
    e2e_browser: Any, shop: Shop, foreign_site: StaticSite
) -> None:
    """The challenge's own iframe, navigated to another origin, posts the right payment id to
    the shop's page: the message comes from the right window but the wrong origin, and the
    page ignores it. (The CSP would refuse that navigation; it is bypassed here to prove the
    page's origin check on its own.)"""
    page, shopper, payment_id = challenge_open_without_csp(e2e_browser, shop)
    page.evaluate(
        """() => {
          window.__posted = [];
          window.addEventListener("message", (event) => {
            const frame = document.querySelector("#threeds-frame iframe");
            if (event.data && event.data.paymentId && event.source === frame.contentWindow) {
              window.__posted.push([event.origin, event.data.paymentId]);
            }
          });
        }"""
    )

    # When the challenge frame is taken to another origin, which posts the payment's id
    frame = page.locator("#threeds-frame iframe").element_handle().content_frame()
    frame.goto(foreign_site.url(f"/forge?id={payment_id}"))
    page.wait_for_function("window.__posted.length >= 1")
    assert page.evaluate("window.__posted") == [[foreign_site.origin, payment_id]]

    # Then the page did not take it for the bank's answer: nothing is being checked
    expect_challenge_still_open(page, shopper)
    page.context.close()


RECORD_MESSAGES = """() => {
  window.__posted = [];
  window.addEventListener("message", (event) => {
    const frames = {card: "#card-element iframe", challenge: "#threeds-frame iframe"};
    for (const [name, selector] of Object.entries(frames)) {
      const frame = document.querySelector(selector);
      if (frame && event.source === frame.contentWindow && event.data && event.data.paymentId) {
        window.__posted.push([name, event.origin, event.data.paymentId]);
      }
    }
  });
}"""


def post_from_frame(page: Any, selector: str, payment_id: str) -> None:
    """The frame at `selector` posts {paymentId} to the shop's page, as the bank's page does."""
    frame = page.locator(selector).element_handle().content_frame()
    frame.evaluate("(id) => window.parent.postMessage({paymentId: id}, '*')", payment_id)


def challenge_open_and_recorded(page: Any, shop: Shop) -> tuple[Shopper, str]:
    """A shopper's page with a 3-D Secure challenge open and every message from its two
    provider frames recorded; the shopper and the payment's id."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(THREE_DS)
    shopper.pay()
    shopper.wait_for_challenge()
    payment_id = shopper.pending_payment_id()
    page.evaluate(RECORD_MESSAGES)
    return shopper, payment_id


def expect_challenge_still_open(page: Any, shopper: Shopper) -> None:
    """The page believed no message: it says nothing of checking, its dialog stays, Pay stays
    disabled, and the order still waits for the bank. (The page's own
    listener, added when the challenge opened, runs before the test's recorder: by the time a
    message is recorded, the page has already acted on it or not.)"""
    checking = page.locator("#payment").get_attribute("data-text-checking")
    assert checking
    expect(page.locator("#pay-status")).not_to_have_text(checking)
    expect(page.locator("#threeds-dialog[open]")).to_be_visible()
    expect(page.locator("#pay-button")).to_be_disabled()
    order = shopper.order()
    assert order.status == OrderStatus.AWAITING_AUTHENTICATION
    assert [p.status for p in shopper.payments()] == [PaymentStatus.PENDING]


def test_a_message_from_the_card_form_is_not_taken_for_the_banks(page: Any, shop: Shop) -> None:
    """Given an open challenge, when the card form's iframe (the provider's origin, like the
    bank's page, but another window) posts the payment's id, the page ignores it: only the
    challenge's own frame may speak for the bank."""
    shopper, payment_id = challenge_open_and_recorded(page, shop)

    post_from_frame(page, CARD_FRAME, payment_id)

    page.wait_for_function("window.__posted.length >= 1")
    assert page.evaluate("window.__posted") == [["card", shop.api.base_url, payment_id]]
    expect_challenge_still_open(page, shopper)
    expect(shopper.challenge_frame.locator("#code")).to_be_visible()


def test_a_message_naming_another_payment_is_not_believed(page: Any, shop: Shop) -> None:
    """Given an open challenge, when its own frame (the right origin and window) posts another
    payment's id, the page ignores it: a message speaks only for the payment just created."""
    shopper, payment_id = challenge_open_and_recorded(page, shop)

    post_from_frame(page, CHALLENGE_FRAME, "pay_" + "0" * 24)

    page.wait_for_function("window.__posted.length >= 1")
    posted = page.evaluate("window.__posted")
    assert posted == [["challenge", shop.api.base_url, "pay_" + "0" * 24]]
    assert posted[0][2] != payment_id
    expect_challenge_still_open(page, shopper)
    expect(shopper.challenge_frame.locator("#code")).to_be_visible()


def test_the_card_number_never_reaches_the_shop(page: Any, shop: Shop) -> None:
    """Given a full purchase, no request the browser sends to the shop carries a card number."""
    sent: list[dict[str, str]] = []

    def record(request: Any) -> None:
        body = request.post_data_buffer
        sent.append(
            {
                "url": request.url,
                "method": request.method,
                "body": body.decode("utf-8", "replace") if body else "",
                "headers": repr(request.headers),
            }
        )

    page.context.on("request", record)
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(VISA)
    shopper.pay()
    expect_paid_order_page(shopper)

    to_shop = [r for r in sent if r["url"].startswith(f"{shop.url}/")]
    to_provider = [r for r in sent if r["url"].startswith(f"{shop.api.base_url}/")]
    # The recording sees request bodies, the iframe's included: the number went to the provider.
    assert any(VISA in r["body"] for r in to_provider)
    assert any(r["method"] == "POST" and "/pagos/" in r["url"] for r in to_shop)
    for request in to_shop:
        everything = " ".join(request.values())
        for text in (everything, unquote_plus(everything)):
            assert VISA not in text, request
            assert spaced(VISA) not in text, request
            assert card_numbers_in(text) == [], request


SCREENSHOT_PAGES = ["home", "product", "cart", "checkout", "payment", "order"]


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", header[16:24])


def settle(page: Any) -> None:
    """Every image loaded (even lazy ones below the fold), fonts ready and no focus ring."""
    page.evaluate(
        """async () => {
          const images = Array.from(document.images);
          images.forEach((img) => { img.loading = "eager"; });
          await Promise.all(images.map((img) => img.complete ? null :
            new Promise((done) => { img.onload = img.onerror = done; })));
          await document.fonts.ready;
          if (document.activeElement) document.activeElement.blur();
        }"""
    )


def layout_problems(page: Any, name: str) -> list[str]:
    """What a shopper at this width would miss: a page wider than the screen, or a hidden
    total under a table of lines (cart, order)."""
    problems = []
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > page.viewport_size["width"]:
        problems.append(f"{name}: {width}px wide in a {page.viewport_size['width']}px screen")
    total = page.locator("table.lines tfoot th:nth-of-type(2)")
    if total.count() and not total.is_visible():
        problems.append(f"{name}: the total of the table of lines is hidden")
    return problems


def wait_for_card_form_to_settle(page: Any) -> None:
    """The card iframe resizes itself once rendered: wait until its box stops moving."""
    frame = page.locator("#card-element iframe")
    previous = None
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        box = frame.bounding_box()
        if box == previous:
            break
        previous = box
        page.wait_for_timeout(150)


@pytest.mark.parametrize(
    ("width_name", "viewport"),
    [("desktop", DESKTOP), ("mobile", MOBILE)],
    ids=["desktop", "mobile"],
)
def test_screenshots_of_the_main_pages(
    e2e_browser: Any, shop: Shop, tmp_path: Path, width_name: str, viewport: dict[str, int]
) -> None:
    """Given a purchase, when each main page is shown, its full-page screenshot is written."""
    update = os.environ.get("UPDATE_SCREENSHOTS") == "1"
    folder = ROOT / "docs" / "screenshots" if update else tmp_path
    mobile = width_name == "mobile"
    page = open_page(e2e_browser, viewport, is_mobile=mobile, has_touch=mobile)
    shots: dict[str, Path] = {}
    problems: list[str] = []

    def shoot(name: str) -> None:
        settle(page)
        shots[name] = folder / f"shop-{name}-{width_name}.png"
        full_page_screenshot(page, shots[name])
        problems.extend(layout_problems(page, name))

    try:
        shopper = Shopper(page, shop)
        shopper.open_home()
        shoot("home")
        shopper.open_product()
        shoot("product")
        shopper.add_to_cart()
        shoot("cart")
        shopper.go_to_checkout()
        shopper.fill_details()
        shoot("checkout")
        shopper.submit_details()
        shopper.type_card(VISA)
        shopper.card_frame.locator("#cc-name").blur()  # the focus is inside the iframe
        wait_for_card_form_to_settle(page)
        shoot("payment")
        shopper.pay()
        expect_paid_order_page(shopper)
        shoot("order")
    finally:
        page.context.close()

    assert list(shots) == SCREENSHOT_PAGES
    for path in shots.values():
        width, height = png_size(path)
        assert width == viewport["width"], path
        assert height >= viewport["height"] - 1, path
        assert path.stat().st_size > 10_000, path
    assert problems == []
