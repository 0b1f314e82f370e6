"""Browser tests: Playwright driving Debian's Chromium against a live sandbox, from merchant
pages served on other origins than the sandbox's."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support import CHROMIUM, CHROMIUM_ARGS, PUBLIC_KEY, SandboxProcess, free_port

PAGES = Path(__file__).resolve().parent / "pages"


class StaticSite:
    """A tiny web server for test pages, on an origin of its own (its own port)."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page = site.pages.get(self.path.split("?")[0])
                if page is None:
                    self.send_error(404)
                    return
                raw = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.pages = pages
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


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


__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "StaticSite"]
