"""Nothing lost, nothing doubled, under faults, with every part in a process of its own.

The shop under gunicorn, Celery workers and beat, the sandbox, PostgreSQL and Redis (behind a
proxy that can take it away). Shoppers pay over HTTP while the provider fails reads, loses the
answers of creates (and their INSERT notifications), duplicates and reorders its notifications,
refunds behind the shop's back; extra notifications arrive shuffled; Redis goes away; a worker is
killed while it holds tasks. Then, with no step by anyone, every local payment must equal the
provider's, no notification may be left waiting, processing or failed, and no order may be
charged twice.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from django.db import connection

from checkout.models import Order, OrderStatus
from tests.factories import ProductFactory
from tests.support import (
    DECLINED,
    PROVIDER_ERROR,
    PUBLIC_KEY,
    ROOT,
    SECRET_KEY,
    THREE_DS,
    VISA,
    Api,
    free_port,
    wait_until,
)
from tests.webhooks.support import TcpProxy, WorkerProcess
from tools import soak
from tools.verdict import verdict
from webhooks.models import WebhookEvent, WebhookState

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

THREE_DS_CODE = "123456"
# Every process's settings, made short so that the test converges in a few minutes: each is
# documented in docs/deployment.md, and the same guarantee holds with the defaults, only slower.
FAST = {
    "PAYMENTS_CONNECT_TIMEOUT": "1",
    "PAYMENTS_READ_TIMEOUT": "3",
    "WEBHOOKS_CLAIM_LEASE": "6",
    "WEBHOOKS_RELAY_AFTER": "11",
    "WEBHOOKS_RELAY_EVERY": "3",
    "PAYMENTS_RECONCILE_EVERY": "5",
    "SHOP_ORDERS_SYNC_EVERY": "3",
    "WEBHOOKS_RETRY_BACKOFF": "1",
    "WEBHOOKS_RETRY_BACKOFF_MAX": "4",
    "WEBHOOKS_MAX_RETRIES": "2",
    "CELERY_VISIBILITY_TIMEOUT": "20",
    "SHOP_PAY_ATTEMPTS_PER_ADDRESS": "1000/m",
    "SHOP_PAY_ATTEMPTS_PER_SESSION": "1000/m",
    "SHOP_STATUS_CHECKS_PER_SESSION": "1000/m",
    "PAYMENTS_SEND_SWEEP_EVERY": "3",
}


@dataclass
class Processes:
    """The shop's processes; `supervise()` starts again a worker that exited, as systemd's
    `Restart=always` does in production (docs/deployment.md)."""

    env: dict[str, str]
    tmp: Path
    url: str
    redis: TcpProxy
    workers: list[WorkerProcess] = field(default_factory=list)
    others: list[subprocess.Popen[bytes]] = field(default_factory=list)
    restarts: int = 0

    def start_worker(self) -> WorkerProcess:
        name = f"worker{len(self.workers)}"
        worker = WorkerProcess(self.env, self.tmp / f"{name}.log", f"{name}-{uuid.uuid4().hex[:4]}")
        self.workers.append(worker.start())
        return worker

    def live_workers(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.process is not None and w.process.poll() is None]

    def supervise(self) -> None:
        while len(self.live_workers()) < 2:
            self.restarts += 1
            self.start_worker()

    def spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        with (self.tmp / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        self.others.append(process)
        return process

    def stop(self) -> None:
        for worker in self.workers:
            worker.kill()
        for process in self.others:
            process.terminate()
        for process in self.others:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.redis.close()


@pytest.fixture
def processes(provider: Api, tmp_path: Path) -> Iterator[Processes]:
    database = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not database.startswith(("postgres://", "postgresql://")) or not redis_url:
        pytest.skip(
            "the processes share the test database and Redis: set DATABASE_URL and REDIS_URL"
        )
    upstream = urlsplit(redis_url)
    redis = TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 6379).open()
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CELERY_BROKER")},
        **FAST,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": urlunsplit(
            urlsplit(database)._replace(path=f"/{connection.settings_dict['NAME']}")
        ),
        "REDIS_URL": urlunsplit(upstream._replace(netloc=f"127.0.0.1:{redis.port}")),
        "CACHE_KEY_PREFIX": f"converge-{uuid.uuid4().hex[:6]}",
        "SHOP_BASE_URL": f"http://127.0.0.1:{port}",
        "PAYMENTS_API_BASE_URL": provider.base_url,
        "PAYMENTS_PUBLIC_KEY": PUBLIC_KEY,
        "PAYMENTS_SECRET_KEY": SECRET_KEY,
        "PAYMENTS_ACCESS_TOKEN": "",
        "PAYMENTS_WEBHOOK_TOKEN": "converge-" + uuid.uuid4().hex,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "2",
        "LOG_FORMAT": "text",
    }
    shop = Processes(env, tmp_path, f"http://127.0.0.1:{port}", redis)
    try:
        gunicorn = shop.spawn(
            "gunicorn",
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi"],
        )
        shop.spawn(
            "beat",
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO",
             "--schedule", str(tmp_path / "beat-schedule")],
        )  # fmt: skip
        for _ in range(2):
            shop.start_worker()
        for worker in shop.workers:
            worker.wait_ready()

        def up() -> bool:
            assert gunicorn.poll() is None, (tmp_path / "gunicorn.log").read_text()
            try:
                return requests.get(f"{shop.url}/healthz", timeout=5).status_code == 200
            except requests.RequestException:
                return False

        wait_until(up, timeout=60, interval=0.2)
        yield shop
    finally:
        shop.stop()


class Shopper(soak.Shopper):
    """A shopper's browser on the shop, paying with the sandbox's test cards."""

    def __init__(self, shop: Processes, provider: Api) -> None:
        super().__init__(shop.url)
        self.provider = provider

    def pay(self, reference: str, number: str) -> dict[str, Any]:
        """The outcome once the create was sent (it may be unknown: its answer lost)."""
        token = self.provider.card_token(number, cvv="123")["id"]
        answer = super().pay(reference, token, follow=("processing",))
        assert answer.status_code in (200, 202, 409), answer.text
        return answer.json()


def notify(shop: Processes, payment_id: str, event_type: str = "UPDATE") -> int:
    token = shop.env["PAYMENTS_WEBHOOK_TOKEN"]
    body = {"id": payment_id, "origin": "payments-api", "event_type": event_type}
    return requests.post(
        f"{shop.url}/webhooks/payments/{token}/", json=body, timeout=30
    ).status_code


def fault(provider: Api, **spec: Any) -> None:
    response = provider.post("/_sandbox/faults", spec)
    assert response.status_code == 201, response.text


def chaos(provider: Api, mode: str, times: int | None = None) -> None:
    body: dict[str, Any] = {"mode": mode, **({"times": times} if times else {})}
    response = provider.post("/_sandbox/webhooks/chaos", body)
    assert response.status_code == 200, response.text


def test_every_order_ends_right_after_faults_with_no_human_step(
    processes: Processes, provider: Api
) -> None:
    shop, rng = processes, random.Random(15)
    ProductFactory(
        slug="jarron", name="Jarrón", price=Decimal("450.00"), stock=100, active=True,
        image="img/products/taza-talavera.svg",
    )  # fmt: skip
    shoppers = [Shopper(shop, provider) for _ in range(10)]
    references = [shopper.place_order("jarron") for shopper in shoppers]
    chaos(provider, "duplicate", times=6)

    # Shoppers pay: approvals, a decline then an approval, a 3-D Secure challenge passed
    for shopper, reference in zip(shoppers[:4], references[:4], strict=True):
        assert shopper.pay(reference, VISA)["result"] == "approved"
    assert shoppers[4].pay(references[4], DECLINED)["result"] == "rejected"
    assert shoppers[4].pay(references[4], VISA)["result"] == "approved"
    pending = shoppers[5].pay(references[5], THREE_DS)
    assert pending["result"] == "pending"
    chaos(provider, "reorder", times=6)
    passed = requests.post(
        pending["three_ds_url"], data={"action": "submit", "code": THREE_DS_CODE}, timeout=30
    )
    assert passed.status_code == 200

    # Lost answers: the provider creates the payment but every answer is a 500, and its
    # INSERT notification is dropped; the shopper is told it is not confirmed, and cannot pay
    # the order a second time meanwhile
    before_lost = {p["id"] for p in provider.payments()}
    # (every create answered 500 until the fault is lifted, resends included)
    fault(provider, path="/payments", method="POST", status=500, after_processing=True)
    chaos(provider, "drop", times=2)
    for shopper, reference in zip(shoppers[6:8], references[6:8], strict=True):
        lost = shopper.pay(reference, VISA)  # sent 1 + 3 times, each answered 500
        assert lost["result"] == "unknown", lost
        assert "ningún cargo" not in lost.get("message", ""), lost
        assert shopper.pay(reference, VISA)["result"] in ("unknown", "approved")
    assert provider.request("DELETE", "/_sandbox/faults").status_code in (200, 204)
    # (Nothing names these two to the shop any more: only sending the create again can.)
    unnamed = {p["id"] for p in provider.payments()} - before_lost
    assert len(unnamed) == 2
    # The provider's own failure (0119): not confirmed either, until the provider says more
    assert shoppers[8].pay(references[8], PROVIDER_ERROR)["result"] == "unknown"
    assert shoppers[9].pay(references[9], VISA)["result"] == "approved"
    # (Its card token expires at the provider 15 minutes later: then the provider refuses the
    # very request sent again, which settles it as not made.)
    assert provider.post("/_sandbox/clock", {"advance_seconds": 16 * 60}).status_code == 200

    # Behind the shop's back: partial refunds at the provider (it notifies them)
    approved = [
        p for p in provider.payments() if p["status"] == "approved" and p["id"] not in unnamed
    ]
    for payment in approved[:3]:
        refund = provider.post("/refunds", {"payment_id": payment["id"], "amount": 100})
        assert refund.status_code in (200, 201), refund.text

    # The provider fails reads, and hangs some, while extra notifications arrive shuffled
    fault(provider, path="/payments", method="GET", status=500, times=8)
    fault(provider, path="/payments", method="GET", latency_ms=2500, times=4)
    ids = [p["id"] for p in provider.payments() if p["id"] not in unnamed] * 4
    rng.shuffle(ids)
    for number, payment_id in enumerate(ids):
        assert notify(shop, payment_id) == 200
        if number == len(ids) // 3:
            # A worker killed (SIGKILL) while it holds tasks
            wait_until(
                lambda: WebhookEvent.objects.filter(state=WebhookState.PROCESSING).exists(),
                timeout=30,
                interval=0.05,
            )
            shop.live_workers()[0].kill()
            shop.supervise()
        if number == 2 * len(ids) // 3:
            # Redis goes away for 8 seconds; notifications keep being answered
            shop.redis.close()
            outage_ends = time.monotonic() + 8
            while time.monotonic() < outage_ends:
                assert notify(shop, rng.choice(ids)) == 200
                time.sleep(0.2)
            shop.redis.open()
    last_fault = time.monotonic()

    # Then, with no step by anyone, everything converges
    def converged() -> bool:
        shop.supervise()
        return verdict(provider.payments()).clean

    try:
        wait_until(converged, timeout=300, interval=2)
    except AssertionError:
        pass
    took = time.monotonic() - last_fault
    final = verdict(provider.payments())
    assert final.clean, (final, [w.log()[-3000:] for w in shop.workers])
    print(f"\nconverged {took:.0f} s after the last fault; workers started again: {shop.restarts}")
    # And the order paid with the provider's own failure (0119) was not: it can be paid again
    assert Order.objects.get(reference=references[8]).status != OrderStatus.PAID


def test_a_shopper_paying_while_redis_is_down_is_paid_once_it_is_back(
    processes: Processes, provider: Api, playwright_browser: Any
) -> None:
    """Given the payment page open, when Redis goes away and the shopper presses Pay, the
    attempt is stored and answered at once (counted per order in the database) and the page
    keeps saying it is processing, nothing sent; once Redis is back, beat's sweep queues the
    create and the page lands on the order, paid once."""
    from playwright.sync_api import expect

    from payments.models import Payment, PaymentStatus
    from tests.e2e.shopper import PRODUCT, expect_paid_order_page
    from tests.e2e.shopper import Shopper as BrowserShopper
    from tests.e2e.support import Shop

    shop = processes
    ProductFactory(
        slug=PRODUCT, name="Taza de Talavera", price=Decimal("289.00"), stock=10, active=True,
        image="img/products/taza-talavera.svg",
    )  # fmt: skip
    context = playwright_browser.new_context(locale="es-MX")
    page = context.new_page()
    try:
        shopper = BrowserShopper(page, Shop(url=shop.url, api=provider))
        shopper.reach_payment_page()
        shopper.type_card(VISA)
        shop.redis.close()

        shopper.pay()

        expect(page.locator("#pay-status")).to_have_text("Procesando tu pago…")
        (stored,) = shopper.payments()
        assert stored.status == PaymentStatus.CREATING and stored.create_request
        time.sleep(3)  # a sweep's worth: nothing can be queued, nothing is sent
        assert shopper.provider_payments() == []
        expect(page.locator("#pay-status")).to_have_text("Procesando tu pago…")
        shop.redis.open()

        wait_until(lambda: shop.supervise() or bool(shopper.provider_payments()), timeout=60)
        expect_paid_order_page(shopper)
        (paid,) = Payment.objects.filter(external_reference=shopper.reference)
        assert paid.status == PaymentStatus.APPROVED
        assert len(shopper.provider_payments()) == 1
    finally:
        shop.redis.open()
        context.close()
