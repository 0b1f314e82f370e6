"""Mexican pesos as the shop writes them everywhere (storefront, admin, messages, mails):
$1,290.00, commas between thousands and a point before the cents."""

from __future__ import annotations

from decimal import Decimal


def pesos(amount: Decimal) -> str:
    return f"${amount:,.2f}"
