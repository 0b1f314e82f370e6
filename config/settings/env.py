"""Small, typed readers for settings that come from the environment, each documenting its
variable where it is read.

One read of each variable (the one in its topic file) says what the variable does (`doc=`) and
whether a shop in production sets it (`production=`: `Production.MUST_SET` when the production
settings refuse to start without it, `Production.SHOULD_SET` when a shop in production sets it
although the settings start without it; nothing when the default serves). Its default is the
reader's own argument, or, when that is not a plain value, `shown_default=` in words.
`python -m tools.settings_reference` reads these calls from the source and writes
docs/settings.md from them; the readers themselves only read. Variables read by the processes
rather than by the settings are in `READ_ELSEWHERE`.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class Production(StrEnum):
    """Whether a shop in production sets a variable (the `production=` of its documented read)."""

    MUST_SET = "must set"  # the production settings refuse to start without it
    SHOULD_SET = "should set"  # they start without it, but a shop in production sets it


def env_str(
    name: str,
    default: str = "",
    *,
    doc: str = "",
    production: Production | None = None,
    shown_default: str = "",
) -> str:
    return os.environ.get(name, default)


def env_bool(
    name: str,
    default: bool,
    *,
    doc: str = "",
    production: Production | None = None,
    shown_default: str = "",
) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(
    name: str,
    default: int,
    *,
    doc: str = "",
    production: Production | None = None,
    shown_default: str = "",
) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_list(
    name: str,
    default: list[str],
    *,
    doc: str = "",
    production: Production | None = None,
    shown_default: str = "",
) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_decimal(
    name: str,
    default: str,
    *,
    doc: str = "",
    production: Production | None = None,
    shown_default: str = "",
) -> Decimal:
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


def env_int_list(
    name: str,
    default: list[int],
    *,
    lowest: int,
    highest: int,
    doc: str = "",
    production: Production | None = None,
    shown_default: str = "",
) -> list[int]:
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


@dataclass(frozen=True)
class ReadElsewhere:
    """A variable the shop's processes read, not its settings (it is documented all the same)."""

    name: str
    shown_default: str
    doc: str
    production: Production | None = None


READ_ELSEWHERE = (
    ReadElsewhere(
        "DJANGO_SETTINGS_MODULE",
        "`config.settings.local`; gunicorn: `config.settings.production`",
        "Which settings every process loads (`manage.py`, the Celery workers and beat, "
        "gunicorn): `config.settings.production` in production, for every process.",
        production=Production.MUST_SET,
    ),
    ReadElsewhere(
        "FORWARDED_ALLOW_IPS",
        "`127.0.0.1`",
        "Gunicorn's own: the proxies whose forwarded headers it trusts.",
    ),
)
