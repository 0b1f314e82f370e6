"""Notifications end to end, through the shop and its Celery workers as shipped: a storm of 10
for each of 1,000 payments changed behind the shop's back, against a no-op baseline; calm
traffic.

    python -m bench.storm [--payments 1000] [--strict] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import requests

from bench import runtime

CALM_RATE, CALM_SECONDS = 20, 30
KINDS = ["INSERT"] + ["UPDATE"] * 9  # a payment's notifications in the storm


def notification(payment: Any, kind: str) -> dict[str, str]:
    return {"id": payment.provider_id, "origin": "payments-api", "event_type": kind}


def new_payment(capture_method: str) -> Any:
    """An order and its payment, sent as the shop's create task does (notifying nobody)."""
    from checkout.models import Order, new_reference
    from payments.attempts.calls import payment_send_create
    from payments.attempts.rules import payment_attempt_store
    from payments.provider.client import get_client
    from payments.provider.errors import PaymentOutcomeUnknown

    order = Order.objects.create(
        reference=new_reference(), first_name="Ana", last_name="Pérez", email="ana@example.com",
        phone="5512345678", street="Avenida Juárez", number="12", colony="Centro", city="Puebla",
        state="Puebla", postal_code="72000", total=Decimal(random.randrange(10_000, 200_000)) / 100,
    )  # fmt: skip
    token = get_client().create_card_token(
        number="4242424242424242", exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
    )
    payment = payment_attempt_store(
        external_reference=order.reference, attempt_key=uuid.uuid4().hex, amount=order.total,
        currency="MXN", description=f"Pedido {order.reference}", card_token=token.id,
        capture_method=capture_method, customer={"email": "ana@example.com"},
        prevention_data={"device_finger_print_token": "bench"},
        return_url="http://127.0.0.1:8000/", webhook_url="",
    )  # fmt: skip
    for _ in range(4):  # as the create task does: an unknown outcome is sent again, same key
        try:
            return payment_send_create(payment=payment)
        except PaymentOutcomeUnknown:
            time.sleep(1)
    return payment_send_create(payment=payment)


def change_at_provider(payment: Any, index: int) -> None:
    """What happens at the sandbox behind the shop's back, by the payment's place in the mix:
    authorizations captured, cancelled or left; approvals refunded in full, in part or left."""
    from payments.provider.client import get_client

    client, key = get_client(), uuid.uuid4().hex
    if payment.status == "authorized":
        change = ("capture", "cancel", "none")[index % 3]
    else:
        change = ("refund", "partial", "none", "none")[index % 4]
    if change == "capture":
        client.capture_payment(payment.provider_id, amount=payment.amount, idempotency_key=key)
    elif change == "cancel":
        client.cancel_payment(payment.provider_id, idempotency_key=key)
    elif change in ("refund", "partial"):
        amount = Decimal("10.00") if change == "partial" else None
        client.refund(payment.provider_id, amount=amount, reason="bench", idempotency_key=key)


def noop_drain(count: int) -> float:
    """Seconds for the worker that processes notifications (the `provider_reads` queue's) to run
    `count` no-op tasks sent at once, once every worker is idle."""
    from django.core.cache import cache

    from bench.tasks import NOOP_COUNTER, NOOP_TASK
    from core.task_queue import send_each

    runtime.settle()
    cache.set(NOOP_COUNTER, 0, timeout=None)
    started = time.monotonic()
    send_each(NOOP_TASK, [(index,) for index in range(count)], queue="provider_reads", raising=True)
    while int(cache.get(NOOP_COUNTER) or 0) < count:
        time.sleep(0.05)
    return time.monotonic() - started


def worker_logs() -> list[Any]:
    """The logs of the Procfile's Celery workers (where their provider reads are logged)."""
    return [runtime.LOG_DIR / f"celery-{name}.log" for name in runtime.PROCFILE_CELERY]


