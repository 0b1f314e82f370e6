"""What every change to an order shares: who made it (`core.ledger.Actor`) and its line in the
order's ledger (`OrderEvent`), written by every feature that changes an order."""

from __future__ import annotations

from checkout.models import Order, OrderEvent
from core.ledger import Actor


def order_event_record(order: Order, kind: str, message: str, actor: Actor) -> None:
    """Add a line to the order's ledger (its message cut to its column)."""
    OrderEvent.objects.create(order=order, kind=kind, message=message[:500], actor=actor)
