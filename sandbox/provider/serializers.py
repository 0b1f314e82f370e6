"""Validation of request bodies. Strict about types: a string field takes only a JSON string,
an amount only a JSON number with at most two decimals, an enum only its listed values."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from rest_framework import serializers

MAX_AMOUNT = Decimal("9999999999.99")
_COUNTRY = re.compile(r"^[A-Za-z]{2}$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "must be an integer."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class AmountField(serializers.DecimalField):
    """A JSON number (never a string or a boolean), above zero, with at most two decimals."""

    default_error_messages = {
        "invalid": "must be a number.",
        "max_decimal_places": "must have at most {max_decimal_places} decimal places.",
    }

    def __init__(self, *, allow_zero: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("max_digits", 12)
        kwargs.setdefault("decimal_places", 2)
        kwargs.setdefault("max_value", MAX_AMOUNT)
        if allow_zero:
            kwargs.setdefault("min_value", Decimal("0"))
        else:
            kwargs.setdefault("min_value", Decimal("0.01"))
        super().__init__(**kwargs)
        self.error_messages["min_value"] = (
            "must be zero or more." if allow_zero else "must be greater than zero."
        )

    def to_internal_value(self, data: Any) -> Decimal:
        if isinstance(data, bool) or not isinstance(data, int | Decimal | float):
            self.fail("invalid")
        value = Decimal(str(data)) if not isinstance(data, Decimal) else data
        if not value.is_finite():
            self.fail("invalid")
        return super().to_internal_value(value).quantize(Decimal("0.01"))


class StrictDictField(serializers.DictField):
    default_error_messages = {"not_a_dict": "must be an object."}


def text(max_length: int = 255, **kwargs: Any) -> StrictCharField:
    kwargs.setdefault("required", False)
    kwargs.setdefault("allow_blank", True)
    return StrictCharField(max_length=max_length, **kwargs)


class StrictObjectSerializer(serializers.Serializer):
    default_error_messages = {"invalid": "must be an object."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["must be a JSON object."]})
        return super().to_internal_value(data)


# --- Card tokens -------------------------------------------------------------------------


class CardDataSerializer(StrictObjectSerializer):
    number = StrictCharField(max_length=32)
    exp_month = StrictCharField(max_length=2)
    exp_year = StrictCharField(max_length=4)
    cvv = StrictCharField(max_length=4, required=False, allow_blank=True)
    holder_name = StrictCharField(max_length=100)


class CardTokenRequestSerializer(StrictObjectSerializer):
    card = CardDataSerializer()


# --- Payments ------------------------------------------------------------------------------


class AddressSerializer(StrictObjectSerializer):
    street = text()
    number = text(32)
    external_number = text(32)
    internal_number = text(32)
    colony = text()
    city = text()
    state = text()
    postal_code = text(16)
    country = text(64)


class IdentificationSerializer(StrictObjectSerializer):
    id = text(64)
    type = text(32)


class CustomerSerializer(StrictObjectSerializer):
    first_name = text(100)
    last_name = text(100)
    description = text()
    email = serializers.EmailField(required=False, allow_blank=True, max_length=254)
    phone = text(32)
    address = AddressSerializer(required=False)
    identification = IdentificationSerializer(required=False)


class PreventionDataSerializer(StrictObjectSerializer):
    session_id = text()
    user_agent = text(1000)
    device_finger_print_token = text()
    website = text(500)


class PaymentMethodRefSerializer(StrictObjectSerializer):
    token = StrictCharField(max_length=64)


class HttpUrlField(serializers.URLField):
    default_error_messages = {"invalid": "must be an http(s) URL."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if not value.lower().startswith(("http://", "https://")):
            self.fail("invalid")
        return value


class PaymentCreateSerializer(StrictObjectSerializer):
    amount = AmountField()
    currency = StrictCharField(max_length=3)
    description = text()
    capture_method = serializers.ChoiceField(
        choices=["automatic", "manual"], required=False, default="automatic"
    )
    payment_method = PaymentMethodRefSerializer()
    customer = CustomerSerializer(required=False)
    prevention_data = PreventionDataSerializer(required=False)
    webhook_url = HttpUrlField(required=False, max_length=2000)
    return_url = HttpUrlField(required=False, max_length=2000)
    external_reference = text()
    statement_descriptor = text(22)
    metadata = StrictDictField(required=False)
    installments = StrictIntegerField(required=False, min_value=1, max_value=48, default=1)
    tip_amount = AmountField(required=False, allow_zero=True)
    binary_mode = StrictBooleanField(required=False, default=False)
    country = StrictCharField(required=False, max_length=2)

    def validate_currency(self, value: str) -> str:
        if not _CURRENCY.match(value):
            raise serializers.ValidationError("must be an ISO 4217 code in capitals, e.g. MXN.")
        return value

    def validate_country(self, value: str) -> str:
        if not _COUNTRY.match(value):
            raise serializers.ValidationError("must be an ISO 3166-1 alpha-2 code, e.g. MX.")
        return value.upper()

    def validate_metadata(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > 50:
            raise serializers.ValidationError("must have at most 50 keys.")
        return value


class PaymentUpdateSerializer(StrictObjectSerializer):
    status = serializers.ChoiceField(choices=["approved", "cancelled"])
    paid_amount = AmountField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["status"] == "approved" and "paid_amount" not in attrs:
            raise serializers.ValidationError(
                {"paid_amount": ["is required to capture (status 'approved')."]}
            )
        if attrs["status"] == "cancelled" and "paid_amount" in attrs:
            raise serializers.ValidationError(
                {"paid_amount": ["is not sent when cancelling (status 'cancelled')."]}
            )
        return attrs


# --- Refunds -------------------------------------------------------------------------------


class RefundCreateSerializer(StrictObjectSerializer):
    payment_id = StrictCharField(max_length=64)
    amount = AmountField(required=False)
    reason = text()


# --- Control endpoints ---------------------------------------------------------------------


class SubscriptionCustomerSerializer(StrictObjectSerializer):
    first_name = text(100)
    last_name = text(100)
    email = serializers.EmailField(required=False, allow_blank=True, max_length=254)
    phone = text(32)


class AdditionalInformationSerializer(StrictObjectSerializer):
    add_info_1 = text()
    add_info_2 = text()
    add_info_3 = text()


class SubscriptionCreateSerializer(StrictObjectSerializer):
    price_id = StrictCharField(max_length=64)
    customer = SubscriptionCustomerSerializer()
    additional_information = AdditionalInformationSerializer(required=False)
    amount = AmountField(required=False)
    invoices = StrictIntegerField(required=False, min_value=0, max_value=24, default=3)


class FaultSerializer(StrictObjectSerializer):
    path = StrictCharField(max_length=200)
    method = serializers.ChoiceField(
        choices=["GET", "POST", "PATCH", "PUT", "DELETE"], required=False
    )
    status = StrictIntegerField(required=False, min_value=400, max_value=599)
    error_code = text(16)
    message = text(200)
    latency_ms = StrictIntegerField(required=False, min_value=0, max_value=120_000, default=0)
    times = StrictIntegerField(required=False, min_value=1, max_value=10_000)
    after_processing = StrictBooleanField(required=False, default=False)

    def validate_path(self, value: str) -> str:
        if not value.startswith("/") or value.startswith("/_sandbox"):
            raise serializers.ValidationError("must be an API path such as /payments.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("status") is None and not attrs.get("latency_ms"):
            raise serializers.ValidationError("give a status, a latency_ms, or both.")
        return attrs


class ChaosSerializer(StrictObjectSerializer):
    mode = serializers.ChoiceField(choices=["none", "duplicate", "reorder", "delay", "drop"])
    times = StrictIntegerField(required=False, min_value=1, max_value=10_000)
    delay_ms = StrictIntegerField(required=False, min_value=0, max_value=600_000, default=1500)


class ClockSerializer(StrictObjectSerializer):
    advance_seconds = StrictIntegerField(required=False, min_value=0, max_value=10 * 365 * 86400)
    advance_days = StrictIntegerField(required=False, min_value=0, max_value=3650)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "advance_seconds" not in attrs and "advance_days" not in attrs:
            raise serializers.ValidationError("give advance_seconds or advance_days.")
        return attrs


class MethodStatusSerializer(StrictObjectSerializer):
    status = serializers.ChoiceField(choices=["active", "deactive"])


class QuirksSerializer(StrictObjectSerializer):
    authorized_as_approved = StrictBooleanField(required=False)
