"""A notification whose payment read the provider throttles (a 429 with `Retry-After`), processed
by a real Celery worker against the live sandbox: its task tries again after the wait the
provider asked for (plus jitter), not after its policy's backoff, the notification held by the
task until then; then it is processed and the payment applied once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone, translation

from payments.provider.client import get_client
from payments.statuses import PaymentStatus
from payments.words import THROTTLED
from tests.helpers.waiting import wait_until
from tests.webhooks.helpers import FINISHED, Shop, approvals, captured_at_provider
from webhooks.models import WebhookEvent, WebhookState

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db(transaction=True)]

# The sandbox lets one payment read through every 5 s: its 429s ask for 5 s (`Retry-After`).
READS_PER_SECOND = 0.2
ASKED = 5.0


def test_a_throttled_read_is_tried_again_after_the_wait_the_provider_asked_for(
    shop: Shop, worker: Any, settings: Any
) -> None:
    # Given a policy whose backoff is at most 2 s, an authorization captured at the provider,
    # and the provider's read budget spent for the next 5 s
    settings.WEBHOOKS_RETRY_BACKOFF = 1
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 2
    _order, payment = captured_at_provider(shop.api)
    limits = shop.api.post(
        "/_sandbox/rate_limits", {"families": {"payments.read": READS_PER_SECOND}}
    )
    assert limits.status_code == 200, limits.text
    try:
        get_client().get_payment(payment.provider_id)

        # When its UPDATE arrives
        response = shop.notify(payment.provider_id)
        assert response.status_code == 200, response.text
        pk = response.json()["event"]

        # Then the read is throttled and the event stays with its task, held until the
        # provider's wait is over (beyond any backoff of the policy)
        def held() -> WebhookEvent | None:
            event = WebhookEvent.objects.get(pk=pk)
            later = timezone.now() + timedelta(seconds=ASKED - 2)
            if event.last_error and event.claimed_at and event.claimed_at > later:
                return event
            return None

        event = wait_until(held, timeout=30)
        assert (event.state, event.attempts) == (WebhookState.PROCESSING, 1)
        with translation.override(settings.LANGUAGE_CODE):  # the worker's language
            assert event.last_error == str(THROTTLED)
        held_until = event.claimed_at

        # Then the retry comes then, not before, and processes it: the payment applied once
        wait_until(lambda: WebhookEvent.objects.get(pk=pk).state in FINISHED, timeout=30)
        event.refresh_from_db()
        assert (event.state, event.attempts, event.last_error) == (WebhookState.PROCESSED, 2, "")
        assert event.processed_at >= held_until - timedelta(seconds=1)
        payment.refresh_from_db()
        assert payment.status == PaymentStatus.APPROVED
        assert approvals(payment) == 1
    finally:
        shop.api.request("DELETE", "/_sandbox/rate_limits")
