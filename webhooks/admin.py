"""Staff read every notification the provider sent, filter them by state or payment, and retry
failed ones or replay any (a replay refetches the payment; it is always safe)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from core.admin_lists import (
    BoundedListAdmin,
    DateRangeFilter,
    ReadOnlyAdmin,
    SearchTerm,
    Shape,
    recent_values,
)
from payments.models import Payment
from webhooks.models import GIVEN_UP, LEFT_FOR_STAFF, WebhookEvent, WebhookState
from webhooks.rules import webhook_events_retry

STATE_COLOURS = {
    WebhookState.RECEIVED: "#b54708",
    WebhookState.PROCESSING: "#1d4ed8",
    WebhookState.PROCESSED: "#067647",
    WebhookState.UNMATCHED: "#475467",
    WebhookState.FAILED: "#b42318",
}


class PaymentFilter(admin.SimpleListFilter):
    """The events of one payment (reached from the payment's page, `?payment=<id>`)."""

    title = _("payment")
    parameter_name = "payment"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        value = self.value()
        if value and value.isdigit():
            return [(value, _("Payment #%(id)s") % {"id": value})]
        return [("none", _("Not matched to a payment"))]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[WebhookEvent]
    ) -> QuerySet[WebhookEvent]:
        value = self.value()
        if value == "none":
            return queryset.filter(payment__isnull=True)
        if value and value.isdigit():
            return queryset.filter(payment_id=int(value))
        return queryset


class FailedFilter(admin.SimpleListFilter):
    """The failed notifications: given up on while the provider could not be reached (the
    relay tries them again by itself), or left for staff to retry."""

    title = _("failure")
    parameter_name = "failed"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("given_up", _("Given up on, tried again by itself")),
            ("staff", _("Left for staff to retry")),
        ]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[WebhookEvent]
    ) -> QuerySet[WebhookEvent]:
        if self.value() == "given_up":
            return queryset.filter(GIVEN_UP)
        if self.value() == "staff":
            return queryset.filter(LEFT_FOR_STAFF)
        return queryset


@admin.register(WebhookEvent)
class WebhookEventAdmin(ReadOnlyAdmin, BoundedListAdmin):
    list_display = [
        "received_at",
        "event_type",
        "provider_payment_id",
        "state_badge",
        "attempts",
        "payment_link",
        "remote_addr",
        "short_error",
    ]
    list_filter = [
        "state",
        FailedFilter,
        "event_type",
        PaymentFilter,
        ("received_at", DateRangeFilter),
    ]
    sortable_by = ["received_at"]
    search_fields = ["provider_payment_id"]  # shows the box; `search` says what it finds
    search_help_text = _("Exact provider payment id or order reference.")
    list_select_related = ["payment"]
    list_per_page = 100
    actions = ["retry_selected", "replay_selected"]
    fields = [
        "provider_payment_id",
        "event_type",
        "state",
        "payment_link",
        "received_at",
        "remote_addr",
        "attempts",
        "last_error",
        "task_id",
        "claimed_at",
        "relayed_at",
        "processed_at",
    ]
    readonly_fields = fields

    def has_process_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("webhooks.process_webhookevent")

    def search(self, queryset: QuerySet[WebhookEvent], term: SearchTerm) -> QuerySet[WebhookEvent]:
        """By the provider's payment id (in any case, as pasted from its dashboard), else by
        the order reference (or an id of another format): the order's payments are looked up
        first, then their events, so that no join runs over both tables whole."""
        if term.shape is Shape.PROVIDER_ID:
            return queryset.filter(provider_payment_id__in=term.spellings)
        payments = Payment.objects.filter(external_reference__in=term.spellings)
        return queryset.filter(
            Q(payment_id__in=recent_values(payments, "pk"))
            | Q(provider_payment_id__in=term.spellings)
        )

    @admin.display(description=_("state"), ordering="state")
    def state_badge(self, event: WebhookEvent) -> str:
        colour = STATE_COLOURS.get(WebhookState(event.state), "#475467")
        return format_html(
            '<strong style="color:{}">{}</strong>', colour, event.get_state_display()
        )

    @admin.display(description=_("payment"), ordering="payment")
    def payment_link(self, event: WebhookEvent) -> str:
        if event.payment_id is None:
            return "—"
        url = reverse("admin:payments_payment_change", args=[event.payment_id])
        return format_html('<a href="{}">{}</a>', url, event.payment.external_reference)

    @admin.display(description=_("last error"))
    def short_error(self, event: WebhookEvent) -> str:
        return event.last_error[:80]

    def _process(
        self, request: HttpRequest, queryset: QuerySet[WebhookEvent], *, replay: bool
    ) -> None:
        count = webhook_events_retry(events=queryset, replay=replay)
        skipped = queryset.count() - count
        if count:
            done = (
                ngettext(
                    "%(count)d notification replayed.", "%(count)d notifications replayed.", count
                )
                if replay
                else ngettext(
                    "%(count)d notification queued for retry.",
                    "%(count)d notifications queued for retry.",
                    count,
                )
            )
            self.message_user(request, done % {"count": count}, messages.SUCCESS)
        if skipped:
            why = (
                gettext("they are still waiting or being processed")
                if replay
                else gettext(
                    "only failed or unmatched notifications can be retried; replay the others"
                )
            )
            text = ngettext(
                "%(count)d notification skipped: %(why)s.",
                "%(count)d notifications skipped: %(why)s.",
                skipped,
            )
            self.message_user(request, text % {"count": skipped, "why": why}, messages.WARNING)

    @admin.action(description=_("Retry selected failed notifications"), permissions=["process"])
    def retry_selected(self, request: HttpRequest, queryset: QuerySet[WebhookEvent]) -> None:
        self._process(request, queryset, replay=False)

    @admin.action(
        description=_("Replay selected notifications (refetch their payments)"),
        permissions=["process"],
    )
    def replay_selected(self, request: HttpRequest, queryset: QuerySet[WebhookEvent]) -> None:
        self._process(request, queryset, replay=True)
