"""The kinds of staff action: a name, a label staff read, and the function that runs it.

Each app declares its kinds when it is ready (`register`, from its `AppConfig.ready`): checkout
its order actions, payments its payment and subscription actions. This module knows no app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import Model

if TYPE_CHECKING:
    from staff_actions.models import StaffAction


@dataclass(frozen=True)
class Outcome:
    """What an action's run says to the staff member who asked (in their language), and what
    the admin's log keeps of it (nothing when it was refused)."""

    message: str
    ok: bool = True
    log: str = ""  # the admin LogEntry's change message
    logged: Model | None = field(default=None)  # the object logged, if not the action's own
    added: bool = False  # logged as an addition (an import) rather than a change


@dataclass(frozen=True)
class ActionKind:
    name: str  # "<app>.<action>", e.g. "payments.capture"
    label: Any  # what staff read, lazy: "capture"
    run: Callable[[StaffAction], Outcome]  # called by the task only
    reads: bool = False  # only reads from the provider: queued with the provider's reads
    # Gives back the claim the action took on its payment when it was asked, once it is done.
    release: Callable[[StaffAction], None] | None = None


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
