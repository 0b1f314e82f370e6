"""The receiver's part of the shop's OpenAPI document (a drf-spectacular postprocessing hook).

The receiver is a plain Django view, kept off DRF for its speed targets (see the module's
docstring in `webhooks.views`), so its description is written here, beside it, and joins the
generated document; its answers use the shop's one error shape (`#/components/schemas/Error`).
"""

from __future__ import annotations

from typing import Any

from webhooks.notifications import EVENT_TYPES, ORIGIN

UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def _error(description: str, **extra: Any) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        **extra,
    }


NOTIFICATION = {
    "type": "object",
    "required": ["id", "origin", "event_type"],
    "properties": {
        "id": {
            "type": "string",
            "pattern": UUID_PATTERN,
            "description": "The payment's id at the provider (a UUID, any case).",
        },
        "origin": {"type": "string", "enum": [ORIGIN]},
        "event_type": {"type": "string", "enum": sorted(EVENT_TYPES)},
    },
}
RECEIVED = {
    "type": "object",
    "required": ["status", "event"],
    "properties": {
        "status": {"type": "string", "enum": ["received"]},
        "event": {"type": "integer", "minimum": 1, "description": "The stored row's id."},
    },
}
RECEIVER = {
    "post": {
        "operationId": "payment_notification",
        "summary": "A notification about one payment",
        "description": (
            "Stores the notification (one row) and queues its processing once stored; the "
            "payment itself is then read from the provider by a worker, never from this body "
            "and never during this request. Not CSRF-protected: the secret in the address "
            "authenticates the sender. Duplicates are stored like any other notification; "
            "processing them is idempotent."
        ),
        "tags": ["webhooks"],
        "parameters": [
            {
                "name": "token",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "pattern": "^[^/]+$"},
                "description": "The shop's secret webhook token (`PAYMENTS_WEBHOOK_TOKEN`), "
                "compared in constant time; any other value answers 404 whatever the method.",
            }
        ],
        "requestBody": {
            "required": True,
            "description": "At most `WEBHOOKS_MAX_BODY_BYTES` bytes (default 4096), JSON.",
            "content": {"application/json": {"schema": NOTIFICATION}},
        },
        "responses": {
            "200": {
                "description": "Stored.",
                "content": {"application/json": {"schema": RECEIVED}},
            },
            "400": _error(
                "`invalid_json`, `invalid_body` (not an object, or a Content-Length that is no "
                "number) or `invalid_notification` (`fields` says why for each member)."
            ),
            "404": _error("Wrong token (`not_found`)."),
            "405": _error("Any method but POST (`method_not_allowed`), once the token is right."),
            "413": _error("Over `WEBHOOKS_MAX_BODY_BYTES` (`too_large`)."),
            "503": _error("The row could not be stored (`unavailable`); sent again later."),
        },
    }
}


def add_receiver(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Add the receiver's path to the generated document."""
    result.setdefault("paths", {})["/webhooks/payments/{token}/"] = RECEIVER
    return result
