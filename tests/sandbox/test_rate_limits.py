"""The sandbox's own rate limit (`/_sandbox/rate_limits`, `SANDBOX_RATE_LIMIT_PER_SECOND`): a
token bucket per API key and endpoint family, answering 429 CL1429 with Retry-After beyond it.

Limits here are slow (0.5 to 2 requests a second) so that a refill never lands between two
requests the test sends back to back."""

from __future__ import annotations

import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.helpers.provider import VISA, Api, assert_error
from tests.helpers.sandbox import run_sandbox

FAMILIES = {
    "card_tokens",
    "payments.create",
    "payments.read",
    "payments.update",
    "refunds",
    "payment_methods",
    "subscriptions",
}
UNSEEN = {"accepted": 0, "refused": 0, "busiest_second": 0}


def limit(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post("/_sandbox/rate_limits", body)
    assert response.status_code == 200, response.text
    return response.json()


def limits(api: Api) -> dict[str, Any]:
    response = api.get("/_sandbox/rate_limits")
    assert response.status_code == 200, response.text
    return response.json()


def assert_refused(response: requests.Response, rate: str, family: str) -> int:
    """A 429 CL1429 with a whole Retry-After (at least 1) that its detail repeats; the wait."""
    body = assert_error(response, 429, "CL1429")
    retry_after = int(response.headers["Retry-After"])
    assert retry_after >= 1
    assert body["message"] == "Too many requests"
    assert body["detail"] == [
        f"rate limit of {rate} requests per second for {family} exceeded;"
        f" retry after {retry_after} s"
    ]
    return retry_after


def payment_body(api: Api) -> dict[str, Any]:
    token = api.card_token(VISA)["id"]
    return {"amount": Decimal("250.00"), "currency": "MXN", "payment_method": {"token": token}}


def start_of_a_second() -> float:
    """Wait until just after a wall-clock second begins (the sandbox shares this machine's
    clock); that second."""
    time.sleep(1.02 - time.time() % 1)
    return float(int(time.time()))


def sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.time()))


def test_there_is_no_limit_by_default(api: Api) -> None:
    """Unconfigured, the sandbox answers every request, however many come at once."""
    assert limits(api) == {
        "per_second": None,
        "burst": None,
        "families": {},
        "bursts": {},
        "seen": dict.fromkeys(FAMILIES, UNSEEN),
    }
    payment = api.create_payment(VISA)

    statuses = {api.get(f"/payments/{payment['id']}").status_code for _ in range(40)}
    statuses |= {api.get("/payment_methods", auth="public").status_code for _ in range(40)}

    assert statuses == {200}


def test_a_family_limit_refuses_beyond_its_burst_and_creates_nothing(api: Api) -> None:
    """Two creates pass (the burst), the third gets 429 with Retry-After and the spec's error
    body, and no payment is made for it."""
    limit(api, {"families": {"payments.create": 0.5}, "burst": 2})
    bodies = [payment_body(api) for _ in range(3)]

    answers = [api.post("/payments", body) for body in bodies]

    assert [a.status_code for a in answers[:2]] == [201, 201]
    assert assert_refused(answers[2], "0.5", "payments.create") == 2
    assert {p["id"] for p in api.payments()} == {a.json()["id"] for a in answers[:2]}


def test_a_refused_request_is_accepted_once_its_retry_after_has_passed(api: Api) -> None:
    """Tokens come back: after Retry-After seconds the same request (same Idempotency-Key and
    card token) is processed for the first time, as the refusal stored nothing."""
    limit(api, {"families": {"payments.create": 1}, "burst": 1})
    api.create_payment(VISA)
    body, key = payment_body(api), {"Idempotency-Key": uuid.uuid4().hex}

    retry_after = assert_refused(api.post("/payments", body, headers=key), "1", "payments.create")
    time.sleep(retry_after)
    again = api.post("/payments", body, headers=key)

    assert again.status_code == 201, again.text
    assert "Idempotent-Replayed" not in again.headers
    assert len(api.payments()) == 2


