"""What the browser tests of the sandbox share: the merchant page opened with its card form
ready, and a card typed into it."""

from __future__ import annotations

from typing import Any

from tests.helpers.servers import StaticSite

CARD_FRAME = "#card-element iframe"


def open_merchant(page: Any, site: StaticSite, query: str = "") -> Any:
    """Open the merchant page and wait until the card form is ready; the frame's locator."""
    page.goto(site.url(f"/checkout{query}"))
    page.wait_for_function("window.__ready === true")
    return page.frame_locator(CARD_FRAME)


def fill_card(
    frame: Any, number: str, exp: str = "12/31", cvv: str | None = None, name: str = "Ana Pérez"
) -> None:
    frame.locator("#cc-number").fill(number)
    frame.locator("#cc-exp").fill(exp)
    frame.locator("#cc-csc").fill(cvv or ("1234" if number.startswith("37") else "123"))
    frame.locator("#cc-name").fill(name)
