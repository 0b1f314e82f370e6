"""A sale day: closed-loop shoppers at rising concurrency until paid orders a minute stop
growing, then 2x and 4x the knee's shoppers; the provider limiting its creates; a flash rush on
the last items. Beside the bare view's rate, the server's limit, measured in the same run; the
CPU each process group spends per paid order. See README.md.

    python -m bench.sale_day [--levels 8,16,32,64,128] [--seconds 40] [--warmup 5]
        [--provider-latency-ms 300] [--rush-shoppers 1000] [--outcome-timeout 60] [--strict]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from bench import runtime, sale_day_cpu, sale_day_rush, sale_day_shop, sale_day_stats
from bench.sale_day_shop import STEPS
from bench.sale_day_stats import PAGE_P95, knee, saturated
from tools import soak

# A provider serves many at once; each sandbox thread keeps a PostgreSQL connection, and the
# server's 100 are shared (64 threads: "too many clients" once others connect too).
SANDBOX_THREADS = 32
BEHIND_PROXY = {"SHOP_CLIENT_IP_HEADER": "HTTP_X_FORWARDED_FOR"}  # each shopper's own address
BARE_PATH, BARE_CONNECTIONS, BARE_SECONDS = "/bench/bare/", 8, 8
BEYOND = (2, 4)  # x the knee's shoppers, once throughput stopped growing
TARGET_PAID_PER_MIN, BEYOND_SHARE, OUTCOME_MARGIN_S, TOLD_P95 = 1000, 0.9, 1.0, 1.0
TARGET_SHOP_CPU_MS = 60  # web, workers, beat, PostgreSQL and Redis: half of 28 November's 120


def run(args: argparse.Namespace) -> dict[str, Any]:
    runtime.setup_django(*runtime.SHOP_TABLES, "django_session")
    from django.core.management import call_command

    from checkout.models import Product

    call_command("seed_demo", stdout=io.StringIO())
    Product.objects.update(stock=1_000_000, active=True)  # stock is not what the levels measure
    slugs = sorted(Product.objects.filter(active=True).values_list("slug", flat=True))
    rush, shelves = slugs[-1], slugs[:-1]  # the rush's product is left to the rush
    described = runtime.described(celery=True) + f"; admission {admission_limit()}"
    print(f"Sale day benchmark: {described}; every provider call {args.provider_latency_ms} ms; "
          f"load average {load_average()} ({os.cpu_count()} cores)")  # fmt: skip
    figures: dict[str, Any] = {"server": described, "latency_ms": args.provider_latency_ms,
                               "load_before": load_average()}  # fmt: skip
    with runtime.services(SANDBOX_THREADS, **BEHIND_PROXY) as (provider, shop), runtime.celery():
        urls = {"shop": shop, "sandbox": provider}
        cpu = partial(sale_day_cpu.Meter, sale_day_cpu.leaders(os.getpid()), os.getpid(),
                      databases())  # fmt: skip
        figures["bare_rps"] = bare_rate(shop)
        print(f"  bare view ({BARE_PATH}, wrk -c{BARE_CONNECTIONS}): "
              f"{figures['bare_rps']:.0f} req/s")  # fmt: skip
        runtime.sandbox_faults(provider, {"path": "/", "latency_ms": args.provider_latency_ms})
        timing = (args.warmup, args.seconds, args.outcome_timeout)
        measure = partial(level, urls, shelves, timing, cpu)
        figures["levels"] = beyond_knee(measure, rising(measure, args.levels))
        figures["limited"] = sale_day_rush.limited_provider(urls, shelves, timing, cpu)
        figures["rush"] = sale_day_rush.flash_rush(urls, rush, args.rush_shoppers)
        runtime.settle()
        payments = soak.provider_payments(provider)
    for part in [*figures["levels"], figures["limited"]]:
        if "references" in part:
            part["charged_twice"] = sale_day_stats.charged_twice(part.pop("references"), payments)
    figures["load_after"] = load_average()
    return figures


def admission_limit() -> str:
    """The shop's admission pace as configured (SHOP_ADMISSION_PER_SECOND: auto, the pace the
    shop measures; a number; 0: no queue)."""
    from django.conf import settings

    pace = settings.SHOP_ADMISSION_PER_SECOND
    if pace is None:
        low, high = settings.SHOP_ADMISSION_MIN_PER_SECOND, settings.SHOP_ADMISSION_MAX_PER_SECOND
        return f"measured by the shop ({low:g} to {high:g} new shoppers a second)"
    return f"{pace:g} new shoppers a second" if pace else "off"


def databases() -> tuple[str, str]:
    """This run's databases: the shop's and the sandbox's (`runtime.services`)."""
    name = runtime.database_name(os.environ["DATABASE_URL"])
    return name, f"{name}_sandbox"


