"""The staff-action flow of the admin, written once for every admin that asks the provider for
something (payments, subscriptions, orders): the permission (a readable refusal otherwise), the
confirmation page and its form, the checks, the action recorded and queued, back at once to the
object's page, which says the action is in progress and reloads itself when it is done
(static/js/staff_actions.js polling `status_view`), and then says its outcome, once, to the
staff member who asked."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib import admin, messages
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Model, Q
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from payments.errors import PaymentError
from payments.models import (
    FINISHED_ACTION_STATES,
    OPEN_ACTION_STATES,
    Payment,
    StaffAction,
)
from payments.staff.kinds import kind_named
from payments.staff.requests import staff_action_request

# How often an open page asks whether its actions are done (milliseconds).
POLL_EVERY_MS = 1000
# What one page says at most (actions in progress, outcomes told).
PAGE_LIMIT = 50


@dataclass(frozen=True)
class ActionPage:
    """One action of an admin: its kind, the permission it needs and why it is refused
    without it (said on the admin's own 403 page)."""

    kind: str
    permission: str
    refused: Any  # lazy text


@dataclass(frozen=True)
class Asked:
    """What an action asks once its form and checks passed: its parameters, and the payment it
    moves, claimed now with `claim` (the payment's intent and the status it must have)."""

    params: dict[str, Any] = field(default_factory=dict)
    payment: Payment | None = None
    claim: tuple[str, str] | None = None


def open_actions_text(actions: Iterable[StaffAction]) -> list[str]:
    return [
        _("%(reference)s: %(action)s in progress…")
        % {"reference": action.reference, "action": kind_named(action.kind).label}
        for action in actions
    ]


def tell_outcomes(request: HttpRequest) -> set[int]:
    """Say, once, the outcome of each action the staff member asked that has finished; the
    ids of those told."""
    user = request.user
    if not user.is_authenticated:
        return set()
    untold = StaffAction.objects.filter(
        actor=user, state__in=FINISHED_ACTION_STATES, shown_at__isnull=True
    )
    if not untold.exists():  # the usual page: one indexed query
        return set()
    with transaction.atomic():
        # Two pages opened at once: each outcome is said on one of them only.
        told = list(
            untold.select_for_update(skip_locked=True).order_by("finished_at", "id")[:PAGE_LIMIT]
        )
        StaffAction.objects.filter(pk__in=[a.pk for a in told]).update(shown_at=timezone.now())
    for action in told:
        level = messages.SUCCESS if action.ok else messages.ERROR
        messages.add_message(request, level, action.result)
    return {action.pk for action in told}


class StaffActionsAdmin(admin.ModelAdmin):
    """Mixin of an admin whose actions wait on the provider (see the module's docstring)."""

    # Errors whose message is safe to show staff, as a refusal of the action.
    refusals: tuple[type[Exception], ...] = (PaymentError,)
    # Whether the refusal of an action asked on the object's own page names the object (those
    # asked from a list always do).
    name_in_refusals: bool = False

    # --- Hooks --------------------------------------------------------------------------------

    def action_reference(self, obj: Any) -> str:
        """How staff name the object in messages (an order's or a payment's reference)."""
        return str(obj)

    def open_actions_on(self, obj: Any) -> Q:
        """The open actions the object's page shows (those on the object itself)."""
        return Q(target_type=ContentType.objects.get_for_model(obj), target_id=obj.pk)

    # --- Asking -------------------------------------------------------------------------------

    def check_allowed(self, request: HttpRequest, page: ActionPage) -> None:
        if not request.user.has_perm(page.permission):
            raise PermissionDenied(str(page.refused))

    def back(self, obj: Any) -> HttpResponseRedirect:
        opts = self.model._meta
        return HttpResponseRedirect(
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
        )

    def ask(
        self,
        request: HttpRequest,
        page: ActionPage,
        obj: Model | None,
        asked: Callable[[], Asked],
        *,
        reference: str = "",
        named: bool = True,
    ) -> StaffAction | None:
        """Check (`asked` raises a refusal), record and queue the action; a refusal is said
        at once (`named`: after the object's name) and changes nothing."""
        reference = reference or (self.action_reference(obj) if obj is not None else "")
        try:
            what = asked()
            return staff_action_request(
                kind=page.kind,
                actor=request.user,
                target=obj,
                payment=what.payment,
                claim=what.claim,
                reference=reference,
                params=what.params,
            )
        except self.refusals as exc:
            text = str(getattr(exc, "message", exc))
            self.message_user(
                request, f"{reference}: {text}" if named and reference else text, messages.ERROR
            )
            return None

    def action_view(
        self,
        request: HttpRequest,
        obj: Model,
        page: ActionPage,
        *,
        form: Form | None,
        asked: Callable[[dict[str, Any]], Asked],
        confirm: Callable[[Form | None], HttpResponse],
    ) -> HttpResponse:
        """The confirmation page (GET, or a form with errors: nothing changes), else the action
        asked and back to the object's page."""
        if request.method == "POST" and (form is None or form.is_valid()):
            data = form.cleaned_data if form is not None else {}
            self.ask(request, page, obj, lambda: asked(data), named=self.name_in_refusals)
            return self.back(obj)
        return confirm(form)

    def ask_each(
        self,
        request: HttpRequest,
        page: ActionPage,
        objects: Iterable[Model],
        asked: Callable[[Model], Asked],
    ) -> int:
        """Ask the action for each object of a list; each refusal is said with its object's
        name. How many were queued."""
        queued = 0
        for obj in objects:
            if self.ask(request, page, obj, lambda obj=obj: asked(obj)) is not None:
                queued += 1
        return queued

    # --- The page: in progress, then the outcome ------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        opts = self.model._meta
        return [
            path(
                "staff-actions/",
                self.admin_site.admin_view(require_GET(self.status_view)),
                name=f"{opts.app_label}_{opts.model_name}_staff_actions",
            ),
            *super().get_urls(),
        ]

    def status_view(self, request: HttpRequest) -> JsonResponse:
        """How many of the actions a page shows (`?ids=1,2`) are still open."""
        ids = [int(i) for i in request.GET.get("ids", "").split(",")[:PAGE_LIMIT] if i.isdigit()]
        still = StaffAction.objects.filter(pk__in=ids, state__in=OPEN_ACTION_STATES).count()
        return JsonResponse({"open": still})

    def staff_actions_context(self, request: HttpRequest, where: Q) -> dict[str, Any]:
        # Read what is in progress before telling what finished: an action that finishes in
        # between is then told now, and not left unsaid on a page that does not poll.
        running = list(
            StaffAction.objects.filter(where, state__in=OPEN_ACTION_STATES).order_by(
                "created_at", "id"
            )[:PAGE_LIMIT]
        )
        told = tell_outcomes(request)
        running = [action for action in running if action.pk not in told]
        if not running:
            return {}
        opts = self.model._meta
        status = reverse(f"admin:{opts.app_label}_{opts.model_name}_staff_actions")
        return {
            "staff_actions": open_actions_text(running),
            "staff_actions_url": f"{status}?ids={','.join(str(a.pk) for a in running)}",
            "staff_actions_every": POLL_EVERY_MS,
        }

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)
        where = self.open_actions_on(obj) if obj is not None else Q(pk__in=[])
        context = {**self.staff_actions_context(request, where), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, context)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        where = Q(actor=request.user) if request.user.is_authenticated else Q(pk__in=[])
        context = {**self.staff_actions_context(request, where), **(extra_context or {})}
        return super().changelist_view(request, context)
