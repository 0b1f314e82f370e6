"""Notification storm: 10 notifications for each of 1,000 payments, shuffled, posted to the
shop's receiver while a Celery worker processes them against a live sandbox.

    python -m bench.storm [--payments 1000] [--per-payment 10] [--concurrency 16] [--strict] ...

1. A sandbox of its own (bench/sandbox_server.py: `runsandbox` plus a request counter) on a
   fresh PostgreSQL database `<shop database>_sandbox`, with the demo keys.
2. 1,000 orders in the shop database and one payment for each through the shop's own service
   (`payment_create`, card tokens from the sandbox): half manual-capture authorizations, half
   automatic approvals, without `webhook_url`, so the sandbox delivers no notification itself.
3. At the sandbox, behind the shop's back: a third of the authorizations captured and a third
   cancelled; a quarter of the approvals fully refunded (voided the same day: cancelled) and a
   quarter partly refunded. The shop still holds the old statuses.
4. gunicorn (the same configuration as bench/receiver.py) and a Celery worker
   (`--pool=threads --concurrency=16`: the tasks wait on HTTP and the database, and threads cost
   no extra memory on a 2-core machine; the Procfile's worker uses the threads pool too).
5. Baseline: 10,000 no-op tasks (bench.tasks.noop_task) sent to the same worker; the time from
   the first send until the worker has run them all. Measured before and after the storm.
6. Storm: wrk posts the 10,000 notifications (bench/storm.lua, one connection per wrk thread).
   Drain time: from the first POST until every WebhookEvent is processed, unmatched or failed.
   Provider reads: `GET /payments/{id}` requests counted by the sandbox during the storm.
7. Every local payment's status is compared with the sandbox's final status.

Targets: provider reads per notification <= 0.15; drain time <= 1.5 x the no-op drain time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench import runtime

STORM_LUA = runtime.BENCH_DIR / "storm.lua"
PUBLIC_KEY = "pk_sandbox_demo"
SECRET_KEY = "sk_sandbox_demo"
VISA = "4242424242424242"
CALLS_TARGET = 0.15  # provider reads per notification
DRAIN_TARGET = 1.5  # storm drain time / no-op drain time
PROVIDER_READ = "GET /payments/{id}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--payments", type=int, default=1000, help="payments (1000)")
    parser.add_argument("--per-payment", type=int, default=10, help="notifications each (10)")
    parser.add_argument(
        "--pool", choices=("threads", "prefork"), default="threads", help="Celery pool (threads)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=16, help="Celery worker threads or processes (16)"
    )
    parser.add_argument("--connections", type=int, default=8, help="wrk connections (8)")
    parser.add_argument("--setup-threads", type=int, default=8, help="to create payments (8)")
    parser.add_argument("--seed", type=int, default=6, help="shuffle and mix seed (6)")
    parser.add_argument("--timeout", type=float, default=300, help="per drain, seconds (300)")
    runtime.Gunicorn.add_arguments(parser)
    return parser.parse_args(argv)


# --- The sandbox ------------------------------------------------------------------------------


class Sandbox:
    """The sandbox's API with the demo secret key; one HTTP session per thread."""

    def __init__(self, base_url: str) -> None:
        import base64

        self.base_url = base_url
        token = base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
        self._local = threading.local()

    def _session(self) -> Any:
        import requests

        if not hasattr(self._local, "session"):
            self._local.session = requests.Session()
        return self._local.session

    def call(self, method: str, path: str, body: object = None) -> Any:
        import simplejson

        response = self._session().request(
            method,
            f"{self.base_url}{path}",
            data=None if body is None else simplejson.dumps(body, use_decimal=True),
            headers=self.headers,
            timeout=30,
        )
        if not 200 <= response.status_code < 300:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return simplejson.loads(response.text, use_decimal=True)

    def counts(self) -> Counter[str]:
        return Counter(self.call("GET", "/_bench/counts"))


def sandbox_env(port: int, database_url: str) -> dict[str, str]:
    var_dir = runtime.LOG_DIR / "sandbox"
    var_dir.mkdir(parents=True, exist_ok=True)
    return {
        "SANDBOX_DATABASE_URL": database_url,
        "SANDBOX_PUBLIC_KEY": PUBLIC_KEY,
        "SANDBOX_SECRET_KEY": SECRET_KEY,
        "SANDBOX_VAR_DIR": str(var_dir),
        "SANDBOX_PORT": str(port),
        "SANDBOX_LOG_LEVEL": "WARNING",
    }


