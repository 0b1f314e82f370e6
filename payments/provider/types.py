"""Typed results of the provider client: Decimal amounts, timezone-aware datetimes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.utils.dateparse import parse_datetime

CENT = Decimal("0.01")


def money(value: Any) -> Decimal:
    """An exact two-place Decimal from a JSON number parsed as Decimal (or int, or str)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not an amount: {value!r}")
    if isinstance(value, float):
        raise ValueError("amounts must be parsed as Decimal, never float")
    return Decimal(str(value)).quantize(CENT)


def moment(value: Any) -> datetime | None:
    if not value:
        return None
    parsed = parse_datetime(str(value))
    if parsed is None or parsed.tzinfo is None:
        raise ValueError(f"not a timezone-aware ISO 8601 timestamp: {value!r}")
    return parsed


@dataclass(frozen=True)
class StatusDetail:
    code: str
    message: str


@dataclass(frozen=True)
class Card:
    bin: str
    last_digits: str
    issuer: str = ""
    name: str = ""
    country: str = ""
    exp_month: str = ""
    exp_year: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Card | None:
        if not data:
            return None
        return cls(**{k: str(data.get(k) or "") for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class ProviderRefund:
    id: str
    payment_id: str
    amount: Decimal
    status: str
    created_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProviderRefund:
        return cls(
            id=str(data["id"]),
            payment_id=str(data.get("payment_id", "")),
            amount=money(data["amount"]),
            status=str(data.get("status", "")),
            created_at=moment(data.get("created_at")),
        )


@dataclass(frozen=True)
class ProviderPayment:
    id: str
    status: str
    status_detail: StatusDetail
    capture_method: str
    amount: Decimal
    paid_amount: Decimal
    captured_amount: Decimal
    amount_refunded: Decimal
    currency: str
    external_reference: str
    description: str
    payment_method_id: str
    card: Card | None
    three_ds_url: str
    version: int
    created_at: datetime | None
    approved_at: datetime | None
    refunds: tuple[ProviderRefund, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)
    installments: int = 1
    installment_amount: Decimal | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProviderPayment:
        detail = data.get("status_detail") or {}
        method = data.get("payment_method") or {}
        action = data.get("pending_action") or {}
        return cls(
            id=str(data["id"]),
            status=str(data["status"]),
            status_detail=StatusDetail(str(detail.get("code", "")), str(detail.get("message", ""))),
            capture_method=str(data.get("capture_method") or "automatic"),
            amount=money(data["amount"]),
            paid_amount=money(data.get("paid_amount") or 0),
            captured_amount=money(data.get("captured_amount") or 0),
            amount_refunded=money(data.get("amount_refunded") or 0),
            currency=str(data.get("currency", "")),
            external_reference=str(data.get("external_reference") or ""),
            description=str(data.get("description") or ""),
            payment_method_id=str(method.get("id") or ""),
            card=Card.from_json(method.get("card")),
            three_ds_url=str(action.get("url") or "") if action.get("type") == "open_modal" else "",
            version=int(data.get("version") or 0),
            created_at=moment(data.get("created_at")),
            approved_at=moment(data.get("approved_at")),
            refunds=tuple(ProviderRefund.from_json(r) for r in data.get("refunds") or []),
            raw=data,
            installments=int(data.get("installments") or 1),
            installment_amount=(
                money(data["installment_amount"]) if data.get("installment_amount") else None
            ),
        )


@dataclass(frozen=True)
class CardToken:
    id: str
    payment_method_id: str
    card: Card | None
    expires_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CardToken:
        return cls(
            id=str(data["id"]),
            payment_method_id=str(data.get("payment_method_id") or ""),
            card=Card.from_json(data.get("card")),
            expires_at=moment(data.get("expires_at")),
        )


@dataclass(frozen=True)
class PaymentMethodEntry:
    id: str
    name: str
    logo: str
    status: str
    type: str
    validations: dict[str, dict[str, Any]]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PaymentMethodEntry:
        return cls(
            id=str(data["id"]),
            name=str(data.get("name") or data["id"]),
            logo=str(data.get("logo") or ""),
            status=str(data.get("status") or ""),
            type=str(data.get("type") or ""),
            validations={
                str(v.get("name")): dict(v.get("metadata") or {})
                for v in data.get("validations") or []
            },
        )

    @property
    def is_card(self) -> bool:
        return self.type in ("credit_card", "debit_card")

    @property
    def is_active(self) -> bool:
        return self.status == "active"

    @property
    def accepted_amount(self) -> tuple[Decimal, Decimal] | None:
        rule = self.validations.get("accepted_amount")
        if not rule:
            return None
        return money(rule["min"]), money(rule["max"])

    def accepts(self, amount: Decimal) -> bool:
        bounds = self.accepted_amount
        return bounds is None or bounds[0] <= amount <= bounds[1]

    @property
    def installment_pattern(self) -> str:
        """The pattern of the BINs that may pay this method in interest-free installments
        ('' when none may)."""
        return str(self.validations.get("bin", {}).get("installment_pattern") or "")

    def takes_bin(self, bin_: str) -> bool:
        """Whether a card of this BIN is of this method (its `bin` pattern, not excluded)."""
        rule = self.validations.get("bin") or {}
        pattern, exclusion = rule.get("pattern"), rule.get("exclusion_pattern")
        return bool(
            pattern
            and _matches(str(pattern), bin_)
            and not (exclusion and _matches(str(exclusion), bin_))
        )

    def installments_for_bin(self, bin_: str) -> bool:
        """Whether a card of this BIN may pay this method in interest-free installments."""
        pattern = self.installment_pattern
        return bool(pattern) and self.takes_bin(bin_) and _matches(pattern, bin_)


def _matches(pattern: str, text: str) -> bool:
    """The provider's patterns are regular expressions anchored at the start of the number; one
    that does not compile matches nothing."""
    try:
        return re.match(pattern, text) is not None
    except re.error:
        return False


@dataclass(frozen=True)
class ProviderSubscription:
    id: str
    price_id: str
    status: str
    customer: dict[str, Any]
    invoices: tuple[dict[str, Any], ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProviderSubscription:
        return cls(
            id=str(data["id"]),
            price_id=str(data.get("price_id") or ""),
            status=str(data.get("status") or ""),
            customer=dict(data.get("customer") or {}),
            invoices=tuple(dict(i) for i in data.get("invoices") or []),
            raw=data,
        )
