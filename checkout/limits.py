"""Abuse limits of the checkout (Redis-backed through the cache): card testing is many payment
attempts from one browser session or one client address; a page asking for its payment's status
in a loop must not turn into as many calls to the provider."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django_ratelimit.core import is_ratelimited


def _session_or_address(group: str, request: HttpRequest) -> str:
    return request.session.session_key or f"address:{request.META.get('REMOTE_ADDR', '')}"


def payment_attempts_exceeded(request: HttpRequest) -> bool:
    """Count this payment attempt; True when its session or its address has made too many."""
    by_session = is_ratelimited(
        request,
        group="checkout.pay.session",
        key=_session_or_address,
        rate=settings.SHOP_PAY_ATTEMPTS_PER_SESSION,
        increment=True,
    )
    by_address = is_ratelimited(
        request,
        group="checkout.pay.address",
        key="ip",
        rate=settings.SHOP_PAY_ATTEMPTS_PER_ADDRESS,
        increment=True,
    )
    return by_session or by_address


def status_checks_exceeded(request: HttpRequest) -> bool:
    """Count this status check; True when its session has asked the provider too often."""
    return is_ratelimited(
        request,
        group="checkout.status.session",
        key=_session_or_address,
        rate=settings.SHOP_STATUS_CHECKS_PER_SESSION,
        increment=True,
    )