# --- Setting the scene ------------------------------------------------------------------------


def reset_shop() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE webhooks_webhookevent, payments_payment, checkout_order "
            "RESTART IDENTITY CASCADE"
        )


def create_orders(count: int, rng: random.Random) -> list[Any]:
    from checkout.models import Order, new_reference

    references: set[str] = set()
    while len(references) < count:
        references.add(new_reference())
    orders = [
        Order(
            reference=reference,
            first_name="Ana",
            last_name="Pérez",
            email="ana@example.com",
            phone="5512345678",
            street="Avenida Juárez",
            number="12",
            colony="Centro",
            city="Puebla",
            state="Puebla",
            postal_code="72000",
            total=Decimal(rng.randrange(10_000, 200_000)) / 100,
        )
        for reference in sorted(references)
    ]
    return Order.objects.bulk_create(orders)


def in_threads(threads: int, work: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """`work` over `items` in a pool; each thread's database connection is closed afterwards."""
    from django.db import connection

    def run(item: Any) -> Any:
        try:
            return work(item)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(run, items))


def create_payment(order: Any, capture_method: str) -> Any:
    import uuid

    from payments.client import get_client
    from payments.services import payment_create

    token = get_client().create_card_token(
        number=VISA, exp_month="12", exp_year="2031", cvv="123", holder_name="Ana Pérez"
    )
    return payment_create(
        external_reference=order.reference,
        attempt_key=uuid.uuid4().hex,
        amount=order.total,
        currency="MXN",
        description=f"Pedido {order.reference}",
        card_token=token.id,
        capture_method=capture_method,
        customer={"first_name": "Ana", "last_name": "Pérez", "email": "ana@example.com"},
        prevention_data={"device_finger_print_token": "bench"},
        return_url="http://127.0.0.1:8000/checkout/return",
        webhook_url="",
    )


def mutation_for(payment: Any, index: int) -> str:
    """What happens at the sandbox behind the shop's back (by the payment's place in the mix)."""
    if payment.status == "authorized":
        return ("capture", "cancel", "none")[index % 3]
    if payment.status == "approved":
        return ("refund", "partial refund", "none", "none")[index % 4]
    return "none"


def mutate(sandbox: Sandbox, payment: Any, change: str) -> None:
    path = f"/payments/{payment.provider_id}"
    if change == "capture":
        sandbox.call("PATCH", path, {"status": "approved", "paid_amount": payment.amount})
    elif change == "cancel":
        sandbox.call("PATCH", path, {"status": "cancelled"})
    elif change == "refund":
        sandbox.call("POST", "/refunds", {"payment_id": payment.provider_id, "reason": "bench"})
    elif change == "partial refund":
        sandbox.call(
            "POST",
            "/refunds",
            {"payment_id": payment.provider_id, "amount": Decimal("10.00"), "reason": "bench"},
        )


# --- Drains -----------------------------------------------------------------------------------


@dataclass
class Drain:
    seconds: float
    ingest_seconds: float  # until the last task was sent, or the last notification stored
    completed: int
    expected: int

    @property
    def complete(self) -> bool:
        return self.completed >= self.expected


def noop_drain(count: int, timeout: float) -> Drain:
    """Send `count` no-op tasks and time them until the worker has run every one."""
    from django.core.cache import cache

    from bench.tasks import NOOP_COUNTER, NOOP_TASK
    from config.celery import app

    cache.set(NOOP_COUNTER, 0, timeout=None)
    started = time.monotonic()
    with app.producer_or_acquire() as producer:
        for index in range(count):
            app.send_task(NOOP_TASK, args=(index,), producer=producer)
    sent = time.monotonic() - started
    done = 0
    deadline = started + timeout
    while time.monotonic() < deadline:
        done = int(cache.get(NOOP_COUNTER) or 0)
        if done >= count:
            break
        time.sleep(0.05)
    return Drain(time.monotonic() - started, sent, done, count)


