"""Notifications end to end: a storm, then calm traffic, through the shop under gunicorn (as
`config/gunicorn.py` ships it) and one Celery worker (as docs/deployment.md runs it), against a
live sandbox of its own.

1. 1,000 payments stored and sent as the shop's create task does (half manual-capture
   authorizations, half approvals), then at the sandbox, behind the shop's back: a third of the
   authorizations captured and a third cancelled, a quarter of the approvals refunded in full
   and a quarter in part. Also 600 more authorizations, captured at the sandbox, for the calm
   traffic.
2. Baseline: 10,000 no-op tasks through the same worker, before and after the storm.
3. Storm: 10 notifications per payment (an INSERT, nine UPDATEs), shuffled, posted by wrk over
   8 connections as fast as they are answered. Drain: from the first POST until every event is
   processed. Provider reads: the worker's `payments-api GET /payments/` log lines.
4. Calm traffic: one notification a payment for the 600 captured ones, 20 a second for 30 s;
   from each 200 to its order's update.
5. Every local payment's status is compared with the sandbox's.

    python -m bench.storm [--payments 1000] [--strict] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench import runtime

CALM_RATE, CALM_SECONDS = 20, 30


def in_threads(work: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    from django.db import connection

    def run(item: Any) -> Any:
        try:
            return work(item)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(run, items))


def new_payment(capture_method: str) -> Any:
    from checkout.models import Order, new_reference
    from payments.calls.create import payment_send_create
    from payments.client import get_client
    from payments.services import payment_attempt_store

    order = Order.objects.create(
        reference=new_reference(), first_name="Ana", last_name="Pérez", email="ana@example.com",
        phone="5512345678", street="Avenida Juárez", number="12", colony="Centro", city="Puebla",
        state="Puebla", postal_code="72000", total=Decimal(random.randrange(10_000, 200_000)) / 100,
    )  # fmt: skip
    token = get_client().create_card_token(
        number="4242424242424242", exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
    )
    return payment_send_create(payment=payment_attempt_store(
        external_reference=order.reference, attempt_key=uuid.uuid4().hex, amount=order.total,
        currency="MXN", description=f"Pedido {order.reference}", card_token=token.id,
        capture_method=capture_method, customer={"email": "ana@example.com"},
        prevention_data={"device_finger_print_token": "bench"},
        return_url="http://127.0.0.1:8000/", webhook_url="",
    ))  # fmt: skip


def change_at_provider(payment: Any, index: int) -> None:
    """What happens at the sandbox behind the shop's back, by the payment's place in the mix."""
    from payments.client import get_client

    client = get_client()
    if payment.status == "authorized":
        change = ("capture", "cancel", "none")[index % 3]
    else:
        change = ("refund", "partial", "none", "none")[index % 4]
    if change == "capture":
        client.capture_payment(
            payment.provider_id, amount=payment.amount, idempotency_key=uuid.uuid4().hex
        )
    elif change == "cancel":
        client.cancel_payment(payment.provider_id, idempotency_key=uuid.uuid4().hex)
    elif change in ("refund", "partial"):
        amount = Decimal("10.00") if change == "partial" else None
        client.refund(
            payment.provider_id, amount=amount, reason="bench", idempotency_key=uuid.uuid4().hex
        )


def noop_drain(count: int) -> float:
    from django.core.cache import cache

    from bench.tasks import NOOP_COUNTER, noop_task
    from config.celery import app

    cache.set(NOOP_COUNTER, 0, timeout=None)
    started = time.monotonic()
    with app.producer_or_acquire() as producer:
        for index in range(count):
            noop_task.apply_async(args=(index,), producer=producer)
    while int(cache.get(NOOP_COUNTER) or 0) < count:
        time.sleep(0.05)
    return time.monotonic() - started


def wait_drained(expected: int, started: float, timeout: float = 600) -> float:
    from webhooks.models import WebhookEvent

    while WebhookEvent.objects.filter(processed_at__isnull=False).count() < expected:
        if time.monotonic() - started > timeout:
            sys.exit("the storm did not drain in time")
        time.sleep(0.2)
    return time.monotonic() - started


def calm(url: str, payments: list[Any]) -> list[float]:
    """Post one notification a payment at CALM_RATE a second; seconds from each 200 to its
    order's update."""
    import requests

    from checkout.models import Order

    session, answered = requests.Session(), {}
    started = time.time()
    for index, payment in enumerate(payments):
        time.sleep(max(0.0, started + index / CALM_RATE - time.time()))
        body = {"id": payment.provider_id, "origin": "payments-api", "event_type": "UPDATE"}
        response = session.post(url, json=body, timeout=10)
        answered[payment.external_reference] = time.time()
        assert response.status_code == 200, response.text
    deadline = time.time() + 120
    while time.time() < deadline:
        updated = dict(
            Order.objects.filter(reference__in=answered).values_list("reference", "updated_at")
        )
        late = [ref for ref, at in answered.items() if updated[ref].timestamp() < at]
        if not late:
            return [updated[ref].timestamp() - at for ref, at in answered.items()]
        time.sleep(0.2)
    sys.exit(f"{len(late)} orders were not updated after their notification")


