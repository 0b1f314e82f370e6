"""Orders and products in the staff admin. An order is changed only by its actions (ship,
cancel, refund, refresh: `checkout.admin_actions`); its status follows its payments."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from checkout.admin_actions import OrderActionsMixin, available_actions
from checkout.mails.selectors import unsent_for
from checkout.models import TO_SHIP, Order, OrderItem, OrderMail, Product
from checkout.orders.selectors import (
    order_ledger,
    order_payments,
    with_charged,
    with_installment_plan,
)
from checkout.templatetags.shop import mxn
from checkout.words import interest_free_text
from core.admin_lists import (
    BoundedListAdmin,
    DateRangeFilter,
    ReadOnlyAdmin,
    SearchTerm,
    Shape,
    recent_values,
)
from payments.models import Payment


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ["name", "unit_price", "stock", "active"]
    list_filter = ["active"]
    search_fields = ["name", "name_en", "slug"]
    prepopulated_fields = {"slug": ["name"]}

    @admin.display(description=_("price"), ordering="price")
    def unit_price(self, obj: Product) -> str:
        return f"{mxn(obj.price)} MXN"


class OrderItemInline(ReadOnlyAdmin, admin.TabularInline):
    model = OrderItem
    extra = 0
    can_delete = False
    fields = ["name", "price", "quantity", "quantity_shipped", "quantity_restocked", "line"]
    readonly_fields = fields
    verbose_name = _("item")
    verbose_name_plural = _("items")

    @admin.display(description=_("unit price"))
    def price(self, obj: OrderItem) -> str:
        return mxn(obj.unit_price)

    @admin.display(description=_("line total"))
    def line(self, obj: OrderItem) -> str:
        return mxn(obj.line_total)


class OrderMailInline(ReadOnlyAdmin, admin.TabularInline):
    """The mails due to the customer for the order's events, and whether each went out (read
    only: they are sent by their tasks)."""

    model = OrderMail
    extra = 0
    can_delete = False
    fields = ["kind", "amount_shown", "created_at", "sent", "text_sent"]
    readonly_fields = fields
    ordering = ["created_at", "id"]

    @admin.display(description=_("amount"))
    def amount_shown(self, obj: OrderMail) -> str:
        if obj.amount is None:
            return "—"
        if obj.released:
            return _("%(amount)s (released %(released)s)") % {
                "amount": mxn(obj.amount),
                "released": mxn(obj.released),
            }
        return mxn(obj.amount)

    @admin.display(description=_("sent"))
    def sent(self, obj: OrderMail) -> str:
        if obj.sent_at is None:
            return str(_("not sent yet"))
        return date_format(timezone.localtime(obj.sent_at), "DATETIME_FORMAT")

    @admin.display(description=_("message"))
    def text_sent(self, obj: OrderMail) -> str:
        """What the customer was told (its subject, and the text under it), while it is kept
        (SHOP_MAIL_KEEP_DAYS after sending: checkout.retention.rules)."""
        if obj.body:
            return format_html(
                '<details><summary>{}</summary><div style="white-space: pre-wrap; '
                'max-width: 48em">{}</div></details>',
                obj.subject,
                obj.body,
            )
        if obj.sent_at is None:
            return "—"
        return str(_("text not kept"))


class ToShipFilter(admin.SimpleListFilter):
    """The orders paid or held whose items are not all sent (the owner's dashboard links here)."""

    title = _("waiting to be shipped")
    parameter_name = "to_ship"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", _("Paid or held, not all shipped"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Order]) -> QuerySet[Order]:
        return queryset.filter(TO_SHIP) if self.value() == "yes" else queryset


class UnsentMailsFilter(admin.SimpleListFilter):
    """The orders with a mail to the customer not sent in time (its task and the sweep have
    not got it out)."""

    title = _("mails to the customer")
    parameter_name = "mails"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("unsent", _("A mail not sent in time"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Order]) -> QuerySet[Order]:
        if self.value() != "unsent":
            return queryset
        return queryset.filter(pk__in=OrderMail.objects.filter(unsent_for()).values("order_id"))


@admin.register(Order)
class OrderAdmin(ReadOnlyAdmin, BoundedListAdmin, OrderActionsMixin):
    """The staff's main screen: the order, its customer, its payments and their ledger, and
    the actions the staff member may take on it. The list stays fast on a year of orders
    (core.admin_lists): each sortable column, filter and search has its index."""

    list_display = [
        "reference",
        "created_at",
        "customer_name",
        "amount",
        "charged",
        "status",
        "fulfilment",
        "installments",
    ]
    list_filter = [
        "status",
        "fulfilment",
        ToShipFilter,
        UnsentMailsFilter,
        ("created_at", DateRangeFilter),
    ]
    sortable_by = ["reference", "created_at", "amount"]
    search_fields = ["reference"]  # shows the box; `search` says what it finds
    search_help_text = _(
        "Exact order reference, customer email, provider payment id or the card's last 4 digits."
    )
    inlines = [OrderItemInline, OrderMailInline]
    actions = ["ship_selected"]
    change_form_template = "admin/checkout/order/change_form.html"
    fieldsets = [
        (None, {"fields": ["reference", "status", "fulfilment", "amount", "installments"]}),
        (
            _("Customer"),
            {"fields": ["customer_name", "email", "phone", "address", "language"]},
        ),
        (_("Dates"), {"fields": ["created_at", "reserved_until", "updated_at"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f for _name, options in self.fieldsets for f in options["fields"]]

    def change_context(self, request: HttpRequest, obj: Order) -> dict[str, Any]:
        payments = order_payments(obj)
        return {
            "order_actions": available_actions(request, obj),
            "order_payments": payments,
            "ledger": order_ledger(obj, payments),
        }

    @admin.display(description=_("total"), ordering="total")
    def amount(self, obj: Order) -> str:
        return f"{mxn(obj.total)} {obj.currency}"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Order]:
        return with_installment_plan(with_charged(super().get_queryset(request)))

    def search(self, queryset: QuerySet[Order], term: SearchTerm) -> QuerySet[Order]:
        """By the customer's email (in any case), or by the payments named by a provider
        payment id or the card's last 4 digits (their latest, up to the count limit), or by
        the exact reference."""
        if term.shape is Shape.EMAIL:
            return queryset.filter(email__iexact=term.text)
        if term.shape is Shape.LAST_FOUR:
            payments = Payment.objects.filter(card_last_digits=term.text)
        else:
            payments = Payment.objects.filter(provider_id__in=term.spellings)
        references = recent_values(payments, "external_reference")
        if term.shape is Shape.OTHER:
            references += term.spellings
        return queryset.filter(reference__in=references)

    @admin.display(description=_("charged"))
    def charged(self, obj: Order) -> str:
        """What the customer's card was charged, net of refunds (after a partial shipment,
        less than the total: the rest of the hold was released)."""
        return mxn(getattr(obj, "charged_amount", None) or 0)

    @admin.display(description=_("customer"))
    def customer_name(self, obj: Order) -> str:
        return obj.customer_name

    @admin.display(description=_("address"))
    def address(self, obj: Order) -> str:
        return (
            f"{obj.street} {obj.number}, {obj.colony}, {obj.postal_code} {obj.city}, "
            f"{obj.state}, {obj.country}"
        )

    @admin.display(description=_("installments"))
    def installments(self, obj: Order) -> str:
        months = getattr(obj, "plan_months", None)
        if not months:
            return "—"
        return interest_free_text(months, obj.plan_monthly)
