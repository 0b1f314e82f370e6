"""The addresses of an order's factura pages, under the order's own signed link (the buyer's
key to them: no session or account needed, and nothing reachable without the signature)."""

from __future__ import annotations

from django.urls import reverse

from checkout.links import order_token
from checkout.models import Order


def factura_urls(order: Order) -> dict[str, str]:
    args = {"reference": order.reference, "token": order_token(order.reference)}
    return {
        "form": reverse("books:factura", kwargs=args),
        "xml": reverse("books:factura_file", kwargs={**args, "kind": "xml"}),
        "pdf": reverse("books:factura_file", kwargs={**args, "kind": "pdf"}),
        "order": reverse("checkout:order_link", kwargs=args),
    }
