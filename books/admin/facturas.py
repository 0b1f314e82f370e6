"""The facturas in the admin. "Facturas por emitir" lists the paid orders' requests not issued
yet, with what the invoice needs (the charge, the refunds, SAT's payment form, the buyer's
data), in one query whatever its length; staff start on them (the buyer can no longer change
them) and register the CFDI their PAC issued, checked before it is kept. "Facturas" lists them
all, with those owing a credit note. Files are downloaded only through the admin's views,
with the permission to see facturas."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET

from books import catalogues
from books.forms import RegisterForm
from books.models import FacturaRequest, FacturaState, FacturaToIssue
from books.rules import FacturaRefused, factura_register, factura_start
from books.selectors import facturas_to_issue, payment_form_code, with_money
from core.admin_lists import BoundedListAdmin, ReadOnlyAdmin, SearchTerm
from core.money import pesos

ISSUE = "books.issue_factura"
VIEW = "books.view_facturarequest"
FILES = {"xml": "application/xml", "pdf": "application/pdf"}
PAYMENT_FORMS = {"04": "04 Tarjeta de crédito", "28": "28 Tarjeta de débito", "01": "01 Efectivo"}


class _FacturaColumns(ReadOnlyAdmin, BoundedListAdmin):
    """What both lists show of a request and its order."""

    list_per_page = 50
    sortable_by: list[str] = []
    list_display_links = None  # the order's column links to the order

    def search(self, queryset: QuerySet[Any], term: SearchTerm) -> QuerySet[Any]:
        """By the order's exact reference or the buyer's RFC."""
        return queryset.filter(Q(order__reference__in=term.spellings) | Q(rfc=term.text.upper()))

    @admin.display(description=gettext_lazy("order"))
    def order_reference(self, obj: FacturaRequest) -> str:
        url = reverse("admin:checkout_order_change", args=[obj.order_id])
        return format_html('<a href="{}">{}</a>', url, obj.order.reference)

    @admin.display(description=gettext_lazy("placed"))
    def placed(self, obj: FacturaRequest) -> Any:
        return obj.order.created_at

    @admin.display(description=gettext_lazy("charged"))
    def charged_shown(self, obj: Any) -> str:
        return pesos(obj.charged)

    @admin.display(description=gettext_lazy("refunded"))
    def refunded_shown(self, obj: Any) -> str:
        return pesos(obj.refunded)

    @admin.display(description=gettext_lazy("SAT payment form"))
    def payment_form(self, obj: Any) -> str:
        code = payment_form_code(obj.method_type)
        return PAYMENT_FORMS.get(code, f"{code} Por definir")

    @admin.display(description=gettext_lazy("buyer"))
    def buyer(self, obj: FacturaRequest) -> str:
        return format_html(
            "<strong>{}</strong><br>{}<br>{}<br>{} · CP {}<br>{}",
            obj.rfc,
            obj.name,
            catalogues.regimen_name(obj.regimen),
            catalogues.use_name(obj.use),
            obj.postal_code,
            obj.email,
        )


@admin.register(FacturaToIssue)
class FacturaToIssueAdmin(_FacturaColumns):
    list_display = [
        "order_reference",
        "placed",
        "charged_shown",
        "refunded_shown",
        "payment_form",
        "buyer",
        "state",
        "register",
    ]
    search_fields = ["rfc"]
    search_help_text = gettext_lazy("Exact order reference or RFC.")
    actions = ["start_selected"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FacturaRequest]:
        return facturas_to_issue().defer("xml", "pdf")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm(ISSUE) or request.user.has_perm(VIEW)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_issue_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(ISSUE)

    @admin.display(description=gettext_lazy("CFDI"))
    def register(self, obj: FacturaRequest) -> str:
        url = reverse("admin:books_facturatoissue_register", args=[obj.pk])
        return format_html(
            '<a class="button" id="register-{}" href="{}">{}</a>',
            obj.pk,
            url,
            _("Register issued invoice"),
        )

    @admin.action(
        description=gettext_lazy("Start issuing the selected invoices"), permissions=["issue"]
    )
    def start_selected(self, request: HttpRequest, queryset: QuerySet[FacturaRequest]) -> None:
        started = factura_start(
            factura_ids=list(queryset.values_list("pk", flat=True)), actor=request.user
        )
        self.message_user(
            request,
            _("%(count)s invoices started: their buyers can no longer change them.")
            % {"count": started},
            messages.SUCCESS,
        )

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path(
                "<int:pk>/register/",
                wrap(self.register_view),
                name="books_facturatoissue_register",
            ),
            *super().get_urls(),
        ]

    def register_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Register the CFDI issued for a request: its UUID, the PAC's XML and maybe its PDF,
        checked before anything is kept; a refusal is said on the form and changes nothing."""
        if not request.user.has_perm(ISSUE):
            raise PermissionDenied(
                _("Registering invoices needs the “Can register issued invoices” permission.")
            )
        factura = get_object_or_404(
            with_money(FacturaRequest.objects.select_related("order").defer("xml", "pdf")),
            pk=pk,
        )
        form = RegisterForm(request.POST or None, request.FILES or None)
        status = 200
        if request.method == "POST":
            status = 400
            if form.is_valid():
                try:
                    factura_register(
                        factura_id=factura.pk,
                        uuid=form.cleaned_data["uuid"],
                        xml=form.cleaned_data["xml"],
                        pdf=form.cleaned_data["pdf"],
                        actor=request.user,
                    )
                except FacturaRefused as exc:
                    form.add_error(None, exc.message)
                else:
                    self.message_user(
                        request,
                        _("%(reference)s: invoice %(uuid)s registered; the buyer gets it by "
                          "mail and on the order's page.")
                        % {"reference": factura.order.reference, "uuid": form.cleaned_data["uuid"]},
                        messages.SUCCESS,
                    )  # fmt: skip
                    return HttpResponseRedirect(reverse("admin:books_facturatoissue_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Register issued invoice: %(reference)s")
            % {"reference": factura.order.reference},
            "factura": factura,
            "form": form,
            "charged": pesos(factura.charged),
            "refunded": pesos(factura.refunded),
            "net": pesos(factura.charged - factura.refunded),
            "payment_form": self.payment_form(factura),
            "regimen": catalogues.regimen_name(factura.regimen),
            "use": catalogues.use_name(factura.use),
        }
        return TemplateResponse(request, "admin/books/register.html", context, status=status)


