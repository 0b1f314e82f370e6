"""What the payments admin's pages share: money written $1,290.00, the status badge's colours,
the filters, and the read-only inlines of a payment (its refunds, its ledger)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.admin_lists import ReadOnlyAdmin, recent_values
from core.money import pesos
from payments.models import EXPIRY_WARNING_DAYS, Payment, PaymentEvent, Refund, Subscription
from payments.statuses import PaymentStatus, status_label
from payments.words import message_text

BADGE_COLOURS = {
    PaymentStatus.APPROVED: "#067647",
    PaymentStatus.AUTHORIZED: "#1d4ed8",
    PaymentStatus.PENDING: "#b54708",
    PaymentStatus.CREATING: "#6b7280",
    PaymentStatus.UNKNOWN: "#b42318",
    PaymentStatus.FAILED: "#6b7280",
    PaymentStatus.REJECTED: "#b42318",
    PaymentStatus.CANCELLED: "#475467",
    PaymentStatus.REFUNDED: "#7a2e0e",
}


def money(value: Decimal | None) -> str:
    """Mexican pesos as the whole admin writes them: $1,290.00."""
    return "—" if value is None else pesos(value)


class MoneyColumns:
    """The amounts of a row, written $1,290.00."""

    @admin.display(description=_("amount"), ordering="amount")
    def amount_shown(self, obj: Any) -> str:
        return money(obj.amount)


class ExpiringSoonFilter(admin.SimpleListFilter):
    title = _("authorization expiry")
    parameter_name = "expiring"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("soon", _("Expires within %(days)d days") % {"days": EXPIRY_WARNING_DAYS}),
            ("all", _("Any authorization")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Payment]) -> QuerySet[Payment]:
        authorized = queryset.filter(status=PaymentStatus.AUTHORIZED)
        if self.value() == "soon":
            limit = timezone.now() + timedelta(days=EXPIRY_WARNING_DAYS)
            return authorized.filter(authorization_expires_at__lte=limit)
        if self.value() == "all":
            return authorized
        return queryset


class ReadOnlyInline(ReadOnlyAdmin, admin.TabularInline):
    extra = 0
    can_delete = False


class PaymentEventInline(MoneyColumns, ReadOnlyInline):
    """The payment's ledger in the staff member's language (payments.words): statuses and
    status details as the shop's labels, the shop's sentences translated, the provider's own
    words labelled as such. The entries themselves are kept as they were written."""

    model = PaymentEvent
    verbose_name_plural = _("ledger")
    fields = [
        "created_at",
        "kind",
        "old_status_shown",
        "new_status_shown",
        "amount_shown",
        "message_shown",
        "error_code",
        "actor",
    ]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[PaymentEvent]:
        return super().get_queryset(request).select_related("actor")

    @admin.display(description=_("old status"))
    def old_status_shown(self, obj: PaymentEvent) -> str:
        return status_label(obj.old_status) or "—"

    @admin.display(description=_("new status"))
    def new_status_shown(self, obj: PaymentEvent) -> str:
        return status_label(obj.new_status) or "—"

    @admin.display(description=_("message"))
    def message_shown(self, obj: PaymentEvent) -> str:
        return message_text(obj.message) or "—"


class RefundInline(MoneyColumns, ReadOnlyInline):
    model = Refund
    fields = ["created_at", "provider_id", "amount_shown", "status_shown", "reason", "actor"]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Refund]:
        return super().get_queryset(request).select_related("actor")

    @admin.display(description=_("status"))
    def status_shown(self, obj: Refund) -> str:
        return status_label(obj.status)


class PriceFilter(admin.SimpleListFilter):
    """The prices of the latest subscriptions (a DISTINCT over every subscription would read
    them all); any other price is found by searching for it."""

    title = _("price id")
    parameter_name = "price_id"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        prices = recent_values(Subscription.objects.all(), "price_id", limit=LATEST_PRICES)
        chosen = [self.value()] if self.value() else []
        return [(price, price) for price in sorted(set(prices + chosen))]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[Subscription]
    ) -> QuerySet[Subscription]:
        value = self.value()
        return queryset.filter(price_id=value) if value else queryset


# How many of the latest subscriptions the price filter reads its choices from.
LATEST_PRICES = 200
