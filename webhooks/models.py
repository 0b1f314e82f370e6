"""Every notification the provider sends, kept as received: the outbox that feeds the Celery
tasks (nothing is lost if the broker is down) and the audit trail staff read in the admin."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from payments.models import Payment


class WebhookState(models.TextChoices):
    RECEIVED = "received", "Received"  # stored; a task will refetch the payment
    PROCESSING = "processing", "Processing"  # claimed by a task (kept across its retries)
    PROCESSED = "processed", "Processed"  # a refetch begun after it arrived was applied
    UNMATCHED = "unmatched", "Unmatched"  # the payment belongs to no order of this shop
    FAILED = "failed", "Failed"  # retries ran out; staff can retry it from the admin


class EventType(models.TextChoices):
    INSERT = "INSERT", "Payment created"
    UPDATE = "UPDATE", "Status changed"


class WebhookEvent(models.Model):
    provider_payment_id = models.CharField("provider payment id", max_length=36)
    event_type = models.CharField(max_length=6, choices=EventType.choices)
    received_at = models.DateTimeField(default=timezone.now)
    remote_addr = models.GenericIPAddressField("remote address", null=True, blank=True)
    state = models.CharField(
        max_length=10, choices=WebhookState.choices, default=WebhookState.RECEIVED
    )
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    payment = models.ForeignKey(
        Payment,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="webhook_events",
    )
    task_id = models.CharField(max_length=64, blank=True)  # the task that claimed it
    claimed_at = models.DateTimeField(null=True, blank=True)
    relayed_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [
            models.Index(fields=["provider_payment_id", "state"], name="webhook_payment_state"),
            models.Index(fields=["state", "received_at"], name="webhook_state_received"),
        ]
        permissions = [("process_webhookevent", "Can retry and replay webhook events")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.provider_payment_id} · {self.get_state_display()}"
