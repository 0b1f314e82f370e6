"""The soak's judgement of a run (tools/soak_report.py): a run refused most of its orders, whose
orders never reach a payment, or that did too little fails; a healthy one passes; its summary
names every count. No demo is started: runs are built by hand."""

from __future__ import annotations

from collections import Counter

import pytest

from tools.soak_report import LEAST_EXERCISED, Run, Thresholds, judge, summary


def healthy(**changes: object) -> Run:
    """A run of 6 minutes that did everything and found nothing wrong."""
    run = Run(
        minutes=6,
        orders_tried=300,
        orders_created=300,
        provider_payments=300,
        payments=Counter(
            {"approved": 180, "declined": 60, "challenge passed": 31, "challenge failed": 29}
        ),
        refunds=55,
        refunds_asked=57,
        notifications=800,
        dead={"sandbox": 0, "shop": 0, "worker": 0, "beat": 0},
    )
    for name, value in changes.items():
        setattr(run, name, value)
    return run


def test_a_healthy_run_passes() -> None:
    """Every order placed and paid, each kind of payment, refunds and notifications: no failure."""
    assert judge(healthy()) == []


def test_a_run_refused_most_of_its_orders_fails() -> None:
    """The run the order limits broke: 282 of 302 orders answered 429 fails, and says so."""
    run = healthy(orders_tried=302, orders_created=20, orders_refused=Counter({429: 282}))
    run.provider_payments = 20

    failures = judge(run)

    assert len(failures) == 1
    assert "282 of 302 orders were refused" in failures[0]
    assert "429: 282" in failures[0]


def test_a_small_share_of_refusals_is_allowed() -> None:
    """At most 2% by default: 6 of 300 passes, 7 of 300 fails, a stricter threshold fails 6."""
    assert judge(healthy(orders_refused=Counter({429: 6}))) == []
    assert judge(healthy(orders_refused=Counter({429: 4}), orders_unanswered=3)) != []
    assert judge(healthy(orders_refused=Counter({429: 6})), Thresholds(max_refused_share=0.01))


def test_a_run_whose_orders_reach_no_payment_fails() -> None:
    """Orders placed, and not one payment at the provider (every attempt refused): fails."""
    run = healthy(provider_payments=0, orders_unpaid=300, attempts_refused=Counter({429: 300}))

    failures = judge(run)

    assert "no order reached a payment at the provider" in failures
    assert any("300 of 300 orders placed never reached a payment" in f for f in failures)
    assert any("429: 300" in f for f in failures)


def test_a_run_with_too_many_orders_unpaid_fails() -> None:
    """More than 2% of the orders placed with no payment at the provider fails; 2% passes."""
    assert judge(healthy(orders_unpaid=6)) == []
    assert judge(healthy(orders_unpaid=7)) == [
        "7 of 300 orders placed never reached a payment at the provider (at most 2.0% "
        "allowed); payment attempts refused by status: none"
    ]


def test_a_run_with_no_order_tried_fails() -> None:
    assert "no order was tried" in judge(healthy(orders_tried=0, orders_created=0))


@pytest.mark.parametrize("name", LEAST_EXERCISED)
def test_a_run_that_did_not_exercise_something_fails(name: str) -> None:
    """No declined card, no challenge passed or failed, no refund...: too little to judge."""
    counts = {
        "approved payments": ("payments", "approved"),
        "declined payments": ("payments", "declined"),
        "3-D Secure challenges passed": ("payments", "challenge passed"),
        "3-D Secure challenges failed": ("payments", "challenge failed"),
        "refunds": ("refunds", None),
        "extra notifications": ("notifications", None),
    }
    run = healthy()
    attribute, key = counts[name]
    if key is None:
        setattr(run, attribute, 0)
    else:
        getattr(run, attribute)[key] = 0

    assert judge(run) == [f"too little exercised: 0 {name}, at least 1 wanted"]


def test_refused_notifications_fail() -> None:
    run = healthy(notifications=780, notifications_refused=Counter({503: 20}))

    assert judge(run) == ["20 of 800 extra notifications were refused (503: 20)"]


def test_dead_or_restarted_processes_and_wrong_orders_fail() -> None:
    """What the soak checked before: processes alive, and the shop equal to the provider."""
    assert judge(healthy(dead={"worker": 2, "beat": 0})) == ["processes found dead: {'worker': 2}"]
    assert judge(healthy(restarts=1)) == ["processes started again: 1"]
    assert judge(healthy(wrong={"orders charged twice": ["ORD-1: ['p1', 'p2']"]})) == [
        "the shop differs from the provider: 1 orders charged twice"
    ]


def test_the_summary_names_every_count_and_the_verdict() -> None:
    """Each count in the summary, with its name, distinct numbers so none stands for another."""
    run = Run(
        minutes=6,
        seconds=490,
        orders_tried=311,
        orders_created=302,
        orders_refused=Counter({429: 7, 503: 1}),
        orders_unanswered=1,
        orders_unpaid=4,
        attempts_refused=Counter({429: 3}),
        provider_payments=298,
        payments=Counter(
            {
                "approved": 170,
                "authorized": 2,
                "declined": 61,
                "challenge passed": 33,
                "challenge failed": 27,
                "challenge undecided": 5,
                "unknown": 1,
            }
        ),
        captures=11,
        cancels=12,
        refunds=54,
        refunds_asked=56,
        notifications=813,
        notifications_refused=Counter({500: 9}),
        restarts=0,
    )

    text = summary(run, [])

    for expected in (
        "soak of 6 minutes of traffic, 8.2 minutes in all",
        "311 tried, 302 created, 8 refused (429: 7, 503: 1), 1 unanswered",
        "4 never reached a payment",
        "298 at the provider",
        "170 approved, 2 authorized, 61 declined, 65 challenged (33 passed, 27 failed, "
        "5 undecided)",
        "other results: {'unknown': 1}",
        "payment attempts 3 refused (429: 3)",
        "11 captures, 12 cancels, 54 refunds (56 asked in the admin)",
        "813 sent extra, 9 refused (500: 9)",
        "started again 0",
        "every payment and order right",
        "result: PASS",
    ):
        assert expected in text
    assert summary(run, ["no order was tried"]).endswith("result: FAIL\n  - no order was tried")
