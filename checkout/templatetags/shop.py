"""Template helpers of the storefront."""

from __future__ import annotations

from decimal import Decimal

from django import template

from payments.pesos import pesos

register = template.Library()


@register.filter
def mxn(value: Decimal | int | str | None) -> str:
    """Mexican pesos as written in Mexico: $1,250.00 (comma thousands, point decimals)."""
    if value in (None, ""):
        return ""
    amount = Decimal(str(value)).quantize(Decimal("0.01"))
    return pesos(amount)
