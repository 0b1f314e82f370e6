"""Template helpers of the storefront."""

from __future__ import annotations

from decimal import Decimal

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from core.money import pesos

register = template.Library()


@register.filter
def mxn(value: Decimal | int | str | None) -> str:
    """Mexican pesos as written in Mexico: $1,250.00 (comma thousands, point decimals)."""
    if value in (None, ""):
        return ""
    amount = Decimal(str(value)).quantize(Decimal("0.01"))
    return pesos(amount)


@register.filter
def unbreakable(value: object) -> SafeString:
    """A value that never breaks across lines (an order reference: ORD-7K2QX), as a span that
    can stand in a translated sentence (`blocktranslate with reference=...|unbreakable`)."""
    return format_html('<span class="nowrap">{}</span>', value)


@register.filter
def milliseconds(seconds: float | None) -> str:
    """Seconds as whole milliseconds (0.25: "250"; an unbounded value: "∞")."""
    if seconds is None:
        return ""
    return "∞" if seconds == float("inf") else f"{seconds * 1000:,.0f}"