def load_average() -> str:
    return " ".join(f"{n:.2f}" for n in os.getloadavg())


def bare_rate(shop: str) -> float:
    """The bare view's req/s under wrk (the receiver bench's stream), after a warm-up."""
    url = shop + BARE_PATH
    runtime.wrk_result(runtime.wrk_start(url, 3, BARE_CONNECTIONS, "0", "3"))
    return runtime.wrk_result(runtime.wrk_start(url, BARE_SECONDS, BARE_CONNECTIONS, "0", "3"))[
        "rps"
    ]


def level(
    urls: dict[str, str], slugs: list[str], timing: tuple[float, float, float],
    cpu: Callable[[], sale_day_cpu.Meter], shoppers: int,
) -> dict[str, Any]:  # fmt: skip
    """One level of `shoppers`, once the queues are empty; its figures."""
    runtime.settle()
    figures = sale_day_stats.summarize(sale_day_shop.run_level(urls, shoppers, slugs, timing, cpu))
    figures["roles"] = []
    print(f"  {shoppers} shoppers: {figures['paid_per_min']:.0f} paid/min, click -> outcome "
          f"p95 {figures['outcome_p95']:.2f} s, page p95 {figures['page_p95']:.3f} s, "
          f"{figures['errors_total']} errors, pace {pace_cell(figures['pace'])} a second, "
          f"{figures['cpu_ms']['shop']:.0f} ms of the shop's CPU and "
          f"{figures['transactions_per_order']:.0f} db transactions a paid order; "
          f"load average {load_average()}",
          flush=True)  # fmt: skip
    return figures


def rising(measure: Callable[[int], dict[str, Any]], counts: list[int]) -> list[dict[str, Any]]:
    """The levels `counts`, in order, until one's paid orders a minute stop growing."""
    done: list[dict[str, Any]] = []
    for count in counts:
        best = max((figures["paid_per_min"] for figures in done), default=0.0)
        done.append(measure(count))
        done[-1]["roles"].append("rising")
        if saturated(done[-1]["paid_per_min"], best):
            break
    return done


