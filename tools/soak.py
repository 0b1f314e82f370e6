"""`make soak`: the demo as a new user runs it (`make demo`: the sandbox, the shop, a Celery worker
and beat, on SQLite and the embedded broker), driven for 15 minutes by shoppers, staff and extra
provider notifications. Then it prints what the run exercised and exits 1 if a process died, an
order ended wrong (tools/verdict.py), too many orders were refused or never reached a payment, or
the run did too little to say anything (tools/soak_report.py).

    .venv/bin/python -m tools.soak [--minutes 15] [--shop-port 8100] [--sandbox-port 8101]
        [--max-refused 0.02] [--max-unpaid 0.02]

It runs the demo in a folder of its own (`var/soak/`, emptied first) on its own ports, so a demo
already running is left alone; the demo's output is in `var/soak/demo.log`.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests

from tools.admin_sign_in import admin_sign_in
from tools.shopper import (
    CARDS,
    CHALLENGE_CODES,
    PUBLIC_KEY,
    OrderNotPlaced,
    Shopper,
    answer_challenge,
    card_token,
    challenge_outcome,
)
from tools.soak_report import MAX_REFUSED_SHARE, MAX_UNPAID_SHARE, Run, Thresholds, judge, summary

ROOT = Path(__file__).resolve().parent.parent
ADMIN = ("admin", "tienda-demo-2026")
SECRET = (PUBLIC_KEY, "sk_sandbox_demo")  # the control endpoints' Basic credentials
WEBHOOK_TOKEN = "demo-webhook-token-9c1e4d7f2a"
PACE = 1.0  # seconds between two shoppers
PROCESSES = {"sandbox": b"runsandbox", "shop": b"runserver", "worker": b"worker", "beat": b"beat"}


def demo_processes(shop_var_dir: str) -> dict[int, bytes]:
    """The processes of a demo started with this SHOP_VAR_DIR, by pid, with their command line;
    found by their environment (they run in sessions of their own), not counting the wrapper
    that starts each again (bin/keep-running)."""
    wanted = f"SHOP_VAR_DIR={shop_var_dir}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
    return {pid: command for pid, command in found.items() if b"keep-running" not in command}


class Demo:
    def __init__(self, folder: Path, shop_port: int, sandbox_port: int) -> None:
        self.folder, self.log = folder, folder / "demo.log"
        self.shop = f"http://127.0.0.1:{shop_port}"
        self.sandbox = f"http://127.0.0.1:{sandbox_port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_"))},
            "SHOP_PORT": str(shop_port),
            "SANDBOX_PORT": str(sandbox_port),
            "SHOP_VAR_DIR": str(folder / "shop"),
            "SANDBOX_VAR_DIR": str(folder / "sandbox"),
            # Many shoppers, all from this machine's one address: its limits are raised for this
            # demo only (each shopper is a browser session of its own, whose limits keep the
            # shop's defaults). The same code counts them; only the numbers differ.
            "SHOP_ORDERS_PER_ADDRESS": "100000/h",
            "SHOP_PAY_ATTEMPTS_PER_ADDRESS": "100000/10m",
        }
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(  # noqa: S603 (make, from PATH)
                [shutil.which("make") or "make", "demo"], cwd=ROOT, env=self.env,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if all(self.alive().values()) and b" ready." in self.log.read_bytes():
                return
            time.sleep(1)
        raise SystemExit(f"the demo did not start; see {self.log}")

    def alive(self) -> dict[str, bool]:
        """Whether each process of the demo is running."""
        commands = demo_processes(self.env["SHOP_VAR_DIR"]).values()
        return {name: any(part in c for c in commands) for name, part in PROCESSES.items()}

    def restarts(self) -> int:
        return self.log.read_bytes().count(b"keep-running: ")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


def buy(demo: Demo, run: Run, placed: list[str], slug: str, card: str) -> None:
    """A shopper orders one item and pays it (answers a 3-D Secure challenge, passing or failing
    it, and asks for the outcome as the payment page does); what happened goes to `run`, the
    order's reference, once placed, to `placed`."""
    shopper = Shopper(demo.shop)
    run.orders_tried += 1
    try:
        reference = shopper.place_order(slug)
    except OrderNotPlaced as exc:
        run.orders_refused[exc.status] += 1
        return
    except requests.HTTPError as exc:
        run.orders_refused[exc.response.status_code] += 1
        return
    except requests.RequestException:
        run.orders_unanswered += 1
        raise
    run.orders_created += 1
    placed.append(reference)
    answer = shopper.pay(reference, card_token(demo.sandbox, card))
    if answer.status_code != 200:
        run.attempts_refused[answer.status_code] += 1
        return
    outcome = answer.json()
    result = str(outcome.get("result"))
    if result == "pending" and outcome.get("three_ds_url"):
        code = answer_challenge(outcome["three_ds_url"], random.Random())
        result = challenge_outcome(shopper, reference, str(outcome.get("payment_id")))
        if result not in ("undecided", CHALLENGE_CODES[code]):
            run.errors.append(f"{reference}: challenge with {code} {result}")
        result = f"challenge {result}"
    run.payments[{"rejected": "declined"}.get(result, result)] += 1


