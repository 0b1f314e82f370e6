"""The browser side of the provider: the SDK script, the card form iframe, the playground."""

from __future__ import annotations

import hmac
import re
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sandbox.provider.i18n import CARD_FORM, request_locale

SDK_DIR = Path(__file__).resolve().parent / "static" / "sandbox" / "sdk"
THEMES = ("eco", "dark")
_FRAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def page_csp(frame_ancestors: str, *, frames: str = "'none'") -> str:
    """A strict policy for the sandbox's own pages: only its own scripts, styles and API."""
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-src {frames}; "
        f"frame-ancestors {frame_ancestors}"
    )


def _origin(value: str) -> str | None:
    """`value` when it is exactly an http(s) origin (scheme://host[:port]), else None."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    if parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return value


@require_GET
def sdk_script(request: HttpRequest) -> FileResponse:
    response = FileResponse(
        (SDK_DIR / "checkout.js").open("rb"), content_type="text/javascript; charset=utf-8"
    )
    response["Cache-Control"] = "public, max-age=300"
    response["Access-Control-Allow-Origin"] = "*"
    return response


@require_GET
def card_frame(request: HttpRequest) -> HttpResponse:
    """The card form, framed only by the origin that mounted it (the one it talks to)."""
    key = request.GET.get("key", "")
    parent_origin = _origin(request.GET.get("origin", ""))
    frame = request.GET.get("frame", "")
    if not hmac.compare_digest(key.encode(), settings.SANDBOX_PUBLIC_KEY.encode()):
        return HttpResponse("Unknown public API key.", status=400, content_type="text/plain")
    if parent_origin is None or not _FRAME_ID.match(frame):
        return HttpResponse(
            "The card form needs the origin of the page that mounts it.",
            status=400,
            content_type="text/plain",
        )
    locale = request_locale(request)
    theme = request.GET.get("theme", "eco")
    context = {
        "key": key,
        "parent_origin": parent_origin,
        "frame": frame,
        "locale": locale,
        "theme": theme if theme in THEMES else "eco",
        "text": CARD_FORM[locale],
    }
    response = render(request, "sandbox/card_frame.html", context)
    response["Content-Security-Policy"] = page_csp(parent_origin)
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_GET
def playground(request: HttpRequest) -> HttpResponse:
    """A page for integrators: mount the card element, switch theme and locale, tokenize."""
    response = render(request, "sandbox/playground.html", {"key": settings.SANDBOX_PUBLIC_KEY})
    response["Content-Security-Policy"] = page_csp("'none'", frames="'self'")
    return response
