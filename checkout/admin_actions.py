"""The order page's actions in the admin: ship, cancel, refund, refresh, and shipping several
orders from the list. Each asks for confirmation on its own page, checks the staff member's
permission (a readable refusal on the admin's own page otherwise) and what the order allows,
then is asked of a task through `payments.staff` (the page says it is in progress, then what
happened); the services keep the ledgers."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from checkout import staff_actions
from checkout.admin_forms import RefundForm, ShipForm
from checkout.models import Order
from checkout.selectors import order_payments
from checkout.services.fulfilment_rules import (
    OrderActionRefused,
    cancel_plan,
    possible_actions,
    refund_payment,
    ship_plan,
)
from payments.errors import PaymentError
from payments.models import PaymentIntent, PaymentStatus
from payments.staff.pages import ActionPage, Asked, StaffActionsAdmin

ACTIONS = {
    "ship": ActionPage(
        staff_actions.SHIP,
        "checkout.ship_order",
        gettext_lazy("Shipping orders needs the “Can ship orders” permission."),
    ),
    "cancel": ActionPage(
        staff_actions.CANCEL,
        "checkout.cancel_order",
        gettext_lazy("Cancelling orders needs the “Can cancel orders” permission."),
    ),
    "refund": ActionPage(
        staff_actions.REFUND,
        "payments.refund_payment",
        gettext_lazy("Refunds need the “Can refund payments” permission."),
    ),
    "refresh": ActionPage(
        staff_actions.REFRESH,
        "payments.refresh_payment",
        gettext_lazy(
            "Reading payments again needs the “Can read payments again from the provider” "
            "permission."
        ),
    ),
}
LABELS = {
    "ship": gettext_lazy("Mark as shipped"),
    "cancel": gettext_lazy("Cancel order"),
    "refund": gettext_lazy("Refund"),
    "refresh": gettext_lazy("Refresh from provider"),
}


def available_actions(request: HttpRequest, order: Order) -> dict[str, bool]:
    """Which actions the staff member may take on the order as it stands (the provider may
    still refuse one: its answer decides)."""
    possible = possible_actions(order)
    return {
        name: possible[name] and request.user.has_perm(action.permission)
        for name, action in ACTIONS.items()
    }


def ship_asked(order: Order, quantities: dict[int, int] | None) -> Asked:
    """The shipment checked; a held payment is claimed for its capture."""
    plan = ship_plan(order, quantities)
    return Asked(
        params={
            "quantities": {str(pk): count for pk, count in plan.chosen.items()},
            "capture": str(plan.capture),
        },
        payment=plan.payment,
        claim=(PaymentIntent.CAPTURE, PaymentStatus.AUTHORIZED) if plan.capture else None,
    )


def cancel_asked(order: Order) -> Asked:
    """The cancellation checked; the payment claimed for its cancellation or refund."""
    plan = cancel_plan(order)
    claim = {
        "cancel": (PaymentIntent.CANCEL, PaymentStatus.AUTHORIZED),
        "refund": (PaymentIntent.REFUND, PaymentStatus.APPROVED),
    }.get(plan.how)
    return Asked(
        params={"how": plan.how, "amount": str(plan.amount)},
        payment=plan.payment,
        claim=claim,
    )


def refund_asked(order: Order, data: dict[str, Any], returned: dict[int, int]) -> Asked:
    """The refund checked (the form bounds its amount); the charged payment claimed."""
    payment = refund_payment(order)
    return Asked(
        params={
            "amount": str(data["amount"]),
            "reason": data["reason"],
            "returned": {str(pk): count for pk, count in returned.items()},
        },
        payment=payment,
        claim=(PaymentIntent.REFUND, PaymentStatus.APPROVED),
    )


class OrderActionsMixin(StaffActionsAdmin):
    """The action pages of OrderAdmin (registered under its URLs)."""

    refusals = (PaymentError, OrderActionRefused)
    name_in_refusals = True

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/ship/", wrap(self.ship_view), name="checkout_order_ship"),
            path("<int:pk>/cancel/", wrap(self.cancel_view), name="checkout_order_cancel"),
            path("<int:pk>/refund/", wrap(self.refund_view), name="checkout_order_refund"),
            path("<int:pk>/refresh/", wrap(self.refresh_view), name="checkout_order_refresh"),
            *super().get_urls(),
        ]

    def action_reference(self, obj: Order) -> str:
        return obj.reference

    def open_actions_on(self, obj: Order) -> Q:
        """Those on the order, and those on its payments (asked on a payment's page)."""
        return super().open_actions_on(obj) | Q(payment__external_reference=obj.reference)

    # --- Shared -------------------------------------------------------------------------------

    def _order_for(self, request: HttpRequest, pk: int, name: str) -> Order:
        """The order, once the staff member's permission for the action is checked (the
        refusal says which permission is missing, on the admin's own page)."""
        self.check_allowed(request, ACTIONS[name])
        return get_object_or_404(Order.objects.prefetch_related("items"), pk=pk)

    def _page(
        self, request: HttpRequest, order: Order, name: str, form: Any, **extra: Any
    ) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": order,
            "title": f"{LABELS[name]}: {order.reference}",
            "form": form,
            "button": LABELS[name],
            "action": name,
            **extra,
        }
        return TemplateResponse(request, "admin/checkout/order/action.html", context)

    # --- The actions --------------------------------------------------------------------------

    def ship_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "ship")
        form = ShipForm(request.POST or None, order=order)
        return self.action_view(
            request,
            order,
            ACTIONS["ship"],
            form=form,
            asked=lambda data: ship_asked(order, form.quantities()),
            confirm=lambda f: self._page(request, order, "ship", f, held=_held(order)),
        )

    def cancel_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "cancel")
        return self.action_view(
            request,
            order,
            ACTIONS["cancel"],
            form=None,
            asked=lambda data: cancel_asked(order),
            confirm=lambda f: self._page(
                request, order, "cancel", None, danger=True, held=_held(order)
            ),
        )

    def refund_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "refund")
        charged = [p for p in order_payments(order) if p.can_refund()]
        if not charged:
            self.message_user(
                request,
                _("%(reference)s has no charged payment left to refund.")
                % {"reference": order.reference},
                "error",
            )
            return self.back(order)
        form = RefundForm(request.POST or None, order=order, maximum=charged[-1].refundable_amount)
        return self.action_view(
            request,
            order,
            ACTIONS["refund"],
            form=form,
            asked=lambda data: refund_asked(order, data, form.quantities()),
            confirm=lambda f: self._page(request, order, "refund", f),
        )

    def refresh_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        order = self._order_for(request, pk, "refresh")
        return self.action_view(
            request,
            order,
            ACTIONS["refresh"],
            form=None,
            asked=lambda data: Asked(),
            confirm=lambda f: self._page(request, order, "refresh", None),
        )

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
        self.ask_each(
            request,
            ACTIONS["ship"],
            queryset.prefetch_related("items"),
            lambda order: ship_asked(order, None),
        )
        return None

    def has_ship_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("checkout.ship_order")


def _held(order: Order) -> Any:
    """The amount held on the order's card, if a payment holds one."""
    held = [p for p in order_payments(order) if p.status == PaymentStatus.AUTHORIZED]
    return held[-1].amount if held else None
