"""The sale day's admission at the storefront's door (checkout.admission): the shopping pages
let a browser in by its turn, or answer the waiting page; every page served is counted by the
time it took, which sets the pace (checkout.admission.pace). Pages of an order already placed
(paying, its status, the order itself), the admin, the API, webhooks and health checks are
never held back."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from checkout.admission.pace import page_served
from checkout.admission.rules import COOKIE, refresh_after, turn_for
from core.request_queue import queued_seconds

# The pages of shopping, before an order exists (checkout.urls names).
HELD_BACK = frozenset({"home", "product", "cart", "cart_add", "cart_update", "cart_remove",
                       "checkout"})  # fmt: skip


class AdmissionMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        if getattr(request, "shop_served", False):  # the pace follows what the pages take,
            page_served(time.perf_counter() - started + queued_seconds())  # their wait too
        turn = getattr(request, "shop_turn", None)
        if turn and request.COOKIES.get(COOKIE) != turn:
            response.set_cookie(
                COOKIE, turn, max_age=86400, secure=request.is_secure(), httponly=True,
                samesite="Lax",
            )  # fmt: skip
        return response

    def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: Any
    ) -> HttpResponse | None:
        match = request.resolver_match
        if match is None or match.namespace != "checkout":
            return None
        if match.url_name not in HELD_BACK:
            request.shop_served = True  # type: ignore[attr-defined]
            return None
        turn = turn_for(request.COOKIES.get(COOKIE))
        request.shop_turn = turn.cookie  # type: ignore[attr-defined]
        if turn.position is None:
            request.shop_served = True  # type: ignore[attr-defined]
            return None
        return waiting_page(request, turn.position, turn.wait)


def waiting_page(request: HttpRequest, position: int, wait: int = 0) -> HttpResponse:
    """The queue's page: where the shopper stands, asked again by itself every few seconds (a
    form sent while waiting asks for the cart's page instead: a refresh asks with GET)."""
    every = refresh_after(wait)
    if request.method in ("GET", "HEAD"):
        again, refresh = request.get_full_path(), str(every)
    else:
        again = reverse("checkout:cart")
        refresh = f"{every}; url={again}"
    response = render(
        request,
        "checkout/waiting.html",
        {"shop_name": settings.SHOP_NAME, "position": position, "refresh_seconds": every,
         "again": again, "wait_minutes": max(1, math.ceil(wait / 60)) if wait > 60 else 0,
         "wait_seconds": wait},
    )  # fmt: skip
    response["Refresh"] = refresh
    response["X-Shop-Queue-Position"] = str(position)
    add_never_cache_headers(response)
    return response
