"""A provider brownout (12 s a create) must not stop the shop: the storefront and the receiver
keep their pace, every shopper learns their payment's outcome, no order is charged twice; beside
a peer creating the payment inside the request (never failing `--strict`). See README.md.

    python -m bench.brownout [--shoppers 24,64] [--strict] [--json PATH]
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import Any

import requests

from bench import runtime
from tools.shopper import Shopper as HttpShopper

PAID, FINAL = ("approved", "authorized"), ("approved", "authorized", "rejected", "failed")
# Seconds between two questions of a shopper's page about its payment (static/js/payment.js).
POLL_EVERY = (0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 3.0)
LOAD_CONNECTIONS = 4  # home-page visitors, and notification senders, each a closed loop
LOAD_TIMEOUT = 60  # a load request unanswered this long is an error, counted this slow
CALM_SHOPPERS, CALM_CONCURRENCY, CALM_LATENCY_MS = 20, 2, 300
SANDBOX_THREADS = 32  # a provider serves many at once; the sandbox's default 8 would be its limit
MIN_RATIO, MAX_SLOWEST = 0.8, 2.0  # targets: the load during a brownout against the baseline
CALM_MARGIN_S = 1.0  # target: click -> final outcome p95, above the provider's latency
ROWS = {"shop": "checkout:pay_attempt", "peer": "bench_inline_pay"}
# What a shopper saw: the last result read, the pay attempt's status code (0: none), seconds
# from the click to its answer and to a final result (None: none came), questions, errors.
SEEN = ("reference", "result", "answer", "answered", "final", "polls", "errors")


class Shopper(HttpShopper):
    """The shared shopper (a browser as plain HTTP, tools/shopper.py) from an address of its own
    (behind the proxy), with a card token made at the sandbox, and what it saw of its payment
    (`SEEN`)."""

    addresses = itertools.count(1)

    def __init__(self, shop: str, sandbox: str) -> None:
        super().__init__(shop)
        self.sandbox, n = sandbox, next(self.addresses)
        self.http.headers["X-Forwarded-For"] = f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"
        self.result, self.answer, self.answered, self.final, self.polls = "", 0, 0.0, None, 0
        self.errors: list[str] = []

    def place_order(self, slug: str) -> str:
        """The storefront up to the pay page, and a card token as the provider's card form makes."""
        self.reference = super().place_order(slug)
        self.http.get(f"{self.shop}/pedidos/{self.reference}/pagar/", timeout=30).raise_for_status()
        card = {"number": "4242424242424242", "exp_month": "12", "exp_year": "2031",
                "cvv": "123", "holder_name": "LUCIA BROWNOUT"}  # approved  # fmt: skip
        public_key = {"Authorization": f"Bearer {runtime.SECRET[0]}"}
        token = requests.post(f"{self.sandbox}/card_tokens", json={"card": card},
                              headers=public_key, timeout=30)  # fmt: skip
        token.raise_for_status()
        self.card_token = token.json()["id"]
        return self.reference

    def click_pay(self, attempt_path: str, status_path: str, timeout: float) -> Shopper:
        """Click "pay", then ask the status endpoint as the payment page does until the result
        is final, for at most `timeout` seconds from the click."""
        clicked, outcome = time.monotonic(), {}
        body = {"card_token": self.card_token, "attempt_id": uuid.uuid4().hex,
                "session_id": "bench-brownout", "user_agent": "bench-brownout"}  # fmt: skip
        headers = {"Content-Type": "application/json", "X-CSRFToken": self._csrf()}
        post = partial(self.http.post, f"{self.shop}{attempt_path}", data=json.dumps(body),
                       headers=headers, timeout=timeout)  # fmt: skip
        try:
            try:
                answer = post()
            except requests.ConnectionError:  # a kept-alive connection the server had just
                time.sleep(0.5)  # closed: sent again as a browser does (the same attempt)
                answer = post()
            self.answer = answer.status_code
            if self.answer not in (200, 202):  # refused: nothing to wait for
                self.errors.append(f"pay attempt answered {self.answer}")
                return self
            outcome = answer.json()
        except requests.RequestException as exc:  # the answer was lost: ask where it stands
            self.errors.append(f"pay attempt: {type(exc).__name__}")
        self.answered = time.monotonic() - clicked
        while (result := str(outcome.get("result", ""))) not in FINAL:
            self.result, wait = result, POLL_EVERY[min(self.polls, len(POLL_EVERY) - 1)]
            if time.monotonic() + wait > clicked + timeout:
                return self
            time.sleep(wait)
            self.polls += 1
            asked = {"payment_id": outcome["payment_id"]} if outcome.get("payment_id") else None
            try:
                left = max(1.0, clicked + timeout - time.monotonic())
                response = self.http.get(f"{self.shop}{status_path}", params=asked, timeout=left)
                if response.status_code != 200:
                    self.errors.append(f"status answered {response.status_code}")
                else:
                    outcome = response.json()
            except requests.RequestException as exc:
                self.errors.append(f"status: {type(exc).__name__}")
        self.result, self.final = result, time.monotonic() - clicked
        return self


