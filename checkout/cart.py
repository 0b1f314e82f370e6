"""The shopping cart, kept in the session: product ids and quantities, never prices (prices
are read from the catalogue each time, and frozen only when the order is created)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.sessions.backends.base import SessionBase
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from checkout.models import Product

SESSION_KEY = "cart"
MAX_PER_LINE = 20


class CartError(ValueError):
    """A cart change that cannot be made; the message is for the shopper."""


@dataclass(frozen=True)
class CartLine:
    product: Product
    quantity: int

    @property
    def total(self) -> Decimal:
        return self.product.price * self.quantity

    @property
    def exceeds_stock(self) -> bool:
        return self.quantity > self.product.stock


class Cart:
    def __init__(self, session: SessionBase) -> None:
        self.session = session
        raw = session.get(SESSION_KEY) or {}
        self._items: dict[str, int] = {
            str(k): int(v) for k, v in raw.items() if str(k).isdigit() and int(v) > 0
        }

    def _save(self) -> None:
        self.session[SESSION_KEY] = self._items
        self.session.modified = True

    def quantity_of(self, product: Product) -> int:
        return self._items.get(str(product.pk), 0)

    def set(self, product: Product, quantity: int) -> None:
        """Put exactly `quantity` of the product in the cart (0 removes it)."""
        if quantity < 0:
            raise CartError(_("The quantity cannot be negative."))
        if quantity == 0:
            self.remove(product)
            return
        if not product.active:
            raise CartError(_("%(name)s is no longer sold.") % {"name": product.display_name})
        if quantity > min(product.stock, MAX_PER_LINE):
            if product.stock == 0:
                raise CartError(_("%(name)s is sold out.") % {"name": product.display_name})
            limit = min(product.stock, MAX_PER_LINE)
            raise CartError(
                ngettext(
                    "Only %(count)s of %(name)s can be ordered.",
                    "Only %(count)s of %(name)s can be ordered.",
                    limit,
                )
                % {"count": limit, "name": product.display_name}
            )
        self._items[str(product.pk)] = quantity
        self._save()

    def add(self, product: Product, quantity: int = 1) -> None:
        if quantity < 1:
            raise CartError(_("The quantity must be at least 1."))
        self.set(product, self.quantity_of(product) + quantity)

    def remove(self, product: Product) -> None:
        self._items.pop(str(product.pk), None)
        self._save()

    def clear(self) -> None:
        self._items = {}
        self._save()

    def lines(self) -> list[CartLine]:
        products = Product.objects.in_bulk([int(k) for k in self._items])
        return [CartLine(products[int(k)], q) for k, q in self._items.items() if int(k) in products]

    @property
    def count(self) -> int:
        return sum(self._items.values())

    def total(self) -> Decimal:
        return lines_total(self.lines())

    def __bool__(self) -> bool:
        return bool(self._items)


def lines_total(lines: list[CartLine]) -> Decimal:
    """What the cart's lines add up to (lines read once, by `Cart.lines`)."""
    return sum((line.total for line in lines), Decimal("0.00"))