def event_counts() -> tuple[int, int]:
    """(stored, terminal) WebhookEvent rows."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE state = ANY(%s)) FROM webhooks_webhookevent",
            [list(runtime.TERMINAL_STATES)],
        )
        stored, terminal = cursor.fetchone()
    return int(stored), int(terminal)


def processing_latency() -> dict[str, float]:
    """Seconds from a notification's arrival to the end of its processing (median, p90)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT percentile_cont(ARRAY[0.5, 0.9]) WITHIN GROUP "
            "(ORDER BY extract(epoch FROM processed_at - received_at)) "
            "FROM webhooks_webhookevent WHERE processed_at IS NOT NULL"
        )
        median, p90 = cursor.fetchone()[0] or (0.0, 0.0)
    return {"median": float(median), "p90": float(p90)}


def storm_drain(
    url: str, notifications: Path, count: int, connections: int, timeout: float
) -> tuple[Drain, runtime.WrkResult | None]:
    """Post every notification with wrk; time until every stored event is terminal."""
    command = runtime.wrk_command(
        url,
        script=STORM_LUA,
        connections=connections,
        threads=connections,
        seconds=timeout,
        args=[str(notifications), str(connections)],
    )
    started = time.monotonic()
    wrk = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ingest = None
    stored = terminal = 0
    progress_at, last = started, (0, 0)
    try:
        while time.monotonic() - started < timeout:
            stored, terminal = event_counts()
            now = time.monotonic()
            if ingest is None and stored >= count:
                ingest = now - started
                wrk.send_signal(signal.SIGINT)
            if stored >= count and terminal >= stored:
                break
            if (stored, terminal) != last:
                progress_at, last = now, (stored, terminal)
            elif now - progress_at > 30:
                print(f"  no progress for 30 s: {stored} stored, {terminal} terminal")
                break
            if ingest is None and wrk.poll() is not None:
                ingest = now - started  # wrk ended (its duration) before all were stored
            time.sleep(0.2)
        seconds = time.monotonic() - started
    finally:
        if wrk.poll() is None:
            wrk.send_signal(signal.SIGINT)
        try:
            output, _ = wrk.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            wrk.kill()
            output, _ = wrk.communicate(timeout=15)
    try:
        result = runtime.parse_wrk(output)
    except RuntimeError:
        print(output)
        result = None
    return Drain(seconds, ingest or seconds, terminal, count), result


def cpu_spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before[name], 1) for name in after}


