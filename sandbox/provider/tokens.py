"""POST /card_tokens: card data checked against the catalogue's own rules, then forgotten.

Only what a real provider keeps survives the request: BIN, last digits, expiry, holder name,
and the scenario a test card selects. The number and CVV are never stored or logged.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sandbox.provider import clock
from sandbox.provider.cards import luhn_valid, normalize_number, scenario_for
from sandbox.provider.catalogue import CARD_TYPES, CardRules, card_rules
from sandbox.provider.errors import (
    INVALID_CARD,
    METHOD_NOT_ACCEPTED,
    TOKEN_ALREADY_USED,
    TOKEN_UNKNOWN_OR_EXPIRED,
    ApiError,
)
from sandbox.provider.models import CardToken, PaymentMethod

TOKEN_VALIDITY = timedelta(minutes=15)
ISSUERS = {
    "visa": "Banco Sandbox Visa",
    "master": "Banco Sandbox Mastercard",
    "amex": "American Express",
}


def invalid_card(*detail: str) -> ApiError:
    return ApiError(400, INVALID_CARD, "Invalid card data", detail)


def method_not_active(method_id: str) -> ApiError:
    return ApiError(
        400,
        METHOD_NOT_ACCEPTED,
        "Payment method not accepted",
        [f"the payment method '{method_id}' is not active"],
    )


def _rules_for(number: str, country: str) -> tuple[PaymentMethod, CardRules]:
    """The catalogue entry whose BIN pattern takes this number, or CL2290."""
    excluded = False
    for method in PaymentMethod.objects.filter(country=country, type__in=CARD_TYPES):
        rules = card_rules(method.id, method.validations)
        if rules is None or not rules.matches(number):
            continue
        if rules.excluded(number):
            excluded = True
            continue
        if method.status != "active":
            raise method_not_active(method.id)
        return method, rules
    reason = (
        "this card's BIN is excluded"
        if excluded
        else "no accepted payment method matches this card"
    )
    raise ApiError(400, METHOD_NOT_ACCEPTED, "Payment method not accepted", [reason])


def _check_expiry(exp_month: str, exp_year: str) -> tuple[str, str, list[str]]:
    problems: list[str] = []
    if not (exp_month.isdigit() and 1 <= int(exp_month) <= 12):
        problems.append("card.exp_month: must be a month from 01 to 12.")
    if not (exp_year.isdigit() and len(exp_year) in (2, 4)):
        problems.append("card.exp_year: must be a year of 2 or 4 digits.")
    if problems:
        return exp_month, exp_year, problems
    month = f"{int(exp_month):02d}"
    year = exp_year if len(exp_year) == 4 else f"20{exp_year}"
    today = clock.now()
    if (int(year), int(month)) < (today.year, today.month):
        problems.append("card.exp_month: the card has expired.")
    elif int(year) > today.year + 20:
        problems.append("card.exp_year: is too far in the future.")
    return month, year, problems


def card_token_create(*, card: dict[str, Any], country: str = "MX") -> CardToken:
    number = normalize_number(card["number"])
    if not number.isdigit() or not 12 <= len(number) <= 19:
        raise invalid_card("card.number: must be 12 to 19 digits.")
    if not luhn_valid(number):
        raise invalid_card("card.number: fails the Luhn check.")
    method, rules = _rules_for(number, country)
    problems: list[str] = []
    if len(number) != rules.length:
        problems.append(f"card.number: {method.name} card numbers have {rules.length} digits.")
    cvv = card.get("cvv", "")
    if cvv or rules.cvv_mandatory:
        if not (cvv.isdigit() and len(cvv) == rules.cvv_length):
            problems.append(
                f"card.cvv: must be the {rules.cvv_length}-digit code on the "
                f"{rules.cvv_location} of the {method.name} card."
            )
    exp_month, exp_year, expiry_problems = _check_expiry(card["exp_month"], card["exp_year"])
    problems += expiry_problems
    holder_name = card["holder_name"].strip()
    if not holder_name:
        problems.append("card.holder_name: must not be empty.")
    if problems:
        raise invalid_card(*problems)
    now = clock.now()
    return CardToken.objects.create(
        method=method,
        bin=number[:6],
        last_digits=number[-4:],
        exp_month=exp_month,
        exp_year=exp_year,
        holder_name=holder_name,
        issuer=ISSUERS.get(method.id, "Banco Sandbox"),
        country=country,
        installments_eligible=rules.installments_eligible(number),
        scenario=scenario_for(number),
        created_at=now,
        expires_at=now + TOKEN_VALIDITY,
    )


def card_token_claim(*, token_id: str) -> CardToken:
    """Lock a usable token for a payment (caller's transaction), or explain why it is not."""
    try:
        token_uuid = uuid.UUID(token_id)
    except ValueError:
        token_uuid = None
    token = (
        CardToken.objects.select_for_update().select_related("method").filter(pk=token_uuid).first()
        if token_uuid
        else None
    )
    if token is None:
        raise ApiError(
            400, TOKEN_UNKNOWN_OR_EXPIRED, "Card token unknown or expired", ["unknown card token"]
        )
    if token.used_at is not None:
        raise ApiError(
            400, TOKEN_ALREADY_USED, "Card token already used", ["a card token pays once"]
        )
    if token.expires_at <= clock.now():
        raise ApiError(
            400,
            TOKEN_UNKNOWN_OR_EXPIRED,
            "Card token unknown or expired",
            ["card tokens are valid for 15 minutes"],
        )
    return token
