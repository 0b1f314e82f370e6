"""How a client reading the shop's OpenAPI document reaches an order's operations (a
drf-spectacular postprocessing hook): the links between them, and how it comes by what they ask
for (the browser session that placed the order, Django's CSRF pair).

An order is placed through the shop's pages, as a shopper places it (the cart, then the
checkout form), never through this API: so the session that owns it, and the order's reference,
come from there. From a payment attempt, its links lead to its outcome (GET or POST, the
attempt's `payment_id`) and to the same attempt sent again (a lost answer: never a second
payment); from an outcome, to another attempt (after a decline)."""

from __future__ import annotations

from typing import Any

# The checkout's pages (checkout/urls.py) that give a session its order.
PLACING_AN_ORDER = (
    "the shop's pages, as a shopper's browser does: `GET /productos/{slug}/` (Django's CSRF "
    "cookie), `POST /carrito/agregar/{slug}/` (`quantity`, with the CSRF token), then `POST "
    "/checkout/` (the customer's details), answered `302` to `/pedidos/{reference}/pagar/`: "
    "the order's reference"
)
SECURITY = {
    "browserSession": (
        "The session cookie of the browser that placed the order, through "
        f"{PLACING_AN_ORDER}. An order's operations answer `404` to any other session, and "
        "to a request without one."
    ),
    "csrfCookie": (
        "Django's CSRF cookie: the one the shop's pages set, or any 32 letters and digits a "
        "client chooses for itself; its value goes again in the `X-CSRFToken` header."
    ),
    "csrfHeader": "The CSRF cookie's value (`csrftoken`), for every unsafe method.",
}

SAME_ORDER = {"path.reference": "$request.path.reference"}
OUTCOME_OF_THE_ATTEMPT = {**SAME_ORDER, "query.payment_id": "$response.body#/payment_id"}
FROM_AN_ATTEMPT = {
    "outcome": {
        "operationId": "payment_status",
        "parameters": OUTCOME_OF_THE_ATTEMPT,
        "description": "Where this attempt stands, asked until its `result` is known (an "
        "attempt still `processing` has no `payment_id` yet: the order's latest attempt).",
    },
    "outcomeByPost": {
        "operationId": "payment_status_post",
        "parameters": OUTCOME_OF_THE_ATTEMPT,
        "description": "The same, CSRF-protected.",
    },
    "sameAttemptAgain": {
        "operationId": "pay_attempt",
        "parameters": SAME_ORDER,
        "requestBody": {
            "card_token": "$request.body#/card_token",
            "attempt_id": "$request.body#/attempt_id",
        },
        "description": "The same attempt sent again, as after an answer lost on the way: "
        "answered as it stands, never paid twice.",
    },
}
FROM_AN_OUTCOME = {
    "anotherAttempt": {
        "operationId": "pay_attempt",
        "parameters": SAME_ORDER,
        "description": "Another attempt for the same order (a new `attempt_id`), after a "
        "`rejected` or `failed` outcome.",
    },
}
LINKS = {
    ("pay_attempt", "202"): FROM_AN_ATTEMPT,
    ("pay_attempt", "200"): FROM_AN_ATTEMPT,
    ("payment_status", "200"): FROM_AN_OUTCOME,
    ("payment_status_post", "200"): FROM_AN_OUTCOME,
}


def link_order_operations(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Add the links between an order's operations, and say how a client gets the session and
    the CSRF pair they ask for."""
    schemes = result.get("components", {}).get("securitySchemes", {})
    for name, description in SECURITY.items():
        if name in schemes:
            schemes[name]["description"] = description
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for status, response in operation.get("responses", {}).items():
                links = LINKS.get((operation.get("operationId"), status))
                if links is not None:
                    response["links"] = links
    return result