# --- The run ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    runtime.configure()
    sandbox_port = runtime.free_port()
    # The shop (this process, gunicorn, the worker) talks to this run's sandbox.
    os.environ["PAYMENTS_API_BASE_URL"] = f"http://127.0.0.1:{sandbox_port}"
    os.environ["PAYMENTS_PUBLIC_KEY"] = PUBLIC_KEY
    os.environ["PAYMENTS_SECRET_KEY"] = SECRET_KEY
    os.environ.pop("PAYMENTS_ACCESS_TOKEN", None)
    runtime.setup_django()
    runtime.check_redis()
    runtime.wrk_binary()
    from django.conf import settings
    from django.db import connection

    from payments.models import Payment
    from payments.statuses import local_status
    from payments.types import ProviderPayment
    from webhooks.models import WebhookEvent

    rng = random.Random(args.seed)
    shop_url = os.environ["DATABASE_URL"]
    sandbox_url = runtime.database_url_named(shop_url, f"{runtime.database_name(shop_url)}_sandbox")
    runtime.ensure_database(sandbox_url, fresh=True)
    reset_shop()
    runtime.purge_broker()
    config = runtime.Gunicorn.from_arguments(args)
    total = args.payments * args.per_payment
    load_before = runtime.load_average()
    print(
        f"Storm benchmark: {args.payments} payments x {args.per_payment} notifications; "
        f"{config.describe()}; worker --pool={args.pool} --concurrency={args.concurrency}; "
        f"load {load_before}"
    )
    sandbox_command = [sys.executable, "-m", "bench.sandbox_server", "--port", str(sandbox_port)]
    # As many sandbox threads as worker slots: the provider should not be what queues the reads.
    sandbox_command += ["--threads", str(max(8, args.concurrency))]
    with runtime.service("sandbox", sandbox_command, sandbox_env(sandbox_port, sandbox_url)) as sb:
        runtime.wait_for(
            "the sandbox", lambda: runtime.http_ok(f"{settings.PAYMENTS_API_BASE_URL}/healthz"), sb
        )
        sandbox = Sandbox(settings.PAYMENTS_API_BASE_URL)

        clock = time.monotonic()
        orders = create_orders(args.payments, rng)
        methods = ["manual" if i % 2 else "automatic" for i in range(len(orders))]
        payments = in_threads(
            args.setup_threads,
            lambda pair: create_payment(*pair),
            zip(orders, methods, strict=True),
        )
        created = Counter(str(p.status) for p in payments)
        print(f"  {len(payments)} payments created in {time.monotonic() - clock:.0f} s: {created}")

        clock = time.monotonic()
        changes = [mutation_for(p, i // 2) for i, p in enumerate(payments)]
        in_threads(
            args.setup_threads,
            lambda pair: mutate(sandbox, *pair),
            zip(payments, changes, strict=True),
        )
        mutated = Counter(changes)
        print(f"  mutated at the sandbox in {time.monotonic() - clock:.0f} s: {mutated}")

        bodies = [
            json.dumps(
                {
                    "id": p.provider_id,
                    "origin": "payments-api",
                    "event_type": "INSERT" if n == 0 else "UPDATE",
                }
            )
            for p in payments
            for n in range(args.per_payment)
        ]
        rng.shuffle(bodies)
        notifications = runtime.LOG_DIR / "storm-notifications.jsonl"
        notifications.write_text("\n".join(bodies) + "\n")

        web_port = runtime.free_port()
        receiver_url = f"http://127.0.0.1:{web_port}/webhooks/payments/"
        receiver_url += f"{settings.PAYMENTS_WEBHOOK_TOKEN}/"
        with (
            runtime.gunicorn(config, web_port) as web,
            runtime.celery_worker(concurrency=args.concurrency, pool=args.pool) as worker,
        ):
            services = {"gunicorn": web, "celery worker": worker, "sandbox": sb}
            start = runtime.cpu_usage(services)
            before = noop_drain(total, args.timeout)
            noop_cpu = cpu_spent(start, start := runtime.cpu_usage(services))
            print(
                f"  no-op drain (before): {before.seconds:.1f} s, "
                f"sent in {before.ingest_seconds:.1f} s"
            )
            reads_before = sandbox.counts()[PROVIDER_READ]
            log_offset = len(worker.log())
            storm, wrk = storm_drain(
                receiver_url, notifications, total, args.connections, args.timeout
            )
            storm_cpu = cpu_spent(start, runtime.cpu_usage(services))
            reads = sandbox.counts()[PROVIDER_READ] - reads_before
            storm_log = worker.log()[log_offset:]
            print(f"  storm drain: {storm.seconds:.1f} s, stored in {storm.ingest_seconds:.1f} s")
            after = noop_drain(total, args.timeout)
            print(f"  no-op drain (after): {after.seconds:.1f} s")

        states = Counter(WebhookEvent.objects.values_list("state", flat=True))
        latency = processing_latency()
        local = dict(Payment.objects.values_list("provider_id", "status"))

        def remote_status(payment: Any) -> str:
            return local_status(
                ProviderPayment.from_json(sandbox.call("GET", f"/payments/{payment.provider_id}"))
            )

        remote = dict(
            zip(
                [p.provider_id for p in payments],
                in_threads(args.setup_threads, remote_status, payments),
                strict=True,
            )
        )
    connection.close()
    runtime.purge_broker()
    mismatches = {
        pid: (local.get(pid), status) for pid, status in remote.items() if local.get(pid) != status
    }
    tasks = Counter(
        re.findall(r"webhook_process_task\[.*?\] succeeded in .*?s: '(\w+)'", storm_log)
    )
    client_reads = len(re.findall(r"payments-api GET /payments/", storm_log))
    per_payment = Counter(
        Counter(re.findall(r"payments-api GET /payments/([0-9a-f-]{36}) ", storm_log)).values()
    )
    baseline = (before.seconds + after.seconds) / 2
    drain_ratio = storm.seconds / baseline if baseline else float("inf")
    per_notification = reads / total if total else 0.0
    drained = storm.complete and before.complete and after.complete
    return {
        "server": config.describe(),
        "worker": f"celery -A config worker --pool={args.pool} --concurrency={args.concurrency}",
        "payments": len(payments),
        "created": dict(created),
        "mutations": dict(mutated),
        "notifications": total,
        "stored_seconds": storm.ingest_seconds,
        "wrk": None if wrk is None else vars(wrk),
        "drain_seconds": storm.seconds,
        "noop_drain_seconds": [before.seconds, after.seconds],
        "noop_send_seconds": [before.ingest_seconds, after.ingest_seconds],
        "drain_ratio": drain_ratio,
        "drained": drained,
        "drain_pass": drained and drain_ratio <= DRAIN_TARGET,
        "provider_reads": reads,
        "provider_reads_worker_log": client_reads,
        "reads_per_notification": per_notification,
        "reads_pass": storm.complete and per_notification <= CALLS_TARGET,
        "tasks": dict(tasks),
        "reads_per_payment": dict(sorted(per_payment.items())),
        "latency_seconds": latency,
        "cpu_seconds_storm": storm_cpu,
        "cpu_seconds_noop_before": noop_cpu,
        "states": dict(states),
        "status_matches": len(remote) - len(mismatches),
        "status_mismatches": {k: list(v) for k, v in list(mismatches.items())[:20]},
        "status_pass": not mismatches and len(remote) == args.payments,
        "load_before": load_before,
        "load_after": runtime.load_average(),
    }


def _reads(counts: dict[Any, int]) -> str:
    return ", ".join(f"{reads} reads: {payments}" for reads, payments in counts.items())


def _cpu(spent: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.1f}" for name, seconds in spent.items())


def report(f: dict[str, Any]) -> str:
    wrk = f["wrk"] or {}
    non2xx = wrk.get("non2xx", "?")
    socket_errors = wrk.get("socket_errors", "?")
    stored_rate = f["notifications"] / f["stored_seconds"] if f["stored_seconds"] else 0
    noop = f["noop_drain_seconds"]
    reads = f"{f['provider_reads']}  (worker log: {f['provider_reads_worker_log']})"
    rows = [
        ["payments (local and at the sandbox)", f"{f['payments']}  {f['created']}", ""],
        ["changed at the sandbox only", str(f["mutations"]), ""],
        [
            "notifications posted (shuffled)",
            f"{f['notifications']}  (requests {wrk.get('requests', '?')}: non-2xx {non2xx}, "
            f"socket errors {socket_errors}, each sent again)",
            "",
        ],
        ["time to store them all", f"{f['stored_seconds']:.1f} s ({stored_rate:.0f} req/s)", ""],
        ["drain time (first POST -> all terminal)", f"{f['drain_seconds']:.1f} s", ""],
        [
            f"no-op drain time, {f['notifications']} tasks (before/after)",
            f"{noop[0]:.1f} s / {noop[1]:.1f} s",
            "",
        ],
        [
            "drain / no-op drain (mean)",
            f"{f['drain_ratio']:.2f}  (target <= {DRAIN_TARGET})",
            runtime.verdict(f["drain_pass"]),
        ],
        ["provider reads (sandbox count)", reads, ""],
        [
            "provider reads per notification",
            f"{f['reads_per_notification']:.3f}  (target <= {CALLS_TARGET})",
            runtime.verdict(f["reads_pass"]),
        ],
        ["processing tasks by outcome", str(f["tasks"]), ""],
        ["payments by number of reads (worker log)", _reads(f["reads_per_payment"]), ""],
        [
            "notification -> processed, median / p90",
            f"{f['latency_seconds']['median']:.1f} s / {f['latency_seconds']['p90']:.1f} s",
            "",
        ],
        ["CPU seconds during the storm", _cpu(f["cpu_seconds_storm"]), ""],
        ["CPU seconds during the no-op drain", _cpu(f["cpu_seconds_noop_before"]), ""],
        ["webhook events by state", str(f["states"]), ""],
        [
            "local status == sandbox status",
            f"{f['status_matches']}/{f['payments']}",
            runtime.verdict(f["status_pass"]),
        ],
    ]
    lines = [
        "",
        f"Notification storm — {f['server']}; {f['worker']}",
        runtime.table(rows, ["figure", "value", "result"]),
    ]
    if f["status_mismatches"]:
        lines.append(f"mismatches (local, sandbox), first 20: {f['status_mismatches']}")
    lines.append(f"load average before {f['load_before']}; after {f['load_after']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    figures = run(args)
    print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    missed = not (figures["drain_pass"] and figures["reads_pass"] and figures["status_pass"])
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