class Staff:
    def __init__(self, demo: Demo) -> None:
        self.demo, self.http = demo, requests.Session()
        if not admin_sign_in(self.http, demo.shop, *ADMIN):
            raise RuntimeError("the demo admin could not sign in (password and code)")

    def refund(self, payment_pk: int, amount: str) -> bool:
        url = f"{self.demo.shop}/admin/payments/payment/{payment_pk}/refund/"
        if self.http.get(url, timeout=30).status_code != 200:
            return False
        done = self.http.post(url, {"amount": amount, "reason": "soak",
                                    "csrfmiddlewaretoken": self.http.cookies.get("csrftoken", "")},
                              timeout=60)  # fmt: skip
        return done.status_code == 200 and done.url.rstrip("/").endswith("/change")


def drive(demo: Demo, minutes: float, run: Run, placed: list[str]) -> None:
    from checkout.models import Product
    from payments.models import Payment
    from payments.statuses import PaymentStatus

    products = re.findall(r'href="/productos/([^/"]+)/"', requests.get(demo.shop, timeout=30).text)
    # The shelves are stocked for the whole run (unpaid orders hold their items).
    Product.objects.update(stock=100_000)
    staff, deadline, checked = Staff(demo), time.monotonic() + minutes * 60, 0.0
    numbers = [card for card, weight in CARDS for _ in range(weight)]
    while time.monotonic() < deadline:
        try:
            buy(demo, run, placed, random.choice(products), random.choice(numbers))
            approved = list(
                Payment.objects.filter(
                    status=PaymentStatus.APPROVED, refunded_amount=0
                ).values_list("pk", "provider_id", "amount")
            )
            if approved and random.random() < 0.3:
                pk, _, amount = random.choice(approved)
                run.refunds_asked += staff.refund(pk, random.choice(["50.00", str(amount)]))
            for _, provider_id, _ in random.sample(approved, min(3, len(approved))):
                notified = requests.post(
                    f"{demo.shop}/webhooks/payments/{WEBHOOK_TOKEN}/", timeout=30,
                    json={"id": provider_id, "origin": "payments-api", "event_type": "UPDATE"},
                )  # fmt: skip
                if notified.ok:
                    run.notifications += 1
                else:
                    run.notifications_refused[notified.status_code] += 1
        except (requests.RequestException, ValueError) as exc:
            run.errors.append(f"{time.strftime('%H:%M:%S')} {type(exc).__name__}: {exc}")
        time.sleep(PACE)
        if time.monotonic() - checked > 30:
            checked = time.monotonic()
            for name, up in demo.alive().items():
                run.dead[name] = run.dead.get(name, 0) + (not up)
            print(f"{time.strftime('%H:%M:%S')} orders {run.orders_tried} tried, "
                  f"{run.orders_created} created, refused {dict(run.orders_refused)}; "
                  f"payments {dict(run.payments)}", flush=True)  # fmt: skip


