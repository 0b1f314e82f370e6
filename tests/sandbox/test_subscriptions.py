"""PUT /subscriptions/{id}: only `inactive` is allowed (CL2204), an inactive subscription
stays inactive, an unknown one is BR1302; and the sandbox-only POST /_sandbox/subscriptions."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from tests.helpers.provider import Api, assert_error, decimal_json

# The seeded subscriptions: SEED_SUBSCRIPTIONS in sandbox/provider/subscriptions.py (that
# module needs the sandbox's Django settings, so its ids are repeated here).
SEEDED = {
    "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b": ("price_cafe_mensual", "maria@example.com"),
    "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d": ("price_caja_artesanal", "jorge@example.com"),
    "8b3c4d5e-6f7a-4b9c-8d1e-2f3a4b5c6d7e": ("price_cafe_mensual", "lucia@example.com"),
}
SUBSCRIPTION_ID = next(iter(SEEDED))
SUBSCRIPTION_FIELDS = {
    "id",
    "price_id",
    "customer",
    "status",
    "additional_information",
    "invoices",
    "start_date",
    "end_date",
    "created_at",
    "updated_at",
    "payment_method",
}
INVOICE_FIELDS = {
    "id",
    "subscription_id",
    "payment_request_id",
    "payment_request_code",
    "amount",
    "currency",
    "due_date",
    "status",
    "payment",
    "payment_method",
    "additional_information",
    "period",
    "paid_at",
}
INFO_KEYS = {"add_info_1", "add_info_2", "add_info_3"}
NEW_CUSTOMER = {
    "first_name": "Ana",
    "last_name": "Pérez",
    "email": "ana@example.com",
    "phone": "+525500000000",
}


def cancel(api: Api, subscription_id: str, body: Any = None, **kwargs: Any) -> Any:
    return api.put(
        f"/subscriptions/{subscription_id}",
        {"status": "inactive"} if body is None else body,
        **kwargs,
    )


def timestamp(value: Any) -> datetime:
    assert isinstance(value, str), value
    return datetime.fromisoformat(value)


def assert_subscription(subscription: dict[str, Any], *, status: str) -> None:
    """The whole Subscription object of the spec, with its invoices."""
    assert set(subscription) == SUBSCRIPTION_FIELDS, subscription
    assert uuid.UUID(subscription["id"]).version == 4
    assert isinstance(subscription["price_id"], str) and subscription["price_id"]
    customer = subscription["customer"]
    assert set(customer) == {"first_name", "last_name", "email", "phone"}, customer
    assert all(isinstance(value, str) for value in customer.values())
    assert subscription["status"] == status
    info = subscription["additional_information"]
    assert set(info) == INFO_KEYS and all(isinstance(v, str) for v in info.values()), info
    for field in ("start_date", "end_date"):
        assert subscription[field] is None or timestamp(subscription[field])
    timestamp(subscription["created_at"])
    timestamp(subscription["updated_at"])
    assert subscription["payment_method"] == {"type": "payment_link"}
    assert subscription["invoices"], "a subscription with no invoice"
    for invoice in subscription["invoices"]:
        assert set(invoice) == INVOICE_FIELDS, invoice
        for field in ("id", "payment_request_id", "payment_request_code"):
            assert isinstance(invoice[field], str) and invoice[field], (field, invoice)
        assert invoice["subscription_id"] == subscription["id"]
        assert isinstance(invoice["amount"], Decimal), invoice
        assert invoice["currency"] is None or isinstance(invoice["currency"], str)
        timestamp(invoice["due_date"])
        assert invoice["status"] == "scheduled"
        assert invoice["payment"] is None or isinstance(invoice["payment"], dict)
        assert invoice["payment_method"] == {"type": "payment_link"}
        assert set(invoice["additional_information"]) == INFO_KEYS
        assert invoice["paid_at"] is None or timestamp(invoice["paid_at"])


def assert_still_active(api: Api, subscription_id: str) -> None:
    """The subscription has no GET: move the sandbox clock an hour on and cancel it with the
    secret token; it must end only now, so nothing before had ended it."""
    before = timestamp(api.get("/_sandbox/clock").json()["now"])
    advanced = api.post("/_sandbox/clock", {"advance_seconds": 3600})
    assert advanced.status_code == 200, advanced.text
    response = cancel(api, subscription_id)
    assert response.status_code == 201, response.text
    ended = timestamp(response.json()["end_date"])
    assert (ended - before).total_seconds() >= 3600, "the subscription had already ended"


@pytest.mark.parametrize("subscription_id", list(SEEDED))
def test_a_seeded_subscription_is_cancelled(api: Api, subscription_id: str) -> None:
    """PUT {"status": "inactive"} on a seeded subscription answers 201 with it, inactive."""
    # Given a seeded active subscription
    # When it is cancelled
    response = cancel(api, subscription_id)

    # Then the whole subscription comes back, inactive, with its scheduled invoices
    assert response.status_code == 201, response.text
    subscription = decimal_json(response)
    assert_subscription(subscription, status="inactive")
    price_id, email = SEEDED[subscription_id]
    assert subscription["id"] == subscription_id
    assert subscription["price_id"] == price_id
    assert subscription["customer"]["email"] == email
    assert subscription["end_date"] is not None
    assert timestamp(subscription["updated_at"]) >= timestamp(subscription["created_at"])


def test_cancelling_an_inactive_subscription_keeps_it_inactive(api: Api) -> None:
    """A second cancel answers 201 with the subscription still inactive and unchanged."""
    # Given a subscription already cancelled
    first = cancel(api, SUBSCRIPTION_ID)
    assert first.status_code == 201, first.text

    # When it is cancelled again
    again = cancel(api, SUBSCRIPTION_ID)

    # Then it is still inactive, ended when it was first cancelled
    assert again.status_code == 201, again.text
    assert again.json()["status"] == "inactive"
    assert again.json()["end_date"] == first.json()["end_date"]
    assert decimal_json(again) == decimal_json(first)


BAD_STATUS_BODIES: dict[str, Any] = {
    "active": {"status": "active"},
    "cancelled": {"status": "cancelled"},
    "upper_case": {"status": "INACTIVE"},
    "capitalised": {"status": "Inactive"},
    "padded": {"status": " inactive "},
    "empty": {"status": ""},
    "null": {"status": None},
    "number": {"status": 0},
    "boolean": {"status": False},
    "list": {"status": ["inactive"]},
    "object": {"status": {"value": "inactive"}},
    "missing": {},
    "other_field": {"state": "inactive"},
    "body_list": [{"status": "inactive"}],
    "body_string": "inactive",
    "body_number": 1,
}


@pytest.mark.parametrize("body", list(BAD_STATUS_BODIES.values()), ids=list(BAD_STATUS_BODIES))
def test_a_status_other_than_inactive_is_cl2204(api: Api, body: Any) -> None:
    """Any body but {"status": "inactive"} is 400 CL2204 and leaves the subscription active."""
    # Given a seeded active subscription
    # When it is sent another status, no status, or not an object
    response = cancel(api, SUBSCRIPTION_ID, body)

    # Then the spec's error answers and the subscription is unchanged
    error = assert_error(response, 400, "CL2204")
    assert error["message"] == "Allowed Status is : inactive"
    assert_still_active(api, SUBSCRIPTION_ID)


def test_an_inactive_subscription_cannot_be_activated(api: Api) -> None:
    """{"status": "active"} on an inactive subscription is CL2204; it stays inactive."""
    # Given a cancelled subscription
    first = cancel(api, SUBSCRIPTION_ID)
    assert first.status_code == 201, first.text

    # When it is asked to become active
    response = cancel(api, SUBSCRIPTION_ID, {"status": "active"})

    # Then it is refused and the subscription is the same inactive one
    assert_error(response, 400, "CL2204")
    again = cancel(api, SUBSCRIPTION_ID)
    assert again.json()["status"] == "inactive"
    assert again.json()["end_date"] == first.json()["end_date"]


@pytest.mark.parametrize("raw", ["{not json", '{"status": "inactive"', "null"])
def test_a_malformed_body_is_refused_and_changes_nothing(api: Api, raw: str) -> None:
    """A body that is not a JSON object gets a 400 error body and the subscription stays active."""
    # Given a seeded active subscription
    # When it is sent a body that is not a JSON object
    response = api.put(f"/subscriptions/{SUBSCRIPTION_ID}", raw=raw)

    # Then it is refused (as a bad status or as malformed JSON) and nothing changed
    assert response.status_code == 400, response.text
    assert response.json()["error_code"] in ("CL2204", "CL2100")
    assert_error(response, 400, response.json()["error_code"])
    assert_still_active(api, SUBSCRIPTION_ID)


@pytest.mark.parametrize(
    "subscription_id",
    [str(uuid.uuid4()), "not-a-uuid", "123", SUBSCRIPTION_ID.upper().replace("-", "")[:-1]],
    ids=["unknown_uuid", "not_uuid", "number", "truncated"],
)
def test_an_unknown_subscription_is_404_br1302(api: Api, subscription_id: str) -> None:
    """PUT on an id no subscription has is 404 BR1302 "Subscription object not found"."""
    # Given an id of no subscription
    # When it is cancelled
    response = cancel(api, subscription_id)

    # Then it is not found
    error = assert_error(response, 404, "BR1302")
    assert error["message"] == "Subscription object not found"


def test_a_subscription_created_in_the_sandbox_is_active_then_cancelled(api: Api) -> None:
    """POST /_sandbox/subscriptions creates an active subscription that PUT then cancels."""
    # Given a subscription created through the control endpoint
    created = api.post(
        "/_sandbox/subscriptions", {"price_id": "price_prueba", "customer": NEW_CUSTOMER}
    )
    assert created.status_code == 201, created.text
    subscription = decimal_json(created)
    assert_subscription(subscription, status="active")
    assert subscription["price_id"] == "price_prueba"
    assert subscription["customer"] == NEW_CUSTOMER
    assert subscription["end_date"] is None

    # When it is cancelled
    response = cancel(api, subscription["id"])

    # Then the same subscription comes back inactive
    assert response.status_code == 201, response.text
    cancelled = decimal_json(response)
    assert_subscription(cancelled, status="inactive")
    assert cancelled["id"] == subscription["id"]
    assert cancelled["invoices"] == subscription["invoices"]
    assert cancelled["created_at"] == subscription["created_at"]


def test_each_created_subscription_has_its_own_id(api: Api) -> None:
    """Two subscriptions created alike get different ids; cancelling one leaves the other."""
    # Given two subscriptions created with the same data
    body = {"price_id": "price_prueba", "customer": NEW_CUSTOMER}
    first, second = (api.post("/_sandbox/subscriptions", body).json() for _ in range(2))
    assert first["id"] != second["id"]

    # When the first is cancelled
    response = cancel(api, first["id"])

    # Then the second is still active
    assert response.status_code == 201, response.text
    assert_still_active(api, second["id"])


BAD_CREATE_BODIES: dict[str, Any] = {
    "missing_price_id": {"customer": NEW_CUSTOMER},
    "missing_customer": {"price_id": "price_prueba"},
    "price_id_number": {"price_id": 5, "customer": NEW_CUSTOMER},
    "price_id_empty": {"price_id": "", "customer": NEW_CUSTOMER},
    "customer_not_object": {"price_id": "price_prueba", "customer": "Ana"},
    "customer_email_invalid": {
        "price_id": "price_prueba",
        "customer": {**NEW_CUSTOMER, "email": "not-an-email"},
    },
    "customer_name_number": {
        "price_id": "price_prueba",
        "customer": {**NEW_CUSTOMER, "first_name": 1},
    },
    "amount_string": {"price_id": "price_prueba", "customer": NEW_CUSTOMER, "amount": "10.00"},
    "amount_negative": {"price_id": "price_prueba", "customer": NEW_CUSTOMER, "amount": -1},
    "invoices_string": {"price_id": "price_prueba", "customer": NEW_CUSTOMER, "invoices": "3"},
    "body_list": [{"price_id": "price_prueba", "customer": NEW_CUSTOMER}],
    "body_empty_object": {},
}


@pytest.mark.parametrize("body", list(BAD_CREATE_BODIES.values()), ids=list(BAD_CREATE_BODIES))
def test_an_invalid_sandbox_subscription_is_cl2100(api: Api, body: Any) -> None:
    """POST /_sandbox/subscriptions with an invalid body is 400 CL2100."""
    # Given a body missing a field or with one of the wrong type
    # When a subscription is created with it
    response = api.post("/_sandbox/subscriptions", body)

    # Then it is an invalid request
    assert_error(response, 400, "CL2100")


def test_a_malformed_sandbox_subscription_body_is_cl2100(api: Api) -> None:
    """POST /_sandbox/subscriptions with malformed JSON is 400 CL2100."""
    # Given a body that is not JSON
    # When a subscription is created with it
    response = api.post("/_sandbox/subscriptions", raw='{"price_id": ')

    # Then it is an invalid request
    assert_error(response, 400, "CL2100")


def test_a_subscription_can_be_read_by_id(api: Api) -> None:
    """GET /subscriptions/{id} (the sandbox's answer to "reading: not shown") returns it whole;
    unknown or malformed ids are 404 BR1302; the public key is refused."""
    subscription_id = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"
    response = api.get(f"/subscriptions/{subscription_id}")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == subscription_id and body["status"] == "active"
    assert [i["status"] for i in body["invoices"]] == ["scheduled"] * 3
    assert_error(api.get("/subscriptions/7a2b3c4d-0000-4a8b-9c0d-1e2f3a4b5c6d"), 404, "BR1302")
    assert_error(api.get("/subscriptions/nope"), 404, "BR1302")
    assert_error(api.get(f"/subscriptions/{subscription_id}", auth="public"), 401, "CL1501")
