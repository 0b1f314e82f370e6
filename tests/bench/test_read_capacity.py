"""The model of what the provider read budget keeps (bench.read_capacity), which
bench/volume.py prints and README.md quotes."""

from __future__ import annotations

from typing import Any

from bench.read_capacity import TARGET_LATENESS, budget_table, capacity, largest_kept
from payments.rereading.rules import RECHECK_AFTER


def test_each_approval_costs_one_notification_read_and_one_read_a_step() -> None:
    cap = capacity(5_000)
    assert cap.notification_reads == 5_000
    assert cap.scheduled_reads == 5_000 * len(RECHECK_AFTER)
    assert cap.worst_lateness == 0


def test_the_default_budget_keeps_the_schedule_at_fifty_thousand_a_day() -> None:
    cap = capacity(50_000)
    assert cap.reads <= cap.budget
    assert cap.worst_lateness <= TARGET_LATENESS
    assert cap.busiest_minute <= 600


def test_past_the_budget_the_schedule_falls_behind() -> None:
    """Twice the volume the default budget keeps: its busiest hours' reads wait."""
    kept = largest_kept()
    assert 50_000 <= kept < 200_000
    assert capacity(kept * 2).worst_lateness > TARGET_LATENESS
    assert capacity(kept * 2).busiest_minute == 600  # never over the budget


def test_slow_reads_with_few_workers_fall_behind_within_the_budget() -> None:
    """The budget is not all: one thread at a second a read cannot keep 50,000 a day."""
    assert capacity(50_000, readers=1, latency=1.0).worst_lateness > TARGET_LATENESS


def test_the_table_reports_a_budget_too_small_as_a_miss(settings: Any) -> None:
    rows, misses = budget_table()
    assert misses == []
    assert any("50,000" in row for row in rows)

    settings.PAYMENTS_PROVIDER_READS_PER_MINUTE = 100
    rows, misses = budget_table()
    assert misses and misses[0].startswith("50,000 approved a day")
