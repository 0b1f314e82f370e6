"""Receiver throughput and latency: the shop's receiver beside a bare view, a DRF tutorial
receiver and an inline one, under the same server and middleware. See README.md.

    python -m bench.receiver [--rounds 4] [--seconds 8] [--per-payment 3] [--strict] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from bench import runtime

PATHS = {"bare": "/bench/bare/", "tutorial": "/bench/tutorial/", "inline": "/bench/inline/",
         "receiver": "/webhooks/payments/{token}/"}  # fmt: skip
CONNECTIONS, HALF_CONNECTIONS = 8, 16


def run(args: argparse.Namespace) -> dict[str, Any]:
    runtime.setup_django("webhooks_webhookevent")
    from django.conf import settings

    print(f"Receiver benchmark; {runtime.described()}; wrk -c{CONNECTIONS}; {args.per_payment} "
          f"notifications a payment; provider reads {args.provider_latency_ms} ms")  # fmt: skip

    def measure(url: str, connections: int = CONNECTIONS, delay_ms: float = 0) -> dict:
        wrk_args = f"{delay_ms:.3f}", str(args.per_payment)
        return runtime.wrk_result(runtime.wrk_start(url, args.seconds, connections, *wrk_args))

    with runtime.services() as (provider, base):
        fault = {"path": "/payments", "method": "GET", "latency_ms": args.provider_latency_ms}
        runtime.sandbox_faults(provider, *([fault] if args.provider_latency_ms else []))
        token = settings.PAYMENTS_WEBHOOK_TOKEN
        urls = {name: base + path.format(token=token) for name, path in PATHS.items()}
        for url in urls.values():
            measure(url)  # warm-up
        rounds = [{name: measure(url) for name, url in urls.items()} for _ in range(args.rounds)]
        # Half load: half the bare view's rate, on connections that pace themselves.
        rate = statistics.median(r["bare"]["rps"] for r in rounds) / 2
        delay = HALF_CONNECTIONS * 1000 / rate
        pair = ("bare", "receiver")
        half = [{n: measure(urls[n], HALF_CONNECTIONS, delay) for n in pair} for _ in rounds]
    runtime.empty("webhooks_webhookevent")

    def ratio(name: str, other: str, figure: str = "rps", series: list = rounds) -> float:
        return statistics.median(r[name][figure] / r[other][figure] for r in series)

    return {
        "server": runtime.described(), "per_payment": args.per_payment,
        "provider_latency_ms": args.provider_latency_ms, "rounds": rounds,
        "half_load": {"rate": rate, "rounds": half},
        "ratios": {
            **{f"receiver/{name}": ratio("receiver", name) for name in list(PATHS)[:3]},
            "half-load p99 receiver/bare": ratio("receiver", "bare", "p99_ms", half),
        },
    }  # fmt: skip


def report(figures: dict[str, Any]) -> tuple[str, list[list[object]]]:
    half, rows = figures["half_load"], []
    for label, name, rounds in [(name, name, figures["rounds"]) for name in PATHS] + [
        (f"{name} at half load ({half['rate']:.0f} req/s asked)", name, half["rounds"])
        for name in ("bare", "receiver")
    ]:
        runs = [r[name] for r in rounds]
        median = {k: statistics.median(r[k] for r in runs) for k in ("rps", "p50_ms", "p99_ms")}
        rows.append([label, f"{median['rps']:.0f}", " / ".join(f"{r['rps']:.0f}" for r in runs),
                     f"{median['p50_ms']:.1f} ms", f"{median['p99_ms']:.1f} ms",
                     sum(int(r["errors"]) for r in runs)])  # fmt: skip
    ratios = figures["ratios"]
    checks = [
        runtime.verdict("receiver / tutorial", ratios["receiver/tutorial"], ">=", 1),
        runtime.verdict("receiver / inline", ratios["receiver/inline"], ">=", 5),
        runtime.verdict("receiver / bare", ratios["receiver/bare"]),
        runtime.verdict("p99 at half load / bare's", ratios["half-load p99 receiver/bare"]),
    ]
    header = ["endpoint", "req/s (median)", "rounds", "p50", "p99", "errors"]
    return runtime.table(header, rows), checks


def main(argv: list[str] | None = None) -> int:
    return runtime.main(
        __doc__, run, report, argv, rounds={"type": int, "default": 4},
        seconds={"type": int, "default": 8},
        per_payment={"type": int, "default": 3, "help": "1: a task for every notification"},
        provider_latency_ms={"type": int, "default": 50},
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
