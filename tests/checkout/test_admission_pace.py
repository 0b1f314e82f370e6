"""The admission's pace found by the shop itself (checkout.admission.pace): it rises while the
pages it serves stay fast and shoppers wait, falls when they slow, stays when nobody waits,
never leaves its floor and ceiling, and an operator's pace (or a number in the setting)
overrides it. Counted by the pages the middleware times, through Redis, as every process does."""

from __future__ import annotations

import io
from typing import Any

import pytest
import time_machine
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkout.admission import pace as admission_pace
from checkout.admission import rules as admission
from checkout.models import Product
from core.cache_redis import cache_redis
from core.request_queue import note_queued
from tests.helpers.shop import shopper

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def measured(settings: Any) -> None:
    settings.SHOP_ADMISSION_PER_SECOND = None  # "auto": the shop finds the pace
    settings.SHOP_ADMISSION_MIN_PER_SECOND = 2.0
    settings.SHOP_ADMISSION_MAX_PER_SECOND = 6.0
    settings.SHOP_ADMISSION_PAGE_P95_MS = 100


@pytest.fixture(autouse=True)
def fresh_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's counts of pages start empty (another test's are not this one's)."""
    monkeypatch.setattr(admission_pace, "_served", admission_pace._Served())


@pytest.fixture
def clock() -> Any:
    now = timezone.now().replace(microsecond=400_000)
    with time_machine.travel(now, tick=False) as traveller:
        yield traveller


def pages(count: int, seconds: float, clock: Any) -> None:
    """`count` pages served in the second under way, each in `seconds` (as the middleware
    counts them); the next second's first page adds them to Redis."""
    for _ in range(count):
        admission_pace.page_served(seconds)
    clock.shift(1)
    admission_pace.page_served(0.001)


def window(count: int, seconds: float, clock: Any) -> None:
    """A whole window of seconds of such pages, and the second after (the pace's hold after a
    move is over, and its window holds only these)."""
    for _ in range(admission_pace.WINDOW + 1):
        pages(count, seconds, clock)


def decide(waiting: int, came: float = 0.0) -> float:
    import time

    return admission_pace.adapt(cache_redis(), int(time.time()), waiting=waiting, came=came)


@pytest.mark.usefixtures("measured")
def test_the_pace_rises_while_pages_are_fast_and_shoppers_wait(clock: Any) -> None:
    assert admission.pace() == 6.0  # the ceiling, before anything was measured
    cache_redis().set(admission_pace.FOUND, "2.0")
    seen = []
    for _ in range(6):
        window(30, 0.02, clock)
        seen.append(decide(waiting=50))
    assert seen == [2.5, 3.0, 3.5, 4.0, 4.5, 5.0], seen
    assert admission.pace() == 5.0
    assert admission.pace_kind() == "measured"


@pytest.mark.usefixtures("measured")
def test_the_pace_falls_when_pages_slow_and_never_under_its_floor(clock: Any) -> None:
    cache_redis().set(admission_pace.FOUND, "5.0")
    seen = []
    for _ in range(10):
        window(30, 0.4, clock)  # every page past the 100 ms asked for
        seen.append(decide(waiting=50))
    assert seen[:3] == [4.5, 4.05, 3.65], seen  # a tenth less each slow window
    assert seen == sorted(seen, reverse=True) and seen[-2:] == [2.0, 2.0], seen


@pytest.mark.usefixtures("measured")
def test_after_a_move_the_pace_holds_until_its_pages_are_all_of_the_new_pace(clock: Any) -> None:
    """What the pages take answers a move seconds late: the pace moves again only once the
    window it reads (three seconds) holds none of the seconds before it moved. Decided every
    second on a window still holding the pace before, a rise of a tenth each second overshoots
    by the lag, then falls as far below (on two cores, 4.8 to 16.3 new shoppers a second)."""
    cache_redis().set(admission_pace.FOUND, "2.0")
    seen = []
    for _ in range(8):
        pages(30, 0.02, clock)
        seen.append(decide(waiting=50))
    assert seen == [2.5, 2.5, 2.5, 2.5, 3.0, 3.0, 3.0, 3.0], seen
    for _ in range(5):
        pages(30, 0.4, clock)
        seen.append(decide(waiting=50))
    assert seen[8:] == [2.7, 2.7, 2.7, 2.7, 2.43], seen  # down, and the same hold


@pytest.mark.usefixtures("measured")
def test_slow_pages_cut_the_pace_under_what_came_in(clock: Any) -> None:
    """A pace far above what came in (the ceiling, before any slowness) falls at once to
    nine tenths of what came in over the last second, not a tenth at a time."""
    assert admission.pace() == 6.0
    pages(30, 0.4, clock)
    assert decide(waiting=0, came=4.0) == 3.6


@pytest.mark.usefixtures("measured")
def test_while_shoppers_wait_slow_pages_cut_a_tenth_of_the_pace_whatever_came_in(
    clock: Any,
) -> None:
    """With shoppers waiting, the pace is what let them in, and what comes in follows it (a
    shopper comes back once it has paid): a slow second cuts the pace by a tenth, not to what
    came in, which would cut it again the next second, down to the floor."""
    cache_redis().set(admission_pace.FOUND, "5.0")
    pages(30, 0.4, clock)
    assert decide(waiting=30, came=2.5) == 4.5