def beyond_knee(
    measure: Callable[[int], dict[str, Any]], done: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The knee marked, and 2x and 4x its shoppers (a level already run is not run again)."""
    found = knee(done)
    found["roles"].append("knee")
    for factor in BEYOND:
        count = found["shoppers"] * factor
        figures = next((f for f in done if f["shoppers"] == count), None)
        if figures is None:
            figures = measure(count)
            done.append(figures)
        figures["roles"].append(f"{factor}x knee")
    return done


def label(figures: dict[str, Any]) -> str:
    roles = [role for role in figures["roles"] if role != "rising"]
    return f"{figures['shoppers']}" + (f" ({', '.join(roles)})" if roles else "")


def levels_table(figures: dict[str, Any]) -> str:
    bare = figures["bare_rps"]
    header = ["shoppers", "paid/min", "click -> outcome p50 / p95", "page p95",
              f"shop req/s (x bare {bare:.0f})", "polls / order", "requests / order", "errors",
              "5xx", "not paid / no outcome", "charged twice", "waited / visitors",
              "wait p50 / p95", "busy cores", "pace found: mean (min-max) /s",
              "db transactions / order"]  # fmt: skip
    rows = [[label(f), f"{f['paid_per_min']:.0f}",
             f"{f['outcome_p50']:.2f} / {f['outcome_p95']:.2f} s", f"{f['page_p95']:.3f} s",
             f"{f['requests_per_second']:.0f} ({f['requests_per_second'] / bare:.2f})",
             f"{f['polls_per_order']:.1f}", f"{f['requests_per_order']:.1f}", f["errors_total"],
             f["5xx"], f"{f['not_paid']} / {f['no_outcome']}", f.get("charged_twice", ""),
             f"{f['waited']} / {f['visitors']}", f"{f['wait_p50']:.1f} / {f['wait_p95']:.1f} s",
             f"{f['busy_cores']:.2f}", pace_cell(f["pace"]),
             f"{f['transactions_per_order']:.0f}"] for f in figures["levels"]]  # fmt: skip
    return runtime.table(header, rows)


def pace_cell(pace: dict[str, float]) -> str:
    return f"{pace['mean']:.1f} ({pace['min']:.1f}-{pace['max']:.1f})"


def steps_table(levels: list[dict[str, Any]]) -> str:
    header = ["shoppers", *(f"{step} p95" for step in STEPS), "errors by step",
              "visits failed (whole level)"]  # fmt: skip
    rows = [[label(f), *(f"{f['step_p95'][step] * 1000:.0f} ms" for step in STEPS),
             counted(f["errors"]), counted(f["visit_errors"])] for f in levels]  # fmt: skip
    return runtime.table(header, rows)


def counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{what}: {n}" for what, n in sorted(counts.items())) or "0"


def cpu_table(levels: list[dict[str, Any]]) -> str:
    groups = {**{name: name for name in sale_day_cpu.SERVICES}, "postgres": "postgres (all)",
              "pg_ours": "of it this run's dbs", "pg_others": "of it others'",
              "redis": "redis", "load": "load generator", "other": "other (machine)",
              "shop": "the shop", "total": "total"}  # fmt: skip
    rows = [[label(f), *(f"{f['cpu_ms'][group]:.1f}" for group in groups),
             "{pg_ours} / {pg_others}".format(**f["pg_processes"])] for f in levels]  # fmt: skip
    header = ["shoppers", *groups.values(), "postgres processes at most (this run's / others)"]
    return runtime.table(header, rows)


def limited_table(f: dict[str, Any], latency_ms: int) -> str:
    if "skipped" in f:
        return f"Limited provider: skipped ({f['skipped']}: the sandbox has no rate limits yet)."
    lim, binding = f["limit"], sale_day_rush.LIMITED_SHOPPERS / sale_day_rush.LIMIT
    header = ["shoppers", "creates limited to", "paid/min (paid/s)", "click -> outcome p50 / p95",
              "were the limit binding: shoppers / limit", "page p95", "not paid / no outcome",
              "charged twice", "creates accepted / refused", "busiest second", "5xx"]  # fmt: skip
    row = [f["shoppers"], f"{lim['per_second']}/s (burst {lim['burst']})",
           f"{f['paid_per_min']:.0f} ({f['paid_per_min'] / 60:.1f})",
           f"{f['outcome_p50']:.2f} / {f['outcome_p95']:.2f} s",
           f"~{binding:.1f} s + {latency_ms / 1000:g} s", f"{f['page_p95']:.3f} s",
           f"{f['not_paid']} / {f['no_outcome']}", f.get("charged_twice", ""),
           f"{lim['accepted']} / {lim['refused']}", lim["busiest_second"], f["5xx"]]  # fmt: skip
    return "Limited provider:\n" + runtime.table(header, [row])


def rush_table(f: dict[str, Any]) -> str:
    header = ["ready / shoppers", "left the queue", "waiting pages", "stock", "orders created",
              "stock after", "oversold", "sold-out answers", "answers", "answer p50 / p95 / max",
              "not winners told p50 / p95 / max", "5xx", "no answer"]  # fmt: skip
    kinds = ", ".join(f"{kind}: {n}" for kind, n in sorted(f["kinds"].items()))
    row = [f"{f['ready']} / {f['shoppers']}", f["left_queue"], f["waiting_pages"], f["stock"],
           f["orders"], f["stock_after"], f["oversold"], f["sold_out"], kinds,
           f"{f['answer_p50']:.2f} / {f['answer_p95']:.2f} / {f['answer_max']:.2f} s",
           f"{f['told_p50']:.2f} / {f['told_p95']:.2f} / {f['told_max']:.2f} s", f["5xx"],
           f["no_answer"]]  # fmt: skip
    return "Flash rush:\n" + runtime.table(header, [row])


def level_checks(levels: list[dict[str, Any]], latency_ms: int) -> list[list[object]]:
    peak = max(f["paid_per_min"] for f in levels if "rising" in f["roles"])
    found = next(f for f in levels if "knee" in f["roles"])
    name = f"knee ({found['shoppers']} shoppers):"
    rows = [runtime.verdict(f"{name} paid/min", found["paid_per_min"], ">=", TARGET_PAID_PER_MIN),
            runtime.verdict(f"{name} page p95 (s)", found["page_p95"], "<=", PAGE_P95),
            runtime.verdict(f"{name} click -> outcome p95 (s)", found["outcome_p95"], "<=",
                            latency_ms / 1000 + OUTCOME_MARGIN_S),
            runtime.verdict(f"{name} the shop's CPU per paid order (ms)", found["cpu_ms"]["shop"],
                            "<=", TARGET_SHOP_CPU_MS)]  # fmt: skip
    for f in [found] + [f for f in levels if any("x knee" in role for role in f["roles"])]:
        roles = [role for role in f["roles"] if role.endswith("knee")]
        name = f"{'/'.join(roles)} ({f['shoppers']} shoppers):"
        if "knee" not in roles:
            rows += [runtime.verdict(f"{name} paid/min / peak", f["paid_per_min"] / peak, ">=",
                                     BEYOND_SHARE),
                     runtime.verdict(f"{name} admitted page p95 (s)", f["page_p95"], "<=",
                                     PAGE_P95)]  # fmt: skip
        rows += [
            runtime.verdict(f"{name} 5xx", f["5xx"], "<=", 0),
            runtime.verdict(f"{name} charged twice", f.get("charged_twice", 0), "<=", 0),
        ]
    return rows


def limited_checks(f: dict[str, Any]) -> list[list[object]]:
    if "skipped" in f:
        return [["limited provider", "skipped", f["skipped"], ""]]
    lim = f["limit"]
    return [
        runtime.verdict("limited: not paid (a final result other than paid)", f["not_paid"],
                        "<=", 0),
        runtime.verdict("limited: without a final outcome", f["no_outcome"], "<=", 0),
        runtime.verdict("limited: charged twice", f.get("charged_twice", 0), "<=", 0),
        runtime.verdict("limited: busiest second of creates", lim["busiest_second"], "<=",
                        lim["per_second"] + lim["burst"]),
        runtime.verdict("limited: creates refused", lim["refused"]),
        runtime.verdict("limited: click -> outcome p95 (s)", f["outcome_p95"]),
    ]  # fmt: skip


def rush_checks(f: dict[str, Any]) -> list[list[object]]:
    stock = sale_day_rush.RUSH_STOCK
    return [
        runtime.verdict("rush: orders created", f["orders"], ">=", stock),
        runtime.verdict("rush: oversold (orders beyond the stock)", f["oversold"], "<=", 0),
        runtime.verdict("rush: stock after (never negative)", f["stock_after"], ">=", 0),
        runtime.verdict("rush: stock left after", f["stock_after"], "<=", 0),
        runtime.verdict("rush: not winners told p95 (s)", f["told_p95"], "<=", TOLD_P95),
        runtime.verdict("rush: 5xx", f["5xx"], "<=", 0),
        runtime.verdict("rush: no answer", f["no_answer"], "<=", 0),
    ]


def report(figures: dict[str, Any]) -> tuple[str, list[list[object]]]:
    levels, latency = figures["levels"], figures["latency_ms"]
    text = "\n\n".join([
        f"Bare view: {figures['bare_rps']:.0f} req/s (the server's limit). Load average before "
        f"{figures['load_before']}, after {figures['load_after']}.",
        "Levels:\n" + levels_table(figures), "Page p95 by step (let in):\n" + steps_table(levels),
        "CPU per paid order (ms), by process group:\n" + cpu_table(levels),
        limited_table(figures["limited"], latency), rush_table(figures["rush"]),
    ])  # fmt: skip
    checks = level_checks(levels, latency) + limited_checks(figures["limited"])
    return text, checks + rush_checks(figures["rush"])


def main(argv: list[str] | None = None) -> int:
    counts = {
        "type": lambda text: [int(n) for n in text.split(",")],
        "default": [8, 16, 32, 64, 128],
        "help": "shoppers of the rising levels",
    }
    return runtime.main(
        __doc__, run, report, argv, levels=counts,
        seconds={"type": float, "default": 40.0, "help": "each level's measured window"},
        warmup={"type": float, "default": 5.0, "help": "seconds before each window"},
        provider_latency_ms={"type": int, "default": 300, "help": "every sandbox call's"},
        rush_shoppers={"type": int, "default": 1000},
        outcome_timeout={"type": float, "default": 60.0, "help": "seconds from the click after "
                         "which a shopper without a final outcome has none"},
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