def test_an_idempotent_replay_counts_like_any_request(api: Api) -> None:
    """Sending a create again with its Idempotency-Key is one more request against the limit."""
    limit(api, {"families": {"payments.create": 0.5}, "burst": 1})
    body, key = payment_body(api), {"Idempotency-Key": uuid.uuid4().hex}

    assert api.post("/payments", body, headers=key).status_code == 201
    assert_refused(api.post("/payments", body, headers=key), "0.5", "payments.create")


def test_other_families_and_other_keys_are_not_limited(api: Api) -> None:
    """The public key's card token bucket is empty; the secret key's is not, and the public
    key may still list payment methods."""
    limit(api, {"families": {"card_tokens": 0.5}, "burst": 1})
    card = {"card": {"number": VISA, "exp_month": "12", "exp_year": "2031", "cvv": "123"}}
    card["card"]["holder_name"] = "Ana Pérez"

    assert api.post("/card_tokens", card, auth="public").status_code == 201
    assert_refused(api.post("/card_tokens", card, auth="public"), "0.5", "card_tokens")

    assert api.post("/card_tokens", card, auth="secret").status_code == 201
    assert api.get("/payment_methods", auth="public").status_code == 200
    assert_refused(api.post("/card_tokens", card, auth="public"), "0.5", "card_tokens")


def test_a_family_limit_wins_over_the_limit_for_every_family(api: Api) -> None:
    """per_second covers every family; a family's own limit replaces it for that family."""
    shown = limit(api, {"per_second": 0.5, "families": {"payment_methods": 2}, "burst": 1})

    assert shown["families"] == {**dict.fromkeys(FAMILIES, 0.5), "payment_methods": 2.0}
    assert shown["bursts"] == dict.fromkeys(FAMILIES, 1.0)
    assert api.get("/payment_methods").status_code == 200
    assert_refused(api.get("/payment_methods"), "2", "payment_methods")
    assert api.get("/payments/unknown").status_code == 404  # the read went through
    assert_refused(api.get("/payments/unknown"), "0.5", "payments.read")


def test_control_pages_and_probes_are_never_limited(api: Api) -> None:
    """With every family limited, /_sandbox/, /sdk/, /static/ and /healthz still answer."""
    limit(api, {"per_second": 0.5, "burst": 1})

    for _ in range(5):
        assert api.get("/_sandbox/payments").status_code == 200
        assert api.get("/_sandbox/rate_limits").status_code == 200
        assert api.get("/healthz").status_code == 200
        assert api.get("/sdk/v1/checkout.js", auth=None).status_code == 200


def test_get_reports_what_was_accepted_and_refused(api: Api) -> None:
    """Five reads in one second: three accepted (the burst), two refused; two more in the next
    second are accepted, and the busiest second stays at three."""
    payment = api.create_payment(VISA)
    shown = limit(api, {"families": {"payments.read": 2}, "burst": 3})
    assert shown["seen"] == dict.fromkeys(FAMILIES, UNSEEN)  # counting starts at each POST

    second_started = start_of_a_second()
    first = [api.get(f"/payments/{payment['id']}").status_code for _ in range(5)]
    sleep_until(second_started + 1.6)  # the next second, the bucket full again
    second = [api.get(f"/payments/{payment['id']}").status_code for _ in range(2)]

    assert first == [200, 200, 200, 429, 429]
    assert second == [200, 200]
    report = limits(api)
    assert report["per_second"] is None
    assert report["burst"] == 3.0
    assert report["families"] == {"payments.read": 2.0}
    assert report["bursts"] == {"payments.read": 3.0}
    assert report["seen"]["payments.read"] == {"accepted": 5, "refused": 2, "busiest_second": 3}
    assert report["seen"]["payments.create"] == UNSEEN


def test_the_burst_defaults_to_one_seconds_worth(api: Api) -> None:
    """Without a burst, a key may send its rate's worth of requests at once (at least one)."""
    limit(api, {"families": {"payment_methods": 2, "payments.read": 0.5}})

    methods = [api.get("/payment_methods").status_code for _ in range(3)]
    reads = [api.get("/payments/unknown").status_code for _ in range(2)]

    assert methods == [200, 200, 429]
    assert reads == [404, 429]
    assert limits(api)["bursts"] == {"payment_methods": 2.0, "payments.read": 1.0}


