"""Staff work on payments in the admin: see, capture, cancel, refund, refresh; subscriptions.

Every action needs its permission (403 otherwise), is a POST with CSRF, and leaves both an
admin LogEntry and a ledger entry (the services write the ledger).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from payments import ledger
from payments.admin_lists import (
    BoundedListAdmin,
    DateRangeFilter,
    SearchTerm,
    Shape,
    recent_values,
)
from payments.errors import PaymentError, PaymentNotAllowed
from payments.forms import CaptureForm, RefundForm, SubscriptionImportForm
from payments.models import (
    EXPIRY_WARNING_DAYS,
    Payment,
    PaymentEvent,
    PaymentIntent,
    PaymentStatus,
    Refund,
    Subscription,
    SubscriptionStatus,
    status_label,
)
from payments.pesos import pesos
from payments.services.guards import check_cancel, check_capture, check_refund
from payments.staff.kinds import done_message
from payments.staff.pages import ActionPage, Asked, StaffActionsAdmin

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


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class PaymentEventInline(MoneyColumns, ReadOnlyInline):
    """The payment's ledger in the staff member's language (payments.ledger): statuses and
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
        return ledger.message_text(obj.message) or "—"


class RefundInline(MoneyColumns, ReadOnlyInline):
    model = Refund
    fields = ["created_at", "provider_id", "amount_shown", "status_shown", "reason", "actor"]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Refund]:
        return super().get_queryset(request).select_related("actor")

    @admin.display(description=_("status"))
    def status_shown(self, obj: Refund) -> str:
        return status_label(obj.status)


CLOSE_EXPLANATION = _(
    "The provider never confirmed this attempt and no notification named it. Look the order "
    "reference up at the provider first: if it has no payment for it, close the attempt so the "
    "order can be paid again. If a payment turns up later, it is attached to the order."
)


def _permission(action: str) -> str:
    return f"payments.{action}_payment"