@pytest.mark.usefixtures("measured")
def test_the_pace_stays_within_its_ceiling_and_when_nobody_waits(clock: Any) -> None:
    cache_redis().set(admission_pace.FOUND, "5.8")
    window(30, 0.02, clock)
    assert decide(waiting=3) == 6.0  # the ceiling
    window(30, 0.02, clock)
    assert decide(waiting=0) == 6.0  # nobody waits: a quiet hour banks no credit
    window(2, 0.9, clock)  # too few pages to say anything (2 a second, and the flush's)
    assert decide(waiting=10) == 6.0


@pytest.mark.usefixtures("measured")
def test_pages_thrice_as_slow_as_at_ease_are_slow_under_the_target(
    settings: Any, clock: Any
) -> None:
    """The shop learns what its pages take at ease (25 ms here) and cuts the pace when they
    take more than three times that (and 50 ms more), under the 250 ms target: a web
    process's own timing does not see the requests waiting for a thread, but sees them
    slowing each other down."""
    settings.SHOP_ADMISSION_PAGE_P95_MS = 250
    cache_redis().set(admission_pace.FOUND, "4.0")
    window(30, 0.02, clock)
    assert decide(waiting=5) == 4.5  # at ease (p95 25 ms): rising
    window(30, 0.07, clock)
    assert decide(waiting=5) == 5.0  # 75 ms: not past three times 25 ms
    window(60, 0.14, clock)
    assert decide(waiting=5, came=6.0) == 4.5  # 150 ms: slow
    assert admission.page_p95() == 0.15


@pytest.mark.usefixtures("measured")
def test_pages_under_half_the_target_are_not_slow_however_fast_they_were_at_ease(
    settings: Any, clock: Any
) -> None:
    """Pages that took 20 ms at ease and take 100 ms now are still well under the 250 ms
    target: the pace keeps rising while shoppers wait; past half the target (150 ms, over three
    times ease) it falls."""
    settings.SHOP_ADMISSION_PAGE_P95_MS = 250
    cache_redis().set(admission_pace.FOUND, "4.0")
    window(30, 0.02, clock)
    assert decide(waiting=5) == 4.5  # at ease (p95 25 ms)
    window(60, 0.09, clock)
    assert decide(waiting=5) == 5.0  # 100 ms: four times ease, under half the target
    window(60, 0.1, clock)
    assert decide(waiting=5) == 5.5
    window(60, 0.14, clock)
    assert decide(waiting=5, came=6.0) == 4.95  # 150 ms: past half the target and 3 x ease


@pytest.mark.usefixtures("measured")
def test_a_page_counts_the_time_it_waited_for_a_thread(taza: Product, clock: Any) -> None:
    """What a shopper waits is the page and the wait for a thread in front of it (gunicorn's
    worker notes it): a fast page that waited 250 ms counts in the 300 ms bucket."""
    browser = shopper()
    try:
        note_queued(0.25)
        for _ in range(12):
            browser.get(reverse("checkout:product", args=[taza.slug]))
    finally:
        note_queued(0.0)
    clock.shift(1)
    admission_pace.page_served(0.001)
    assert admission.page_p95() == 0.3


@pytest.mark.usefixtures("measured")
def test_a_p95_just_over_the_target_is_slow(clock: Any) -> None:
    cache_redis().set(admission_pace.FOUND, "4.0")
    admission_pace.page_served(0.01)  # a page of the second before: not counted yet
    for _ in range(94):
        admission_pace.page_served(0.01)
    for _ in range(6):  # 6 of 100 past 100 ms: the p95 is past it
        admission_pace.page_served(0.3)
    clock.shift(1)
    admission_pace.page_served(0.001)
    assert admission.page_p95() == 0.3
    assert decide(waiting=5) == 3.6


@pytest.mark.usefixtures("measured")
def test_an_operator_overrides_the_measured_pace(clock: Any) -> None:
    cache_redis().set(admission_pace.FOUND, "4.0")
    out = io.StringIO()
    call_command("admission", "--per-second", "1", stdout=out)
    assert "pace: 1 new shoppers a second; waiting: 0; set by: operator" in out.getvalue()
    assert admission.pace() == 1.0
    call_command("admission", "--default", stdout=out)
    assert admission.pace() == 4.0 and admission.pace_kind() == "measured"


def test_a_number_in_the_setting_fixes_the_pace(settings: Any, clock: Any) -> None:
    settings.SHOP_ADMISSION_PER_SECOND = 3.0
    cache_redis().set(admission_pace.FOUND, "5.0")
    assert admission.pace() == 3.0 and admission.pace_kind() == "setting"


@pytest.mark.usefixtures("measured")
def test_the_queue_lets_in_faster_as_the_shop_measures_fast_pages(
    taza: Product, clock: Any
) -> None:
    """Through the storefront's door: shoppers come faster than the floor lets in; the pages
    the shop serves are fast, so each second lets in more than the one before."""
    cache_redis().set(admission_pace.FOUND, "2.0")  # as if the pages had been slow before
    browsers = [shopper() for _ in range(60)]
    inside: set[int] = set()
    let_in: list[int] = []
    for _ in range(8):
        before = len(inside)
        for n, browser in enumerate(browsers):
            if admitted(browser):  # those inside go on shopping: fast pages, counted
                inside.add(n)
        let_in.append(len(inside) - before)
        clock.shift(1)
    assert let_in[-1] > let_in[1] >= 2, let_in  # the floor alone: 2 a second throughout
    assert sorted(inside) == list(range(len(inside)))  # first come, first in
    assert float(cache_redis().get(admission_pace.FOUND)) > 2.0


def admitted(browser: Client) -> bool:
    return "X-Shop-Queue-Position" not in browser.get(reverse("checkout:home")).headers
