"""The dashboard's chart of the last 30 days' sales, drawn on the server: the geometry of an
SVG bar chart (admin/owner_dashboard_chart.html draws it). No script, no inline style: the
bars' colours come from classes in static/css/owner_dashboard.css, which the CSP allows."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from django.utils.formats import date_format

from core.money import pesos
from dashboard.figures import Day

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 92, 8, 12, 28  # room for the amounts' and the days' labels
GAP = 2  # between bars
STEPS = (1, 2, 2.5, 5)  # an axis's top is one of these times a power of ten


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    day: str  # the day, written in the active language
    amount: str  # $1,290.00
    count: int
    today: bool


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class DayLabel:
    x: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    right: float  # x of the plot's right edge
    bottom: float  # y of the baseline
    bars: list[Bar]
    ticks: list[Tick]
    days: list[DayLabel]


def axis_top(highest: Decimal) -> Decimal:
    """The smallest round amount (1, 2, 2.5 or 5 times a power of ten) at or above `highest`."""
    if highest <= 0:
        return Decimal("1000")
    power = Decimal(10) ** (len(str(int(highest.to_integral_value(ROUND_CEILING)))) - 1)
    for step in (*STEPS, 10):
        top = power * Decimal(str(step))
        if top >= highest:
            return top
    return power * 10  # pragma: no cover - the loop ends at 10 times the power


def sales_chart(days: list[Day]) -> Chart:
    """Bars of the amount charged each day, oldest on the left, today on the right; the
    amounts' axis at 0, half and the top; a day's label every week, ending on today."""
    plot_width = WIDTH - LEFT - RIGHT
    plot_height = HEIGHT - TOP - BOTTOM
    baseline = TOP + plot_height
    top = axis_top(max((day.charged.amount for day in days), default=Decimal("0")))
    slot = plot_width / max(len(days), 1)
    bars = []
    labels = []
    for index, day in enumerate(days):
        height = float(day.charged.amount / top) * plot_height
        x = LEFT + index * slot
        bars.append(
            Bar(
                x=round(x + GAP / 2, 2),
                y=round(baseline - height, 2),
                width=round(slot - GAP, 2),
                height=round(height, 2),
                day=date_format(day.day, "DATE_FORMAT"),
                amount=pesos(day.charged.amount),
                count=day.charged.count,
                today=index == len(days) - 1,
            )
        )
        if (len(days) - 1 - index) % 7 == 0:
            labels.append(DayLabel(x=round(x + slot / 2, 2), label=date_format(day.day, "j M")))
    ticks = [
        Tick(y=round(baseline - fraction * plot_height, 2), label=pesos(top * Decimal(fraction)))
        for fraction in (0, 0.5, 1)
    ]
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        right=WIDTH - RIGHT,
        bottom=baseline,
        bars=bars,
        ticks=ticks,
        days=labels,
    )