def ready_to_pay(urls: dict[str, str], row: str, count: int, at_once: int, timeout: float) -> Any:
    """`count` shoppers place an order; called, the result makes them pay through `row`'s pay
    attempt, `at_once` at a time (all clicking together when `at_once` is `count`)."""
    from django.urls import reverse

    from checkout.models import Product

    slugs = list(Product.objects.filter(active=True).values_list("slug", flat=True))
    shoppers = [Shopper(urls["shop"], urls["sandbox"]) for _ in range(count)]
    runtime.in_threads(lambda i: shoppers[i].place_order(slugs[i % len(slugs)]), range(count))
    start = threading.Barrier(count) if at_once >= count else None

    def click(shopper: Shopper) -> Shopper:
        kwargs = {"reference": shopper.reference}
        paths = reverse(ROWS[row], kwargs=kwargs), reverse("checkout:payment_status", kwargs=kwargs)
        if start is not None:
            start.wait()
        return shopper.click_pay(*paths, timeout)

    return partial(runtime.in_threads, click, shoppers, threads=at_once)


@contextmanager
def load(urls: dict[str, str]) -> Iterator[dict[str, dict[str, float]]]:
    """The home page and the webhook receiver (valid notifications, 3 a payment) under
    closed-loop load, a new connection a request (docs/benchmarks.md), while the block runs;
    the dict fills with wrk's figures when it ends."""
    procs = {
        name: runtime.wrk_start(urls[name], 3600, LOAD_CONNECTIONS, *args, "close", threads=1,
                                timeout=LOAD_TIMEOUT)
        for name, args in (("home", ()), ("webhooks", ("0", "3")))
    }  # fmt: skip
    figures: dict[str, dict[str, float]] = {}
    try:
        yield figures
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGINT)  # wrk stops and prints its figures
        for name, proc in procs.items():
            result = runtime.wrk_result(proc)
            slowest = max(result["max_ms"] / 1000, LOAD_TIMEOUT if result["timeouts"] else 0)
            figures[name] = {**result, "slowest_s": slowest}


