"""Staff forms for payment actions: amounts checked before any provider call."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from core.money import pesos
from payments.models import Payment


class _AmountForm(forms.Form):
    amount = forms.DecimalField(
        max_digits=12,
        decimal_places=2,
        min_value=Decimal("0.01"),
        localize=False,
        error_messages={"min_value": _("The amount must be greater than zero.")},
    )

    def __init__(self, *args: object, payment: Payment, maximum: Decimal, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.payment = payment
        self.maximum = maximum
        self.fields["amount"].initial = maximum
        self.fields["amount"].label = _("Amount")
        self.fields["amount"].help_text = _("At most %(maximum)s %(currency)s.") % {
            "maximum": pesos(maximum),
            "currency": payment.currency,
        }

    def clean_amount(self) -> Decimal:
        amount: Decimal = self.cleaned_data["amount"]
        if amount > self.maximum:
            raise forms.ValidationError(
                _("The amount cannot be more than %(maximum)s.") % {"maximum": pesos(self.maximum)}
            )
        return amount


class CaptureForm(_AmountForm):
    """Capture up to the authorized amount (default: all of it)."""


class RefundForm(_AmountForm):
    """Refund up to what is left to refund (default: all of it)."""

    reason = forms.CharField(label=_("Reason"), max_length=255, required=False)


class SubscriptionImportForm(forms.Form):
    provider_id = forms.UUIDField(label=_("Subscription id at the provider"))
