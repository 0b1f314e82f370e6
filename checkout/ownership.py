"""Which orders a browser may see: those its session placed, and any whose own link (a token
signed with SECRET_KEY, `checkout.links`) it opened."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from checkout.links import token_matches
from checkout.models import Order

SESSION_ORDERS = "orders"


def remember_order(request: HttpRequest, order: Order) -> None:
    orders = request.session.get(SESSION_ORDERS, [])
    request.session[SESSION_ORDERS] = [*orders[-19:], order.reference]


def own_order(request: HttpRequest, reference: str, *, items: bool = True) -> Order:
    """Only the browser session that placed an order can see or pay it (404 for any other,
    exactly as for an order that does not exist). `items`: read its lines too (the pages that
    show them), else the order alone (the JSON endpoints)."""
    if reference not in request.session.get(SESSION_ORDERS, []):
        raise Http404
    return _order(reference, items=items)


def linked_order(request: HttpRequest, reference: str, token: str) -> Order:
    """The order whose link this is (404 for a wrong token, as for an order that does not
    exist); from then on the browser may see and pay it as the one that placed it."""
    if not token_matches(reference, token):
        raise Http404
    order = _order(reference)
    remember_order(request, order)
    return order


def _order(reference: str, *, items: bool = True) -> Order:
    orders = Order.objects.prefetch_related("items") if items else Order.objects
    return get_object_or_404(orders, reference=reference)
