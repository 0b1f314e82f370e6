"""A provider brownout must not stop the shop: while the provider takes 12 s to create each
payment and shoppers pay at once, the storefront and the webhook receiver keep their pace, and
every shopper learns the outcome of their payment, which is never taken twice.

Everything runs as shipped: the shop under gunicorn (`config/gunicorn.py`), the Procfile's three
Celery workers (provider writes, provider reads, the shop's own) and beat, against a live sandbox
of its own, on a database and a Redis database emptied first. Shoppers go through the
storefront over HTTP: the product page, the cart, the order form (with its CSRF token), a card
token made at the sandbox with the public key, then the pay attempt, and the status endpoint
polled as the payment page does (every 0.5 s at first, backing off to 3 s) until the outcome
is final.

1. Baseline: the home page and the webhook receiver (valid notifications) under closed-loop load,
   4 connections each, the sandbox at its normal speed.
2. Calm traffic: every sandbox call takes 300 ms; 20 shoppers pay, two at a time; click ->
   final outcome.
3. Brownout: `POST /payments` takes 12 s at the sandbox; 24 shoppers click "pay" at once while
   the same load runs, then 64. The load's throughput and slowest request against the
   baseline, errors, who got a final outcome, and the orders with two payments taken.
4. The peer: the same, through a pay attempt that calls the provider inside the request (the
   pattern most Django integrations use, bench/inline_peer.py). Its rows never fail `--strict`.

    python -m bench.brownout [--shoppers 24,64] [--strict] [--json PATH]
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests

from bench import runtime
from tools import soak

FINAL = ("approved", "authorized", "rejected", "failed")
PAID = ("approved", "authorized")
CARD = "4242424242424242"  # approved (authorized with manual capture)
# Seconds between two questions of a shopper's page about its payment (static/js/payment.js).
POLL_EVERY = (0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 3.0)
LOAD_CONNECTIONS = 4  # home-page visitors, and notification senders, each a closed loop
# A load request unanswered this long is a timeout, counted as an error and as this slow.
LOAD_TIMEOUT = 60
NOTIFICATIONS_PER_PAYMENT = 3  # as bench.receiver: an INSERT, an UPDATE, one duplicate
QUEUES = ("provider_writes", "provider_reads", "shop")
CALM_SHOPPERS, CALM_CONCURRENCY, CALM_LATENCY_MS = 20, 2, 300
SANDBOX_THREADS = 32  # a provider serves many at once; the sandbox's default 8 would be its limit
# Targets.
MIN_RATIO = 0.8  # the load's throughput during the brownout, against the baseline
MAX_LATENCY_S = 2.0  # its slowest request
CALM_MARGIN_S = 1.0  # click -> final outcome p95, above the provider's latency
ROWS = {"shop": "checkout:pay_attempt", "peer": "bench_inline_pay"}


# --- Shoppers ---------------------------------------------------------------------------------


@dataclass
class Payment:
    """What one shopper saw of their payment."""

    reference: str
    result: str = ""  # the last result read
    answer: int = 0  # the pay attempt's status code (0: no answer)
    answered: float = 0.0  # seconds from the click to the attempt's answer
    final: float | None = None  # seconds from the click to a final result, None if none came
    polls: int = 0
    errors: list[str] = field(default_factory=list)


_addresses = itertools.count(1)


class Shopper(soak.Shopper):
    """A shopper's browser as plain HTTP (the soak's walk through the storefront), from an
    address of its own (behind the proxy, as docs/deployment.md runs the shop: the per-address
    limits count shoppers, not the bench)."""

    def __init__(self, shop: str, sandbox: str) -> None:
        super().__init__(shop)
        self.sandbox = sandbox
        n = next(_addresses)
        self.http.headers["X-Forwarded-For"] = f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"
        self.card_token = ""

    def place_order(self, slug: str) -> str:
        """The product page, one item into the cart, the order form, the pay page, and a card
        token: the order's reference."""
        self.reference = super().place_order(slug)
        pay_page = f"{self.shop}/pedidos/{self.reference}/pagar/"
        self.http.get(pay_page, timeout=30).raise_for_status()
        # What the provider's card form does in the browser, with the public key.
        token = requests.post(
            f"{self.sandbox}/card_tokens",
            headers={"Authorization": f"Bearer {runtime.SECRET[0]}"},
            json={"card": {"number": CARD, "exp_month": "12", "exp_year": "2031",
                           "cvv": "123", "holder_name": "LUCIA BROWNOUT"}},
            timeout=30,
        )  # fmt: skip
        token.raise_for_status()
        self.card_token = token.json()["id"]
        return self.reference

    def _attempt(self, path: str, body: dict[str, Any], timeout: float) -> requests.Response:
        """The pay attempt; sent once more, the same attempt, when its connection failed
        before an answer (as a browser does with a kept-alive connection the server had just
        closed): the attempt id makes it one payment either way."""
        for tries_left in (1, 0):
            try:
                return self.http.post(
                    f"{self.shop}{path}",
                    data=json.dumps(body),
                    headers={"Content-Type": "application/json", "X-CSRFToken": self._csrf()},
                    timeout=timeout,
                )
            except requests.ConnectionError:
                if not tries_left:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")

    def click_pay(self, attempt_path: str, status_path: str, timeout: float) -> Payment:
        """Click "pay": the pay attempt, then the status endpoint until the result is final (as
        the payment page does), for at most `timeout` seconds from the click."""
        seen = Payment(self.reference)
        clicked = time.monotonic()
        deadline = clicked + timeout
        body = {"card_token": self.card_token, "attempt_id": uuid.uuid4().hex,
                "session_id": "bench-brownout", "user_agent": "bench-brownout"}  # fmt: skip
        outcome: dict[str, Any] = {}
        try:
            answer = self._attempt(attempt_path, body, timeout)
            seen.answer = answer.status_code
            if answer.status_code in (200, 202):
                outcome = answer.json()
            else:  # refused: no payment was asked for, nothing to wait for
                seen.errors.append(f"pay attempt answered {answer.status_code}")
                return seen
        except requests.RequestException as exc:  # the answer was lost: ask where it stands
            seen.errors.append(f"pay attempt: {type(exc).__name__}")
        seen.answered = time.monotonic() - clicked
        while True:
            seen.result = str(outcome.get("result", ""))
            if seen.result in FINAL:
                seen.final = time.monotonic() - clicked
                return seen
            wait = POLL_EVERY[min(seen.polls, len(POLL_EVERY) - 1)]
            if time.monotonic() + wait > deadline:
                return seen
            time.sleep(wait)
            payment_id = outcome.get("payment_id") or ""
            seen.polls += 1
            try:
                response = self.http.get(
                    f"{self.shop}{status_path}",
                    params={"payment_id": payment_id} if payment_id else None,
                    timeout=max(1.0, deadline - time.monotonic()),
                )
                if response.status_code == 200:
                    outcome = response.json()
                else:
                    seen.errors.append(f"status answered {response.status_code}")
            except requests.RequestException as exc:
                seen.errors.append(f"status: {type(exc).__name__}")


