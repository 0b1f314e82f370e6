"""The SDK playground page for integrators, and the docs' screenshots of the card form."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import ROOT
from tests.helpers.provider import VISA
from tests.helpers.sandbox import SandboxProcess
from tests.helpers.servers import StaticSite
from tests.sandbox.browser.helpers import fill_card, open_merchant

SCREENSHOTS = ROOT / "docs" / "screenshots"


def test_the_playground_mounts_switches_and_tokenizes(
    browser_page: Any, sandbox: SandboxProcess
) -> None:
    """Mount, theme and locale switch, tokenize, and the token shown."""
    browser_page.goto(f"{sandbox.base_url}/sdk/v1/playground")
    frame = browser_page.frame_locator("#card-element iframe")
    fill_card(frame, VISA)
    browser_page.get_by_role("button", name="Get card token").click()
    # A locator wait: the page's CSP (no 'unsafe-eval') refuses string predicates.
    browser_page.locator("#result", has_text="payment_method_id").wait_for()
    assert '"payment_method_id": "visa"' in browser_page.locator("#result").inner_text()

    browser_page.select_option("#theme", "dark")
    browser_page.select_option("#locale", "es")

    src = browser_page.locator("#card-element iframe").get_attribute("src")
    assert "theme=dark" in src and "locale=es" in src
    assert frame.locator("label[for=cc-number]").inner_text() == "Número de tarjeta"


@pytest.mark.parametrize("theme", ["eco", "dark"])
@pytest.mark.parametrize("locale", ["en", "es"])
def test_card_form_screenshots(
    browser_page: Any, merchant_site: StaticSite, tmp_path: Path, theme: str, locale: str
) -> None:
    """Each theme in each language renders a finished form (kept in docs/screenshots when
    UPDATE_SCREENSHOTS=1)."""
    folder = SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    browser_page.set_viewport_size({"width": 520, "height": 420})
    frame = open_merchant(browser_page, merchant_site, f"?theme={theme}&locale={locale}")
    frame.locator("#cc-number").fill("3782 822463 10005")
    frame.locator("#cc-exp").fill("13/30")
    frame.locator("#cc-exp").blur()
    element = browser_page.locator("#card-element")
    if theme == "dark":
        browser_page.evaluate("document.body.style.background = '#12151b'")
    path = folder / f"card-{theme}-{locale}.png"

    element.screenshot(path=str(path))

    assert path.stat().st_size > 5_000
    height = element.bounding_box()["height"]
    assert 200 < height < 420  # the frame sized itself to the form
