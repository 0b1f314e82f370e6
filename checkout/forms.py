"""Forms of the storefront: cart changes and the customer details of the checkout."""

from __future__ import annotations

import re

from django import forms
from django.utils.translation import gettext_lazy as _

from checkout.cart import MAX_PER_LINE

MEXICAN_STATES = [
    "Aguascalientes",
    "Baja California",
    "Baja California Sur",
    "Campeche",
    "Chiapas",
    "Chihuahua",
    "Ciudad de México",
    "Coahuila",
    "Colima",
    "Durango",
    "Estado de México",
    "Guanajuato",
    "Guerrero",
    "Hidalgo",
    "Jalisco",
    "Michoacán",
    "Morelos",
    "Nayarit",
    "Nuevo León",
    "Oaxaca",
    "Puebla",
    "Querétaro",
    "Quintana Roo",
    "San Luis Potosí",
    "Sinaloa",
    "Sonora",
    "Tabasco",
    "Tamaulipas",
    "Tlaxcala",
    "Veracruz",
    "Yucatán",
    "Zacatecas",
]


class QuantityForm(forms.Form):
    """How many of a product (0 takes it out of the cart), up to the cart's limit per line."""

    quantity = forms.IntegerField(
        min_value=0,
        max_value=MAX_PER_LINE,
        initial=1,
        error_messages={
            "required": _("Choose how many you want."),
            "invalid": _("Choose how many you want, as a whole number."),
            "min_value": _("Choose how many you want, as a whole number."),
            "max_value": _("You can order at most %(limit_value)s of each product."),
        },
    )

    def first_error(self) -> str:
        return str(self.errors["quantity"][0])


class CheckoutForm(forms.Form):
    first_name = forms.CharField(
        label=_("First name"),
        max_length=100,
        widget=forms.TextInput(attrs={"autocomplete": "given-name"}),
    )
    last_name = forms.CharField(
        label=_("Last name"),
        max_length=100,
        widget=forms.TextInput(attrs={"autocomplete": "family-name"}),
    )
    email = forms.EmailField(
        label=_("Email"), max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    phone = forms.CharField(
        label=_("Phone"),
        max_length=20,
        help_text=_("10 digits, e.g. 55 1234 5678"),
        widget=forms.TextInput(attrs={"autocomplete": "tel", "inputmode": "tel"}),
    )
    street = forms.CharField(
        label=_("Street"),
        max_length=200,
        widget=forms.TextInput(attrs={"autocomplete": "address-line1"}),
    )
    number = forms.CharField(label=_("Number"), max_length=20)
    colony = forms.CharField(label=_("Colony"), max_length=120)
    city = forms.CharField(
        label=_("City"),
        max_length=120,
        widget=forms.TextInput(attrs={"autocomplete": "address-level2"}),
    )
    state = forms.ChoiceField(
        label=_("State"), choices=[("", "—")] + [(s, s) for s in MEXICAN_STATES]
    )
    postal_code = forms.CharField(
        label=_("Postal code"),
        max_length=5,
        error_messages={"max_length": _("A Mexican postal code has 5 digits.")},
        widget=forms.TextInput(attrs={"autocomplete": "postal-code", "inputmode": "numeric"}),
    )
    country = forms.ChoiceField(label=_("Country"), choices=[("MX", "México")], initial="MX")

    def clean_phone(self) -> str:
        digits = re.sub(r"[\s()+-]", "", self.cleaned_data["phone"])
        if digits.startswith("52") and len(digits) == 12:
            digits = digits[2:]
        if not (digits.isdigit() and len(digits) == 10):
            raise forms.ValidationError(_("Enter a 10-digit Mexican phone number."))
        return digits

    def clean_postal_code(self) -> str:
        code = self.cleaned_data["postal_code"].strip()
        if not (code.isdigit() and len(code) == 5):
            raise forms.ValidationError(_("A Mexican postal code has 5 digits."))
        return code

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        for name, value in list(data.items()):
            if isinstance(value, str):
                data[name] = value.strip()
        return data


class MyOrdersForm(forms.Form):
    """ "Mis pedidos": the address to mail the links of its orders to."""

    email = forms.EmailField(
        label=_("Email"),
        max_length=254,
        help_text=_("The address you gave with your order."),
        error_messages={
            "required": _("Write your email address."),
            "invalid": _("Write an email address such as ana@example.com."),
        },
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