@admin.register(Payment)
class PaymentAdmin(MoneyColumns, BoundedListAdmin, StaffActionsAdmin):
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

    # Payments are written by the services only.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

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
            return ledger.detail_text(obj.status_code, obj.status_message)
        return ledger.provider_said(obj.status_message) if obj.status_message else "—"

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
        self.ask_each(request, PAGES["capture"], queryset, lambda p: _capture(p, None, listed=True))

    @admin.action(description=_("Cancel selected authorizations"), permissions=["cancel"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self.ask_each(request, PAGES["cancel"], queryset, lambda p: _cancel(p, listed=True))

    @admin.action(description=_("Refresh selected from the provider"), permissions=["refresh"])
    def refresh_selected(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self.ask_each(request, PAGES["refresh"], queryset, lambda p: _refresh(p, listed=True))

    # --- Actions on one payment -----------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/capture/", wrap(self.capture_view), name="payments_payment_capture"),
            path("<int:pk>/cancel/", wrap(self.cancel_view), name="payments_payment_cancel"),
            path("<int:pk>/refund/", wrap(self.refund_view), name="payments_payment_refund"),
            path("<int:pk>/refresh/", wrap(self.refresh_view), name="payments_payment_refresh"),
            path("<int:pk>/close/", wrap(self.close_view), name="payments_payment_close"),
            *super().get_urls(),
        ]

    def action_reference(self, obj: Payment) -> str:
        return obj.external_reference

    def open_actions_on(self, obj: Payment) -> Q:
        """Those on the payment, and those on another object that move it (an order's)."""
        return super().open_actions_on(obj) | Q(payment=obj)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        payment = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if payment is not None:
            context["payment_actions"] = {
                "capture": self.has_capture_permission(request) and payment.can_capture(),
                "cancel": self.has_cancel_permission(request) and payment.can_cancel(),
                "refund": self.has_refund_permission(request) and payment.can_refund(),
                "refresh": self.has_refresh_permission(request) and bool(payment.provider_id),
                "close": self.has_close_permission(request) and payment.can_close(),
            }
        return super().change_view(request, object_id, form_url, context)

    def _payment_for(self, request: HttpRequest, pk: int, permission: str) -> Payment:
        if not request.user.has_perm(permission):
            name = Permission.objects.filter(
                content_type__app_label="payments", codename=permission.split(".")[-1]
            ).first()
            raise PermissionDenied(
                _("This needs the “%(permission)s” permission.")
                % {"permission": _(name.name) if name else permission}
            )
        return get_object_or_404(Payment, pk=pk)

    def _form_page(
        self,
        request: HttpRequest,
        payment: Payment,
        title: str,
        form: Any,
        button: str,
        danger: bool = False,
        explanation: str = "",
    ) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": payment,
            "captured": money(payment.captured_amount),
            "refunded": money(payment.refunded_amount),
            "title": title,
            "form": form,
            "button": button,
            "danger": danger,
            "explanation": explanation,
        }
        return TemplateResponse(request, "admin/payments/payment/action.html", context)

    def _one_view(
        self,
        request: HttpRequest,
        pk: int,
        action: str,
        *,
        form: Any,
        asked: Callable[[Payment, dict[str, Any]], Asked],
        title: str,
        button: str,
        danger: bool = False,
    ) -> HttpResponse:
        payment = self._payment_for(request, pk, PAGES[action].permission)
        bound = form(payment) if form is not None else None
        return self.action_view(
            request,
            payment,
            PAGES[action],
            form=bound,
            asked=lambda data: asked(payment, data),
            confirm=lambda f: self._form_page(
                request,
                payment,
                title % {"reference": payment.external_reference},
                f,
                button,
                danger=danger,
            ),
        )

    def capture_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        return self._one_view(
            request,
            pk,
            "capture",
            form=lambda p: CaptureForm(request.POST or None, payment=p, maximum=p.amount),
            asked=lambda p, data: _capture(p, data["amount"]),
            title=gettext("Capture") + " %(reference)s",
            button=gettext("Capture"),
        )

    def cancel_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        return self._one_view(
            request,
            pk,
            "cancel",
            form=None,
            asked=lambda p, data: _cancel(p),
            title=gettext("Cancel the authorization of %(reference)s?"),
            button=gettext("Yes, cancel it"),
            danger=True,
        )

    def refund_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        return self._one_view(
            request,
            pk,
            "refund",
            form=lambda p: RefundForm(request.POST or None, payment=p, maximum=p.refundable_amount),
            asked=lambda p, data: _refund(p, data["amount"], data["reason"]),
            title=gettext("Refund") + " %(reference)s",
            button=gettext("Refund"),
        )

    def refresh_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        return self._one_view(
            request,
            pk,
            "refresh",
            form=None,
            asked=lambda p, data: _refresh(p),
            title=gettext("Read %(reference)s again from the provider?"),
            button=gettext("Refresh from provider"),
        )

    def close_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Close makes no provider call: it is done here, at once."""
        payment = self._payment_for(request, pk, _permission("close"))
        if request.method != "POST":
            return self._form_page(
                request,
                payment,
                gettext("Close %(reference)s as not created?")
                % {"reference": payment.external_reference},
                None,
                gettext("Close as not created"),
                danger=True,
                explanation=CLOSE_EXPLANATION,
            )
        try:
            import_string(CLOSE)(payment=payment, actor=request.user)
        except PaymentError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            verb = "closed as not created"
            self.log_change(request, payment, verb)
            self.message_user(
                request, done_message(payment.external_reference, verb), messages.SUCCESS
            )
        return self.back(payment)


# The close service shares its module with the create call to the provider: it is named here,
# not imported, so that nothing the admin imports reaches the provider's client.
CLOSE = "payments.services.attempts.payment_close_unconfirmed"

PAGES = {
    name: ActionPage(
        kind=f"payments.{name}",
        permission=_permission(name),
        refused="",  # PaymentAdmin._payment_for names the permission
    )
    for name in ("capture", "cancel", "refund", "refresh")
}


def _capture(payment: Payment, amount: Decimal | None, *, listed: bool = False) -> Asked:
    payment.refresh_from_db()
    checked = check_capture(payment, amount)
    return Asked(
        params={"amount": None if listed else str(checked), "listed": listed},
        payment=payment,
        claim=(PaymentIntent.CAPTURE, PaymentStatus.AUTHORIZED),
    )


def _cancel(payment: Payment, *, listed: bool = False) -> Asked:
    payment.refresh_from_db()
    check_cancel(payment)
    return Asked(
        params={"listed": listed},
        payment=payment,
        claim=(PaymentIntent.CANCEL, PaymentStatus.AUTHORIZED),
    )


def _refund(payment: Payment, amount: Decimal, reason: str) -> Asked:
    payment.refresh_from_db()
    checked = check_refund(payment, amount)
    return Asked(
        params={"amount": str(checked), "reason": reason},
        payment=payment,
        claim=(PaymentIntent.REFUND, PaymentStatus.APPROVED),
    )


def _refresh(payment: Payment, *, listed: bool = False) -> Asked:
    if not payment.provider_id:
        raise PaymentNotAllowed(
            gettext(
                "This payment has no provider id yet; it is reconciled when the provider "
                "notifies it."
            )
        )
    return Asked(params={"listed": listed}, payment=payment)


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


@admin.register(Subscription)
class SubscriptionAdmin(BoundedListAdmin, StaffActionsAdmin):
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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

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
        if request.POST.get("confirmed") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "subscriptions": queryset,
                "title": _("Cancel these subscriptions?"),
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(
                request, "admin/payments/subscription/cancel_confirm.html", context
            )
        self.ask_each(request, SUBSCRIPTION_CANCEL, queryset, _subscription_cancel)
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
        if not request.user.has_perm("payments.add_subscription"):
            raise PermissionDenied(_("Importing subscriptions needs the permission to add them."))
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
            return HttpResponseRedirect(reverse("admin:payments_subscription_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Import a subscription from the provider"),
            "form": form,
            "button": _("Import"),
        }
        return TemplateResponse(request, "admin/payments/payment/action.html", context)


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


def _subscription_cancel(subscription: Subscription) -> Asked:
    if subscription.status == SubscriptionStatus.INACTIVE:
        raise PaymentNotAllowed(gettext("This subscription is already inactive."))
    return Asked()
