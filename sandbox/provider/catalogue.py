"""The sandbox's payment methods catalogue (GET /payment_methods) and how its rules read.

The card rules used at tokenization are read from these very `validations`, so the catalogue
the shop displays and the checks the provider makes cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

CARD_TYPES = ("credit_card", "debit_card")


def _card_validations(
    *,
    pattern: str,
    exclusion: str | None,
    installments: str,
    length: int,
    cvv_length: int,
    cvv_location: str,
    min_amount: str,
    max_amount: str,
) -> list[dict[str, Any]]:
    return [
        {
            "name": "bin",
            "metadata": {
                "pattern": pattern,
                "exclusion_pattern": exclusion,
                "installment_pattern": installments,
            },
        },
        {"name": "card_number", "metadata": {"algorithm": "luhn", "length": length}},
        {
            "name": "cvv",
            "metadata": {"card_location": cvv_location, "length": cvv_length, "type": "mandatory"},
        },
        {
            "name": "accepted_amount",
            "metadata": {"min": Decimal(min_amount), "max": Decimal(max_amount)},
        },
    ]


# Seed data of the catalogue for Mexico (country MX).
CATALOGUE: list[dict[str, Any]] = [
    {
        "id": "visa",
        "name": "Visa",
        "type": "credit_card",
        "logo_file": "visa.svg",
        "validations": _card_validations(
            pattern=r"^4",
            exclusion=r"^(491182|491731)",
            installments=r"^(4152|4189|4213|4555|4766|4915)",
            length=16,
            cvv_length=3,
            cvv_location="back",
            min_amount="10.00",
            max_amount="300000.00",
        ),
    },
    {
        "id": "master",
        "name": "Mastercard",
        "type": "credit_card",
        "logo_file": "master.svg",
        "validations": _card_validations(
            pattern=r"^(5[1-5]|2(2[2-9]|[3-6][0-9]|7[01]|720))",
            exclusion=None,
            installments=r"^(5204|5256|5470|5491)",
            length=16,
            cvv_length=3,
            cvv_location="back",
            min_amount="10.00",
            max_amount="300000.00",
        ),
    },
    {
        "id": "amex",
        "name": "American Express",
        "type": "credit_card",
        "logo_file": "amex.svg",
        "validations": _card_validations(
            pattern=r"^3[47]",
            exclusion=None,
            installments=r"^(3767|3778)",
            length=15,
            cvv_length=4,
            cvv_location="front",
            min_amount="10.00",
            max_amount="150000.00",
        ),
    },
    {
        "id": "cashpay",
        "name": "Pago en efectivo",
        "type": "ticket",
        "logo_file": "cashpay.svg",
        "validations": [
            {
                "name": "accepted_amount",
                "metadata": {"min": Decimal("10.00"), "max": Decimal("10000.00")},
            },
        ],
    },
]


@dataclass(frozen=True)
class CardRules:
    """The card rules of one catalogue entry, read from its `validations`."""

    method_id: str
    pattern: str
    exclusion_pattern: str | None
    installment_pattern: str | None
    length: int
    cvv_length: int
    cvv_mandatory: bool
    cvv_location: str

    def matches(self, number: str) -> bool:
        return re.match(self.pattern, number) is not None

    def excluded(self, number: str) -> bool:
        return bool(self.exclusion_pattern) and re.match(self.exclusion_pattern, number) is not None

    def installments_eligible(self, number: str) -> bool:
        return (
            bool(self.installment_pattern)
            and re.match(self.installment_pattern, number) is not None
        )


def validation(validations: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for item in validations:
        if item.get("name") == name:
            return dict(item.get("metadata") or {})
    return None


def card_rules(method_id: str, validations: list[dict[str, Any]]) -> CardRules | None:
    """The card rules of an entry, or None for an entry that is not a card (cash)."""
    bin_rule = validation(validations, "bin")
    number_rule = validation(validations, "card_number")
    cvv_rule = validation(validations, "cvv") or {}
    if bin_rule is None or number_rule is None:
        return None
    return CardRules(
        method_id=method_id,
        pattern=bin_rule["pattern"],
        exclusion_pattern=bin_rule.get("exclusion_pattern"),
        installment_pattern=bin_rule.get("installment_pattern"),
        length=int(number_rule["length"]),
        cvv_length=int(cvv_rule.get("length", 3)),
        cvv_mandatory=cvv_rule.get("type", "mandatory") == "mandatory",
        cvv_location=cvv_rule.get("card_location", "back"),
    )


def accepted_amount(validations: list[dict[str, Any]]) -> tuple[Decimal, Decimal] | None:
    rule = validation(validations, "accepted_amount")
    if rule is None:
        return None
    return Decimal(str(rule["min"])), Decimal(str(rule["max"]))
