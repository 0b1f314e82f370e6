"""Where the time goes on a sale day: one level of shoppers with the queue off, every service
sampled by py-spy (`py-spy record --subprocesses`, raw stacks) for the level's window, then, per
process group (web, writes, reads, shop worker, beat), the functions that hold the CPU: by self
time (the frame on top of the stack) and by total time (anywhere on it, the shop's own code and
the libraries it calls). A sample whose innermost frame is a wait (a queue's `get`, a socket's
`select`, `poll` or `recv`, PostgreSQL's or Redis' answer, a sleep) is a thread waiting, not
working: those are counted apart (`waiting`), and the tables share out the rest, the CPU.

    python -m bench.profile [--shoppers 32] [--seconds 20] [--warmup 5]
        [--provider-latency-ms 300] [--top 25] [--out var/bench/profile]

`make profile` runs it; docs/benchmarks.md ("Where the time goes") keeps the last tables.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from bench import runtime, sale_day_cpu, sale_day_shop, sale_day_stats
from bench.sale_day import databases

GROUPS = ("web", "writes", "reads", "worker", "beat")
# Each shopper its own address; no admission queue: every shopper is served at once.
BEHIND_PROXY = {"SHOP_CLIENT_IP_HEADER": "HTTP_X_FORWARDED_FOR", "SHOP_ADMISSION_PER_SECOND": "0"}
SAMPLES_PER_SECOND = 47  # a prime: not in step with the shop's own timers
# Innermost frames that are a thread waiting (on a queue, a socket, the database's or Redis'
# answer, a timer), by function name.
WAITING = frozenset({
    "_worker", "select", "poll", "wait", "readinto", "accept", "wait_for_signals", "sleep",
    "_read_from_socket", "recv", "recv_into", "_wait", "get", "acquire", "epoll", "run_forever",
})  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        sys.exit("py-spy is not installed (pip install py-spy; `make install` does it)")
    runtime.setup_django(*runtime.SHOP_TABLES, "django_session")
    from django.core.management import call_command

    from checkout.models import Product

    call_command("seed_demo", stdout=io.StringIO())
    Product.objects.update(stock=1_000_000, active=True)
    slugs = sorted(Product.objects.filter(active=True).values_list("slug", flat=True))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with runtime.services(32, **BEHIND_PROXY) as (provider, shop), runtime.celery():
        runtime.sandbox_faults(provider, {"path": "/", "latency_ms": args.provider_latency_ms})
        meter = partial(sale_day_cpu.Meter, sale_day_cpu.leaders(os.getpid()), os.getpid(),
                        databases())  # fmt: skip
        groups = {pid: role for pid, role in sale_day_cpu.leaders(os.getpid()).items()
                  if role in GROUPS}  # fmt: skip
        seconds = args.warmup + args.seconds
        spies = {
            role: subprocess.Popen(
                [
                    spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--subprocesses",
                    "--format",
                    "raw",
                    "--rate",
                    str(SAMPLES_PER_SECOND),
                    "--duration",
                    str(int(seconds)),
                    "--output",
                    str(out / f"{role}.txt"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for pid, role in groups.items()
        }
        timing = (args.warmup, args.seconds, 60.0)
        level = sale_day_shop.run_level({"shop": shop, "sandbox": provider}, args.shoppers,
                                        slugs, timing, meter)  # fmt: skip
        for proc in spies.values():
            proc.wait(seconds + 60)
    summary = sale_day_stats.summarize(level)
    return {
        "shoppers": args.shoppers, "seconds": args.seconds, "paid": summary["paid"],
        "out": str(out), "cpu_ms": summary["cpu_ms"] if summary["paid"] else {},
        "profiles": {role: top_frames(out / f"{role}.txt", args.top) for role in spies},
    }  # fmt: skip


def top_frames(path: Path, top: int) -> dict[str, Any]:
    """The functions of one group's raw stacks (`frame;frame;... count`, outermost first) that
    held the CPU most: by self samples and by total samples (a frame counted once a stack)."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = waiting = 0
    modules: defaultdict[str, int] = defaultdict(int)
    if not path.exists():
        return {"samples": 0, "waiting": 0, "self": [], "total": [], "modules": []}
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [
            frame for frame in stack.split(";") if not frame.startswith(("process ", "thread "))
        ]
        if not frames:
            continue
        n = int(count)
        if _function(frames[-1]) in WAITING:
            waiting += n
            continue
        samples += n
        own[short(frames[-1])] += n
        modules[module_of(frames[-1])] += n
        for frame in {short(frame) for frame in frames}:
            total[frame] += n
    return {
        "samples": samples,
        "waiting": waiting,
        "self": own.most_common(top),
        "total": total.most_common(top),
        "modules": sorted(modules.items(), key=lambda item: -item[1])[:top],
    }


def _function(frame: str) -> str:
    """A frame's function name, without its class (`Connection.wait`: `wait`)."""
    return frame.partition(" (")[0].rpartition(".")[2]


def short(frame: str) -> str:
    """`function (path/to/module.py:line)` as `function (module.py)`, the path past
    site-packages or the project's root, without the line (a function is one entry)."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "python3.11/", f"{runtime.ROOT}/"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})"


def module_of(frame: str) -> str:
    """The package a frame's code belongs to: `django/db`, `psycopg`, `checkout`..."""
    where = short(frame).rpartition(" (")[2].rstrip(")")
    parts = where.split("/")
    return "/".join(parts[:2]) if parts[0] in ("django", "celery", "kombu") else parts[0]


def report(figures: dict[str, Any]) -> tuple[str, list[list[object]]]:
    parts = [f"Profile of {figures['shoppers']} shoppers for {figures['seconds']:g} s "
             f"(queue off): {figures['paid']} paid; raw stacks in {figures['out']}/"]  # fmt: skip
    if figures["cpu_ms"]:
        cpu = figures["cpu_ms"]
        shown = [g for g in ("web", "writes", "reads", "worker", "beat", "pg_ours", "redis")
                 if g in cpu]  # fmt: skip
        parts.append("CPU per paid order (ms): " + ", ".join(f"{g} {cpu[g]:.1f}" for g in shown))
    for role, found in figures["profiles"].items():
        samples = found["samples"] or 1
        rows = [[f"{n / samples:.1%}", frame] for frame, n in found["self"]]
        totals = [[f"{n / samples:.1%}", frame] for frame, n in found["total"]]
        modules = [[f"{n / samples:.1%}", name] for name, n in found["modules"]]
        parts += [
            f"{role}: {found['samples']} samples on the CPU ({found['waiting']} waiting left out)",
            "  self:\n" + runtime.table(["share", "function"], rows),
            "  total:\n" + runtime.table(["share", "function"], totals),
            "  by package (self):\n" + runtime.table(["share", "package"], modules),
        ]
    return "\n\n".join(parts), []


def main(argv: list[str] | None = None) -> int:
    return runtime.main(
        __doc__, run, report, argv,
        shoppers={"type": int, "default": 32, "help": "closed-loop shoppers"},
        seconds={"type": float, "default": 20.0, "help": "the sampled window"},
        warmup={"type": float, "default": 5.0, "help": "seconds before the window"},
        provider_latency_ms={"type": int, "default": 300, "help": "every sandbox call's"},
        top={"type": int, "default": 25, "help": "functions listed per table"},
        out={"type": str, "default": str(runtime.LOG_DIR / "profile"),
             "help": "where the raw stacks are written"},
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
