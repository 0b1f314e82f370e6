"""Receiver throughput: the webhook receiver against a bare Django JSON view, same server.

    python -m bench.receiver [--rounds 3] [--seconds 10] [--strict] ...

One gunicorn (the benchmark settings: the shop's settings and middleware, plus
`POST /bench/bare/`, which only parses the JSON body) serves both endpoints. wrk posts valid
notifications with a random payment id each (bench/notify.lua) to each endpoint in turn,
receiver then bare, round after round, after a warm-up of both. No Celery worker runs: the
receiver stores its row and queues a task that nobody takes; the queue is purged afterwards.

Then the half-load run: wrk paces each connection (a delay before each request, calibrated
per endpoint) so that both endpoints get about half the bare view's full-load throughput, and
the latencies are compared there.

Targets: receiver throughput >= 0.5 x bare; p99 at half load <= 2 x bare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass, field

from bench import runtime

NOTIFY_LUA = runtime.BENCH_DIR / "notify.lua"
THROUGHPUT_TARGET = 0.5  # receiver req/s >= this x bare req/s
HALF_LOAD_P99_TARGET = 2.0  # receiver p99 <= this x bare p99 at half load


@dataclass
class Series:
    name: str
    url: str
    runs: list[runtime.WrkResult] = field(default_factory=list)
    half_runs: list[runtime.WrkResult] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # gunicorn's CPU per request, full load
    # ... and with PostgreSQL's, Redis's and wrk's: what the request costs the machine
    machine_cpu_ms: list[float] = field(default_factory=list)
    half_delay_ms: float = 0.0

    @staticmethod
    def _median(runs: list[runtime.WrkResult], attribute: str) -> float:
        return statistics.median(getattr(r, attribute) for r in runs) if runs else 0.0

    def rps(self) -> float:
        return self._median(self.runs, "rps")

    def p50(self) -> float:
        return self._median(self.runs, "p50_ms")

    def p99(self) -> float:
        return self._median(self.runs, "p99_ms")

    def half_rps(self) -> float:
        return self._median(self.half_runs, "rps")

    def half_p50(self) -> float:
        return self._median(self.half_runs, "p50_ms")

    def half_p99(self) -> float:
        return self._median(self.half_runs, "p99_ms")

    def cpu_per_request(self) -> float:
        return statistics.median(self.cpu_ms) if self.cpu_ms else 0.0

    def machine_cpu_per_request(self) -> float:
        return statistics.median(self.machine_cpu_ms) if self.machine_cpu_ms else 0.0

    def errors(self) -> int:
        return sum(r.non2xx + r.socket_errors for r in [*self.runs, *self.half_runs])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per endpoint (4)")
    parser.add_argument("--seconds", type=float, default=8, help="length of a round (8 s)")
    parser.add_argument("--warmup", type=float, default=3, help="warm-up per endpoint (3 s)")
    parser.add_argument("--connections", type=int, default=8, help="wrk connections (8)")
    parser.add_argument("--wrk-threads", type=int, default=2, help="wrk threads (2)")
    parser.add_argument("--half-connections", type=int, default=16, help="at half load (16)")
    parser.add_argument("--half-rounds", type=int, default=None, help="(= --rounds)")
    runtime.Gunicorn.add_arguments(parser)
    return parser.parse_args(argv)


def calibrate(series: Series, rate: float, args: argparse.Namespace) -> float:
    """The per-request delay (ms) that gives `rate` req/s over the half-load connections."""
    connections = args.half_connections
    delay = connections * 1000 / rate
    for _ in range(4):
        probe = runtime.run_wrk(
            series.url,
            script=NOTIFY_LUA,
            connections=connections,
            threads=args.wrk_threads,
            seconds=3,
            args=[f"{delay:.3f}"],
        )
        if abs(probe.rps - rate) <= 0.04 * rate:
            break
        # Each connection does one request per (delay + service time).
        cycle_ms = connections * 1000 / max(probe.rps, 1.0)
        service_ms = max(cycle_ms - delay, 0.0)
        delay = max(connections * 1000 / rate - service_ms, 0.0)
    return delay


def run(args: argparse.Namespace) -> dict[str, object]:
    runtime.setup_django()
    runtime.check_redis()
    runtime.wrk_binary()
    from django.conf import settings
    from django.db import connection

    config = runtime.Gunicorn.from_arguments(args)
    port = runtime.free_port()
    base = f"http://127.0.0.1:{port}"
    receiver = Series("receiver", f"{base}/webhooks/payments/{settings.PAYMENTS_WEBHOOK_TOKEN}/")
    bare = Series("bare view", f"{base}/bench/bare/")
    load_before = runtime.load_average()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE webhooks_webhookevent")
    connection.close()
    runtime.purge_broker()
    rounds = args.rounds
    half_rounds = args.half_rounds or rounds
    print(f"Receiver benchmark: {config.describe()}, no Celery worker; load {load_before}")
    try:
        with runtime.gunicorn(config, port) as web:
            wrk = {"script": NOTIFY_LUA, "threads": args.wrk_threads}
            for series in (receiver, bare):
                runtime.run_wrk(
                    series.url, connections=args.connections, seconds=args.warmup, **wrk
                )
            for number in range(1, rounds + 1):
                for series in (receiver, bare):
                    cpu = runtime.cpu_usage({"gunicorn": web})
                    result = runtime.run_wrk(
                        series.url, connections=args.connections, seconds=args.seconds, **wrk
                    )
                    after = runtime.cpu_usage({"gunicorn": web})
                    spent = {name: seconds - cpu[name] for name, seconds in after.items()}
                    served = max(result.requests, 1)
                    series.runs.append(result)
                    series.cpu_ms.append(spent["gunicorn"] * 1000 / served)
                    series.machine_cpu_ms.append(sum(spent.values()) * 1000 / served)
                    print(
                        f"  round {number}/{rounds} {series.name:9s} {result.rps:8.0f} req/s  "
                        f"p50 {result.p50_ms:6.1f} ms  p99 {result.p99_ms:6.1f} ms"
                    )
            half_rate = bare.rps() / 2
            print(f"  half load: {half_rate:.0f} req/s on {args.half_connections} connections")
            for series in (receiver, bare):
                series.half_delay_ms = calibrate(series, half_rate, args)
            for number in range(1, half_rounds + 1):
                for series in (receiver, bare):
                    result = runtime.run_wrk(
                        series.url,
                        connections=args.half_connections,
                        seconds=args.seconds,
                        args=[f"{series.half_delay_ms:.3f}"],
                        **wrk,
                    )
                    series.half_runs.append(result)
                    print(
                        f"  half {number}/{half_rounds} {series.name:9s} {result.rps:8.0f} req/s  "
                        f"p50 {result.p50_ms:6.1f} ms  p99 {result.p99_ms:6.1f} ms"
                    )
    finally:
        queued = runtime.queue_length()
        runtime.purge_broker()
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM webhooks_webhookevent")
            stored = cursor.fetchone()[0]
            cursor.execute("TRUNCATE webhooks_webhookevent")
        connection.close()
    # Each round of the receiver is compared with the bare round right after it, so that a
    # change in the machine's load between rounds weighs on both sides of a ratio alike.
    ratio = statistics.median(
        r.rps / b.rps if b.rps else 0.0 for r, b in zip(receiver.runs, bare.runs, strict=True)
    )
    p99_ratio = statistics.median(
        r.p99_ms / b.p99_ms if b.p99_ms else float("inf")
        for r, b in zip(receiver.half_runs, bare.half_runs, strict=True)
    )
    return {
        "server": config.describe(),
        "wrk": f"-t{args.wrk_threads} -c{args.connections}, {rounds} x {args.seconds:g} s "
        f"per endpoint, interleaved",
        "load_before": load_before,
        "load_after": runtime.load_average(),
        "receiver": _figures(receiver),
        "bare": _figures(bare),
        "half_load_rate": half_rate,
        "receiver_overloaded_at_half_load": receiver.half_rps() < 0.9 * half_rate,
        "throughput_ratio": ratio,
        "throughput_pass": ratio >= THROUGHPUT_TARGET,
        "half_load_p99_ratio": p99_ratio,
        "half_load_p99_pass": p99_ratio <= HALF_LOAD_P99_TARGET,
        # gunicorn's own CPU per request (its processes only): steady however loaded the machine.
        "cpu_ratio": bare.cpu_per_request() / receiver.cpu_per_request()
        if receiver.cpu_per_request()
        else 0.0,
        # The same with PostgreSQL's, Redis's and wrk's CPU: the ratio a CPU-bound machine allows.
        "machine_cpu_ratio": bare.machine_cpu_per_request() / receiver.machine_cpu_per_request()
        if receiver.machine_cpu_per_request()
        else 0.0,
        "rows_stored": stored,
        "tasks_queued": queued,
    }


def _figures(series: Series) -> dict[str, object]:
    return {
        "rps": series.rps(),
        "p50_ms": series.p50(),
        "p99_ms": series.p99(),
        "half_rps": series.half_rps(),
        "half_p50_ms": series.half_p50(),
        "half_p99_ms": series.half_p99(),
        "half_delay_ms": series.half_delay_ms,
        "errors": series.errors(),
        "gunicorn_cpu_ms_per_request": series.cpu_per_request(),
        "machine_cpu_ms_per_request": series.machine_cpu_per_request(),
        "runs": [asdict(r) for r in series.runs],
        "half_runs": [asdict(r) for r in series.half_runs],
    }


def report(figures: dict[str, object]) -> str:
    receiver, bare = figures["receiver"], figures["bare"]
    assert isinstance(receiver, dict) and isinstance(bare, dict)
    rows = [
        [
            name,
            f"{f['rps']:.0f}",
            " / ".join(f"{r['requests'] / r['seconds']:.0f}" for r in f["runs"]),
            f"{f['p50_ms']:.1f}",
            f"{f['p99_ms']:.1f}",
            f"{f['half_rps']:.0f}",
            f"{f['half_p50_ms']:.1f}",
            f"{f['half_p99_ms']:.1f}",
            f"{f['gunicorn_cpu_ms_per_request']:.2f}",
            f"{f['machine_cpu_ms_per_request']:.2f}",
            f["errors"],
        ]
        for name, f in (("receiver", receiver), ("bare view", bare))
    ]
    header = [
        "endpoint", "req/s", "req/s per round", "p50 ms", "p99 ms",
        "half req/s", "half p50", "half p99", "CPU ms/req", "all CPU ms/req", "errors",
    ]  # fmt: skip
    ratio, p99_ratio = figures["throughput_ratio"], figures["half_load_p99_ratio"]
    assert isinstance(ratio, float) and isinstance(p99_ratio, float)
    return "\n".join(
        [
            "",
            f"Receiver throughput — {figures['server']}; wrk {figures['wrk']}",
            f"(medians of the rounds; half load = {figures['half_load_rate']:.0f} req/s, "
            "wrk paced per connection; ratios: median of each receiver round / the bare round "
            "after it)",
            runtime.table(rows, header),
            "",
            f"receiver/bare throughput   {ratio:5.2f}  (target >= {THROUGHPUT_TARGET:.2f})  "
            f"{runtime.verdict(bool(figures['throughput_pass']))}",
            f"receiver/bare p99 at half  {p99_ratio:5.2f}  (target <= {HALF_LOAD_P99_TARGET:.2f})  "
            f"{runtime.verdict(bool(figures['half_load_p99_pass']))}",
            f"bare/receiver CPU per request: gunicorn's {figures['cpu_ratio']:.2f}; with "
            f"PostgreSQL's, Redis's and wrk's {figures['machine_cpu_ratio']:.2f} (the throughput "
            "ratio a CPU-bound machine would allow)",
            *(
                [
                    "the receiver could not keep up with the half-load rate: it was overloaded "
                    "there, and its latency is a queue's"
                ]
                if figures["receiver_overloaded_at_half_load"]
                else []
            ),
            f"load average before {figures['load_before']}; after {figures['load_after']}",
            f"rows stored {figures['rows_stored']}, tasks left queued {figures['tasks_queued']} "
            "(purged)",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    figures = run(args)
    print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    missed = not (figures["throughput_pass"] and figures["half_load_p99_pass"])
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
