"""Keys and rates of the project's rate limits (django-ratelimit), read per request so that
settings changes apply at once."""

from __future__ import annotations

import unicodedata

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """The client's address: from SHOP_CLIENT_IP_HEADER behind a proxy (the entry the nearest
    proxy appended), else REMOTE_ADDR. A request that bypassed the proxy is counted by its own
    address rather than failing."""
    header = settings.SHOP_CLIENT_IP_HEADER
    forwarded = request.META.get(header, "") if header else ""
    candidates = [part.strip() for part in forwarded.split(",") if part.strip()]
    return candidates[-1] if candidates else request.META.get("REMOTE_ADDR") or "unknown"


def login_username(group: str, request: HttpRequest) -> str:
    """The username as the login form will read it (trimmed, NFKC, case-folded), so that
    respelling it does not escape its limit."""
    raw = request.POST.get("username", "")
    return unicodedata.normalize("NFKC", raw).strip().casefold()


def login_rate_per_address(group: str, request: HttpRequest) -> str:
    return settings.ADMIN_LOGIN_RATE_PER_ADDRESS


def login_rate_per_user(group: str, request: HttpRequest) -> str:
    return settings.ADMIN_LOGIN_RATE_PER_USER
