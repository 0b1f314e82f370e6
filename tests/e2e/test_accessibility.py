"""Accessibility of the shopper's pages, checked by axe-core (as the axe-playwright-python
package ships it) in Chromium at desktop and phone widths: no violation of impact "serious" or
"critical" on any page of the checkout, in the payment page's 3-D Secure modal, or inside the
sandbox's card form and 3-D Secure page (each checked in its own frame). Also what axe cannot
see: focus after an invalid submit, names in the shopper's language, and the phone layout of the
order page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import CARD_FRAME, CHALLENGE_FRAME, Shop, Shopper, open_page, violations
from tests.helpers.provider import THREE_DS, VISA

pytestmark = pytest.mark.django_db(transaction=True)

VIEWPORTS = {
    "desktop": {"width": 1280, "height": 800},
    "phone": {"width": 375, "height": 740},
}
QUANTITY, TOTAL = 7, "$2,023.00"  # of the shopper's product ($289.00): thousands to write


def frame_of(page: Any, selector: str) -> Any:
    """The Frame of an iframe (to evaluate scripts in it), once its document has loaded."""
    handle = page.locator(selector).element_handle()
    frame = handle.content_frame()
    assert frame is not None, selector
    frame.wait_for_load_state("load")
    return frame


def report(found: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for where, items in found.items():
        for v in items:
            lines.append(f"{where}: {v['id']} ({v['impact']}): {v['help']}")
            lines.extend(f"    {target}" for target in v["targets"])
    return "\n".join(lines)


class Audit:
    """The violations found on each page of a walk through the shop, reported all at once."""

    def __init__(self) -> None:
        self.found: dict[str, list[dict[str, Any]]] = {}

    def check(self, name: str, frame: Any) -> None:
        self.found[name] = violations(frame)

    def assert_clean(self) -> None:
        problems = {name: items for name, items in self.found.items() if items}
        assert not problems, "axe violations (serious, critical or kept clean):\n" + report(
            problems
        )


def expect_focus_on_error_summary(page: Any) -> None:
    """After an invalid submit: focus on the summary, which links every field in error."""
    summary = page.locator("#error-summary")
    expect(summary).to_be_visible()
    expect(summary).to_be_focused()
    links = summary.locator("a[href^='#id_']")
    assert links.count() > 0
    for href in links.evaluate_all("links => links.map((a) => a.getAttribute('href'))"):
        field = page.locator(href)
        assert field.count() == 1, f"the summary links {href}, which is not on the page"
        assert field.get_attribute("aria-invalid") == "true", href
        for described in (field.get_attribute("aria-describedby") or "").split():
            assert page.locator(f"#{described}").count() == 1, f"{href}: no #{described}"


@pytest.mark.parametrize("viewport", list(VIEWPORTS), ids=list(VIEWPORTS))
def test_every_shopper_page_passes_axe(e2e_browser: Any, shop: Shop, viewport: str) -> None:
    """Home, product, cart, details (empty and with errors), payment (and its 3-D Secure
    modal), the sandbox's card form and challenge, the paid order, and "Mis pedidos" (empty and
    with errors): no serious or critical violation at this width."""
    page = open_page(e2e_browser, VIEWPORTS[viewport])
    audit = Audit()
    shopper = Shopper(page, shop)
    try:
        shopper.open_home()
        audit.check("home", page)
        shopper.open_product()
        audit.check("product", page)
        page.locator("#quantity").fill(str(QUANTITY))
        shopper.add_to_cart()
        audit.check("cart", page)
        shopper.go_to_checkout()
        audit.check("details", page)

        page.locator("form.details button.primary").click()
        page.wait_for_load_state("load")
        expect_focus_on_error_summary(page)
        audit.check("details with errors", page)
        first_link = page.locator("#error-summary a").first
        target = first_link.get_attribute("href")
        first_link.click()
        expect(page.locator(str(target))).to_be_focused()

        shopper.fill_details()
        shopper.submit_details()
        card_frame = frame_of(page, CARD_FRAME)
        card_frame.locator("#cc-number").wait_for(state="visible")
        audit.check("payment", page)
        audit.check("sandbox card form", card_frame)

        shopper.type_card(THREE_DS)
        shopper.pay()
        shopper.wait_for_challenge()
        audit.check("payment with the 3-D Secure modal", page)
        challenge = frame_of(page, CHALLENGE_FRAME)
        audit.check("sandbox 3-D Secure page", challenge)
        # The bank's page writes the amount as the shop does ($2,023.00, not $2023.00).
        expect(page.locator("aside.summary .total strong")).to_have_text(f"{TOTAL} MXN")
        expect(challenge.locator("dl.summary")).to_contain_text(f"{TOTAL} MXN")

        shopper.answer_challenge("123456")
        shopper.wait_for_order_page()
        expect(page.locator("#order-status")).to_have_class(re.compile(r"\bstatus-paid\b"))
        audit.check("order", page)

        page.locator('nav a[href$="/mis-pedidos/"]').click()
        page.wait_for_url("**/mis-pedidos/")
        audit.check("my orders", page)
        page.locator("form.my-orders button.primary").click()
        page.wait_for_load_state("load")
        expect_focus_on_error_summary(page)
        audit.check("my orders with errors", page)
    finally:
        page.context.close()
    audit.assert_clean()


def test_a_reintroduced_violation_is_reported(e2e_browser: Any, shop: Shop) -> None:
    """The check does see violations: the cart with a product link in a faint colour fails,
    and the report names the page, the rule and the element."""
    page = open_page(e2e_browser)
    shopper = Shopper(page, shop)
    try:
        shopper.open_home()
        shopper.open_product()
        shopper.add_to_cart()
        page.evaluate(
            """() => {
              const link = document.querySelector("table.lines tbody a");
              link.style.color = "#d8d0c8";
            }"""
        )
        found = violations(page)
    finally:
        page.context.close()
    assert "color-contrast" in {v["id"] for v in found}, found
    with pytest.raises(AssertionError, match=r"cart: color-contrast \(serious\)"):
        audit = Audit()
        audit.found["cart"] = found
        audit.assert_clean()


def test_names_are_in_english_for_an_english_shopper(e2e_browser: Any, shop: Shop) -> None:
    """In English, the provider's Spanish method names ("Pago en efectivo") and the order's
    item names (kept on the order as bought) are English, on the payment and order pages."""
    page = open_page(e2e_browser, locale="en-US")
    shopper = Shopper(page, shop)
    try:
        shopper.reach_payment_page()
        assert page.locator("html").get_attribute("lang") == "en"
        expect(page.locator('li.method[data-method="cashpay"] .name')).to_have_text("Cash payment")
        expect(page.locator("li.method .name", has_text="Pago")).to_have_count(0)
        expect(page.locator("aside.summary li").first).to_contain_text("Talavera mug from Puebla")

        shopper.type_card(VISA)
        shopper.pay()
        shopper.wait_for_order_page()
        expect(page.locator("table.lines tbody td").first).to_have_text("Talavera mug from Puebla")
    finally:
        page.context.close()


REFERENCE_LINES = """(h1, reference) => {
  const walker = document.createTreeWalker(h1, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const start = node.data.indexOf(reference);
    if (start < 0) continue;
    const range = document.createRange();
    range.setStart(node, start);
    range.setEnd(node, start + reference.length);
    return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
  }
  return 0;
}"""


def test_the_order_page_fits_a_phone(e2e_browser: Any, shop: Shop) -> None:
    """At 375 px (and down to 280 px) the order's reference stays on one line, "ORD-" with the
    rest, and each item cell shows its column's label (the table's header being hidden)."""
    page = open_page(e2e_browser, VIEWPORTS["phone"])
    shopper = Shopper(page, shop)
    try:
        reference = shopper.reach_payment_page()
        shopper.type_card(VISA)
        shopper.pay()
        shopper.wait_for_order_page()

        heading = page.locator("h1")
        expect(heading).to_contain_text(reference)
        # The lines the reference's own text occupies (a Range over it): one, whatever markup
        # the heading has, down to the narrowest phones.
        for width in (VIEWPORTS["phone"]["width"], 320, 280):
            page.set_viewport_size({"width": width, "height": VIEWPORTS["phone"]["height"]})
            lines = heading.evaluate(REFERENCE_LINES, reference)
            assert lines == 1, f"at {width}px the reference {reference} takes {lines} lines"
        page.set_viewport_size(VIEWPORTS["phone"])
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= VIEWPORTS["phone"]["width"], f"{width}px wide"

        expect(page.locator("table.lines thead")).to_be_hidden()
        headers = page.locator("table.lines thead th").all_text_contents()
        cells = page.locator("table.lines tbody tr").first.locator("td")
        assert cells.count() == len(headers)
        for index, header in enumerate(headers):
            cell = cells.nth(index)
            label = cell.evaluate(
                "td => getComputedStyle(td, '::before').content.replace(/^\"|\"$/g, '')"
            )
            assert label == header.strip(), (index, label, header)
            expect(cell).to_be_visible()
    finally:
        page.context.close()
