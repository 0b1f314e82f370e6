"""Subscriptions in the admin, kept as the provider has them: imported by id, and cancelled
(both asked of a task through `staff_actions`)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.admin_lists import BoundedListAdmin, DateRangeFilter, ReadOnlyAdmin, SearchTerm, Shape
from payments.actions.rules import subscription_cancel_asked
from payments.admin.columns import PriceFilter
from payments.forms import SubscriptionImportForm
from payments.models import Subscription
from staff_actions.admin import ActionPage, StaffActionsAdmin
from staff_actions.rules import Asked

SUBSCRIPTION_CANCEL = ActionPage(
    kind="payments.subscription_cancel",
    permission="payments.cancel_subscription",
    refused=_("Cancelling subscriptions needs the “Can cancel subscriptions” permission."),
)
SUBSCRIPTION_IMPORT = ActionPage(
    kind="payments.subscription_import",
    permission="payments.add_subscription",
    refused=_("Importing subscriptions needs the permission to add them."),
)


@admin.register(Subscription)
class SubscriptionAdmin(ReadOnlyAdmin, BoundedListAdmin, StaffActionsAdmin):
    list_display = [
        "provider_id",
        "price_id",
        "customer_name",
        "customer_email",
        "status",
        "invoice_count",
        "last_synced_at",
    ]
    list_filter = ["status", PriceFilter, ("created_at", DateRangeFilter)]
    sortable_by = ["provider_id"]
    search_fields = ["provider_id"]  # shows the box; `search` says what it finds
    search_help_text = _("Exact subscription id (the provider's) or customer email.")
    actions = ["cancel_selected"]
    change_list_template = "admin/payments/subscription/change_list.html"
    readonly_fields = [
        "provider_id",
        "price_id",
        "customer",
        "customer_email",
        "status",
        "invoices",
        "last_synced_at",
        "created_at",
    ]
    exclude = ["snapshot"]

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("payments.cancel_subscription")

    def search(self, queryset: QuerySet[Subscription], term: SearchTerm) -> QuerySet[Subscription]:
        """By the customer's email (in any case), or exactly by the provider's id."""
        if term.shape is Shape.EMAIL:
            return queryset.filter(customer_email__iexact=term.text)
        return queryset.filter(provider_id__in=term.spellings)

    @admin.display(description=_("customer"))
    def customer_name(self, obj: Subscription) -> str:
        customer = obj.customer or {}
        return " ".join(filter(None, [customer.get("first_name"), customer.get("last_name")]))

    @admin.display(description=_("invoices"))
    def invoice_count(self, obj: Subscription) -> int:
        return len(obj.invoices or [])

    @admin.action(description=_("Cancel selected subscriptions"), permissions=["cancel"])
    def cancel_selected(
        self, request: HttpRequest, queryset: QuerySet[Subscription]
    ) -> TemplateResponse | None:
        confirm = self.confirm_selected(
            request,
            queryset,
            "cancel_selected",
            title=gettext("Cancel these subscriptions?"),
            button=gettext("Yes, cancel them"),
            danger=True,
            explanation=gettext(
                "These subscriptions will be set inactive at the provider. An inactive "
                "subscription cannot be activated again."
            ),
        )
        if confirm is not None:
            return confirm
        self.ask_each(request, SUBSCRIPTION_CANCEL, queryset, subscription_cancel_asked)
        return None

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("import/", wrap(self.import_view), name="payments_subscription_import"),
            *super().get_urls(),
        ]

    def action_reference(self, obj: Subscription) -> str:
        return obj.provider_id

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Import by id: asked here, read from the provider by a task; the list says when."""
        self.check_allowed(request, SUBSCRIPTION_IMPORT)
        form = SubscriptionImportForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            provider_id = str(form.cleaned_data["provider_id"])
            self.ask(
                request,
                SUBSCRIPTION_IMPORT,
                None,
                lambda: Asked(params={"provider_id": provider_id}),
                reference=provider_id,
            )
            return self.back(None)
        return self.confirm_page(
            request,
            None,
            title=gettext("Import a subscription from the provider"),
            button=gettext("Import"),
            form=form,
        )
