"""Receiver throughput and latency, side by side with three other receivers under the same
server (`config/gunicorn.py` as shipped) and middleware:

- bare: a Django view that parses the JSON and answers (the limit);
- tutorial: a DRF APIView with a ModelSerializer, `save()` and `task.delay(id)`;
- inline: a view that reads the payment from the provider before answering;
- receiver: the shop's `POST /webhooks/payments/<token>/`.

Every request is a valid notification; `--per-payment N` (3 by default: a payment's INSERT, its
UPDATE and one duplicate, as the provider delivers at least once) come in a row for each new
random payment, so the receiver coalesces what it can (`--per-payment 1` is its worst case: a
task for every notification). The provider's reads take `--provider-latency-ms` (50 by default,
injected at the sandbox: on this machine it answers in a few ms, a provider across the internet
in tens to hundreds). No Celery worker runs; the queue is purged afterwards.

    python -m bench.receiver [--rounds 4] [--seconds 8] [--per-payment 3] [--strict] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import requests

from bench import runtime

PATHS = {
    "bare": "/bench/bare/",
    "tutorial": "/bench/tutorial/",
    "inline": "/bench/inline/",
    "receiver": "/webhooks/payments/{token}/",
}
CONNECTIONS = 8


def measure(url: str, args: argparse.Namespace, connections: int, delay_ms: float = 0) -> dict:
    wrk_args = (f"{delay_ms:.3f}", str(args.per_payment))
    result = runtime.wrk(url, "post.lua", args.seconds, connections, *wrk_args)
    return {**result, "rps": result["requests"] / result["seconds"]}


def run(args: argparse.Namespace) -> dict[str, object]:
    runtime.setup_django()
    from django.conf import settings

    from webhooks.models import WebhookEvent

    WebhookEvent.objects.all().delete()
    sandbox_db = runtime.database(os.environ["DATABASE_URL"], "shop_bench_sandbox", fresh=True)
    sandbox_port, shop_port = runtime.free_port(), runtime.free_port()
    os.environ["PAYMENTS_API_BASE_URL"] = f"http://127.0.0.1:{sandbox_port}"
    print(
        f"Receiver benchmark; {runtime.described()}; wrk -c{CONNECTIONS}; {args.per_payment} "
        f"notifications a payment; provider reads {args.provider_latency_ms} ms"
    )
    with runtime.sandbox(sandbox_port, sandbox_db) as provider, runtime.shop(shop_port) as base:
        fault = {"path": "/payments", "method": "GET", "latency_ms": args.provider_latency_ms}
        if args.provider_latency_ms:
            requests.post(f"{provider}/_sandbox/faults", json=fault, auth=runtime.SECRET)
        urls = {
            name: base + path.format(token=settings.PAYMENTS_WEBHOOK_TOKEN)
            for name, path in PATHS.items()
        }
        for url in urls.values():
            measure(url, args, CONNECTIONS)  # warm-up
        rounds = [
            {name: measure(url, args, CONNECTIONS) for name, url in urls.items()}
            for _ in range(args.rounds)
        ]
        # Half load: half the bare view's rate, on 16 connections pacing themselves.
        rate = statistics.median(r["bare"]["rps"] for r in rounds) / 2
        delay = 16 * 1000 / rate
        half = [
            {name: measure(urls[name], args, 16, delay) for name in ("bare", "receiver")}
            for _ in range(args.rounds)
        ]
    WebhookEvent.objects.all().delete()
    runtime.purge_queue()

    def ratio(name: str, other: str, figure: str = "rps", series: list = rounds) -> float:
        return statistics.median(r[name][figure] / r[other][figure] for r in series)

    return {
        "server": runtime.described(),
        "per_payment": args.per_payment,
        "provider_latency_ms": args.provider_latency_ms,
        "rounds": rounds,
        "half_load": {"rate": rate, "rounds": half},
        "ratios": {
            "receiver/bare": ratio("receiver", "bare"),
            "receiver/tutorial": ratio("receiver", "tutorial"),
            "receiver/inline": ratio("receiver", "inline"),
            "half-load p99 receiver/bare": ratio("receiver", "bare", "p99_ms", half),
        },
    }


def report(figures: dict) -> tuple[str, bool]:
    rows = []
    for name in PATHS:
        runs = [r[name] for r in figures["rounds"]]
        rows.append(
            [
                name,
                f"{statistics.median(r['rps'] for r in runs):.0f}",
                " / ".join(f"{r['rps']:.0f}" for r in runs),
                f"{statistics.median(r['p50_ms'] for r in runs):.1f} ms",
                f"{statistics.median(r['p99_ms'] for r in runs):.1f} ms",
                sum(int(r["errors"]) for r in runs),
            ]
        )
    for name in ("bare", "receiver"):
        runs = [r[name] for r in figures["half_load"]["rounds"]]
        rows.append(
            [
                f"{name} at half load ({figures['half_load']['rate']:.0f} req/s asked)",
                f"{statistics.median(r['rps'] for r in runs):.0f}",
                " / ".join(f"{r['rps']:.0f}" for r in runs),
                f"{statistics.median(r['p50_ms'] for r in runs):.1f} ms",
                f"{statistics.median(r['p99_ms'] for r in runs):.1f} ms",
                sum(int(r["errors"]) for r in runs),
            ]
        )
    ratios = figures["ratios"]
    checks = [
        runtime.verdict("receiver / bare", ratios["receiver/bare"], ">=", 0.4),
        runtime.verdict("receiver / tutorial", ratios["receiver/tutorial"], ">=", 1),
        runtime.verdict("receiver / inline", ratios["receiver/inline"], ">=", 5),
        runtime.verdict(
            "p99 at half load / bare's", ratios["half-load p99 receiver/bare"], "<=", 2
        ),
    ]
    text = "\n\n".join(
        [
            runtime.table(["endpoint", "req/s (median)", "rounds", "p50", "p99", "errors"], rows),
            runtime.table(["target", "wanted", "figure", "result"], checks),
        ]
    )
    return text, all(check[-1] == "PASS" for check in checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--per-payment", type=int, default=3)
    parser.add_argument("--provider-latency-ms", type=int, default=50)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", type=Path, help="write every figure there")
    args = parser.parse_args(argv)
    figures = run(args)
    text, passed = report(figures)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 1 if args.strict and not passed else 0


if __name__ == "__main__":
    sys.exit(main())