def phase(urls: dict[str, str], row: str, count: int, args: argparse.Namespace) -> dict:
    """Calm traffic (`count` 0: every sandbox call slowed) or a brownout (every create slowed,
    `count` shoppers click at once under the load); its figures, and orders charged twice."""
    calm = {"path": "/", "latency_ms": CALM_LATENCY_MS}
    slow = {"path": "/payments", "method": "POST", "latency_ms": round(args.create_seconds * 1000)}
    shoppers, at_once = (count, count) if count else (CALM_SHOPPERS, CALM_CONCURRENCY)
    clicks = ready_to_pay(urls, row, shoppers, at_once, args.outcome_timeout)
    runtime.settle()
    runtime.sandbox_faults(urls["sandbox"], slow if count else calm)
    try:
        with load(urls) if count else nullcontext({}) as figures:
            time.sleep(1 if count else 0)  # the load at its pace
            clicked = time.monotonic()
            paid = clicks()
            window = time.monotonic() - clicked
    finally:
        runtime.sandbox_faults(urls["sandbox"])
    found, page = [], [None] * 500
    while len(page) == 500:  # the sandbox's payments, 500 a page
        page = requests.get(f"{urls['sandbox']}/_sandbox/payments", params={"offset": len(found)},
                            auth=runtime.SECRET, timeout=60).json()  # fmt: skip
        found += page
    mine = {p.reference for p in paid}
    taken = Counter(p["external_reference"] for p in found if p["status"] in PAID)
    finals = [p.final for p in paid if p.final is not None]
    result = {
        "row": row, "calm": not count, "load": figures, "window_seconds": window,
        "shoppers": len(paid), "final": len(finals),
        "answers": dict(Counter(str(p.answer) for p in paid)),
        "answered_p50": runtime.percentile([p.answered for p in paid], 0.5),
        "answered_max": max((p.answered for p in paid), default=0.0),
        "final_p50": runtime.percentile(finals, 0.5),
        "final_p95": runtime.percentile(finals, 0.95), "final_max": max(finals, default=0.0),
        "shopper_errors": sum(len(p.errors) for p in paid),
        "charged_twice": sum(1 for ref, n in taken.items() if n > 1 and ref in mine),
        "payments": [{name: getattr(p, name) for name in SEEN} for p in paid],
    }  # fmt: skip
    result["label"] = f"brownout, {row}, {count} shoppers ({window:.0f} s)" if count else (
        f"calm ({CALM_LATENCY_MS} ms a call), {row}")  # fmt: skip
    loaded = f"; {rates(figures)}" if count else f", click -> final p95 {result['final_p95']:.2f} s"
    print(f"  {result['label']}: {result['final']}/{len(paid)} final{loaded}")
    runtime.settle()
    return result


def rates(load: dict[str, dict[str, float]]) -> str:
    return ", ".join(f"{name} {f['rps']:.0f} req/s (slowest {f['slowest_s']:.2f} s,"
                     f" {f['errors']:.0f} errors)" for name, f in load.items())  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    runtime.setup_django(*runtime.SHOP_TABLES, "django_session")
    from django.conf import settings
    from django.core.management import call_command
    from django.urls import reverse

    from checkout.models import Product

    call_command("seed_demo", stdout=io.StringIO())
    Product.objects.update(stock=1_000_000, active=True)  # stock is not what is measured
    described = runtime.described(celery=True)
    print(f"Brownout benchmark: {described}; creates take {args.create_seconds:g} s")
    figures: dict[str, Any] = {"server": described, "create_seconds": args.create_seconds}
    behind_proxy = {"SHOP_CLIENT_IP_HEADER": "HTTP_X_FORWARDED_FOR"}  # the shoppers' addresses
    with runtime.services(SANDBOX_THREADS, **behind_proxy) as (provider, shop), runtime.celery():
        token = {"token": settings.PAYMENTS_WEBHOOK_TOKEN}
        urls = {"shop": shop, "sandbox": provider, "home": f"{shop}/",
                "webhooks": shop + reverse("webhooks:payments", kwargs=token)}  # fmt: skip
        with load(urls):
            time.sleep(3)  # warm-up
        # The load alone varies by up to 15% between windows: the phases are judged against
        # the mean of the load alone before and after them.
        before = baseline(urls, "before")
        figures["phases"] = [phase(urls, row, 0, args) for row in ROWS] + [
            phase(urls, row, count, args) for count in args.shoppers for row in ROWS
        ]
        figures["baselines"] = [before, baseline(urls, "after")]
    figures["baseline"] = {name: bracketed(*(b[name] for b in figures["baselines"]))
                           for name in before}  # fmt: skip
    return figures


def baseline(urls: dict[str, str], when: str) -> dict[str, dict[str, float]]:
    runtime.settle()
    with load(urls) as figures:
        time.sleep(10)
    print(f"  baseline {when}: {rates(figures)}")
    return figures


