"""The provider's notification body, `{id, origin, event_type}`, checked strictly and cheaply.

Hand-written rather than a serializer: the receiver must stay close to a bare view's speed
(see bench/), and the body has three fields.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

ORIGIN = "payments-api"
EVENT_TYPES = ("INSERT", "UPDATE")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True, slots=True)
class Notification:
    payment_id: str  # lower-case canonical UUID
    event_type: str


class InvalidNotification(ValueError):
    def __init__(self, code: str, message: str, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = fields or {}


def parse_notification(body: bytes) -> Notification:
    """The notification in `body`, or `InvalidNotification` saying what is wrong with it."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise InvalidNotification("invalid_json", "The body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise InvalidNotification(
            "invalid_body", "The body must be a JSON object with id, origin and event_type."
        )
    errors: dict[str, str] = {}
    payment_id = data.get("id")
    if not isinstance(payment_id, str) or not _UUID.fullmatch(payment_id):
        errors["id"] = "Must be the payment's id, a UUID."
    if data.get("origin") != ORIGIN:
        errors["origin"] = f"Must be '{ORIGIN}'."
    event_type = data.get("event_type")
    if event_type not in EVENT_TYPES:
        errors["event_type"] = "Must be INSERT or UPDATE."
    if errors:
        raise InvalidNotification(
            "invalid_notification",
            "The notification is not valid: " + " ".join(f"{k}: {v}" for k, v in errors.items()),
            errors,
        )
    return Notification(payment_id=str(payment_id).lower(), event_type=str(event_type))
