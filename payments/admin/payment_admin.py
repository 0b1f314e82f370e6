"""Staff work on payments in the admin: see, capture, cancel, refund, refresh, close.

Every action needs its permission (403 otherwise), is a POST with CSRF, and leaves both an
admin LogEntry and a ledger entry (the services write the ledger). The actions that wait on the
provider are declared here (`PAYMENT_ACTIONS`) and served by `staff_actions.admin`.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.utils.html import format_html
from django.utils.text import format_lazy
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from core.admin_lists import BoundedListAdmin, DateRangeFilter, ReadOnlyAdmin, SearchTerm, Shape
from payments.actions.rules import cancel_asked, capture_asked, refresh_asked, refund_asked
from payments.admin.columns import (
    BADGE_COLOURS,
    ExpiringSoonFilter,
    MoneyColumns,
    PaymentEventInline,
    RefundInline,
    money,
)
from payments.attempts.rules import payment_close_unconfirmed
from payments.forms import CaptureForm, RefundForm
from payments.models import EXPIRY_WARNING_DAYS, Payment
from payments.provider.errors import PaymentError
from payments.words import detail_text, done_message, provider_said
from staff_actions.admin import ActionPage, StaffActionsAdmin

CLOSE_EXPLANATION = _(
    "The provider never confirmed this attempt and no notification named it. Look the order "
    "reference up at the provider first: if it has no payment for it, close the attempt so the "
    "order can be paid again. If a payment turns up later, it is attached to the order."
)


def _permission(action: str) -> str:
    return f"payments.{action}_payment"


def _capture_form(data: Any, payment: Payment) -> Form:
    return CaptureForm(data, payment=payment, maximum=payment.amount)


def _refund_form(data: Any, payment: Payment) -> Form:
    return RefundForm(data, payment=payment, maximum=payment.refundable_amount)


PAYMENT_ACTIONS = {
    "capture": ActionPage(
        "payments.capture",
        _permission("capture"),
        title=format_lazy("{} %(reference)s", _("Capture")),
        button=_("Capture"),
        form=_capture_form,
        asked=lambda payment, form: capture_asked(payment, form.cleaned_data["amount"]),
    ),
    "cancel": ActionPage(
        "payments.cancel",
        _permission("cancel"),
        title=_("Cancel the authorization of %(reference)s?"),
        button=_("Yes, cancel it"),
        danger=True,
        asked=lambda payment, form: cancel_asked(payment),
    ),
    "refund": ActionPage(
        "payments.refund",
        _permission("refund"),
        title=format_lazy("{} %(reference)s", _("Refund")),
        button=_("Refund"),
        form=_refund_form,
        asked=lambda payment, form: refund_asked(
            payment, form.cleaned_data["amount"], form.cleaned_data["reason"]
        ),
    ),
    "refresh": ActionPage(
        "payments.refresh",
        _permission("refresh"),
        title=_("Read %(reference)s again from the provider?"),
        button=_("Refresh from provider"),
        asked=lambda payment, form: refresh_asked(payment),
    ),
}
# Closing makes no provider call (no staff action): only its permission is declared.
CLOSE = ActionPage("", _permission("close"))


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin, MoneyColumns, BoundedListAdmin, StaffActionsAdmin):
    action_pages = PAYMENT_ACTIONS
    list_display = [
        "external_reference",
        "status_badge",
        "amount_shown",
        "captured_shown",
        "refunded_shown",
        "card",
        "installments_plan",
        "capture_method",
        "authorized_at",
        "expires",
    ]
    list_filter = [
        "status",
        "capture_method",
        ExpiringSoonFilter,
        ("created_at", DateRangeFilter),
    ]
    sortable_by = ["external_reference", "amount_shown"]
    search_fields = ["external_reference"]  # shows the box; `search` says what it finds
    search_help_text = _(
        "Exact order reference, customer email, provider payment id or the card's last 4 digits."
    )
    list_per_page = 50
    inlines = [RefundInline, PaymentEventInline]
    actions = ["capture_selected", "cancel_selected", "refresh_selected"]
    change_form_template = "admin/payments/payment/change_form.html"
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "external_reference",
                    "status",
                    "status_detail",
                    "capture_method",
                    "amount_shown",
                    "captured_shown",
                    "refunded_shown",
                    "currency",
                    "description",
                    "customer_email",
                ]
            },
        ),
        (_("Card"), {"fields": ["card_brand", "card_last_digits", "installments_plan"]}),
        (
            _("Provider"),
            {
                "fields": [
                    "provider_id",
                    "provider_version",
                    "three_ds_url",
                    "authorized_at",
                    "authorization_expires_at",
                    "last_synced_at",
                    "intent",
                    "last_error",
                    "provider_snapshot",
                ]
            },
        ),
    ]

    def has_capture_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(_permission("capture"))

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(_permission("cancel"))

    def has_refund_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(_permission("refund"))

    def has_close_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(_permission("close"))

    def has_refresh_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(_permission("refresh"))

    def search(self, queryset: QuerySet[Payment], term: SearchTerm) -> QuerySet[Payment]:
        """By the customer's email (in any case), the card's last 4 digits, or exactly by
        the provider's id or the order reference."""
        if term.shape is Shape.EMAIL:
            return queryset.filter(customer_email__iexact=term.text)
        if term.shape is Shape.LAST_FOUR:
            return queryset.filter(card_last_digits=term.text)
        if term.shape is Shape.PROVIDER_ID:
            return queryset.filter(provider_id__in=term.spellings)
        return queryset.filter(
            Q(external_reference__in=term.spellings) | Q(provider_id__in=term.spellings)
        )

    # --- List columns -----------------------------------------------------------------------

    @admin.display(description=_("status"), ordering="status")
    def status_badge(self, obj: Payment) -> str:
        colour = BADGE_COLOURS.get(obj.status, "#475467")
        return format_html(
            '<span style="background:{};color:#fff;padding:2px 8px;border-radius:10px;'
            'font-size:11px;white-space:nowrap">{}</span>',
            colour,
            obj.get_status_display(),
        )

    @admin.display(description=_("status detail"))
    def status_detail(self, obj: Payment) -> str:
        """The provider's status detail as the shop's label (the provider's words for a code
        the shop does not know)."""
        if obj.status_code:
            return detail_text(obj.status_code, obj.status_message)
        return provider_said(obj.status_message) if obj.status_message else "—"

    @admin.display(description=_("captured"), ordering="captured_amount")
    def captured_shown(self, obj: Payment) -> str:
        return money(obj.captured_amount)

    @admin.display(description=_("refunded"), ordering="refunded_amount")
    def refunded_shown(self, obj: Payment) -> str:
        return money(obj.refunded_amount)

    @admin.display(description=_("card"))
    def card(self, obj: Payment) -> str:
        if not obj.card_last_digits:
            return "—"
        return format_html(
            '<span style="white-space:nowrap">{} •••• {}</span>',
            obj.card_brand,
            obj.card_last_digits,
        )

    @admin.display(description=_("installments"), ordering="installments")
    def installments_plan(self, obj: Payment) -> str:
        """`6 × $300.00` for interest-free monthly payments; a dash when paid in full."""
        if obj.installments <= 1:
            return "—"
        amount = obj.installment_amount
        return (
            f"{obj.installments} × {money(amount)}" if amount is not None else str(obj.installments)
        )

    @admin.display(description=_("expires"), ordering="authorization_expires_at")
    def expires(self, obj: Payment) -> str:
        days = obj.days_to_expiry()
        if days is None:
            return "—"
        if days < 0:
            text = gettext("expired")
        elif days == 0:
            text = gettext("expires today")
        else:
            text = ngettext("expires in %(days)d day", "expires in %(days)d days", days) % {
                "days": days
            }
        if days < EXPIRY_WARNING_DAYS:
            return format_html('<strong style="color:#b42318">{}</strong>', text)
        return text

    @admin.display(description=_("provider snapshot"))
    def provider_snapshot(self, obj: Payment) -> str:
        return format_html(
            "<pre style='max-height:28em;overflow:auto'>{}</pre>",
            json.dumps(obj.snapshot, indent=2, ensure_ascii=False, sort_keys=True),
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f for _, options in self.fieldsets for f in options["fields"]]

    # --- Bulk actions -------------------------------------------------------------------------

    @admin.action(description=_("Capture selected authorizations in full"), permissions=["capture"])
    def capture_selected(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self.ask_each(
            request,
            PAYMENT_ACTIONS["capture"],
            queryset,
            lambda p: capture_asked(p, None, listed=True),
        )

    @admin.action(description=_("Cancel selected authorizations"), permissions=["cancel"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self.ask_each(
            request, PAYMENT_ACTIONS["cancel"], queryset, lambda p: cancel_asked(p, listed=True)
        )

    @admin.action(description=_("Refresh selected from the provider"), permissions=["refresh"])
    def refresh_selected(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self.ask_each(
            request, PAYMENT_ACTIONS["refresh"], queryset, lambda p: refresh_asked(p, listed=True)
        )

    # --- Actions on one payment (staff_actions.admin serves PAYMENT_ACTIONS) --------------------

    def get_urls(self) -> list[URLPattern]:
        close = self.admin_site.admin_view(self.close_view)
        return [
            path("<int:pk>/close/", close, name="payments_payment_close"),
            *super().get_urls(),
        ]

    def action_reference(self, obj: Payment) -> str:
        return obj.external_reference

    def open_actions_on(self, obj: Payment) -> Q:
        """Those on the payment, and those on another object that move it (an order's)."""
        return super().open_actions_on(obj) | Q(payment=obj)

    def change_context(self, request: HttpRequest, obj: Payment) -> dict[str, Any]:
        return {
            "payment_actions": {
                "capture": self.has_capture_permission(request) and obj.can_capture(),
                "cancel": self.has_cancel_permission(request) and obj.can_cancel(),
                "refund": self.has_refund_permission(request) and obj.can_refund(),
                "refresh": self.has_refresh_permission(request) and bool(obj.provider_id),
                "close": self.has_close_permission(request) and obj.can_close(),
            }
        }

    def confirm_context(self, obj: Payment, name: str) -> dict[str, Any]:
        amounts = gettext("captured %(captured)s, refunded %(refunded)s.") % {
            "captured": money(obj.captured_amount),
            "refunded": money(obj.refunded_amount),
        }
        return {"summary": [f"{obj} — {amounts}"]}

    def close_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Close makes no provider call: it is done here, at once."""
        self.check_allowed(request, CLOSE)
        payment = self.action_object(pk)
        if request.method != "POST":
            return self.confirm_page(
                request,
                payment,
                title=gettext("Close %(reference)s as not created?")
                % {"reference": payment.external_reference},
                button=gettext("Close as not created"),
                danger=True,
                explanation=CLOSE_EXPLANATION,
                **self.confirm_context(payment, "close"),
            )
        try:
            payment_close_unconfirmed(payment=payment, actor=request.user)
        except PaymentError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            verb = "closed as not created"
            self.log_change(request, payment, verb)
            self.message_user(
                request, done_message(payment.external_reference, verb), messages.SUCCESS
            )
        return self.back(payment)
