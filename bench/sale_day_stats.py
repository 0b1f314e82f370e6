"""The sale day's figures, from what its levels recorded: paid orders a minute, latencies, the
knee and saturation, orders charged twice. Pure: no service is needed (tests/bench)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any

from bench import sale_day_cpu
from bench.runtime import percentile
from bench.sale_day_shop import PAGES, STEPS, Hit, Level, Visit

PAID = ("approved", "authorized")
SATURATION = 1.05  # a level short of this x the best level before it: throughput stopped growing
PAGE_P95 = 0.300  # seconds: the knee is the best level whose pages answer within this (p95)


def failed(hit: Hit) -> bool:
    """No answer, or neither 2xx nor 3xx."""
    return hit.status == 0 or hit.status >= 400


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return fmean(values) if values else 0.0


def in_window(level: Level) -> tuple[list[Hit], list[Visit]]:
    """The answers sent during the window, and the visits whose outcome came in it."""
    start, end = level.window
    hits = [h for h in level.hits if start <= h.started < end]
    done = [v for v in level.visits if v.ended is not None and start <= v.ended <= end]
    return hits, done


def step_figures(hits: Sequence[Hit]) -> dict[str, Any]:
    """Page p95 (the storefront's pages, let in), p95 by step, errors by step, 5xx."""
    admitted = [h for h in hits if h.status and not h.waiting]
    return {
        "page_p95": percentile([h.seconds for h in admitted if h.step in PAGES], 0.95),
        "step_p95": {
            step: percentile([h.seconds for h in admitted if h.step == step], 0.95)
            for step in STEPS
        },
        "errors": dict(Counter(h.step for h in hits if failed(h))),
        "errors_total": sum(1 for h in hits if failed(h)),
        "5xx": sum(1 for h in hits if h.status >= 500),
    }


def queue_figures(level: Level) -> dict[str, Any]:
    """The visitors who arrived during the window and how long those who waited waited."""
    start, end = level.window
    visitors = [v for v in level.visits if start <= v.started < end]
    waits = [v.waited for v in visitors if v.waited > 0]
    return {
        "visitors": len(visitors), "waited": len(waits),
        "wait_p50": percentile(waits, 0.5), "wait_p95": percentile(waits, 0.95),
    }  # fmt: skip


def summarize(level: Level) -> dict[str, Any]:
    """A level's figures (JSON-ready): rates and latencies of its window; `not_paid` (a final
    result other than paid) and `no_outcome` of every visit that pressed "pay" (all approved
    cards); `references`: every order its visitors placed."""
    start, end = level.window
    seconds = max(end - start, 1e-9)
    hits, done = in_window(level)
    paid = [v for v in done if v.result in PAID]
    outcomes = [v.outcome for v in done if v.outcome is not None]
    unresolved = [v for v in level.visits if v.clicked is not None and v.outcome is None]
    wrong = [v for v in level.visits if v.outcome is not None and v.result not in PAID]
    return {
        "shoppers": level.shoppers, "seconds": seconds, "paid": len(paid),
        "paid_per_min": len(paid) * 60 / seconds,
        "outcome_p50": percentile(outcomes, 0.5), "outcome_p95": percentile(outcomes, 0.95),
        **step_figures(hits), **queue_figures(level),
        "polls_per_order": mean(v.polls for v in done),
        "requests_per_order": mean(v.requests for v in done),
        "requests_per_second": len(hits) / seconds,
        "not_paid": len(wrong), "no_outcome": len(unresolved),
        "visit_errors": dict(Counter(v.error for v in level.visits
                                     if v.error and v.error != "stopped")),
        "cpu_ms": sale_day_cpu.per_order(level.cpu, len(paid)),
        "busy_cores": level.cpu.get("machine", 0.0) / seconds, "pg_processes": level.peaks,
        "pace": {key: level.shop.get(f"pace_{key}", 0.0) for key in ("mean", "min", "max")},
        "transactions_per_order": level.shop.get("transactions", 0) / max(len(paid), 1),
        "references": sorted({v.reference for v in level.visits if v.reference}),
    }  # fmt: skip


def saturated(paid_per_min: float, best_before: float) -> bool:
    """Throughput stopped growing: short of `SATURATION` x the best level before."""
    return best_before > 0 and paid_per_min < SATURATION * best_before


def knee(levels: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The level with the most paid orders a minute among those whose page p95 is within
    `PAGE_P95` (if none is, among all)."""
    within = [level for level in levels if level["page_p95"] <= PAGE_P95]
    return max(within or levels, key=lambda level: level["paid_per_min"])


def charged_twice(references: Iterable[str], payments: Iterable[dict[str, Any]]) -> int:
    """How many of the orders `references` the provider charged more than once (its payments
    approved or authorized for one external reference), as the brownout counts them."""
    taken = Counter(p.get("external_reference") for p in payments if p.get("status") in PAID)
    return sum(1 for reference in set(references) if taken[reference] > 1)
