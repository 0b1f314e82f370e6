"""Property tests of the webhook receiver: whatever arrives, it never answers 5xx; a body it
refuses stores nothing, and a valid notification stores exactly one row.

The oracle below decides validity independently of webhooks.notifications: JSON as Python's
`json` reads it, an object whose id is a canonical UUID (any case), origin exactly
`payments-api`, event_type exactly INSERT or UPDATE. Rows are counted before and after each
example (all examples of a test share its transaction). Tasks are queued only after a commit,
which never happens inside these tests, so nothing reaches the broker. Each property also checks
that its examples reached the branches it is about (valid, refused, too large).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st

from webhooks.models import WebhookEvent, WebhookState

pytestmark = pytest.mark.django_db

TOKEN = "whk-fuzz-4c8e1a9d7b3f5e2a6c0d"
LIMIT = 512  # a small WEBHOOKS_MAX_BODY_BYTES, so that oversized bodies come up too

FUZZ = fuzz_settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def receiver_settings(settings: Any) -> None:
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    settings.WEBHOOKS_MAX_BODY_BYTES = LIMIT


def _canonical_uuid(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def expected(body: bytes) -> tuple[int, dict[str, Any] | None]:
    """The status the receiver must answer, and the notification when it is valid."""
    if len(body) > LIMIT:
        return 413, None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return 400, None
    if (
        isinstance(data, dict)
        and _canonical_uuid(data.get("id"))
        and data.get("origin") == "payments-api"
        and data.get("event_type") in ("INSERT", "UPDATE")
    ):
        return 200, data
    return 400, None


def check_receiver(client: Client, body: bytes) -> int:
    """POST `body`, check the answer and the rows against the oracle; the status."""
    status, valid = expected(body)
    before = WebhookEvent.objects.count()

    response = client.post(
        reverse("webhooks:payments", kwargs={"token": TOKEN}),
        data=body,
        content_type="application/json",
    )

    assert response.status_code < 500, response.content
    assert response.status_code == status, (response.status_code, response.content, body[:200])
    assert response["Content-Type"] == "application/json"
    answer = json.loads(response.content)
    if valid is None:
        assert WebhookEvent.objects.count() == before
        assert isinstance(answer.get("error"), str) and isinstance(answer.get("message"), str)
        return status
    assert WebhookEvent.objects.count() == before + 1
    event = WebhookEvent.objects.get(pk=answer["event"])
    assert answer == {"status": "received", "event": event.pk}
    assert event.provider_payment_id == valid["id"].lower()
    assert event.event_type == valid["event_type"]
    assert (event.state, event.attempts) == (WebhookState.RECEIVED, 0)
    return status


def fuzz(client: Client, bodies: st.SearchStrategy[bytes]) -> Counter[int]:
    """Run `check_receiver` on examples of `bodies`; how many got each status."""
    seen: Counter[int] = Counter()

    @FUZZ
    @given(body=bodies)
    def run(body: bytes) -> None:
        seen[check_receiver(client, body)] += 1

    run()
    return seen


# --- Strategies ---------------------------------------------------------------------------

small_ints = st.integers(min_value=-(10**40), max_value=10**40)
scalars = st.none() | st.booleans() | small_ints | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)
uuids = st.uuids().map(str)
GOOD = {
    "id": uuids | uuids.map(str.upper),
    "origin": st.just("payments-api"),
    "event_type": st.sampled_from(["INSERT", "UPDATE"]),
}
BAD = {
    "id": (
        uuids.map(lambda u: "{" + u + "}")
        | uuids.map(lambda u: "urn:uuid:" + u)
        | uuids.map(lambda u: u.replace("-", ""))
        | uuids.map(lambda u: u + "\n")
        | uuids.map(lambda u: uuid.UUID(u).int)
        | json_values
    ),
    "origin": st.sampled_from(["Payments-API", "payments", " payments-api", ""]) | json_values,
    "event_type": st.sampled_from(["insert", "Update", "DELETE", " UPDATE"]) | json_values,
}


@st.composite
def notifications(draw: st.DrawFn) -> dict[str, Any]:
    """An object with each real key valid (most often), almost valid, arbitrary or missing,
    among unknown keys with arbitrary values."""
    value: dict[str, Any] = draw(st.dictionaries(st.text(max_size=12), json_values, max_size=3))
    for key in ("id", "origin", "event_type"):
        value.pop(key, None)
        kind = draw(st.sampled_from(["good", "good", "good", "bad", "missing"]))
        if kind != "missing":
            value[key] = draw(GOOD[key] if kind == "good" else BAD[key])
    return value


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


@st.composite
def corrupted(draw: st.DrawFn) -> bytes:
    """A notification's bytes with a slice replaced by arbitrary bytes."""
    body = _dumps(draw(notifications()))
    start = draw(st.integers(0, len(body)))
    end = draw(st.integers(start, min(len(body), start + 8)))
    return body[:start] + draw(st.binary(max_size=8)) + body[end:]


# --- Properties ---------------------------------------------------------------------------


def test_arbitrary_bytes_never_get_a_server_error(client: Client) -> None:
    """Given any bytes at all, around the size limit, and notifications with a slice of them
    replaced by arbitrary bytes, when they are posted, then nothing gets a 5xx: refused bodies
    get 400 or 413 JSON and store nothing, and any that is still valid stores one row."""
    seen = fuzz(client, st.binary(max_size=LIMIT + 64) | corrupted())

    assert seen[400] and seen[413], seen


def test_arbitrary_json_never_gets_a_server_error(client: Client) -> None:
    """Given any JSON value (nested arrays, objects, strings, numbers, booleans, null), when it is
    posted, then nothing gets a 5xx: it is refused with 400 (413 when too large) and stores
    nothing, or, should it be a valid notification, stores exactly one row."""
    seen = fuzz(client, json_values.map(_dumps))

    assert seen[400], seen


def test_objects_mixing_the_real_fields_store_exactly_the_valid_ones(client: Client) -> None:
    """Given objects that mix the three real keys (each valid, almost valid, arbitrary or
    missing) with unknown keys, when posted, then each valid one stores exactly one row with the
    lower-cased id and its event type, and every other one is refused and stores nothing."""
    seen = fuzz(client, notifications().map(_dumps))

    assert seen[200] and seen[400], seen


def _encoded(value: dict[str, Any], encoding: str) -> bytes:
    text = json.dumps(value, ensure_ascii=False)
    return text.encode(encoding, errors="replace" if encoding == "latin-1" else "surrogatepass")


def test_the_same_objects_in_other_encodings_never_get_a_server_error(client: Client) -> None:
    """Given those objects with non-ASCII text left unescaped and encoded as UTF-8, UTF-8 with a
    BOM or Latin-1, when posted, then nothing gets a 5xx, and only what the oracle reads as a
    valid notification is stored."""
    encodings = st.sampled_from(["utf-8", "utf-8-sig", "latin-1"])
    seen = fuzz(client, st.builds(_encoded, notifications(), encodings))

    assert seen[200] and seen[400], seen
