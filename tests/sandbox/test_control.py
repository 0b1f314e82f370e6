"""The /_sandbox/ control endpoints: injected faults, the clock, reset, and their guards."""

from __future__ import annotations

import time

import pytest

from tests.helpers.provider import VISA, Api, assert_error, decimal_json


def test_a_fault_answers_its_status_the_given_number_of_times(api: Api) -> None:
    """Two injected 503s on GET /payment_methods, then normal answers again."""
    response = api.post(
        "/_sandbox/faults", {"path": "/payment_methods", "method": "GET", "status": 503, "times": 2}
    )
    assert response.status_code == 201
    assert response.json()["remaining"] == 2

    statuses = [api.get("/payment_methods").status_code for _ in range(3)]

    assert statuses == [503, 503, 200]


def test_a_server_fault_answers_the_internal_error_body(api: Api) -> None:
    """Without an error_code, a 5xx fault answers AI1899 with the spec's error body."""
    api.post("/_sandbox/faults", {"path": "/payment_methods", "status": 500, "times": 1})
    assert_error(api.get("/payment_methods"), 500, "AI1899")


def test_a_server_failure_while_tokenizing_is_ai1300(api: Api) -> None:
    """A server-side failure of POST /card_tokens answers AI1300 (the tokenization error code
    the SDK logs), while the same failure elsewhere stays AI1899."""
    api.post("/_sandbox/faults", {"path": "/card_tokens", "status": 500, "times": 1})
    api.post("/_sandbox/faults", {"path": "/payment_methods", "status": 500, "times": 1})

    tokenizing = api.post("/card_tokens", {"card": {}}, auth="public")
    listing = api.get("/payment_methods")

    assert_error(tokenizing, 500, "AI1300")
    assert_error(listing, 500, "AI1899")


def test_an_unexpected_error_while_tokenizing_is_ai1300() -> None:
    """The error handler, the 500 page and injected faults name one code for one path."""
    from sandbox.provider.errors import internal_error_code

    assert internal_error_code("/card_tokens") == "AI1300"
    assert internal_error_code("/card_tokens/") == "AI1300"
    assert internal_error_code("/payments") == "AI1899"
    assert internal_error_code("/payments/card_tokens-x") == "AI1899"


def test_a_fault_can_carry_its_own_error_code(api: Api) -> None:
    """A fault with error_code AI1300 on /card_tokens answers that code (SDK logging case)."""
    api.post("/_sandbox/faults", {"path": "/card_tokens", "status": 500, "error_code": "AI1300"})
    response = api.post("/card_tokens", {"card": {}}, auth="public")
    assert_error(response, 500, "AI1300")


def test_a_fault_applies_to_its_method_and_path_only(api: Api) -> None:
    """A fault on POST /payments leaves GET /payments/{id} and other paths alone."""
    payment = api.create_payment(VISA)
    api.post("/_sandbox/faults", {"path": "/payments", "method": "POST", "status": 502})

    assert api.get(f"/payments/{payment['id']}").status_code == 200
    assert api.get("/payment_methods").status_code == 200
    assert_error(api.create_payment_response(VISA), 502, "AI1899")


def test_a_path_fault_covers_the_paths_below_it(api: Api) -> None:
    """A fault on /payments also hits /payments/{id}, at segment boundaries only."""
    payment = api.create_payment(VISA)
    api.post("/_sandbox/faults", {"path": "/payments", "method": "GET", "status": 500})

    assert api.get(f"/payments/{payment['id']}").status_code == 500
    assert api.get("/payment_methods").status_code == 200  # /payment_methods is not below /payments


def test_latency_delays_the_answer(api: Api) -> None:
    """A latency-only fault delays the answer and then answers normally."""
    api.post("/_sandbox/faults", {"path": "/payment_methods", "latency_ms": 700, "times": 1})
    started = time.monotonic()
    response = api.get("/payment_methods")
    assert response.status_code == 200
    assert time.monotonic() - started >= 0.65


def test_a_fault_after_processing_keeps_the_work_done(api: Api) -> None:
    """after_processing: the payment is created, but the merchant gets a 502 (outcome unknown)."""
    api.post(
        "/_sandbox/faults",
        {
            "path": "/payments",
            "method": "POST",
            "status": 502,
            "after_processing": True,
            "times": 1,
        },
    )
    response = api.create_payment_response(VISA, external_reference="ORD-LOST1")

    assert_error(response, 502, "AI1899")
    found = decimal_json(api.get("/_sandbox/payments", params={"external_reference": "ORD-LOST1"}))
    assert [p["status"] for p in found] == ["approved"]