def bracketed(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The mean pace of the two, their errors and timeouts added up, the worst of the rest."""
    worst = {key: max(before[key], after[key]) for key in before}
    added = {key: before[key] + after[key] for key in ("errors", "timeouts")}
    return {**worst, **added, "rps": (before["rps"] + after["rps"]) / 2}


def checks(base: dict[str, dict[str, float]], r: dict[str, Any]) -> list[list[object]]:
    """A phase's targets; the peer's shown beside them, never judged."""
    calm_limit = CALM_LATENCY_MS / 1000 + CALM_MARGIN_S
    wanted = [("click -> final p95 (s)", r["final_p95"], "<=", calm_limit)] if r["calm"] else []
    for load, f in r["load"].items():
        wanted += [(f"{load} req/s / baseline", f["rps"] / base[load]["rps"], ">=", MIN_RATIO),
                   (f"{load} slowest request (s)", f["slowest_s"], "<=", MAX_SLOWEST)]  # fmt: skip
    if not r["calm"]:
        errors = sum(f["errors"] for f in r["load"].values()) + r["shopper_errors"]
        wanted.append(("errors", errors, "<=", 0))
    wanted += [("shoppers without a final outcome", r["shoppers"] - r["final"], "<=", 0),
               ("orders charged twice", r["charged_twice"], "<=", 0)]  # fmt: skip
    name = f"calm, {r['row']}:" if r["calm"] else f"{r['row']}, {r['shoppers']} shoppers:"
    rows = [runtime.verdict(f"{name} {what}", *target) for what, *target in wanted]
    if r["row"] == "shop":
        return rows
    return [[*row[:-1], "(met)" if row[-1] == "PASS" else "(missed)"] for row in rows]


def report(figures: dict[str, Any]) -> tuple[str, list[list[object]]]:
    base = figures["baseline"]

    def load_cell(f: dict[str, float], name: str) -> str:
        slowest = f">= {LOAD_TIMEOUT} s ({f['timeouts']:.0f} unanswered)" if f["timeouts"] else (
            f"{f['slowest_s']:.2f} s")  # fmt: skip
        ratio = "" if f is base[name] else f" ({f['rps'] / base[name]['rps']:.2f} x)"
        return f"{f['rps']:.0f}{ratio}, {slowest}"

    def errors(load: dict[str, dict[str, float]]) -> str:
        return f"{sum(f['errors'] for f in load.values()):.0f}" if load else ""

    header = ["phase", "home req/s, slowest", "webhooks req/s, slowest", "load errors",
              "final outcomes", "answer p50 / max", "click -> final p50 / max",
              "shopper errors", "charged twice"]  # fmt: skip
    paces = {n: " / ".join(f"{b[n]['rps']:.0f}" for b in figures["baselines"]) for n in base}
    rows = [["baseline (mean of before / after)", *(f"{load_cell(base[n], n)} ({paces[n]})"
             for n in base), errors(base), "", "", "", "", ""]]  # fmt: skip
    for r in figures["phases"]:
        answers = ", ".join(f"{code}: {n}" for code, n in sorted(r["answers"].items()))
        rows.append([r["label"], *(load_cell(r["load"][n], n) if r["load"] else "" for n in base),
                     errors(r["load"]), f"{r['final']}/{r['shoppers']} ({answers})",
                     f"{r['answered_p50']:.2f} / {r['answered_max']:.2f} s",
                     f"{r['final_p50']:.2f} / {r['final_max']:.2f} s", r["shopper_errors"],
                     r["charged_twice"]])  # fmt: skip
    rows_checks = [check for r in figures["phases"] for check in checks(base, r)]
    rows_checks.sort(key=lambda check: check[-1] not in ("PASS", "FAIL"))  # the shop's first
    return runtime.table(header, rows), rows_checks


def main(argv: list[str] | None = None) -> int:
    return runtime.main(
        __doc__, run, report, argv, create_seconds={"type": float, "default": 12.0},
        shoppers={"type": lambda text: [int(n) for n in text.split(",")], "default": [24, 64],
                  "help": "how many shoppers pay at once in each brownout (comma-separated)"},
        outcome_timeout={"type": float, "default": 150.0, "help": "seconds from the click after "
                         "which a shopper without a final outcome has none"},
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
