"""The bodies of the payment page's JSON calls: what the page sends, and what it is answered."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from checkout.models import OrderStatus

RESULTS = ["processing", "approved", "authorized", "pending", "rejected", "failed", "unknown"]


class TextField(serializers.CharField):
    """A JSON string: DRF's CharField would take 12 or 1.5 as the text "12" or "1.5"."""

    default_error_messages = {"invalid": _("Enter a valid value.")}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class PaymentAttemptSerializer(serializers.Serializer):
    """One payment attempt: the card token the provider's card form returned (card data never
    reaches the shop) and the SDK's fraud-prevention data. Other members are ignored."""

    card_token = TextField(max_length=64, help_text="The provider card form's single-use token.")
    attempt_id = serializers.RegexField(
        r"^[0-9a-f]{32}\Z",
        max_length=32,
        trim_whitespace=False,
        help_text="128 random bits in lower-case hex, new for every attempt the shopper makes; "
        "the same value again is a retry of the same attempt.",
    )
    session_id = TextField(
        max_length=128,
        required=False,
        allow_blank=True,
        allow_null=True,
        default="",
        help_text="The provider SDK's device session id (fraud prevention).",
    )
    user_agent = TextField(
        max_length=512,
        required=False,
        allow_blank=True,
        allow_null=True,
        default="",
        help_text="The browser's user agent as the provider SDK read it.",
    )

    installments = serializers.IntegerField(
        min_value=1,
        max_value=48,
        required=False,
        default=1,
        help_text="1 to pay in full, or the number of interest-free monthly payments chosen.",
    )
    card_bin = serializers.RegexField(
        r"^[0-9]{6}\Z",
        required=False,
        allow_blank=True,
        allow_null=True,
        default="",
        help_text="The card's first six digits, as the card form reported them (needed for "
        "installments; checked against the catalogue, and by the provider).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {name: "" if value is None else value for name, value in attrs.items()}


class PaymentOutcomeSerializer(serializers.Serializer):
    """Where an attempt stands, for the payment page."""

    result = serializers.ChoiceField(
        RESULTS,
        help_text="`processing`: stored, its payment not created yet, ask again. `approved` and "
        "`authorized` (held, charged at shipping): paid. `pending`: the bank wants 3-D Secure, "
        "open `three_ds_url`. `rejected`: declined (`message` says why). `failed`: not made. "
        "`unknown`: still being confirmed, ask again.",
    )
    order_status = serializers.ChoiceField(OrderStatus.values)
    message = serializers.CharField(
        allow_blank=True, help_text="For the shopper, in the request's language."
    )
    payment_id = serializers.CharField(
        allow_blank=True, help_text="The provider's id of the attempt ('' when it has none)."
    )
    three_ds_url = serializers.CharField(
        allow_blank=True, help_text="The 3-D Secure page of a `pending` attempt ('' otherwise)."
    )
    redirect = serializers.CharField(
        allow_blank=True,
        help_text="Where the browser goes next (the order's page) once paid; '' otherwise.",
    )
