"""Orders and products in the staff admin. Orders are read-only: they move with payments."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from checkout.installments import order_installments
from checkout.models import Order, OrderItem, Product
from checkout.selectors import order_payments


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ["name", "price", "stock", "active"]
    list_filter = ["active"]
    search_fields = ["name", "name_en", "slug"]
    prepopulated_fields = {"slug": ["name"]}


class OrderItemInline(admin.TabularInline):
    model = OrderItem
    extra = 0
    can_delete = False
    fields = ["name", "unit_price", "quantity"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["reference", "status", "total", "customer_name", "email", "created_at"]
    list_filter = ["status"]
    search_fields = ["reference", "email", "last_name"]
    inlines = [OrderItemInline]
    readonly_fields = [
        "reference",
        "status",
        "total",
        "currency",
        "payments",
        "installments",
        "first_name",
        "last_name",
        "email",
        "phone",
        "street",
        "number",
        "colony",
        "city",
        "state",
        "postal_code",
        "country",
        "language",
        "confirmation_sent_at",
        "created_at",
    ]
    exclude = ["updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("installments"))
    def installments(self, obj: Order) -> str:
        return order_installments(order_payments(obj)) or "—"

    @admin.display(description="payments")
    def payments(self, obj: Order) -> str:
        url = reverse("admin:payments_payment_changelist")
        return format_html(
            '<a href="{}?q={}">See the payments of {}</a>', url, obj.reference, obj.reference
        )
