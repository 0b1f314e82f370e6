"""The shop's Content-Security-Policy: built from settings, with per-request nonces (django-csp),
and the endpoint that collects the browsers' violation reports."""

from __future__ import annotations

import json
import logging
import re
from urllib.parse import urlsplit

from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from csp.middleware import CSPMiddleware, PolicyParts
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

logger = logging.getLogger("csp")

MAX_REPORT_BYTES = 8192


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL ('' if it has none)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def content_security_policy(*, report_uri: str) -> dict[str, object]:
    """Scripts only from the shop (and the provider's SDK, added per request), frames only from
    the provider, nothing inline, and the shop can be framed by nobody."""
    return {
        "DIRECTIVES": {
            "default-src": [SELF],
            "script-src": [SELF, NONCE],
            "style-src": [SELF],
            "img-src": [SELF, "data:"],
            "font-src": [SELF],
            "connect-src": [SELF],
            "frame-src": [NONE],
            "frame-ancestors": [NONE],
            "form-action": [SELF],
            "object-src": [NONE],
            "base-uri": [NONE],
            "report-uri": [report_uri],
        }
    }


def provider_origins() -> list[str]:
    """Where the provider's SDK, card form and 3-D Secure pages come from."""
    configured = [origin for origin in settings.PAYMENTS_FRAME_ORIGINS if origin]
    return configured or [o for o in [origin_of(settings.PAYMENTS_API_BASE_URL)] if o]


def sdk_url() -> str:
    """The address of the provider's checkout SDK script."""
    return settings.PAYMENTS_SDK_URL or f"{settings.PAYMENTS_API_BASE_URL}/sdk/v1/checkout.js"


class ShopCSPMiddleware(CSPMiddleware):
    """The policy from settings, with a fresh nonce on every response and the provider's origin
    (read per request, so it follows the settings) for scripts, images and frames. The admin's own
    templates carry inline style attributes, so only under /admin/ are inline styles allowed
    (never inline scripts)."""

    def get_policy_parts(
        self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False
    ) -> PolicyParts:
        if report_only:
            return super().get_policy_parts(request, response, report_only)
        str(request.csp_nonce)  # every page gets a fresh nonce, used or not
        parts = super().get_policy_parts(request, response, report_only)
        provider = provider_origins()
        if provider:
            parts.update = {
                **(parts.update or {}),
                "script-src": list(dict.fromkeys([*provider, origin_of(sdk_url())])),
                "img-src": provider,
            }
            parts.replace = {"frame-src": provider, **(parts.replace or {})}
        if request.path_info.startswith("/admin/"):
            parts.replace = {**(parts.replace or {}), "style-src": [SELF, UNSAFE_INLINE]}
        return parts


@csrf_exempt
@require_POST
def csp_report(request: HttpRequest) -> HttpResponse:
    """Browsers POST CSP violation reports here; each is logged (the directive, the blocked
    origin and the shop's page, nothing else a sender wrote), never stored."""
    body = request.read(MAX_REPORT_BYTES + 1)
    if len(body) > MAX_REPORT_BYTES:
        return HttpResponse(status=413)
    try:
        report = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return HttpResponse(status=400)
    details = report.get("csp-report", report) if isinstance(report, dict) else report
    if not isinstance(details, dict):
        return HttpResponse(status=400)
    logger.warning(
        "CSP violation: %s blocked %s on %s",
        _directive(details.get("effective-directive") or details.get("violated-directive")),
        _blocked(details.get("blocked-uri") or details.get("blockedURL")),
        _document(request, details.get("document-uri") or details.get("documentURL")),
    )
    return HttpResponse(status=204)


# A report is whatever anyone POSTs: of its fields only what says what was blocked is logged,
# reduced to a shape that cannot carry a credential, a query string or a card number.
_DIRECTIVE = re.compile(r"[a-z][a-z-]{0,39}")
_KEYWORD = re.compile(r"[a-z][a-z-]{0,19}")  # inline, eval, data, blob, self, ...
_PATH = re.compile(r"/[A-Za-z0-9/_.-]{0,99}")


def _directive(value: object) -> str:
    text = str(value or "").strip().split(" ")[0]
    return text if _DIRECTIVE.fullmatch(text) else "?"


def _blocked(value: object) -> str:
    """The blocked resource's origin (no user, path or query), or a keyword such as `inline`."""
    text = str(value or "").strip()
    parts = urlsplit(text)
    try:
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname:
            port = f":{parts.port}" if parts.port else ""
            return f"{parts.scheme}://{parts.hostname[:100]}{port}"
    except ValueError:  # a port that is no number
        return "?"
    keyword = text.split(":")[0].lower()
    return keyword if _KEYWORD.fullmatch(keyword) else "?"


def _document(request: HttpRequest, value: object) -> str:
    """The page's path, without its query, when the page is the shop's; else `another site`."""
    parts = urlsplit(str(value or ""))
    if parts.netloc and parts.netloc != request.get_host():
        return "another site"
    path = parts.path or "/"
    return path if _PATH.fullmatch(path) else "?"