def in_threads(work: Callable[[Any], Any], items: list[Any], threads: int = 8) -> list[Any]:
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(items)))) as pool:
        return list(pool.map(work, items))


def shoppers_ready(shop: str, sandbox: str, count: int) -> list[Shopper]:
    """`count` shoppers with an order placed and a card token, ready to click "pay"."""
    from checkout.models import Product

    slugs = list(Product.objects.filter(active=True).values_list("slug", flat=True))
    shoppers = [Shopper(shop, sandbox) for _ in range(count)]
    in_threads(
        lambda pair: pair[0].place_order(pair[1]), list(zip(shoppers, itertools.cycle(slugs)))
    )
    return shoppers


def pay_all(shoppers: list[Shopper], row: str, timeout: float, at_once: int) -> list[Payment]:
    """The shoppers pay through `row`'s pay attempt, `at_once` at a time (all clicking
    together when `at_once` is all of them)."""
    from django.urls import reverse

    start = threading.Barrier(len(shoppers)) if at_once >= len(shoppers) else None

    def pay(shopper: Shopper) -> Payment:
        attempt = reverse(ROWS[row], kwargs={"reference": shopper.reference})
        status = reverse("checkout:payment_status", kwargs={"reference": shopper.reference})
        if start is not None:
            start.wait()
        return shopper.click_pay(attempt, status, timeout)

    return in_threads(pay, shoppers, threads=at_once)


# --- The sandbox, the load, the queues ----------------------------------------------------------


