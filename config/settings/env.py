"""Small, typed readers for settings that come from the environment."""

from __future__ import annotations

import base64
import os
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_decimal(name: str, default: str) -> Decimal:
    raw = os.environ.get(name, "").strip() or default
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation as exc:
        raise ImproperlyConfigured(
            f"{name} must be an amount such as 1500.00, got {raw!r}"
        ) from exc
    if not value.is_finite() or value < 0:
        raise ImproperlyConfigured(f"{name} must be an amount of zero or more, got {raw!r}")
    return value.quantize(Decimal("0.01"))


def env_int_list(name: str, default: list[int], *, lowest: int, highest: int) -> list[int]:
    """Whole numbers separated by commas, each from `lowest` to `highest`, sorted, no repeats."""
    try:
        values = [int(item) for item in env_list(name, [str(v) for v in default])]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be whole numbers separated by commas") from exc
    if any(not lowest <= value <= highest for value in values):
        raise ImproperlyConfigured(f"{name}: each number must be from {lowest} to {highest}")
    return sorted(set(values))


def basic_access_token(public_key: str, secret_key: str) -> str:
    """The provider's `Basic` access token: base64 of `public_key:secret_key`."""
    return base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