def provider_payments(sandbox: str) -> list[dict[str, Any]]:
    """Every payment the sandbox holds (its control endpoint gives 500 at a time)."""
    payments: list[dict[str, Any]] = []
    while True:
        page = requests.get(
            f"{sandbox}/_sandbox/payments", params={"offset": len(payments)}, auth=SECRET,
            timeout=60,
        ).json(parse_float=str)  # fmt: skip
        payments += page
        if len(page) < 500:
            return payments


def settle(demo: Demo) -> tuple[Any, list[dict[str, Any]]]:
    """Wait (4 minutes at most) for the shop to hold what the provider holds; the verdict and
    the provider's payments."""
    from tools.verdict import verdict

    deadline = time.monotonic() + 240
    while True:
        remote = provider_payments(demo.sandbox)
        found = verdict(remote)
        if found.clean or time.monotonic() > deadline:
            return found, remote
        time.sleep(5)


def record_outcome(run: Run, placed: list[str], found: Any, remote: list[dict[str, Any]]) -> None:
    """What the settled shop and provider hold of the run's orders, into `run`."""
    from payments.models import Payment, PaymentEvent, PaymentEventKind

    ours = set(placed)
    run.provider_payments = sum(p.get("external_reference") in ours for p in remote)
    paid = set(
        Payment.objects.exclude(provider_id=None).values_list("external_reference", flat=True)
    )
    run.orders_unpaid = len(ours - paid)
    ledger = PaymentEvent.objects.filter(payment__external_reference__in=ours)
    run.captures = ledger.filter(kind=PaymentEventKind.CAPTURED).count()
    run.cancels = ledger.filter(kind=PaymentEventKind.CANCELLED).count()
    run.refunds = ledger.filter(kind=PaymentEventKind.REFUNDED).count()
    unsettled = [f"{state}: {n}" for state, n in found.unsettled_events.items()]
    wrong = {
        "payments unequal": found.mismatches,
        "notifications unsettled": unsettled,
        "attempts unresolved": found.unresolved,
        "orders charged twice": found.double_charges,
        "orders in the wrong status": found.wrong_orders,
    }
    run.wrong = {kind: examples for kind, examples in wrong.items() if examples}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--shop-port", type=int, default=8100)
    parser.add_argument("--sandbox-port", type=int, default=8101)
    parser.add_argument(
        "--max-refused",
        type=float,
        default=MAX_REFUSED_SHARE,
        help="share of the orders tried that may be refused (default %(default)s)",
    )
    parser.add_argument("--max-unpaid", type=float, default=MAX_UNPAID_SHARE,
                        help="share of the orders placed that may reach no payment at the "
                        "provider (default %(default)s)")  # fmt: skip
    args = parser.parse_args()
    folder = ROOT / "var" / "soak"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    began = time.monotonic()
    demo = Demo(folder, args.shop_port, args.sandbox_port)
    demo.start()
    # This process reads the demo's own database (SQLite in its folder) to check it.
    os.environ.update({"SHOP_VAR_DIR": demo.env["SHOP_VAR_DIR"], "DJANGO_SETTINGS_MODULE":
                       "config.settings.local"})  # fmt: skip
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    import django

    django.setup()
    run, placed = Run(minutes=args.minutes), []
    try:
        drive(demo, args.minutes, run, placed)
        found, remote = settle(demo)
        alive = demo.alive()
    finally:
        demo.stop()
    record_outcome(run, placed, found, remote)
    for name, up in alive.items():
        run.dead[name] = run.dead.get(name, 0) + (not up)
    run.restarts = demo.restarts()
    run.seconds = time.monotonic() - began
    failures = judge(run, Thresholds(args.max_refused, args.max_unpaid))
    print("\n" + summary(run, failures), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
