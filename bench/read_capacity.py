"""What the provider read budget keeps: for a number of approved payments a day, the reads a
day the shop makes (those its notifications ask for, and its schedule's), against the budget,
and how late the schedule's reads are at worst when the budget, or the workers that read, run
short at the busiest hours. `bench/volume.py` prints it; README.md quotes it.

A model, not a measurement: payments arrive through the day as a Mexican shop's do (few at
night, most from noon to ten at night), each notification read once when it comes (its INSERT
and UPDATE are read together), and each payment then read at every step of
`payments.rereading.rules` (none of them finding a change, the most reads a payment can cost).
The schedule's reads each minute are what the budget leaves after the notifications' reads,
and at most what the provider-reads workers can do in the minute (`readers` reading one payment
after the other, `latency` seconds a read). The schedule repeats every day once a payment's
last step is past, so a few days from a full backlog-free start show the steady state.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from django.conf import settings

from payments.rereading.rules import RECHECK_AFTER

# Share of a day's payments in each hour (0 h to 23 h, the shop's local time).
HOURLY = (
    0.2, 0.1, 0.1, 0.1, 0.1, 0.2, 0.4, 0.7, 1.0, 1.3, 1.5, 1.7,
    1.9, 1.8, 1.6, 1.4, 1.3, 1.4, 1.6, 1.9, 2.0, 1.7, 1.1, 0.6,
)  # fmt: skip
DAY = 1440
READERS = 4  # the Procfile's provider-reads processes (docs/deployment.md runs 8: more room)
READ_LATENCY = 0.3  # seconds: a card provider's read across the internet, on the slow side
TARGET_LATENESS = 60  # minutes: the schedule's reads are at most this late


@dataclass(frozen=True)
class Capacity:
    approved_per_day: int
    notification_reads: int  # a day
    scheduled_reads: int  # a day
    budget: int  # a day
    busiest_minute: int  # reads in the busiest minute
    worst_lateness: int  # minutes, the schedule's reads

    @property
    def reads(self) -> int:
        return self.notification_reads + self.scheduled_reads


def _arrivals(per_day: float) -> list[float]:
    total = sum(HOURLY)
    return [per_day * HOURLY[m // 60] / total / 60 for m in range(DAY)]


def capacity(
    approved_per_day: int,
    *,
    budget: int | None = None,
    readers: int = READERS,
    latency: float = READ_LATENCY,
    days: int = 4,
) -> Capacity:
    """The reads a day and the schedule's worst lateness at `approved_per_day` approvals a day,
    with `budget` reads a minute (PAYMENTS_PROVIDER_READS_PER_MINUTE)."""
    budget = budget or settings.PAYMENTS_PROVIDER_READS_PER_MINUTE
    workers = readers * 60 * 0.8 / latency  # each check task within 80% of its minute
    arrivals = _arrivals(approved_per_day)
    steps = [int(step.total_seconds() // 60) for step in RECHECK_AFTER]
    due = [sum(arrivals[(m - step) % DAY] for step in steps) for m in range(DAY)]
    backlog: deque[list[float]] = deque()  # [minute due, reads]
    worst = busiest = 0.0
    scheduled = 0.0
    for minute in range(days * DAY):
        backlog.append([minute, due[minute % DAY]])
        foreground = arrivals[minute % DAY]
        room = min(max(budget - foreground, 0.0), workers)
        done = 0.0
        while backlog and room - done > 1e-9:
            since, reads = backlog[0]
            taken = min(reads, room - done)
            done += taken
            worst = max(worst, minute - since) if minute >= DAY else worst
            if taken >= reads - 1e-9:
                backlog.popleft()
            else:
                backlog[0][1] -= taken
        if minute >= (days - 1) * DAY:  # the last day: the steady state
            scheduled += done
            busiest = max(busiest, foreground + done)
    return Capacity(
        approved_per_day=approved_per_day,
        notification_reads=round(sum(arrivals)),
        scheduled_reads=round(scheduled),
        budget=budget * DAY,
        busiest_minute=round(busiest),
        worst_lateness=round(worst),
    )


def largest_kept(*, budget: int | None = None, step: int = 5_000) -> int:
    """The most approved payments a day (to `step`) whose schedule is kept within
    TARGET_LATENESS by the budget and the workers."""
    kept = 0
    while capacity(kept + step, budget=budget).worst_lateness <= TARGET_LATENESS:
        kept += step
    return kept


def budget_table(volumes: tuple[int, ...] = (500, 5_000, 50_000)) -> tuple[list[str], list[str]]:
    """The table bench/volume.py prints, and its misses (a volume up to 50,000 a day whose
    schedule is late by more than TARGET_LATENESS)."""
    budget = settings.PAYMENTS_PROVIDER_READS_PER_MINUTE
    rows = [
        f"read budget: {budget:,} reads a minute ({budget * DAY:,} a day); "
        f"{READERS} reading processes, {READ_LATENCY:.1f} s a read",
        f"{'approved/day':>12} {'notif reads':>12} {'sched reads':>12} {'of budget':>9} "
        f"{'busiest min':>11} {'worst late':>10}",
    ]
    misses = []
    for volume in volumes:
        cap = capacity(volume)
        rows.append(
            f"{volume:>12,} {cap.notification_reads:>12,} {cap.scheduled_reads:>12,} "
            f"{cap.reads / cap.budget:>9.0%} {cap.busiest_minute:>11,} "
            f"{cap.worst_lateness:>7,} min"
        )
        if cap.worst_lateness > TARGET_LATENESS:
            misses.append(f"{volume:,} approved a day: reads {cap.worst_lateness} min late")
    rows.append(
        f"the schedule is kept (<= {TARGET_LATENESS} min late) up to "
        f"{largest_kept():,} approved payments a day"
    )
    return rows, misses
