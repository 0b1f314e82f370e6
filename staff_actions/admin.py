"""The staff-action flow of the admin, written once for every admin that asks the provider for
something (payments, subscriptions, orders): the permission (a readable refusal otherwise), the
one confirmation page and its form, the checks, the action recorded and queued, back at once to
the object's page, which says the action is in progress and reloads itself when it is done
(static/js/admin_work_in_progress.js polling `status_view`), and then says its outcome, once, to the
staff member who asked.

An admin declares its actions (`action_pages`: `ActionPage`s by name); each is served at
`<pk>/<name>/` (URL name `<app>_<model>_<name>`) by `action_view`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from core.errors import Refusal
from staff_actions.kinds import kind_named
from staff_actions.models import FINISHED_ACTION_STATES, OPEN_ACTION_STATES, StaffAction
from staff_actions.rules import Asked, staff_action_request

# How often an open page asks whether its actions are done (milliseconds).
POLL_EVERY_MS = 1000
# What one page says at most (actions in progress, outcomes told).
PAGE_LIMIT = 50
CONFIRM_TEMPLATE = "admin/staff_actions/confirm.html"


@dataclass(frozen=True)
class ActionPage:
    """One action of an admin: its kind, the permission it needs (and why it is refused
    without it, on the admin's own 403 page; the permission's name when not given), and its
    confirmation page: title (with `%(reference)s`), button, explanation, the form it asks
    (built from the POST data, or None, and the object; raising a `Refusal` if the object
    allows no such action), and what it asks once the form is valid (raising a `Refusal`)."""

    kind: str
    permission: str
    refused: Any = ""
    title: Any = ""
    button: Any = ""
    explanation: Any = ""
    danger: bool = False
    form: Callable[[Any, Any], Form] | None = None
    asked: Callable[[Any, Form | None], Asked] = lambda obj, form: Asked()


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

    # The actions served at `<pk>/<name>/`.
    action_pages: dict[str, ActionPage] = {}
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

    def action_object(self, pk: int) -> Any:
        return get_object_or_404(self.model, pk=pk)

    def confirm_context(self, obj: Any, name: str) -> dict[str, Any]:
        """What the confirmation page says of the object above the form (`summary` lines)."""
        return {}

    def change_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        """What the object's page shows besides its fields (its actions, its ledger)."""
        return {}

    # --- Asking -------------------------------------------------------------------------------

    def check_allowed(self, request: HttpRequest, page: ActionPage) -> None:
        if request.user.has_perm(page.permission):
            return
        if page.refused:
            raise PermissionDenied(str(page.refused))
        app_label, codename = page.permission.split(".")
        name = Permission.objects.filter(
            content_type__app_label=app_label, codename=codename
        ).first()
        raise PermissionDenied(
            _("This needs the “%(permission)s” permission.")
            % {"permission": _(name.name) if name else page.permission}
        )

    def back(self, obj: Any) -> HttpResponseRedirect:
        opts = self.model._meta
        if obj is None:
            return HttpResponseRedirect(
                reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
            )
        return HttpResponseRedirect(
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
        )

    def refuse(self, request: HttpRequest, reference: str, exc: Refusal, named: bool) -> None:
        text = exc.message
        self.message_user(
            request, f"{reference}: {text}" if named and reference else text, messages.ERROR
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
            return staff_action_request(
                kind=page.kind, actor=request.user, target=obj, asked=asked(), reference=reference
            )
        except Refusal as exc:
            self.refuse(request, reference, exc, named)
            return None

    def action_view(self, request: HttpRequest, pk: int, name: str) -> HttpResponse:
        """The confirmation page (GET, or a form with errors: nothing changes), else the action
        asked and back to the object's page."""
        page = self.action_pages[name]
        self.check_allowed(request, page)
        obj = self.action_object(pk)
        try:
            form = page.form(request.POST or None, obj) if page.form is not None else None
        except Refusal as exc:  # the object allows no such action: said as it is
            self.refuse(request, "", exc, False)
            return self.back(obj)
        if request.method == "POST" and (form is None or form.is_valid()):
            self.ask(request, page, obj, lambda: page.asked(obj, form), named=self.name_in_refusals)
            return self.back(obj)
        title = str(page.title) % {"reference": self.action_reference(obj)}
        return self.confirm_page(
            request, obj, title=title, button=page.button, form=form, danger=page.danger,
            explanation=page.explanation, action=name, **self.confirm_context(obj, name),
        )  # fmt: skip

    def confirm_page(
        self, request: HttpRequest, obj: Any, *, title: Any, button: Any, **context: Any
    ) -> TemplateResponse:
        """The one confirmation page of every action: the object (or the `objects` of a list,
        with `selected_action` to post again), what will happen, the form, and the button."""
        return TemplateResponse(
            request,
            CONFIRM_TEMPLATE,
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "original": obj,
                "title": title,
                "button": button,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                **context,
            },
        )

    def confirm_selected(
        self, request: HttpRequest, queryset: QuerySet[Any], name: str, **page: Any
    ) -> TemplateResponse | None:
        """A list action's confirmation page, until it is confirmed (then None: go on)."""
        if request.POST.get("confirmed") == "yes":
            return None
        return self.confirm_page(request, None, objects=queryset, selected_action=name, **page)

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
        prefix = f"{opts.app_label}_{opts.model_name}"
        wrap = self.admin_site.admin_view
        actions = [
            path(
                f"<int:pk>/{name}/",
                wrap(lambda request, pk, name=name: self.action_view(request, pk, name)),
                name=f"{prefix}_{name}",
            )
            for name in self.action_pages
        ]
        status = wrap(require_GET(self.status_view))
        return [
            path("staff-actions/", status, name=f"{prefix}_staff_actions"),
            *actions,
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
        context = {
            **self.staff_actions_context(request, where),
            **(self.change_context(request, obj) if obj is not None else {}),
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        where = Q(actor=request.user) if request.user.is_authenticated else Q(pk__in=[])
        context = {**self.staff_actions_context(request, where), **(extra_context or {})}
        return super().changelist_view(request, context)
