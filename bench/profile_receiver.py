"""Where a notification's time goes: CPU per request of the receiver and of the bare view
through Django's test client (no HTTP server, no load generator), the receiver's parts timed
one by one, and a cProfile of the receiver.

    python -m bench.profile_receiver [--requests 1000] [--profile 40]

CPU time (`time.process_time`) is this process's own: it leaves out PostgreSQL's and Redis's
work, and it hardly moves when other processes load the machine. No worker runs; the rows and
tasks made here are removed at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
import uuid
from collections.abc import Callable

from bench import runtime


def body() -> str:
    return json_body(str(uuid.uuid4()))


def json_body(payment_id: str) -> str:
    return f'{{"id": "{payment_id}", "origin": "payments-api", "event_type": "UPDATE"}}'


def measure(label: str, count: int, call: Callable[[], object]) -> tuple[float, float]:
    for _ in range(min(50, count)):
        call()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(count):
        call()
    cpu_ms = (time.process_time() - cpu) / count * 1000
    wall_ms = (time.perf_counter() - wall) / count * 1000
    print(f"  {label:44s} cpu {cpu_ms:6.3f} ms   wall {wall_ms:6.3f} ms")
    return cpu_ms, wall_ms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="per measurement (1000)")
    parser.add_argument("--profile", type=int, default=40, help="profile lines shown (40)")
    args = parser.parse_args(argv)

    runtime.setup_django()
    runtime.check_redis()
    from celery import current_app
    from django.conf import settings
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client

    from webhooks.models import WebhookEvent
    from webhooks.queue import PROCESS_TASK, enqueue_processing

    client = Client(SERVER_NAME="127.0.0.1")
    receiver = f"/webhooks/payments/{settings.PAYMENTS_WEBHOOK_TOKEN}/"
    same = json_body("0f0e0d0c-0b0a-4909-8807-060504030201")
    count = args.requests
    print(f"Per request, {count} requests each (load {runtime.load_average()}):")
    try:
        bare_cpu, _ = measure(
            "bare view (test client)",
            count,
            lambda: client.post("/bench/bare/", body(), content_type="application/json"),
        )
        receiver_cpu, _ = measure(
            "receiver, a new payment id each",
            count,
            lambda: client.post(receiver, body(), content_type="application/json"),
        )
        measure(
            "receiver, one payment id (task already queued)",
            count,
            lambda: client.post(receiver, same, content_type="application/json"),
        )
        print("Parts of the receiver:")
        measure(
            "INSERT of a WebhookEvent (ORM create)",
            count,
            lambda: WebhookEvent.objects.create(
                provider_payment_id=str(uuid.uuid4()), event_type="UPDATE", remote_addr="127.0.0.1"
            ),
        )
        measure(
            "queued-marker (cache.add)",
            count,
            lambda: cache.add(f"webhooks:queued:{uuid.uuid4()}", 1, timeout=60),
        )
        measure(
            "send_task",
            count,
            lambda: current_app.send_task(PROCESS_TASK, args=(str(uuid.uuid4()),), retry=False),
        )
        measure(
            "enqueue_processing, a new payment id",
            count,
            lambda: enqueue_processing(str(uuid.uuid4())),
        )
        print(f"CPU ratio bare/receiver (new ids): {bare_cpu / receiver_cpu:.2f}")

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(count):
            client.post(receiver, body(), content_type="application/json")
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(args.profile)
        print(f"cProfile of {count} receiver requests (cumulative):")
        print(out.getvalue())
    finally:
        runtime.purge_broker()
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE webhooks_webhookevent")


if __name__ == "__main__":
    main()
