"""Browser tests: Playwright driving Debian's Chromium against a live sandbox, from merchant
pages served on other origins than the sandbox's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.provider import PUBLIC_KEY
from tests.helpers.sandbox import SandboxProcess
from tests.helpers.servers import StaticSite

PAGES = Path(__file__).resolve().parent / "pages"


@pytest.fixture
def browser_page(playwright_browser: Any) -> Iterator[Any]:
    context = playwright_browser.new_context(locale="en-US")
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture(scope="session")
def merchant_site(sandbox: SandboxProcess) -> Iterator[StaticSite]:
    """The merchant's page (its own origin) that loads the SDK from the sandbox."""
    template = (PAGES / "merchant.html").read_text()
    page = template.replace("{{SANDBOX}}", sandbox.base_url).replace("{{KEY}}", PUBLIC_KEY)
    site = StaticSite({"/": page, "/checkout": page})
    yield site
    site.stop()


@pytest.fixture(scope="session")
def foreign_site() -> Iterator[StaticSite]:
    """Another origin, whose page can be framed in the merchant's to post forged messages."""
    site = StaticSite({"/": "<!doctype html><title>foreign</title><p>foreign page</p>"})
    yield site
    site.stop()


@pytest.fixture(autouse=True)
def _fresh_sandbox(api: Any) -> None:
    """Every browser test starts from a reset sandbox (the `api` fixture resets it)."""