class CreditNoteFilter(admin.SimpleListFilter):
    title = gettext_lazy("credit note")
    parameter_name = "credit_note"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("due", gettext_lazy("Refunded after the invoice: credit note due"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "due":
            return queryset.filter(credit_note_due_at__isnull=False)
        return queryset


@admin.register(FacturaRequest)
class FacturaRequestAdmin(_FacturaColumns):
    list_display = [
        "order_reference",
        "placed",
        "charged_shown",
        "refunded_shown",
        "buyer",
        "state",
        "uuid",
        "issued_at",
        "credit_note",
        "files",
    ]
    list_filter = ["state", CreditNoteFilter]
    search_fields = ["rfc"]
    search_help_text = gettext_lazy("Exact order reference or RFC.")

    def get_queryset(self, request: HttpRequest) -> QuerySet[FacturaRequest]:
        queryset = super().get_queryset(request).select_related("order").defer("xml", "pdf")
        return with_money(queryset).order_by("-created_at", "-id")

    @admin.display(description=gettext_lazy("credit note"))
    def credit_note(self, obj: Any) -> str:
        if obj.credit_note_due_at is None:
            return "—"
        since = obj.refunded - (obj.refunded_at_issue or 0)
        return _("Due: %(amount)s refunded after the invoice") % {"amount": pesos(since)}

    @admin.display(description=gettext_lazy("files"))
    def files(self, obj: FacturaRequest) -> str:
        if obj.state != FacturaState.ISSUED:
            return "—"
        return format_html(
            '<a href="{}">XML</a> · <a href="{}">PDF</a>',
            reverse("admin:books_facturarequest_file", args=[obj.pk, "xml"]),
            reverse("admin:books_facturarequest_file", args=[obj.pk, "pdf"]),
        )

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path(
                "<int:pk>/file/<str:kind>/",
                wrap(require_GET(self.file_view)),
                name="books_facturarequest_file",
            ),
            *super().get_urls(),
        ]

    def file_view(self, request: HttpRequest, pk: int, kind: str) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied(_("Seeing invoices needs the “Can view invoice” permission."))
        if kind not in FILES:
            raise Http404
        factura = get_object_or_404(
            FacturaRequest.objects.only("uuid", kind), pk=pk, state=FacturaState.ISSUED
        )
        content = getattr(factura, kind)
        if not content:
            raise Http404
        response = HttpResponse(bytes(content), content_type=FILES[kind])
        response["Content-Disposition"] = f'attachment; filename="{factura.uuid}.{kind}"'
        response["Cache-Control"] = "private, no-store"
        return response
