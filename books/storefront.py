"""What books adds to checkout's pages, through checkout's extension points: the optional
factura box of the checkout's form, and the factura section of the order's page."""

from __future__ import annotations

from django.forms import Form
from django.http import HttpRequest
from django.template.loader import render_to_string

from books.forms import FacturaBoxForm
from books.links import factura_urls
from books.rules import factura_refusal, factura_request_save
from books.selectors import INVOICEABLE, factura_of
from checkout.extensions import CheckoutBox, register_checkout_box, register_order_section
from checkout.models import Order


def _keep(form: Form, order: Order) -> None:
    if isinstance(form, FacturaBoxForm) and form.is_wanted:
        factura_request_save(order=order, data=form.cleaned_data, at_checkout=True)


def order_section(request: HttpRequest, order: Order) -> str:
    """The order page's factura section: the factura issued (its PDF and XML), the request
    and whether it can still be corrected, the way to ask for one, or why not."""
    factura = factura_of(order)
    if factura is None and order.status not in INVOICEABLE:
        return ""
    refusal = factura_refusal(order)
    context = {
        "order": order,
        "factura": factura,
        "refusal": refusal,
        "urls": factura_urls(order),
    }
    return render_to_string("books/order_section.html", context, request=request)


def register() -> None:
    register_checkout_box(CheckoutBox(name="factura", form=FacturaBoxForm, keep=_keep))
    register_order_section("factura", order_section)
