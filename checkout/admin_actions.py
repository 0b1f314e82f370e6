"""The order page's actions in the admin: ship, cancel, refund, refresh, and shipping several
orders from the list. Each asks for confirmation on its own page, checks the staff member's
permission (a readable refusal on the admin's own page otherwise), runs one service and says
what happened; the services keep the ledgers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from checkout.admin_forms import RefundForm, ShipForm
from checkout.models import Fulfilment, Order
from checkout.selectors import order_payments
from checkout.services.fulfilment import (
    OrderActionRefused,
    Shipment,
    order_cancel,
    order_refresh,
    order_refund,
    order_ship,
)
from checkout.templatetags.shop import mxn
from payments.models import PaymentStatus


@dataclass(frozen=True)
class Action:
    name: str
    label: Any  # lazy text
    permission: str
    reason: Any  # why it is refused without the permission


ACTIONS = {
    "ship": Action(
        "ship",
        gettext_lazy("Mark as shipped"),
        "checkout.ship_order",
        gettext_lazy("Shipping orders needs the “Can ship orders” permission."),
    ),
    "cancel": Action(
        "cancel",
        gettext_lazy("Cancel order"),
        "checkout.cancel_order",
        gettext_lazy("Cancelling orders needs the “Can cancel orders” permission."),
    ),
    "refund": Action(
        "refund",
        gettext_lazy("Refund"),
        "payments.refund_payment",
        gettext_lazy("Refunds need the “Can refund payments” permission."),
    ),
    "refresh": Action(
        "refresh",
        gettext_lazy("Refresh from provider"),
        "payments.refresh_payment",
        gettext_lazy(
            "Reading payments again needs the “Can read payments again from the provider” "
            "permission."
        ),
    ),
}


def shipment_message(order: Order, shipment: Shipment) -> str:
    if shipment.charged:
        return _(
            "%(reference)s shipped: %(charged)s charged, %(released)s of the hold released."
        ) % {
            "reference": order.reference,
            "charged": mxn(shipment.charged),
            "released": mxn(shipment.released),
        }
    return _("%(reference)s shipped.") % {"reference": order.reference}


def available_actions(request: HttpRequest, order: Order) -> dict[str, bool]:
    """Which actions the staff member may take on the order as it stands (the provider may
    still refuse one: its answer decides)."""
    payments = order_payments(order)
    held = any(p.status == PaymentStatus.AUTHORIZED for p in payments)
    charged = any(p.can_refund() for p in payments)
    open_ = order.fulfilment in (Fulfilment.UNFULFILLED, Fulfilment.PARTIALLY_SHIPPED)
    possible = {
        "ship": open_ and (held or charged) and any(i.left_to_ship for i in order.items.all()),
        "cancel": order.fulfilment == Fulfilment.UNFULFILLED,
        "refund": charged,
        "refresh": any(p.provider_id for p in payments),
    }
    return {
        name: possible[name] and request.user.has_perm(action.permission)
        for name, action in ACTIONS.items()
    }


class OrderActionsMixin(admin.ModelAdmin):
    """The action pages of OrderAdmin (registered under its URLs)."""

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/ship/", wrap(self.ship_view), name="checkout_order_ship"),
            path("<int:pk>/cancel/", wrap(self.cancel_view), name="checkout_order_cancel"),
            path("<int:pk>/refund/", wrap(self.refund_view), name="checkout_order_refund"),
            path("<int:pk>/refresh/", wrap(self.refresh_view), name="checkout_order_refresh"),
            *super().get_urls(),
        ]

    # --- Shared -------------------------------------------------------------------------------

    def _order_for(self, request: HttpRequest, pk: int, name: str) -> Order:
        """The order, once the staff member's permission for the action is checked (the
        refusal says which permission is missing, on the admin's own page)."""
        action = ACTIONS[name]
        if not request.user.has_perm(action.permission):
            raise PermissionDenied(str(action.reason))
        return get_object_or_404(Order.objects.prefetch_related("items"), pk=pk)

    def _back(self, order: Order) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:checkout_order_change", args=[order.pk]))

    def _run(self, request: HttpRequest, order: Order, run: Callable[[], str]) -> bool:
        try:
            said = run()
        except OrderActionRefused as exc:
            self.message_user(request, f"{order.reference}: {exc.message}", messages.ERROR)
            return False
        self.log_change(request, order, said)
        self.message_user(request, said, messages.SUCCESS)
        return True

    def _page(
        self, request: HttpRequest, order: Order, name: str, form: Any, **extra: Any
    ) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": order,
            "title": f"{ACTIONS[name].label}: {order.reference}",
            "form": form,
            "button": ACTIONS[name].label,
            "action": name,
            **extra,
        }
        return TemplateResponse(request, "admin/checkout/order/action.html", context)

    # --- The actions --------------------------------------------------------------------------

    def ship_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "ship")
        form = ShipForm(request.POST or None, order=order)
        if request.method == "POST" and form.is_valid():
            quantities = form.quantities()
            self._run(
                request,
                order,
                lambda: shipment_message(
                    order, order_ship(order_id=order.pk, quantities=quantities, actor=request.user)
                ),
            )
            return self._back(order)
        return self._page(request, order, "ship", form, held=_held(order))

    def cancel_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "cancel")
        if request.method == "POST":

            def cancel() -> str:
                order_cancel(order_id=order.pk, actor=request.user)
                return _("%(reference)s cancelled; its items are back in stock.") % {
                    "reference": order.reference
                }

            self._run(request, order, cancel)
            return self._back(order)
        return self._page(request, order, "cancel", None, danger=True, held=_held(order))

    def refund_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "refund")
        charged = [p for p in order_payments(order) if p.can_refund()]
        if not charged:
            self.message_user(
                request,
                _("%(reference)s has no charged payment left to refund.")
                % {"reference": order.reference},
                messages.ERROR,
            )
            return self._back(order)
        form = RefundForm(request.POST or None, order=order, maximum=charged[-1].refundable_amount)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data

            def refund() -> str:
                order_refund(
                    order_id=order.pk,
                    amount=data["amount"],
                    reason=data["reason"],
                    returned=form.quantities(),
                    actor=request.user,
                )
                return _("%(reference)s: %(amount)s refunded.") % {
                    "reference": order.reference,
                    "amount": mxn(data["amount"]),
                }

            self._run(request, order, refund)
            return self._back(order)
        return self._page(request, order, "refund", form)

    def refresh_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "refresh")
        if request.method != "POST":
            return self._page(request, order, "refresh", None)

        def refresh() -> str:
            count = order_refresh(order_id=order.pk, actor=request.user)
            return _("%(reference)s: %(count)d payments read from the provider.") % {
                "reference": order.reference,
                "count": count,
            }

        self._run(request, order, refresh)
        return self._back(order)

    # --- From the list ------------------------------------------------------------------------

    @admin.action(description=gettext_lazy("Mark selected orders as shipped"), permissions=["ship"])
    def ship_selected(
        self, request: HttpRequest, queryset: QuerySet[Order]
    ) -> TemplateResponse | None:
        if request.POST.get("confirmed") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "orders": queryset,
                "title": _("Mark these orders as shipped?"),
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/checkout/order/ship_confirm.html", context)
        for order in queryset:
            self._run(
                request,
                order,
                lambda order=order: shipment_message(
                    order, order_ship(order_id=order.pk, quantities=None, actor=request.user)
                ),
            )
        return None

    def has_ship_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("checkout.ship_order")


def _held(order: Order) -> Any:
    """The amount held on the order's card, if a payment holds one."""
    held = [p for p in order_payments(order) if p.status == PaymentStatus.AUTHORIZED]
    return held[-1].amount if held else None
