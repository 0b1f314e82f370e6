"""What the sandbox keeps. Never a full card number or CVV: a card token keeps what a real
provider keeps (BIN, last digits, expiry, holder) and the test scenario its number selected."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from sandbox.provider.jsonio import DecimalJSONDecoder, DecimalJSONEncoder


class PaymentStatus(models.TextChoices):
    PENDING = "pending"
    AUTHORIZED = "authorized"
    APPROVED = "approved"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


class CaptureMethod(models.TextChoices):
    AUTOMATIC = "automatic"
    MANUAL = "manual"


class Scenario(models.TextChoices):
    """What a test card makes the sandbox do (chosen at tokenization from the number)."""

    APPROVE = "approve"
    THREE_DS = "three_ds"
    DECLINE = "decline"
    INSUFFICIENT_FUNDS = "insufficient_funds"
    PROVIDER_ERROR = "provider_error"


class PaymentMethod(models.Model):
    """A catalogue entry of GET /payment_methods; the card rules are read from `validations`."""

    id = models.CharField(primary_key=True, max_length=32)
    country = models.CharField(max_length=2, default="MX")
    name = models.CharField(max_length=64)
    type = models.CharField(max_length=32)
    status = models.CharField(max_length=16, default="active")
    logo_file = models.CharField(max_length=64)
    # Decimal bounds are kept as exact strings and served as JSON numbers.
    validations = models.JSONField(default=list, encoder=DjangoJSONEncoder)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]


class CardToken(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    method = models.ForeignKey(PaymentMethod, on_delete=models.PROTECT)
    bin = models.CharField(max_length=8)
    last_digits = models.CharField(max_length=4)
    exp_month = models.CharField(max_length=2)
    exp_year = models.CharField(max_length=4)
    holder_name = models.CharField(max_length=100)
    issuer = models.CharField(max_length=64)
    country = models.CharField(max_length=2)
    installments_eligible = models.BooleanField(default=False)
    scenario = models.CharField(max_length=24, choices=Scenario.choices)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)


class Payment(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    status = models.CharField(max_length=16, choices=PaymentStatus.choices)
    status_code = models.CharField(max_length=16)
    status_message = models.CharField(max_length=64)
    capture_method = models.CharField(max_length=16, choices=CaptureMethod.choices)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    tip_amount = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("0.00"))
    paid_amount = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("0.00"))
    captured_amount = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("0.00"))
    amount_refunded = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("0.00"))
    installments = models.PositiveSmallIntegerField(default=1)
    binary_mode = models.BooleanField(default=False)
    currency = models.CharField(max_length=3)
    country = models.CharField(max_length=2, default="MX")
    description = models.CharField(max_length=255, blank=True)
    external_reference = models.CharField(max_length=255, blank=True)
    statement_descriptor = models.CharField(max_length=22, blank=True)
    receipt_no = models.CharField(max_length=16, blank=True)
    customer = models.JSONField(
        default=dict, encoder=DecimalJSONEncoder, decoder=DecimalJSONDecoder
    )
    prevention_data = models.JSONField(
        default=dict, encoder=DecimalJSONEncoder, decoder=DecimalJSONDecoder
    )
    metadata = models.JSONField(
        default=dict, encoder=DecimalJSONEncoder, decoder=DecimalJSONDecoder
    )
    method = models.ForeignKey(PaymentMethod, on_delete=models.PROTECT)
    token = models.OneToOneField(CardToken, on_delete=models.PROTECT)
    card = models.JSONField(default=dict)
    return_url = models.CharField(max_length=2000, blank=True)
    webhook_url = models.CharField(max_length=2000, blank=True)
    challenge_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    challenge_expires_at = models.DateTimeField(null=True, blank=True)
    challenge_completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    authorized_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()
    version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["status", "authorized_at"])]


class Refund(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    payment = models.ForeignKey(Payment, on_delete=models.CASCADE, related_name="refund_records")
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    reason = models.CharField(max_length=255, blank=True)
    status = models.CharField(max_length=16, default="approved")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at"]


class Subscription(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    price_id = models.CharField(max_length=64)
    customer = models.JSONField(default=dict)
    status = models.CharField(max_length=16, default="active")
    additional_information = models.JSONField(default=dict)
    payment_method = models.JSONField(default=dict)
    start_date = models.DateTimeField(null=True, blank=True)
    end_date = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at"]


class Invoice(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    subscription = models.ForeignKey(
        Subscription, on_delete=models.CASCADE, related_name="invoices"
    )
    payment_request_id = models.CharField(max_length=64)
    payment_request_code = models.CharField(max_length=32)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=3, null=True, blank=True)  # noqa: DJ001 (spec: string or null)
    due_date = models.DateTimeField()
    status = models.CharField(max_length=16, default="scheduled")
    payment = models.JSONField(null=True, blank=True)
    payment_method = models.JSONField(default=dict)
    additional_information = models.JSONField(default=dict)
    period = models.JSONField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["due_date"]


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERING = "delivering"
    DELIVERED = "delivered"
    FAILED = "failed"
    DROPPED = "dropped"


class WebhookDelivery(models.Model):
    """The persisted queue of notifications (an outbox written in the payment's transaction)."""

    payment_id = models.UUIDField(db_index=True)
    url = models.CharField(max_length=2000)
    event_type = models.CharField(max_length=8)
    payload = models.JSONField()
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField()
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    reorder = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]


class IdempotencyRecord(models.Model):
    key = models.CharField(max_length=255)
    scope = models.CharField(max_length=16)
    fingerprint = models.CharField(max_length=64)
    completed = models.BooleanField(default=False)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="idempotency_key_per_scope")
        ]


class Fault(models.Model):
    """An injected fault: matching API requests get `status` (and/or wait `latency_ms`)."""

    path_prefix = models.CharField(max_length=200)
    method = models.CharField(max_length=8, blank=True)
    status = models.PositiveIntegerField(null=True, blank=True)
    error_code = models.CharField(max_length=16, blank=True)
    message = models.CharField(max_length=200, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    # True: the request is processed first, then delayed and/or answered with `status`, as
    # when the provider did the work but its answer was lost.
    after_processing = models.BooleanField(default=False)
    remaining = models.PositiveIntegerField(null=True, blank=True)
    hits = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class SandboxState(models.Model):
    """Singleton (pk=1): the sandbox clock's offset, webhook chaos, response quirks and the
    rate limits set through `/_sandbox/rate_limits` (None: never set, the environment's)."""

    clock_offset_seconds = models.FloatField(default=0.0)
    chaos_mode = models.CharField(max_length=16, blank=True)
    chaos_remaining = models.PositiveIntegerField(null=True, blank=True)
    chaos_delay_ms = models.PositiveIntegerField(default=0)
    chaos_release_at = models.DateTimeField(null=True, blank=True)
    quirks = models.JSONField(default=dict)
    rate_limits = models.JSONField(null=True, blank=True, default=None)

    @classmethod
    def load(cls) -> SandboxState:
        state, _ = cls.objects.get_or_create(pk=1)
        return state
