"""Staff forms for payment actions: amounts checked before any provider call."""

from __future__ import annotations

from decimal import Decimal

from django import forms

from payments.models import Payment


class _AmountForm(forms.Form):
    amount = forms.DecimalField(
        max_digits=12,
        decimal_places=2,
        min_value=Decimal("0.01"),
        error_messages={"min_value": "The amount must be greater than zero."},
    )

    def __init__(self, *args: object, payment: Payment, maximum: Decimal, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.payment = payment
        self.maximum = maximum
        self.fields["amount"].initial = maximum
        self.fields["amount"].help_text = f"At most ${maximum} {payment.currency}."

    def clean_amount(self) -> Decimal:
        amount: Decimal = self.cleaned_data["amount"]
        if amount > self.maximum:
            raise forms.ValidationError(f"The amount cannot be more than ${self.maximum}.")
        return amount


class CaptureForm(_AmountForm):
    """Capture up to the authorized amount (default: all of it)."""


class RefundForm(_AmountForm):
    """Refund up to what is left to refund (default: all of it)."""

    reason = forms.CharField(max_length=255, required=False)


class SubscriptionImportForm(forms.Form):
    provider_id = forms.UUIDField(label="Subscription id at the provider")