def run(args: argparse.Namespace) -> dict[str, Any]:
    runtime.setup_django()
    from django.conf import settings
    from django.db import connection

    from payments.client import get_client
    from payments.models import Payment
    from payments.statuses import local_status
    from webhooks.models import WebhookEvent

    random.seed(args.seed)
    with connection.cursor() as cursor:  # the last run's records, and all that refers to them
        cursor.execute("TRUNCATE webhooks_webhookevent, payments_payment, checkout_order CASCADE")
    runtime.purge_queue()
    sandbox_db = runtime.database(os.environ["DATABASE_URL"], "shop_bench_sandbox", fresh=True)
    sandbox_port, shop_port = runtime.free_port(), runtime.free_port()
    os.environ["PAYMENTS_API_BASE_URL"] = f"http://127.0.0.1:{sandbox_port}"
    settings.PAYMENTS_API_BASE_URL = os.environ["PAYMENTS_API_BASE_URL"]
    total = args.payments * 10
    print(f"Storm benchmark: {args.payments} payments x 10 notifications; {runtime.described()}")
    with runtime.sandbox(sandbox_port, sandbox_db):
        clock = time.monotonic()
        methods = ["manual" if i % 2 else "automatic" for i in range(args.payments)]
        payments = in_threads(new_payment, methods)
        in_threads(
            lambda pair: change_at_provider(*pair), [(p, i // 2) for i, p in enumerate(payments)]
        )
        held = in_threads(new_payment, ["manual"] * CALM_RATE * CALM_SECONDS)
        in_threads(lambda p: change_at_provider(p, 0), held)  # captured
        print(f"  payments created and changed at the sandbox in {time.monotonic() - clock:.0f} s")
        bodies = [
            json.dumps({"id": p.provider_id, "origin": "payments-api", "event_type": kind})
            for p in payments
            for kind in ["INSERT"] + ["UPDATE"] * 9
        ]
        random.shuffle(bodies)
        lines = runtime.LOG_DIR / "storm.jsonl"
        lines.write_text("\n".join(bodies) + "\n")
        with runtime.shop(shop_port) as base, runtime.worker() as worker_log:
            url = f"{base}/webhooks/payments/{settings.PAYMENTS_WEBHOOK_TOKEN}/"
            noop_before = noop_drain(total)
            offset = len(worker_log.read_text(errors="replace"))
            started = time.monotonic()
            wrk = runtime.wrk_start(url, "post.lua", 600, 8, str(lines), "8", threads=8)
            drain = wait_drained(total, started)
            wrk.send_signal(signal.SIGINT)  # its threads are done; wrk itself waits out -d
            posted = runtime.wrk_result(wrk)
            reads = worker_log.read_text(errors="replace")[offset:].count(
                "payments-api GET /payments/"
            )
            noop_after = noop_drain(total)
            calm_latency = calm(url, held)
        calm_ids = [p.provider_id for p in held]
        events = WebhookEvent.objects.exclude(provider_payment_id__in=calm_ids)
        times = events.filter(processed_at__isnull=False).values_list("received_at", "processed_at")
        waits = [(done - received).total_seconds() for received, done in times]
        states = Counter(events.values_list("state", flat=True))
        local = dict(Payment.objects.values_list("provider_id", "status"))
        remote = {
            p.provider_id: local_status(get_client().get_payment(p.provider_id))
            for p in payments + held
        }
    connection.close()
    noop = (noop_before + noop_after) / 2
    return {
        "server": runtime.described(),
        "posted": posted,
        "drain_seconds": drain, "noop_drain_seconds": [noop_before, noop_after],
        "drain_ratio": drain / noop, "reads": reads, "reads_per_notification": reads / total,
        "wait_p50": runtime.percentile(waits, 0.5), "wait_p90": runtime.percentile(waits, 0.9),
        "states": dict(states), "calm_p50": runtime.percentile(calm_latency, 0.5),
        "calm_p95": runtime.percentile(calm_latency, 0.95),
        "mismatches": sum(local.get(pid) != status for pid, status in remote.items()),
        "payments": len(remote),
    }  # fmt: skip


def report(f: dict[str, Any]) -> tuple[str, bool]:
    checks = [
        runtime.verdict("provider reads per notification", f["reads_per_notification"], "<=", 0.15),
        runtime.verdict("drain / no-op drain", f["drain_ratio"], "<=", 1.5),
        runtime.verdict("notification -> processed, p90 (s)", f["wait_p90"], "<=", 5),
        runtime.verdict("calm: 200 -> order updated, p95 (s)", f["calm_p95"], "<=", 1.5),
        runtime.verdict("payments unlike the provider's", f["mismatches"], "<=", 0),
    ]
    figures = [
        ["notifications answered non-2xx or lost", f"{f['posted']['errors']}"],
        ["storm drain", f"{f['drain_seconds']:.1f} s"],
        ["no-op drain before / after", " / ".join(f"{s:.1f} s" for s in f["noop_drain_seconds"])],
        ["provider reads", f"{f['reads']} for {f['payments'] - CALM_RATE * CALM_SECONDS} payments"],
        ["notification -> processed, p50 / p90", f"{f['wait_p50']:.2f} s / {f['wait_p90']:.2f} s"],
        ["calm: 200 -> order updated, p50 / p95", f"{f['calm_p50']:.2f} s / {f['calm_p95']:.2f} s"],
        ["events by state", ", ".join(f"{k} {v}" for k, v in sorted(f["states"].items()))],
    ]  # fmt: skip
    text = runtime.table(["figure", "value"], figures) + "\n\n"
    text += runtime.table(["target", "wanted", "figure", "result"], checks)
    return text, all(check[-1] == "PASS" for check in checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--payments", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", type=Path, help="write every figure there")
    args = parser.parse_args(argv)
    figures = run(args)
    text, passed = report(figures)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    return 1 if args.strict and not passed else 0


if __name__ == "__main__":
    sys.exit(main())
