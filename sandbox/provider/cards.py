"""Card number checks that need no database: digits, Luhn, and the test card scenarios."""

from __future__ import annotations

import re

from sandbox.provider.models import Scenario

_SEPARATORS = re.compile(r"[\s-]")

# DESIGN.md "Test cards": the number selects what the sandbox does with the payment.
TEST_CARD_SCENARIOS: dict[str, str] = {
    "4000000000003220": Scenario.THREE_DS,
    "4000000000000002": Scenario.DECLINE,
    "4000000000009995": Scenario.INSUFFICIENT_FUNDS,
    "4000000000000119": Scenario.PROVIDER_ERROR,
}


def normalize_number(raw: str) -> str:
    """Remove the spaces and dashes people type between digit groups."""
    return _SEPARATORS.sub("", raw)


def luhn_valid(number: str) -> bool:
    if not number.isdigit():
        return False
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = int(char)
        if index % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def scenario_for(number: str) -> str:
    return TEST_CARD_SCENARIOS.get(number, Scenario.APPROVE)
