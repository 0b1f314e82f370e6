"""An order's items going back to stock, once each (recorded in the order's ledger), and taken
out of it again."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from checkout.models import Order, OrderEventKind, OrderItem, Product
from checkout.records import order_event_record
from core.ledger import Actor


def restock(order: Order, quantities: dict[int, int] | None, actor: Actor) -> None:
    """Put items back in stock, recorded once: `quantities` (item id -> how many, returned
    items included), each at most what is not back already; None: whatever is still to ship."""
    back = []
    with transaction.atomic():
        # The order first, then its items: every transaction that touches both takes them in
        # this order (the order's sync, a shipment), so none waits on another in a circle.
        Order.objects.select_for_update().filter(pk=order.pk).first()
        items = OrderItem.objects.select_for_update().filter(order=order).order_by("pk")
        for item in items:
            if quantities is None:
                count = item.left_to_ship
            else:
                count = min(quantities.get(item.pk, 0), item.quantity - item.quantity_restocked)
            if count <= 0:
                continue
            item.quantity_restocked += count
            item.save(update_fields=["quantity_restocked"])
            Product.objects.filter(pk=item.product_id).update(stock=F("stock") + count)
            back.append(f"{count} × {item.name}")
        if back:
            order_event_record(order, OrderEventKind.RESTOCKED, ", ".join(back), actor)


class OutOfStock(Exception):
    """An item the order would take back is no longer in stock."""


def order_take_back(order: Order) -> None:
    """Take out of stock again what went back when the order expired: all its items or, with
    `OutOfStock`, none (the caller holds the order's lock)."""
    with transaction.atomic():
        items = OrderItem.objects.select_for_update().filter(order=order).order_by("pk")
        for item in items:
            count = item.quantity_restocked
            if not count:
                continue
            taken = Product.objects.filter(pk=item.product_id, stock__gte=count).update(
                stock=F("stock") - count
            )
            if not taken:
                raise OutOfStock(f"{item.name} is sold out")
            item.quantity_restocked = 0
            item.save(update_fields=["quantity_restocked"])


def order_restock_unshipped(order: Order, actor: Actor = None) -> None:
    """Put back in stock whatever of the order is still to ship (idempotent)."""
    restock(order, None, actor)