def sandbox_faults(sandbox: str, *faults: dict[str, Any]) -> None:
    """Replace the sandbox's faults by `faults` (none: the sandbox at its normal speed)."""
    requests.delete(f"{sandbox}/_sandbox/faults", auth=runtime.SECRET, timeout=30)
    for fault in faults:
        response = requests.post(
            f"{sandbox}/_sandbox/faults", json=fault, auth=runtime.SECRET, timeout=30
        )
        response.raise_for_status()


def sandbox_payments(sandbox: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        page = requests.get(
            f"{sandbox}/_sandbox/payments",
            params={"offset": len(found)},
            auth=runtime.SECRET,
            timeout=60,
        )
        page.raise_for_status()
        found += page.json()
        if len(page.json()) < 500:
            return found


def charged_twice(sandbox: str, references: list[str]) -> int:
    """Orders of `references` with more than one payment approved or authorized at the
    provider."""
    taken = Counter(
        p["external_reference"]
        for p in sandbox_payments(sandbox)
        if p["status"] in PAID and p["external_reference"] in set(references)
    )
    return sum(1 for count in taken.values() if count > 1)


@contextmanager
def load(home: str, receiver: str) -> Iterator[dict[str, dict[str, float]]]:
    """The home page and the webhook receiver under closed-loop load while the block runs;
    the dict given fills with wrk's figures (and req/s) when it ends."""
    procs = {
        "home": runtime.wrk_start(
            home, "get.lua", 3600, LOAD_CONNECTIONS, threads=1, timeout=LOAD_TIMEOUT
        ),
        "webhooks": runtime.wrk_start(
            receiver, "post.lua", 3600, LOAD_CONNECTIONS, "0",
            str(NOTIFICATIONS_PER_PAYMENT), threads=1, timeout=LOAD_TIMEOUT,
        ),
    }  # fmt: skip
    figures: dict[str, dict[str, float]] = {}
    try:
        yield figures
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGINT)  #: wrk stops and prints its figures
        for name, proc in procs.items():
            result = runtime.wrk_result(proc)
            slowest = max(result["max_ms"] / 1000, LOAD_TIMEOUT if result["timeouts"] else 0)
            figures[name] = {
                **result,
                "rps": result["requests"] / result["seconds"],
                "slowest_s": slowest,
            }


def settle(timeout: float = 120) -> float:
    """Wait until the queues are empty (what the last phase left), then a little; seconds."""
    started = time.monotonic()
    while runtime.queued(QUEUES) and time.monotonic() - started < timeout:
        time.sleep(0.5)
    time.sleep(2)
    return time.monotonic() - started


# --- Phases -----------------------------------------------------------------------------------


def baseline(urls: dict[str, str], seconds: float) -> dict[str, dict[str, float]]:
    with load(urls["home"], urls["webhooks"]):
        time.sleep(3)  # warm-up
    with load(urls["home"], urls["webhooks"]) as figures:
        time.sleep(seconds)
    return figures


def calm(urls: dict[str, str], row: str, timeout: float) -> dict[str, Any]:
    shoppers = shoppers_ready(urls["shop"], urls["sandbox"], CALM_SHOPPERS)
    latency = {"path": "/", "latency_ms": CALM_LATENCY_MS}  # every API call
    sandbox_faults(urls["sandbox"], latency)
    try:
        paid = pay_all(shoppers, row, timeout, at_once=CALM_CONCURRENCY)
    finally:
        sandbox_faults(urls["sandbox"])
    return summary(paid, urls["sandbox"])


def brownout(
    urls: dict[str, str], row: str, count: int, create_seconds: float, timeout: float
) -> dict[str, Any]:
    shoppers = shoppers_ready(urls["shop"], urls["sandbox"], count)
    settle()
    slow = {"path": "/payments", "method": "POST", "latency_ms": round(create_seconds * 1000)}
    sandbox_faults(urls["sandbox"], slow)
    try:
        with load(urls["home"], urls["webhooks"]) as figures:
            time.sleep(1)  # the load at its pace
            clicked = time.monotonic()
            paid = pay_all(shoppers, row, timeout, at_once=count)
            window = time.monotonic() - clicked
    finally:
        sandbox_faults(urls["sandbox"])
    return {**summary(paid, urls["sandbox"]), "load": figures, "window_seconds": window}


