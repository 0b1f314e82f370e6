"""Webhook delivery over real HTTP: the sandbox POSTs `{id, origin, event_type}` to the
payment's `webhook_url`, at least once, retried with backoff, and chaos on demand."""

from __future__ import annotations

import time

from tests.helpers.provider import DECLINED, THREE_DS, VISA, Api
from tests.helpers.servers import WebhookReceiver
from tests.helpers.waiting import wait_until


def _notification(payment_id: str, event_type: str) -> dict[str, str]:
    return {"id": payment_id, "origin": "payments-api", "event_type": event_type}


def test_insert_then_update_reach_the_receiver(api: Api, receiver: WebhookReceiver) -> None:
    """A created payment sends INSERT; its capture sends UPDATE, in that order."""
    payment = api.create_payment(VISA, capture_method="manual", webhook_url=receiver.url)
    assert receiver.wait_for(1) == [_notification(payment["id"], "INSERT")]

    response = api.patch(f"/payments/{payment['id']}", {"status": "approved", "paid_amount": 100})
    assert response.status_code == 200

    assert receiver.wait_for(2) == [
        _notification(payment["id"], "INSERT"),
        _notification(payment["id"], "UPDATE"),
    ]
    assert receiver.received[0].headers["Content-Type"] == "application/json"


def test_every_outcome_of_a_creation_is_notified(api: Api, receiver: WebhookReceiver) -> None:
    """Declined payments are notified too: a notification for every payment attempt."""
    declined = api.create_payment(DECLINED, webhook_url=receiver.url)
    pending = api.create_payment(THREE_DS, webhook_url=receiver.url)

    bodies = receiver.wait_for(2)
    assert _notification(declined["id"], "INSERT") in bodies
    assert _notification(pending["id"], "INSERT") in bodies


def test_no_webhook_url_means_no_notification(api: Api, receiver: WebhookReceiver) -> None:
    """A payment without webhook_url queues nothing."""
    payment = api.create_payment(VISA)
    assert api.deliveries(payment["id"]) == []


def test_a_failing_receiver_is_retried_until_it_answers_2xx(
    api: Api, receiver: WebhookReceiver
) -> None:
    """Two 500s, then 200: delivered on the third attempt, with growing waits between."""
    receiver.plan = [(500, 0.0), (503, 0.0)]
    payment = api.create_payment(VISA, webhook_url=receiver.url)

    receiver.wait_for(3)
    delivery = wait_until(
        lambda: next((d for d in api.deliveries(payment["id"]) if d["status"] == "delivered"), None)
    )
    assert delivery["attempts"] == 3
    assert delivery["last_status_code"] == 200
    gaps = [b.at - a.at for a, b in zip(receiver.received, receiver.received[1:], strict=False)]
    assert all(gap >= 0.09 for gap in gaps), gaps


def test_a_receiver_that_times_out_is_retried(api: Api, receiver: WebhookReceiver) -> None:
    """A receiver slower than the timeout counts as a failure and gets the notification again."""
    receiver.plan = [(200, 3.0)]  # the test sandbox times out after 2 s
    payment = api.create_payment(VISA, webhook_url=receiver.url)

    receiver.wait_for(2, timeout=20)
    delivery = wait_until(
        lambda: next((d for d in api.deliveries(payment["id"]) if d["status"] == "delivered"), None)
    )
    assert delivery["attempts"] == 2
    assert len(receiver.received) == 2


def test_a_receiver_that_never_accepts_ends_failed(api: Api, receiver: WebhookReceiver) -> None:
    """After the maximum attempts (4 in the test sandbox) the delivery is marked failed."""
    receiver.plan = [(500, 0.0)] * 10
    payment = api.create_payment(VISA, webhook_url=receiver.url)

    delivery = wait_until(
        lambda: next((d for d in api.deliveries(payment["id"]) if d["status"] == "failed"), None),
        timeout=20,
    )
    assert delivery["attempts"] == 4
    assert delivery["last_status_code"] == 500
    assert len(receiver.received) == 4


