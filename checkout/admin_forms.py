"""The staff's order forms: what to ship, what to refund and what comes back to stock, each
prefilled and bounded by what the order still allows, checked before any call."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from checkout.models import Order, OrderItem
from checkout.templatetags.shop import mxn


def _item_field(name: str, maximum: int, initial: int) -> forms.IntegerField:
    return forms.IntegerField(
        label=name,
        min_value=0,
        max_value=maximum,
        initial=initial,
        required=False,
        help_text=_("From 0 to %(maximum)d.") % {"maximum": maximum},
        error_messages={
            "max_value": _("At most %(limit_value)s."),
            "min_value": _("At least %(limit_value)s."),
            "invalid": _("Enter a whole number."),
        },
    )


class _ItemsForm(forms.Form):
    """One quantity per item of the order (`item-<id>`)."""

    def _add_items(self, items: list[OrderItem], bound: dict[int, int], initial: bool) -> None:
        for item in items:
            if bound[item.pk] > 0:
                self.fields[f"item-{item.pk}"] = _item_field(
                    f"{item.name} ({mxn(item.unit_price)})",
                    bound[item.pk],
                    bound[item.pk] if initial else 0,
                )

    def quantities(self) -> dict[int, int]:
        return {
            int(name.removeprefix("item-")): value
            for name, value in self.cleaned_data.items()
            if name.startswith("item-") and value
        }


class ShipForm(_ItemsForm):
    """The items shipped now (prefilled: everything left to ship)."""

    def __init__(self, *args: Any, order: Order, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        items = list(order.items.all())
        self._add_items(items, {item.pk: item.left_to_ship for item in items}, initial=True)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and not any(v for k, v in data.items() if k.startswith("item-")):
            raise forms.ValidationError(_("Choose at least one item to ship."))
        return data


class RefundForm(_ItemsForm):
    """An amount (prefilled: all that is left to refund), a reason, and the items that come
    back to stock (none unless chosen)."""

    amount = forms.DecimalField(
        label=_("Amount"),
        max_digits=12,
        decimal_places=2,
        min_value=Decimal("0.01"),
        localize=False,
        error_messages={"min_value": _("The amount must be greater than zero.")},
    )
    reason = forms.CharField(label=_("Reason"), max_length=200, required=False)

    def __init__(self, *args: Any, order: Order, maximum: Decimal, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.maximum = maximum
        self.fields["amount"].initial = maximum
        self.fields["amount"].help_text = _("At most %(maximum)s MXN.") % {"maximum": mxn(maximum)}
        items = list(order.items.all())
        self._add_items(
            items, {item.pk: item.quantity - item.quantity_restocked for item in items}, False
        )

    def clean_amount(self) -> Decimal:
        amount: Decimal = self.cleaned_data["amount"]
        if amount > self.maximum:
            raise forms.ValidationError(
                _("The amount cannot be more than %(maximum)s.") % {"maximum": mxn(self.maximum)}
            )
        return amount
