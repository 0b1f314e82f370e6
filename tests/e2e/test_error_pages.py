"""The shop's 404 page in a real browser: a mistyped address shows it in Spanish, and its
language button shows the same address in English (the browser's Referer takes the shopper back:
the page never writes the address in its form)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_mistyped_address_shows_the_shops_404_and_switches_to_english(
    page: Any, live_server: Any
) -> None:
    """Given a shopper who mistypes an address, then the browser shows the shop's 404 page in
    Spanish, with the shop's header and a way back to the products; when they press "English",
    then the same address shows the page in English."""
    address = f"{live_server.url}/no-such-page"

    answer = page.goto(address)

    assert answer is not None and answer.status == 404
    expect(page.locator("h1")).to_have_text("No encontramos esta página")
    expect(page.locator("header a.brand")).to_have_text("Tienda Tlali")
    expect(page).to_have_title("Página no encontrada · Tienda Tlali")
    expect(page.locator("main").get_by_role("link", name="Volver a la tienda")).to_be_visible()
    page.get_by_role("button", name="English").click()
    expect(page.locator("h1")).to_have_text("We could not find this page")
    assert page.url == address
    expect(page.locator("main").get_by_role("link", name="Back to the shop")).to_be_visible()
