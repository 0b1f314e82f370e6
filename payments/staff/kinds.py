"""The kinds of staff action: a name, a label staff read, and the dotted path of what runs it.

A kind's run is named, not imported: the admin and the code that records an action never import
the modules that call the provider; only the task resolves it. Each app registers its kinds when
it is ready (checkout its order actions), so payments knows nothing of checkout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Model
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from payments.pesos import pesos


@dataclass(frozen=True)
class ActionKind:
    name: str  # "<app>.<action>", e.g. "payments.capture"
    label: Any  # what staff read, lazy: "capture"
    run: str  # dotted path of `run(action) -> Outcome`, called by the task only
    reads: bool = False  # only reads from the provider: queued with the provider's reads


@dataclass(frozen=True)
class Outcome:
    """What an action's run says to the staff member who asked (in their language), and what
    the admin's log keeps of it (nothing when it was refused)."""

    message: str
    ok: bool = True
    log: str = ""  # the admin LogEntry's change message
    logged: Model | None = field(default=None)  # the object logged, if not the action's own
    added: bool = False  # logged as an addition (an import) rather than a change


_KINDS: dict[str, ActionKind] = {}


def register(*kinds: ActionKind) -> None:
    """Make kinds known (an app's `ready`); registering a name twice keeps the last."""
    for kind in kinds:
        _KINDS[kind.name] = kind


def kind_named(name: str) -> ActionKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise LookupError(f"no staff action kind {name!r} is registered") from None


# What staff read once a payment's action is done (the admin's LogEntry keeps the English verb).
DONE = {
    "captured": _("captured"),
    "cancelled": _("cancelled"),
    "refreshed": _("refreshed"),
    "cancelled the authorization": _("authorization cancelled"),
    "closed as not created": _("closed as not created"),
    "refreshed from the provider": _("refreshed from the provider"),
}


def done_message(reference: str, verb: str, amount: Decimal | None = None) -> str:
    """`ORD-…: captured $250.00.`, in the active language."""
    if amount is not None:
        done = {
            "captured": gettext("captured %(amount)s"),
            "refunded": gettext("refunded %(amount)s"),
        }
        text = done[verb] % {"amount": pesos(amount)}
    else:
        text = str(DONE.get(verb, verb))
    return gettext("%(reference)s: %(done)s.") % {"reference": reference, "done": text}


register(
    ActionKind("payments.capture", _("capture"), "payments.calls.staff_runs.capture_run"),
    ActionKind("payments.cancel", _("cancellation"), "payments.calls.staff_runs.cancel_run"),
    ActionKind("payments.refund", _("refund"), "payments.calls.staff_runs.refund_run"),
    ActionKind(
        "payments.refresh", _("refresh"), "payments.calls.staff_runs.refresh_run", reads=True
    ),
    ActionKind(
        "payments.subscription_cancel",
        _("subscription cancellation"),
        "payments.calls.staff_runs.subscription_cancel_run",
    ),
    ActionKind(
        "payments.subscription_import",
        _("subscription import"),
        "payments.calls.staff_runs.subscription_import_run",
        reads=True,
    ),
)