def test_faults_can_be_listed_and_cleared(api: Api) -> None:
    """GET lists faults with their hits; DELETE clears them all."""
    api.post("/_sandbox/faults", {"path": "/payment_methods", "status": 500})
    api.get("/payment_methods")
    assert api.get("/_sandbox/faults").json()[0]["hits"] == 1

    assert api.request("DELETE", "/_sandbox/faults").json() == {"deleted": 1}
    assert api.get("/payment_methods").status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"path": "payments", "status": 500},
        {"path": "/_sandbox/reset", "status": 500},
        {"path": "/payments", "status": 200},
        {"path": "/payments"},
        {"path": "/payments", "status": "500"},
        {"path": "/payments", "status": 500, "times": 0},
        {"path": "/payments", "status": 500, "method": "TRACE"},
    ],
)
def test_bad_fault_definitions_are_refused(api: Api, body: dict) -> None:
    """An invalid fault gets a 400 with the error body and is not stored."""
    assert_error(api.post("/_sandbox/faults", body), 400, "CL2100")
    assert api.get("/_sandbox/faults").json() == []


def test_the_clock_advances_and_reports_its_offset(api: Api) -> None:
    """Advancing the clock moves `now`; token and payment timestamps follow it."""
    before = api.get("/_sandbox/clock").json()
    assert before["offset_seconds"] == 0

    moved = api.post("/_sandbox/clock", {"advance_days": 2})
    assert moved.status_code == 200
    assert moved.json()["offset_seconds"] == 2 * 86400
    payment = api.create_payment(VISA)
    assert payment["created_at"][:10] == moved.json()["now"][:10]


@pytest.mark.parametrize(
    "body", [{}, {"advance_days": -1}, {"advance_seconds": "60"}, {"advance_days": 1.5}, []]
)
def test_bad_clock_moves_are_refused(api: Api, body: object) -> None:
    """The clock only moves forward, by whole seconds or days."""
    assert_error(api.post("/_sandbox/clock", body), 400, "CL2100")
    assert api.get("/_sandbox/clock").json()["offset_seconds"] == 0


def test_reset_forgets_everything_and_reseeds(api: Api) -> None:
    """Reset removes payments, faults, chaos and clock offset, and restores the catalogue."""
    api.create_payment(VISA)
    api.post("/_sandbox/clock", {"advance_days": 3})
    api.post("/_sandbox/webhooks/chaos", {"mode": "drop"})
    api.request("PATCH", "/_sandbox/payment_methods/visa", {"status": "deactive"})

    assert api.post("/_sandbox/reset").json() == {"reset": True}

    assert api.payments() == []
    assert api.get("/_sandbox/clock").json()["offset_seconds"] == 0
    assert api.get("/_sandbox/webhooks/chaos").json()["mode"] == "none"
    methods = {m["id"]: m["status"] for m in api.get("/payment_methods").json()}
    assert methods["visa"] == "active"


def test_unknown_paths_and_methods_answer_with_the_error_body(api: Api) -> None:
    """Unknown path: 404 BR1301; wrong method: 405; both with the spec's error body."""
    assert_error(api.get("/nowhere"), 404, "BR1301")
    assert_error(api.request("DELETE", "/payments"), 405, "CL2103")


def test_every_answer_carries_a_request_id(api: Api) -> None:
    """Each answer has an X-Request-Id the merchant can log."""
    first = api.get("/payment_methods").headers["X-Request-Id"]
    second = api.get("/payment_methods").headers["X-Request-Id"]
    assert first and second and first != second


def test_payments_are_listed_newest_first_from_an_offset(api: Api) -> None:
    """The payments list starts at `offset` (newest first); a bad offset is a 400 CL2100."""
    made = [api.create_payment(VISA, external_reference=f"ORD-PAGE{n}")["id"] for n in range(3)]

    everything = [p["id"] for p in api.get("/_sandbox/payments").json()]
    after_newest = [p["id"] for p in api.get("/_sandbox/payments", params={"offset": "1"}).json()]

    assert everything[:3] == made[::-1]
    assert after_newest == everything[1:]
    assert api.get("/_sandbox/payments", params={"offset": "999"}).json() == []
    assert_error(api.get("/_sandbox/payments", params={"offset": "-1"}), 400, "CL2100")