def calm(url: str, payments: list[Any]) -> list[float]:
    """One notification a payment, CALM_RATE a second; seconds from each 200 to its order's."""
    from checkout.models import Order

    session, answered, started = requests.Session(), {}, time.time()
    for index, payment in enumerate(payments):
        time.sleep(max(0.0, started + index / CALM_RATE - time.time()))
        response = session.post(url, json=notification(payment, "UPDATE"), timeout=10)
        answered[payment.external_reference] = time.time()
        assert response.status_code == 200, response.text
    deadline = time.time() + 120
    while time.time() < deadline:
        orders = Order.objects.filter(reference__in=answered)
        updated = dict(orders.values_list("reference", "updated_at"))
        if all(updated[ref].timestamp() >= at for ref, at in answered.items()):
            return [updated[ref].timestamp() - at for ref, at in answered.items()]
        time.sleep(0.2)
    sys.exit("orders were not updated after their notification")


def run(args: argparse.Namespace) -> dict[str, Any]:
    runtime.setup_django(*runtime.SHOP_TABLES)
    from django.conf import settings
    from django.db import connection

    random.seed(6)
    total = args.payments * len(KINDS)
    described = runtime.described(celery=True)
    print(f"Storm benchmark: {args.payments} payments x 10 notifications; {described}")
    with runtime.services() as (_, base):
        payments, held, lines = prepared(args.payments)
        url = f"{base}/webhooks/payments/{settings.PAYMENTS_WEBHOOK_TOKEN}/"
        with runtime.celery():
            noop_before = noop_drain(total)
            storm = storm_drain(url, lines, total)
            noop_after = noop_drain(total)
            runtime.settle()
            calm_latency = calm(url, held)
        after = aftermath(payments, held)
    connection.close()
    drain, posting, waits = storm["drain"], storm["posting"], after["waits"]
    return {
        "server": described, "posted": storm["posted"], "drain_seconds": drain,
        "noop_drain_seconds": [noop_before, noop_after], "posting_seconds": posting,
        "drain_ratio": drain / ((noop_before + noop_after) / 2),
        "drain_ratio_judged": drain / max(posting, (noop_before + noop_after) / 2),
        "tail_seconds": storm["tail"],
        # Judged against the no-op drain of the same run, not the clock of the machine it runs on.
        "tail_ratio": storm["tail"] / ((noop_before + noop_after) / 2),
        "reads": storm["reads"], "reads_per_notification": storm["reads"] / total,
        "payments": args.payments,
        "wait_p50": runtime.percentile(waits, 0.5), "wait_p90": runtime.percentile(waits, 0.9),
        "states": after["states"],
        "calm_p50": runtime.percentile(calm_latency, 0.5),
        "calm_p95": runtime.percentile(calm_latency, 0.95),
        "mismatches": after["mismatches"],
    }  # fmt: skip


