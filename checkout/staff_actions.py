"""The order's staff actions, made known to `payments.staff` (from `CheckoutConfig.ready`, in
the web and in the workers): what each is called, and the run its task resolves by name
(`checkout.services.staff_runs`, which calls the provider)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from payments.staff.kinds import ActionKind, register

SHIP = "checkout.ship"
CANCEL = "checkout.cancel"
REFUND = "checkout.refund"
REFRESH = "checkout.refresh"

RUNS = "checkout.services.staff_runs"


def register_order_actions() -> None:
    register(
        ActionKind(SHIP, _("shipment"), f"{RUNS}.ship_run"),
        ActionKind(CANCEL, _("order cancellation"), f"{RUNS}.cancel_run"),
        ActionKind(REFUND, _("refund"), f"{RUNS}.refund_run"),
        ActionKind(REFRESH, _("refresh"), f"{RUNS}.refresh_run", reads=True),
    )
