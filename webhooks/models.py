"""Every notification the provider sends, kept as received: the outbox that feeds the Celery
tasks (nothing is lost if the broker is down) and the audit trail staff read in the admin."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from payments.models import Payment


class WebhookState(models.TextChoices):
    RECEIVED = "received", _("Received")  # stored; a task will refetch the payment
    PROCESSING = "processing", _("Processing")  # claimed by a task (kept across its retries)
    PROCESSED = "processed", _("Processed")  # a refetch begun after it arrived was applied
    UNMATCHED = "unmatched", _("Unmatched")  # the payment belongs to no order of this shop
    FAILED = "failed", _("Failed")  # retries ran out; staff can retry it from the admin


# Notifications whose processing is over for good: retention deletes them once old enough.
# (Failed ones are not: a retry may still make them processed.)
FINISHED = [WebhookState.PROCESSED, WebhookState.UNMATCHED]

# The start of `last_error` of the notifications a task gave up on because the provider could
# not be reached: the relay tries them again by itself.
GAVE_UP = "Gave up after retries: "
# The `last_error` of a notification for an unknown payment whose lookup went over the minute's
# budget (WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE): it is received again, and the relay brings it
# back no faster than the budget can look it up.
DEFERRED = "Deferred: too many notifications for unknown payments; it is looked up later."
# Failed notifications: given up on while the provider could not be reached (the relay tries
# them again by itself), and the others, left for staff to retry.
GIVEN_UP = models.Q(state=WebhookState.FAILED, last_error__startswith=GAVE_UP)
LEFT_FOR_STAFF = models.Q(state=WebhookState.FAILED) & ~models.Q(last_error__startswith=GAVE_UP)


class EventType(models.TextChoices):
    INSERT = "INSERT", _("Payment created")
    UPDATE = "UPDATE", _("Status changed")


class WebhookEvent(models.Model):
    provider_payment_id = models.CharField(_("provider payment id"), max_length=36)
    event_type = models.CharField(_("event type"), max_length=6, choices=EventType.choices)
    received_at = models.DateTimeField(_("received at"), default=timezone.now)
    remote_addr = models.GenericIPAddressField(_("remote address"), null=True, blank=True)
    state = models.CharField(
        _("state"), max_length=10, choices=WebhookState.choices, default=WebhookState.RECEIVED
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.CharField(_("last error"), max_length=500, blank=True)
    payment = models.ForeignKey(
        Payment,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="webhook_events",
        verbose_name=_("payment"),
    )
    task_id = models.CharField(_("task id"), max_length=64, blank=True)  # the task that claimed it
    claimed_at = models.DateTimeField(_("claimed at"), null=True, blank=True)
    relayed_at = models.DateTimeField(_("relayed at"), null=True, blank=True)
    processed_at = models.DateTimeField(_("processed at"), null=True, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        indexes = [
            models.Index(fields=["provider_payment_id", "state"], name="webhook_payment_state"),
            models.Index(fields=["state", "received_at"], name="webhook_state_received"),
            # Retention: finished notifications, by when they finished
            # (webhooks.rules.webhooks_prune).
            models.Index(
                fields=["processed_at"],
                name="webhook_finished",
                condition=models.Q(state__in=FINISHED),
            ),
            # The relay's second look: notifications given up on while the provider could not
            # be reached, by when (webhooks.rules.webhook_relay); the failed ones left for
            # staff are not in it, so the relay never reads them.
            models.Index(
                fields=["processed_at"],
                name="webhook_given_up",
                condition=models.Q(state=WebhookState.FAILED, last_error__startswith=GAVE_UP),
            ),
            # The admin's list: its order (newest first) and those matched to no payment.
            models.Index(fields=["received_at", "id"], name="webhook_received"),
            models.Index(
                fields=["received_at", "id"],
                name="webhook_unmatched_received",
                condition=models.Q(payment=None),
            ),
        ]
        permissions = [("process_webhookevent", "Can retry and replay webhook events")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.provider_payment_id} · {self.get_state_display()}"