def prepared(count: int) -> tuple[list[Any], list[Any], Path]:
    """`count` payments made at the sandbox and changed there behind the shop's back, the calm
    traffic's payments (captured), and the file of the storm's notifications, shuffled."""
    clock = time.monotonic()
    methods = ["manual" if i % 2 else "automatic" for i in range(count)]
    payments = runtime.in_threads(new_payment, methods)
    runtime.in_threads(lambda pi: change_at_provider(pi[1], pi[0] // 2), enumerate(payments))
    held = runtime.in_threads(new_payment, ["manual"] * CALM_RATE * CALM_SECONDS)
    runtime.in_threads(lambda p: change_at_provider(p, 0), held)  # captured
    print(f"  payments created and changed at the sandbox in {time.monotonic() - clock:.0f} s")
    bodies = [json.dumps(notification(p, kind)) for p in payments for kind in KINDS]
    random.shuffle(bodies)
    (lines := runtime.LOG_DIR / "storm.jsonl").write_text("\n".join(bodies) + "\n")
    return payments, held, lines


def storm_drain(url: str, lines: Path, total: int) -> dict[str, Any]:
    """The storm posted by wrk until all `total` notifications are processed: wrk's figures,
    the drain's seconds, the provider reads the workers logged, the posting's and the tail's
    seconds."""
    from django.db.models import Max, Min

    from webhooks.models import WebhookEvent

    logs = {log: len(log.read_text(errors="replace")) for log in worker_logs()}
    started = time.monotonic()
    wrk = runtime.wrk_start(url, 600, 8, str(lines), "8", threads=8)
    while WebhookEvent.objects.filter(processed_at__isnull=False).count() < total:
        if time.monotonic() - started > 600:
            sys.exit("the storm did not drain in time")
        time.sleep(0.2)
    drain = time.monotonic() - started
    wrk.send_signal(signal.SIGINT)  # its threads are done; wrk itself waits out -d
    posted = runtime.wrk_result(wrk)
    reads = sum(
        log.read_text(errors="replace")[offset:].count("payments-api GET /payments/")
        for log, offset in logs.items()
    )
    # The last notification answered: its row is stored just before its 2xx.
    ends = WebhookEvent.objects.aggregate(
        Min("received_at"), Max("received_at"), Max("processed_at")
    )
    tail = (ends["processed_at__max"] - ends["received_at__max"]).total_seconds()
    posting = (ends["received_at__max"] - ends["received_at__min"]).total_seconds()
    return {"posted": posted, "drain": drain, "reads": reads, "tail": tail, "posting": posting}


def aftermath(payments: list[Any], held: list[Any]) -> dict[str, Any]:
    """The storm's notifications' waits and states, and how many payments the shop holds
    unlike the provider's."""
    from payments.models import Payment
    from payments.provider.client import get_client
    from payments.statuses import local_status
    from webhooks.models import WebhookEvent

    events = WebhookEvent.objects.exclude(provider_payment_id__in=[p.provider_id for p in held])
    times = events.filter(processed_at__isnull=False).values_list("received_at", "processed_at")
    waits = [(done - received).total_seconds() for received, done in times]
    local = dict(Payment.objects.values_list("provider_id", "status"))
    remote = {p.provider_id: get_client().get_payment(p.provider_id) for p in payments + held}
    return {
        "waits": waits,
        "states": dict(Counter(events.values_list("state", flat=True))),
        "mismatches": sum(local.get(pid) != local_status(p) for pid, p in remote.items()),
    }


def report(f: dict[str, Any]) -> tuple[str, list[list[object]]]:
    figures = [
        ["notifications answered non-2xx or lost", f"{f['posted']['errors']}"],
        ["storm drain", f"{f['drain_seconds']:.1f} s"],
        ["no-op drain before / after", " / ".join(f"{s:.1f} s" for s in f["noop_drain_seconds"])],
        ["posting: first -> last notification stored", f"{f['posting_seconds']:.1f} s"],
        ["tail: last notification answered -> all processed", f"{f['tail_seconds']:.1f} s"],
        ["provider reads", f"{f['reads']} for {f['payments']} payments"],
        ["notification -> processed, p50 / p90", f"{f['wait_p50']:.2f} s / {f['wait_p90']:.2f} s"],
        ["calm: 200 -> order updated, p50 / p95", f"{f['calm_p50']:.2f} s / {f['calm_p95']:.2f} s"],
        ["events by state", ", ".join(f"{k} {v}" for k, v in sorted(f["states"].items()))],
    ]  # fmt: skip
    checks = [
        runtime.verdict("payments unlike the provider's", f["mismatches"], "<=", 0),
        runtime.verdict("provider reads per notification", f["reads_per_notification"], "<=", 0.35),
        runtime.verdict("drain / no-op drain", f["drain_ratio"]),
        runtime.verdict("drain / longer of no-op and posting", f["drain_ratio_judged"], "<=", 1.5),
        runtime.verdict("tail: last answered -> all processed (s)", f["tail_seconds"]),
        runtime.verdict("tail / no-op drain", f["tail_ratio"], "<=", 0.5),
        runtime.verdict("calm: 200 -> order updated, p95 (s)", f["calm_p95"], "<=", 1.5),
        runtime.verdict("notification -> processed, p90 (s)", f["wait_p90"]),
    ]  # fmt: skip
    return runtime.table(["figure", "value"], figures), checks


def main(argv: list[str] | None = None) -> int:
    return runtime.main(__doc__, run, report, argv, payments={"type": int, "default": 1000})


if __name__ == "__main__":
    sys.exit(main())
