"""Which orders a browser may see: those its session placed."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from checkout.models import Order

SESSION_ORDERS = "orders"


def remember_order(request: HttpRequest, order: Order) -> None:
    orders = request.session.get(SESSION_ORDERS, [])
    request.session[SESSION_ORDERS] = [*orders[-19:], order.reference]


def own_order(request: HttpRequest, reference: str) -> Order:
    """Only the browser session that placed an order can see or pay it (404 for any other,
    exactly as for an order that does not exist)."""
    if reference not in request.session.get(SESSION_ORDERS, []):
        raise Http404
    return get_object_or_404(Order.objects.prefetch_related("items"), reference=reference)