def summary(paid: list[Payment], sandbox: str) -> dict[str, Any]:
    finals = [p.final for p in paid if p.final is not None]
    return {
        "shoppers": len(paid),
        "final": len(finals),
        "results": dict(Counter(p.result or "none" for p in paid)),
        "answers": dict(Counter(str(p.answer) for p in paid)),
        "answered_p50": runtime.percentile([p.answered for p in paid], 0.5),
        "answered_max": max((p.answered for p in paid), default=0.0),
        "final_p50": runtime.percentile(finals, 0.5),
        "final_p95": runtime.percentile(finals, 0.95),
        "final_max": max(finals, default=0.0),
        "shopper_errors": sum(len(p.errors) for p in paid),
        "charged_twice": charged_twice(sandbox, [p.reference for p in paid]),
        "payments": [asdict(p) for p in paid],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    runtime.setup_django()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.urls import reverse

    from checkout.models import Product

    with connection.cursor() as cursor:  # the last run's records, and all that refers to them
        cursor.execute(
            "TRUNCATE webhooks_webhookevent, payments_payment, checkout_order, django_session"
            " CASCADE"
        )
    runtime.flush_redis()
    call_command("seed_demo", stdout=io.StringIO())
    Product.objects.update(stock=1_000_000, active=True)  # stock is not what is measured
    url = os.environ["DATABASE_URL"]
    sandbox_db = runtime.database(url, f"{runtime.database_name(url)}_sandbox", fresh=True)
    sandbox_port, shop_port = runtime.free_port(), runtime.free_port()
    shop_url = f"http://127.0.0.1:{shop_port}"
    os.environ.update(
        PAYMENTS_API_BASE_URL=f"http://127.0.0.1:{sandbox_port}",
        SHOP_BASE_URL=shop_url,  # where the sandbox sends its notifications
        SHOP_CLIENT_IP_HEADER="HTTP_X_FORWARDED_FOR",  # the shoppers' own addresses
    )
    settings.PAYMENTS_API_BASE_URL = os.environ["PAYMENTS_API_BASE_URL"]
    connection.close()
    print(
        f"Brownout benchmark: {runtime.web_described()}; "
        f"{runtime.celery_described()}; creates take {args.create_seconds:g} s in the brownout"
    )
    figures: dict[str, Any] = {
        "server": runtime.web_described(),
        "celery": runtime.celery_described(),
        "create_seconds": args.create_seconds,
        "calm_latency_ms": CALM_LATENCY_MS,
        "rows": [],
    }
    with (
        runtime.sandbox(sandbox_port, sandbox_db, threads=SANDBOX_THREADS) as provider,
        runtime.shop(shop_port) as shop,
        runtime.celery_processes(),
    ):
        urls = {
            "shop": shop,
            "sandbox": provider,
            "home": f"{shop}/",
            "webhooks": shop
            + reverse("webhooks:payments", kwargs={"token": settings.PAYMENTS_WEBHOOK_TOKEN}),
        }
        figures["baseline"] = baseline(urls, args.baseline_seconds)
        print(f"  baseline: {rates(figures['baseline'])}")
        figures["calm"] = {}
        for row in ROWS:
            figures["calm"][row] = calm(urls, row, args.outcome_timeout)
            print(f"  calm, {row}: click -> final p95 {figures['calm'][row]['final_p95']:.2f} s")
            settle()
        for count in args.shoppers:
            for row in ROWS:
                result = brownout(urls, row, count, args.create_seconds, args.outcome_timeout)
                figures["rows"].append({"row": row, **result})
                print(
                    f"  brownout, {row}, {count} shoppers: {rates(result['load'])};"
                    f" {result['final']}/{count} final in {result['window_seconds']:.0f} s"
                )
                settle()
    return figures


def rates(load: dict[str, dict[str, float]]) -> str:
    return ", ".join(
        f"{name} {f['rps']:.0f} req/s (slowest {f['slowest_s']:.2f} s, {f['errors']:.0f} errors)"
        for name, f in load.items()
    )


# --- Report -----------------------------------------------------------------------------------


def shown(checks: list[list[object]]) -> list[list[object]]:
    """The peer's rows: shown beside the targets, never judged."""
    return [[*check[:-1], "(met)" if check[-1] == "PASS" else "(missed)"] for check in checks]


def row_checks(figures: dict[str, Any], row: dict[str, Any]) -> list[list[object]]:
    """The brownout targets, for one row."""
    base, load = figures["baseline"], row["load"]
    label = f"{row['row']}, {row['shoppers']} shoppers:"
    errors = sum(f["errors"] for f in load.values()) + row["shopper_errors"]
    checks = []
    for name in ("home", "webhooks"):
        ratio = load[name]["rps"] / base[name]["rps"]
        latency = load[name]["slowest_s"]
        checks += [
            runtime.verdict(f"{label} {name} req/s / baseline", ratio, ">=", MIN_RATIO),
            runtime.verdict(f"{label} {name} slowest request (s)", latency, "<=", MAX_LATENCY_S),
        ]
    missing = row["shoppers"] - row["final"]
    checks += [
        runtime.verdict(f"{label} errors", errors, "<=", 0),
        runtime.verdict(f"{label} shoppers without a final outcome", missing, "<=", 0),
        runtime.verdict(f"{label} orders charged twice", row["charged_twice"], "<=", 0),
    ]
    return checks if row["row"] == "shop" else shown(checks)


def calm_checks(figures: dict[str, Any], name: str) -> list[list[object]]:
    """The calm traffic's targets, for one row."""
    row = figures["calm"][name]
    limit = figures["calm_latency_ms"] / 1000 + CALM_MARGIN_S
    missing = row["shoppers"] - row["final"]
    checks = [
        runtime.verdict(f"calm, {name}: click -> final p95 (s)", row["final_p95"], "<=", limit),
        runtime.verdict(f"calm, {name}: shoppers without a final outcome", missing, "<=", 0),
        runtime.verdict(f"calm, {name}: orders charged twice", row["charged_twice"], "<=", 0),
    ]
    return checks if name == "shop" else shown(checks)


def slowest(load: dict[str, float]) -> str:
    if load["timeouts"]:
        return f">= {LOAD_TIMEOUT} s ({load['timeouts']:.0f} unanswered)"
    return f"{load['slowest_s']:.2f} s"


def report(figures: dict[str, Any]) -> tuple[str, bool]:
    base = figures["baseline"]

    def load_cell(load: dict[str, float], name: str) -> str:
        ratio = load["rps"] / base[name]["rps"]
        return f"{load['rps']:.0f} ({ratio:.2f} x), {slowest(load)}"

    header = ["phase", "home req/s, slowest", "webhooks req/s, slowest", "load errors",
              "final outcomes", "answer p50 / max", "click -> final p50 / max",
              "shopper errors", "charged twice"]  # fmt: skip
    rows: list[list[object]] = [
        ["baseline", f"{base['home']['rps']:.0f}, {slowest(base['home'])}",
         f"{base['webhooks']['rps']:.0f}, {slowest(base['webhooks'])}",
         f"{base['home']['errors'] + base['webhooks']['errors']:.0f}", "", "", "", "", ""],
    ]  # fmt: skip

    def shopper_cells(r: dict[str, Any]) -> list[object]:
        answers = ", ".join(f"{code}: {n}" for code, n in sorted(r["answers"].items()))
        return [
            f"{r['final']}/{r['shoppers']} ({answers})",
            f"{r['answered_p50']:.2f} / {r['answered_max']:.2f} s",
            f"{r['final_p50']:.2f} / {r['final_max']:.2f} s",
            r["shopper_errors"],
            r["charged_twice"],
        ]

    for name, r in figures["calm"].items():
        rows.append([f"calm ({CALM_LATENCY_MS} ms a call), {name}", "", "", "",
                     *shopper_cells(r)])  # fmt: skip
    checks = [check for name in figures["calm"] for check in calm_checks(figures, name)]
    for r in figures["rows"]:
        load = r["load"]
        errors = load["home"]["errors"] + load["webhooks"]["errors"]
        label = f"brownout, {r['row']}, {r['shoppers']} shoppers ({r['window_seconds']:.0f} s)"
        rows.append([label, load_cell(load["home"], "home"),
                     load_cell(load["webhooks"], "webhooks"), f"{errors:.0f}",
                     *shopper_cells(r)])  # fmt: skip
        checks += row_checks(figures, r)
    checks.sort(key=lambda check: check[-1] not in ("PASS", "FAIL"))  # the shop's first
    text = runtime.table(header, rows) + "\n\n"
    text += runtime.table(["target", "wanted", "figure", "result"], checks)
    return text, all(check[-1] != "FAIL" for check in checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shoppers",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[24, 64],
        help="how many shoppers pay at once in each brownout (comma-separated)",
    )
    parser.add_argument("--create-seconds", type=float, default=12.0)
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    parser.add_argument(
        "--outcome-timeout",
        type=float,
        default=150.0,
        help="seconds from the click after which a shopper without a final outcome has none",
    )
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
