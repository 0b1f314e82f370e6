"""Where other apps add to the shopper's pages without checkout knowing them: a box of the
checkout's details form (its own form, validated with the details, kept once the order is
placed) and a section of the order's page. An app registers them from its `AppConfig.ready`;
checkout imports no such app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.forms import Form
from django.http import HttpRequest

from checkout.models import Order


@dataclass(frozen=True)
class CheckoutBox:
    """A box of the checkout's form: `form(data)` builds it (unbound without data; its
    `template_name` renders it), `keep(form, order)` keeps what it asked once the order is
    placed (in the order's transaction)."""

    name: str
    form: Callable[[Any], Form]
    keep: Callable[[Form, Order], None]


# A section of the order's page: the HTML it adds (safe), or "" to add nothing. Called with
# the request and the order as its page shows it.
OrderSection = Callable[[HttpRequest, Order], str]

_BOXES: dict[str, CheckoutBox] = {}
_SECTIONS: dict[str, OrderSection] = {}


def register_checkout_box(box: CheckoutBox) -> None:
    _BOXES[box.name] = box


def register_order_section(name: str, section: OrderSection) -> None:
    _SECTIONS[name] = section


def checkout_boxes() -> list[CheckoutBox]:
    return list(_BOXES.values())


def order_sections(request: HttpRequest, order: Order) -> list[str]:
    return [html for section in _SECTIONS.values() if (html := section(request, order))]
