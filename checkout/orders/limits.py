"""Abuse limits of the checkout (Redis-backed through the cache): card testing is many payment
attempts from one browser session or one client address; a page asking for its payment's status
in a loop must not turn into as many calls to the provider."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from django_ratelimit.core import _split_rate, is_ratelimited

from checkout.models import Order
from core.sessions import session_identity
from payments.models import Payment

logger = logging.getLogger(__name__)


class LimitsUnavailable(Exception):
    """The cache that counts the limits (Redis) cannot be reached."""


def _limited(request: HttpRequest, **limit: Any) -> bool:
    try:
        return is_ratelimited(request, increment=True, **limit)
    except Exception as exc:  # the cache's own errors differ by backend: all mean "unreachable"
        logger.warning("checkout limits unavailable (%s): %s", limit["group"], exc)
        raise LimitsUnavailable(str(exc)) from exc


def _rate(rate: str) -> tuple[int, int]:
    """A rate of the settings ("8/10m") as (count, seconds), as django-ratelimit reads it."""
    count, seconds = _split_rate(rate)
    return int(count), int(seconds)


def _session_or_address(group: str, request: HttpRequest) -> str:
    return session_identity(request.session) or f"address:{request.META.get('REMOTE_ADDR', '')}"


def _counted(request: HttpRequest, what: str, per_session: str, per_address: str) -> bool:
    """Count one `what` by session and by address; True when either has made too many."""
    by_session = _limited(
        request, group=f"checkout.{what}.session", key=_session_or_address, rate=per_session
    )
    by_address = _limited(request, group=f"checkout.{what}.address", key="ip", rate=per_address)
    return by_session or by_address


def payment_attempts_exceeded(request: HttpRequest) -> bool:
    """Count this payment attempt; True when its session or its address has made too many.
    Raises `LimitsUnavailable` when they cannot be counted (then `order_attempts_exceeded`
    counts them): no attempt goes uncounted."""
    return _counted(
        request,
        "pay",
        settings.SHOP_PAY_ATTEMPTS_PER_SESSION,
        settings.SHOP_PAY_ATTEMPTS_PER_ADDRESS,
    )


def order_attempts_exceeded(order: Order) -> bool:
    """While the cache cannot count attempts (Redis down): True when the order has had as many
    attempts within the period as a session may make (SHOP_PAY_ATTEMPTS_PER_SESSION), counted
    in the database. The shop keeps taking payments, and card testing stays bounded."""
    count, seconds = _rate(settings.SHOP_PAY_ATTEMPTS_PER_SESSION)
    since = timezone.now() - timedelta(seconds=seconds)
    made = Payment.objects.filter(external_reference=order.reference, created_at__gte=since)
    return made.count() >= count


def status_checks_exceeded(request: HttpRequest) -> bool:
    """Count this status check; True when its session has asked the provider too often, or
    when the checks cannot be counted (then the shop's own records answer)."""
    try:
        return _limited(
            request,
            group="checkout.status.session",
            key=_session_or_address,
            rate=settings.SHOP_STATUS_CHECKS_PER_SESSION,
        )
    except LimitsUnavailable:
        return True


def order_creations_exceeded(request: HttpRequest) -> bool:
    """Count this order; True when its session or its address has placed too many. While the
    cache is down orders are not counted (logged): the shop keeps selling, and what an unpaid
    order holds goes back to stock when its reservation expires."""
    try:
        return _counted(
            request, "orders", settings.SHOP_ORDERS_PER_SESSION, settings.SHOP_ORDERS_PER_ADDRESS
        )
    except LimitsUnavailable:
        return False


def order_lists_exceeded(request: HttpRequest) -> bool:
    """Count this request for a list of orders by mail ("Mis pedidos"); True also when it
    cannot be counted (no mail goes out uncounted)."""
    try:
        return _counted(
            request,
            "order_lists",
            settings.SHOP_ORDER_LISTS_PER_SESSION,
            settings.SHOP_ORDER_LISTS_PER_ADDRESS,
        )
    except LimitsUnavailable:
        return True
