"""What the browser tests share: the live shop they drive, pages opened in fresh browser contexts
(a shopper's, or a staff member's logged in to the admin), and a scan for card numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from tests.support import Api

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


def log_in(
    e2e_browser: Any, shop: Shop, username: str, password: str, locale: str = "es-MX"
) -> Any:
    """A page of its own, logged in to the admin as `username`."""
    page = open_page(e2e_browser, locale=locale)
    page.goto(f"{shop.url}{reverse('admin:login')}")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("#login-form [type=submit]").click()
    page.wait_for_url(f"{shop.url}{reverse('admin:index')}")
    return page


def success(page: Any) -> Any:
    """The admin's success messages on the page."""
    return page.locator("ul.messagelist li.success")


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
