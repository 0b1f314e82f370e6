"""The buyer's factura pages, under the order's signed link: ask for it (or correct it), and
download what was issued. Thin: the form, one rule, the page."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from books.forms import FacturaForm
from books.links import factura_urls
from books.models import FacturaRequest, FacturaState
from books.rules import FacturaRefused, factura_refusal, factura_request_save
from books.selectors import factura_of
from checkout.ownership import linked_order

FILES = {"xml": "application/xml", "pdf": "application/pdf"}


@never_cache
@require_http_methods(["GET", "POST"])
def factura_page(request: HttpRequest, reference: str, token: str) -> HttpResponse:
    order = linked_order(request, reference, token)
    factura = factura_of(order)
    refusal = factura_refusal(order)
    if factura is not None and factura.state != FacturaState.REQUESTED:
        refusal = _(
            "We have already started on your invoice, so its details can no longer be "
            "changed. Please write to us if something is wrong."
        )
    initial = {"email": order.email}
    if factura is not None:
        initial = {name: getattr(factura, name) for name in FacturaForm.base_fields}
    form = FacturaForm(request.POST or None, initial=initial)
    status = 200
    if request.method == "POST":
        if refusal:
            status = 409
        elif not form.is_valid():
            status = 400
        else:
            try:
                factura_request_save(order=order, data=form.cleaned_data)
            except FacturaRefused as exc:
                refusal, status = exc.message, 409
            else:
                messages.success(
                    request,
                    _("We have your details: we will send the invoice to %(email)s.")
                    % {"email": form.cleaned_data["email"]},
                )
                return redirect(factura_urls(order)["order"] + "#factura")
    context = {
        "shop_name": settings.SHOP_NAME,
        "order": order,
        "form": form,
        "factura": factura,
        "refusal": refusal,
        "urls": factura_urls(order),
    }
    return render(request, "books/factura_page.html", context, status=status)


@never_cache
@require_GET
def factura_file(request: HttpRequest, reference: str, token: str, kind: str) -> HttpResponse:
    """The issued factura's XML or PDF, for whoever holds the order's link (404 otherwise,
    and until it is issued)."""
    if kind not in FILES:
        raise Http404
    order = linked_order(request, reference, token)
    factura = (
        FacturaRequest.objects.filter(order=order, state=FacturaState.ISSUED)
        .only("uuid", kind)
        .first()
    )
    content = getattr(factura, kind, None) if factura is not None else None
    if not content:
        raise Http404
    response = HttpResponse(bytes(content), content_type=FILES[kind])
    response["Content-Disposition"] = f'attachment; filename="{factura.uuid}.{kind}"'
    response["Cache-Control"] = "private, no-store"
    return response
