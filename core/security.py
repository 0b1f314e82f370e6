"""The shop's Content-Security-Policy: built from settings, with per-request nonces (django-csp).
The browsers' violation reports arrive at `monitoring.csp_reports`."""

from __future__ import annotations

from urllib.parse import urlsplit

from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from csp.middleware import CSPMiddleware, PolicyParts
from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase


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
