"""The order page's actions in the admin: ship, cancel, refund, refresh, and shipping several
orders from the list. Each is declared here (`ORDER_ACTIONS`) and served by the one staff-action
flow (`staff_actions.admin`): it asks for confirmation on its own page, checks the staff member's
permission (a readable refusal on the admin's own page otherwise) and what the order allows
(`checkout.fulfilment.rules`), then is asked of a task (the page says it is in
progress, then what happened); `checkout.fulfilment.calls` keeps the ledgers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.forms import Form
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from checkout.admin_forms import RefundForm, ShipForm
from checkout.fulfilment.rules import (
    CANCEL,
    REFRESH,
    REFUND,
    SHIP,
    OrderActionRefused,
    cancel_asked,
    possible_actions,
    refund_asked,
    ship_asked,
)
from checkout.models import Order
from checkout.orders.selectors import order_payments
from checkout.templatetags.shop import mxn
from payments.statuses import PaymentStatus
from staff_actions.admin import ActionPage, StaffActionsAdmin


def _ship_form(data: Any, order: Order) -> Form:
    return ShipForm(data, order=order)


def _refund_form(data: Any, order: Order) -> Form:
    charged = [p for p in order_payments(order) if p.can_refund()]
    if not charged:
        raise OrderActionRefused(
            _("%(reference)s has no charged payment left to refund.")
            % {"reference": order.reference}
        )
    return RefundForm(data, order=order, maximum=charged[-1].refundable_amount)


ORDER_ACTIONS = {
    "ship": ActionPage(
        SHIP,
        "checkout.ship_order",
        gettext_lazy("Shipping orders needs the “Can ship orders” permission."),
        title=gettext_lazy("Mark as shipped: %(reference)s"),
        button=gettext_lazy("Mark as shipped"),
        explanation=gettext_lazy(
            "Choose what you are shipping. A held payment is charged for these items only; the "
            "rest of the hold is released, and what is not shipped goes back to stock."
        ),
        form=_ship_form,
        asked=lambda order, form: ship_asked(order, form.quantities()),
    ),
    "cancel": ActionPage(
        CANCEL,
        "checkout.cancel_order",
        gettext_lazy("Cancelling orders needs the “Can cancel orders” permission."),
        title=gettext_lazy("Cancel order: %(reference)s"),
        button=gettext_lazy("Cancel order"),
        explanation=gettext_lazy(
            "The hold on the card is cancelled, or the charge refunded in full, and the items "
            "go back to stock."
        ),
        danger=True,
        asked=lambda order, form: cancel_asked(order),
    ),
    "refund": ActionPage(
        REFUND,
        "payments.refund_payment",
        gettext_lazy("Refunds need the “Can refund payments” permission."),
        title=gettext_lazy("Refund: %(reference)s"),
        button=gettext_lazy("Refund"),
        explanation=gettext_lazy(
            "Refund part or all of the charge. Choose the items that come back to stock, if any."
        ),
        form=_refund_form,
        asked=lambda order, form: refund_asked(order, form.cleaned_data, form.quantities()),
    ),
    "refresh": ActionPage(
        REFRESH,
        "payments.refresh_payment",
        gettext_lazy(
            "Reading payments again needs the “Can read payments again from the provider” "
            "permission."
        ),
        title=gettext_lazy("Refresh from provider: %(reference)s"),
        button=gettext_lazy("Refresh from provider"),
        explanation=gettext_lazy(
            "The order's payments are read again from the provider, and the order follows what "
            "it says."
        ),
    ),
}


def available_actions(request: HttpRequest, order: Order) -> dict[str, bool]:
    """Which actions the staff member may take on the order as it stands (the provider may
    still refuse one: its answer decides)."""
    possible = possible_actions(order)
    return {
        name: possible[name] and request.user.has_perm(action.permission)
        for name, action in ORDER_ACTIONS.items()
    }


class OrderActionsMixin(StaffActionsAdmin):
    """The action pages of OrderAdmin (served under its URLs)."""

    action_pages = ORDER_ACTIONS
    name_in_refusals = True

    def action_reference(self, obj: Order) -> str:
        return obj.reference

    def action_object(self, pk: int) -> Order:
        return get_object_or_404(Order.objects.prefetch_related("items"), pk=pk)

    def open_actions_on(self, obj: Order) -> Q:
        """Those on the order, and those on its payments (asked on a payment's page)."""
        return super().open_actions_on(obj) | Q(payment__external_reference=obj.reference)

    def confirm_context(self, obj: Order, name: str) -> dict[str, Any]:
        summary = [
            _("Order %(reference)s of %(customer)s, %(total)s MXN.")
            % {"reference": obj.reference, "customer": obj.customer_name, "total": mxn(obj.total)}
        ]
        held = _held(obj) if name in ("ship", "cancel") else None
        if held:
            summary.append(_("%(held)s MXN are held on the card.") % {"held": mxn(held)})
        return {"summary": summary}

    @admin.action(description=gettext_lazy("Mark selected orders as shipped"), permissions=["ship"])
    def ship_selected(
        self, request: HttpRequest, queryset: QuerySet[Order]
    ) -> TemplateResponse | None:
        confirm = self.confirm_selected(
            request,
            queryset,
            "ship_selected",
            title=_("Mark these orders as shipped?"),
            button=_("Yes, mark them as shipped"),
            explanation=_(
                "Every item left to ship in these orders is marked as shipped; a held payment "
                "is charged in full."
            ),
            lines=[
                f"{order.reference}: {order.customer_name}, {mxn(order.total)} MXN "
                f"({order.get_status_display()})"
                for order in queryset
            ],
        )
        if confirm is not None:
            return confirm
        self.ask_each(
            request,
            ORDER_ACTIONS["ship"],
            queryset.prefetch_related("items"),
            lambda order: ship_asked(order, None),
        )
        return None

    def has_ship_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("checkout.ship_order")


def _held(order: Order) -> Decimal | None:
    """The amount held on the order's card, if a payment holds one."""
    held = [p for p in order_payments(order) if p.status == PaymentStatus.AUTHORIZED]
    return held[-1].amount if held else None