def test_delete_turns_the_limit_off(api: Api) -> None:
    """DELETE: no limit, counters back to zero."""
    limit(api, {"per_second": 0.5, "burst": 1})
    api.get("/payment_methods")
    assert_refused(api.get("/payment_methods"), "0.5", "payment_methods")

    response = api.request("DELETE", "/_sandbox/rate_limits")

    assert response.status_code == 200
    assert response.json()["families"] == {}
    assert response.json()["seen"]["payment_methods"] == UNSEEN
    assert {api.get("/payment_methods").status_code for _ in range(10)} == {200}


def test_reset_turns_the_limit_off(api: Api) -> None:
    """POST /_sandbox/reset forgets the limit with everything else."""
    limit(api, {"families": {"payment_methods": 0.5}, "burst": 1})
    api.get("/payment_methods")
    assert_refused(api.get("/payment_methods"), "0.5", "payment_methods")

    assert api.post("/_sandbox/reset").status_code == 200

    assert limits(api)["families"] == {}
    assert {api.get("/payment_methods").status_code for _ in range(10)} == {200}


def test_a_new_configuration_replaces_the_old_one(api: Api) -> None:
    """POST replaces the whole configuration: a family left out is no longer limited."""
    limit(api, {"families": {"payment_methods": 0.5}, "burst": 1})
    api.get("/payment_methods")

    shown = limit(api, {"families": {"payments.read": 0.5}})

    assert shown["families"] == {"payments.read": 0.5}
    assert {api.get("/payment_methods").status_code for _ in range(5)} == {200}


@pytest.mark.parametrize(
    "body",
    [
        {"per_second": -1},
        {"per_second": "5"},
        {"per_second": True},
        {"families": {"payments.refund": 1}},
        {"families": {"payments.create": -2}},
        {"families": {"payments.create": "10"}},
        {"families": ["payments.create"]},
        {"per_second": 5, "burst": 0.5},
        {"per_secnd": 5},
        [],
    ],
)
def test_bad_configurations_are_refused_and_change_nothing(api: Api, body: object) -> None:
    """400 CL2100 with the error body; the limit in force and its counters stay as they were."""
    limit(api, {"families": {"payment_methods": 0.5}, "burst": 1})
    api.get("/payment_methods")
    before = limits(api)

    body_400 = assert_error(api.post("/_sandbox/rate_limits", body), 400, "CL2100")

    assert body_400["detail"]
    assert limits(api) == before
    assert_refused(api.get("/payment_methods"), "0.5", "payment_methods")


def test_the_control_endpoint_takes_the_secret_key_only(api: Api) -> None:
    """Like every /_sandbox/ endpoint: the public key or no key is a 401."""
    assert_error(api.get("/_sandbox/rate_limits", auth="public"), 401, "CL1501")
    assert_error(api.post("/_sandbox/rate_limits", {"per_second": 1}, auth=None), 401, "CL1501")
    assert limits(api)["families"] == {}


def test_the_environment_sets_a_limit_for_every_family(tmp_path: Path) -> None:
    """SANDBOX_RATE_LIMIT_PER_SECOND limits every family from the start, and again after a
    reset (the sandbox's starting configuration); DELETE still turns it off."""
    env = {"SANDBOX_RATE_LIMIT_PER_SECOND": "0.5"}
    with run_sandbox(tmp_path, extra_env=env) as sandbox:
        api = Api(sandbox.base_url)
        assert limits(api)["families"] == dict.fromkeys(FAMILIES, 0.5)
        assert api.get("/payment_methods").status_code == 200
        assert_refused(api.get("/payment_methods"), "0.5", "payment_methods")

        assert api.post("/_sandbox/reset").status_code == 200
        assert limits(api)["per_second"] == 0.5
        assert api.get("/payment_methods").status_code == 200
        assert_refused(api.get("/payment_methods"), "0.5", "payment_methods")

        assert api.request("DELETE", "/_sandbox/rate_limits").json()["per_second"] is None
        assert {api.get("/payment_methods").status_code for _ in range(5)} == {200}
        api.session.close()
