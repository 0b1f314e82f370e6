"""Webhook delivery: a background worker sends the notifications the outbox
(sandbox.provider.webhooks) queued, at least once, retried with exponential backoff and jitter.
It also runs the sandbox's periodic expiry sweep."""

from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import requests
from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from sandbox.provider.models import DeliveryStatus, WebhookDelivery
from sandbox.provider.payments import payments_expire_due
from sandbox.provider.webhooks import worker_wake

logger = logging.getLogger(__name__)


def backoff_seconds(attempts: int) -> float:
    """Exponential backoff with jitter after `attempts` failed tries, capped."""
    base = settings.SANDBOX_WEBHOOK_BACKOFF_BASE * (2 ** max(attempts - 1, 0))
    return min(settings.SANDBOX_WEBHOOK_BACKOFF_MAX, base) * random.uniform(0.5, 1.0)


class DeliveryWorker(threading.Thread):
    """Sends due notifications; also runs the sandbox's periodic expiry sweep."""

    def __init__(self, *, pool_size: int = 4, poll_seconds: float = 0.5) -> None:
        super().__init__(name="webhook-delivery", daemon=True)
        self._pool = ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="webhook-send")
        self._pool_size = pool_size
        self._poll_seconds = poll_seconds
        self._in_flight: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._last_sweep = 0.0

    def stop(self) -> None:
        self._stop.set()
        worker_wake.set()

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self._sweep()
                for delivery in self._claim():
                    self._pool.submit(self._send, delivery)
            except Exception:
                logger.exception("webhook worker loop failed; going on")
            finally:
                close_old_connections()
            worker_wake.wait(self._poll_seconds)
            worker_wake.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _sweep(self) -> None:
        now = time.monotonic()
        if now - self._last_sweep >= 1.0:
            self._last_sweep = now
            payments_expire_due()

    def _claim(self) -> list[WebhookDelivery]:
        now = timezone.now()
        with self._lock:
            free = self._pool_size * 2 - len(self._in_flight)
            if free <= 0:
                return []
            busy = set(self._in_flight)
        with transaction.atomic():
            due = list(
                WebhookDelivery.objects.select_for_update(skip_locked=True)
                .filter(
                    Q(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
                    | Q(status=DeliveryStatus.DELIVERING, lease_until__lt=now)
                )
                .order_by("next_attempt_at", "id")[:100]
            )
            # Notifications of one payment go out one at a time, in the order they were queued,
            # except those held back by the reorder chaos, which go newest first.
            due.sort(key=lambda d: (d.next_attempt_at, -d.id if d.reorder else d.id))
            chosen: list[WebhookDelivery] = []
            for delivery in due:
                key = str(delivery.payment_id)
                if key in busy:
                    continue
                busy.add(key)
                chosen.append(delivery)
                if len(chosen) >= free:
                    break
            lease = now + timedelta(seconds=settings.SANDBOX_WEBHOOK_TIMEOUT + 30)
            for delivery in chosen:
                delivery.status = DeliveryStatus.DELIVERING
                delivery.lease_until = lease
                delivery.save(update_fields=["status", "lease_until"])
        with self._lock:
            self._in_flight.update(str(d.payment_id) for d in chosen)
        return chosen

    def _send(self, delivery: WebhookDelivery) -> None:
        status_code: int | None = None
        error = ""
        try:
            response = requests.post(
                delivery.url,
                json=delivery.payload,
                timeout=settings.SANDBOX_WEBHOOK_TIMEOUT,
                allow_redirects=False,
                headers={"User-Agent": "payments-api-webhooks/1.0"},
            )
            status_code = response.status_code
            if not 200 <= status_code < 300:
                error = f"receiver answered HTTP {status_code}"
        except requests.RequestException as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        try:
            self._record(delivery, status_code, error)
        except Exception:
            logger.exception("could not record webhook delivery %s", delivery.pk)
        finally:
            with self._lock:
                self._in_flight.discard(str(delivery.payment_id))
            close_old_connections()
            worker_wake.set()

    @staticmethod
    def _record(delivery: WebhookDelivery, status_code: int | None, error: str) -> None:
        delivery.attempts += 1
        delivery.last_status_code = status_code
        delivery.last_error = error
        delivery.lease_until = None
        now = timezone.now()
        if not error:
            delivery.status = DeliveryStatus.DELIVERED
            delivery.delivered_at = now
        elif delivery.attempts >= settings.SANDBOX_WEBHOOK_MAX_ATTEMPTS:
            delivery.status = DeliveryStatus.FAILED
        else:
            delivery.status = DeliveryStatus.PENDING
            delivery.next_attempt_at = now + timedelta(seconds=backoff_seconds(delivery.attempts))
        logger.info(
            "webhook %s %s for payment %s: attempt %s, %s",
            delivery.event_type,
            delivery.pk,
            delivery.payment_id,
            delivery.attempts,
            delivery.status if not error else f"{delivery.status} ({error})",
        )
        delivery.save()