def test_an_unreachable_receiver_is_retried(api: Api, receiver: WebhookReceiver) -> None:
    """Connection refused is a failure like any other: retried, then failed."""
    receiver.stop()
    payment = api.create_payment(VISA, webhook_url=receiver.url)

    delivery = wait_until(
        lambda: next((d for d in api.deliveries(payment["id"]) if d["status"] == "failed"), None),
        timeout=20,
    )
    assert delivery["attempts"] == 4
    assert "ConnectionError" in delivery["last_error"]


def test_chaos_duplicate_sends_each_notification_twice(api: Api, receiver: WebhookReceiver) -> None:
    """Duplicate mode: the receiver gets the same notification twice."""
    assert (
        api.post("/_sandbox/webhooks/chaos", {"mode": "duplicate", "times": 1}).status_code == 200
    )
    payment = api.create_payment(VISA, webhook_url=receiver.url)

    assert receiver.wait_for(2) == [_notification(payment["id"], "INSERT")] * 2
    assert api.get("/_sandbox/webhooks/chaos").json()["mode"] == "none"  # `times` spent


def test_chaos_drop_loses_the_notification(api: Api, receiver: WebhookReceiver) -> None:
    """Drop mode: the notification is recorded as dropped and never sent; later ones flow."""
    api.post("/_sandbox/webhooks/chaos", {"mode": "drop", "times": 1})
    dropped = api.create_payment(VISA, webhook_url=receiver.url)
    delivered = api.create_payment(VISA, webhook_url=receiver.url)

    assert receiver.wait_for(1) == [_notification(delivered["id"], "INSERT")]
    wait_until(lambda: [d["status"] for d in api.deliveries(dropped["id"])] == ["dropped"])
    # A later notification goes through and the dropped one still never came.
    later = api.create_payment(VISA, webhook_url=receiver.url)
    assert receiver.wait_for(2)[1:] == [_notification(later["id"], "INSERT")]
    assert [d["status"] for d in api.deliveries(dropped["id"])] == ["dropped"]
    assert dropped["id"] not in str(receiver.bodies())


def test_chaos_delay_holds_the_notification(api: Api, receiver: WebhookReceiver) -> None:
    """Delay mode: nothing arrives before `delay_ms`, then the notification does."""
    api.post("/_sandbox/webhooks/chaos", {"mode": "delay", "delay_ms": 1500, "times": 1})
    started = time.monotonic()
    payment = api.create_payment(VISA, webhook_url=receiver.url)

    assert receiver.wait_for(1) == [_notification(payment["id"], "INSERT")]
    assert receiver.received[0].at - started >= 1.4


def test_chaos_reorder_sends_newer_notifications_first(api: Api, receiver: WebhookReceiver) -> None:
    """Reorder mode: an INSERT and its UPDATE queued together arrive UPDATE first."""
    api.post("/_sandbox/webhooks/chaos", {"mode": "reorder", "delay_ms": 1000, "times": 2})
    payment = api.create_payment(VISA, capture_method="manual", webhook_url=receiver.url)
    api.patch(f"/payments/{payment['id']}", {"status": "cancelled"})

    assert receiver.wait_for(2) == [
        _notification(payment["id"], "UPDATE"),
        _notification(payment["id"], "INSERT"),
    ]


def test_chaos_needs_a_known_mode(api: Api) -> None:
    """An unknown chaos mode is refused with the error body and changes nothing."""
    response = api.post("/_sandbox/webhooks/chaos", {"mode": "explode"})
    assert response.status_code == 400
    assert response.json()["error_code"] == "CL2100"
    assert api.get("/_sandbox/webhooks/chaos").json()["mode"] == "none"


def test_three_ds_completion_notifies_an_update(api: Api, receiver: WebhookReceiver) -> None:
    """Completing the 3-D Secure challenge sends a webhook UPDATE after the INSERT."""
    payment = api.create_payment(THREE_DS, webhook_url=receiver.url)
    url = payment["pending_action"]["url"]
    response = api.session.post(url, data={"action": "submit", "code": "123456"}, timeout=10)
    assert response.status_code == 200

    assert receiver.wait_for(2) == [
        _notification(payment["id"], "INSERT"),
        _notification(payment["id"], "UPDATE"),
    ]
    assert api.payment(payment["id"])["status"] == "approved"
