"""The sale day benchmark's pure parts (bench/sale_day*.py): steps, the admission queue's
waiting pages, a level's figures, the knee and saturation, orders charged twice, the flash
rush's answers, and the CPU accounting from a /proc made up for the test."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import requests
from requests.adapters import BaseAdapter

from bench import sale_day, sale_day_cpu, sale_day_rush, sale_day_shop, sale_day_stats
from bench.sale_day_shop import Hit, Level, TimedSession, Visit
from tools.shopper import OrderNotPlaced

# --- Steps and the admission queue -----------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "step"),
    [
        ("GET", "/", "home"),
        ("GET", "/productos/taza-talavera/", "product"),
        ("POST", "/carrito/agregar/taza-talavera/", "cart_add"),
        ("GET", "/carrito/", "cart"),
        ("GET", "/checkout/", "details"),
        ("POST", "/checkout/", "order"),
        ("GET", "/pedidos/ORD-7K2QF/pagar/", "pay_page"),
        ("POST", "/pedidos/ORD-7K2QF/pagos/", "pay"),
        ("GET", "/pedidos/ORD-7K2QF/estado-pago/", "status"),
        ("GET", "/bench/bare/", "other"),
        ("POST", "/", "other"),
    ],
)
def test_each_request_is_timed_as_its_step(method: str, path: str, step: str) -> None:
    assert sale_day_shop.step_of(method, path) == step


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("5", 5.0), ("2; url=/productos/x/", 2.0), ("1.5", 1.5), ("0", 0.2), ("600", 30.0),
     (None, 1.0), ("soon", 1.0)],
)  # fmt: skip
def test_a_waiting_page_is_asked_again_after_its_refresh(header: Any, seconds: float) -> None:
    assert sale_day_shop.refresh_seconds(header) == seconds


class Scripted(BaseAdapter):
    """Answers each request with the next of `answers`: (status, headers)."""

    def __init__(self, answers: list[tuple[int, dict[str, str]]]) -> None:
        super().__init__()
        self.answers, self.asked = answers, []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        self.asked.append((request.method, request.url))
        status, headers = self.answers.pop(0)
        response = requests.Response()
        response.status_code, response.url, response.request = status, request.url, request
        response.headers.update(headers)
        response._content = b"ok"
        return response

    def close(self) -> None:
        pass


def session(answers: list[tuple[int, dict[str, str]]]) -> tuple[TimedSession, Scripted, Visit]:
    visit = Visit(started=0.0)
    timed = TimedSession("http://shop", [], threading.Event(), visit)
    adapter = Scripted(answers)
    timed.mount("http://", adapter)
    return timed, adapter, visit


def test_the_shopper_waits_in_the_queue_then_is_let_in() -> None:
    waiting = {"X-Shop-Queue-Position": "3", "Refresh": "0"}
    timed, adapter, visit = session([(200, waiting), (200, waiting), (200, {})])
    assert timed.get("http://shop/productos/taza/").status_code == 200
    assert [hit.waiting for hit in timed.hits] == [True, True, False]
    assert [hit.step for hit in timed.hits] == ["product"] * 3
    assert visit.requests == 3 and visit.waited >= 0.4  # twice the shortest wait
    assert len(adapter.asked) == 3


def test_adding_to_the_cart_follows_its_redirect_as_a_browser() -> None:
    timed, adapter, _ = session([(302, {"Location": "/carrito/"}), (200, {})])
    answer = timed.post("http://shop/carrito/agregar/taza/", {}, allow_redirects=False)
    assert answer.status_code == 302  # what the caller asked for
    assert adapter.asked[1] == ("GET", "http://shop/carrito/")
    assert [hit.step for hit in timed.hits] == ["cart_add", "cart"]


def test_when_the_level_ends_a_visitor_never_let_in_leaves() -> None:
    waiting = {"X-Shop-Queue-Position": "9", "Refresh": "5"}
    timed, _, visit = session([(200, waiting), (200, {})])
    threading.Timer(0.1, timed.stop.set).start()
    with pytest.raises(sale_day_shop.Stopped):
        timed.get("http://shop/")  # it leaves the queue at once, not after 5 s
    with pytest.raises(sale_day_shop.Stopped):
        timed.get("http://shop/")  # and sends nothing more
    assert not visit.admitted and len(timed.hits) == 1


def test_when_the_level_ends_a_visitor_let_in_goes_on_to_its_outcome() -> None:
    timed, _, visit = session([(200, {}), (200, {})])
    assert timed.get("http://shop/").status_code == 200
    timed.stop.set()
    assert visit.admitted  # it holds a place in the shop until its order is placed
    assert timed.get("http://shop/productos/taza/").status_code == 200


def test_a_failed_visit_says_where_it_failed() -> None:
    timed, _, _ = session([(502, {})])
    answer = timed.post("http://shop/checkout/", {})
    with pytest.raises(requests.HTTPError) as raised:
        answer.raise_for_status()
    assert sale_day_shop.error_label(raised.value) == "502 at order"
    refused = OrderNotPlaced("no", 429)
    assert sale_day_shop.error_label(refused) == "order not placed (429)"
    assert sale_day_shop.error_label(ValueError("not JSON")) == "ValueError"


# --- A level's figures -------------------------------------------------------------------------


def paid_visit(clicked: float, outcome: float = 1.0, **fields: Any) -> Visit:
    return Visit(started=clicked - 2, reference=f"ORD-{clicked}", clicked=clicked,
                 outcome=outcome, result="approved", polls=2, requests=10, **fields)  # fmt: skip


def test_a_level_counts_the_orders_paid_in_its_window() -> None:
    level = Level(8, window=(100.0, 160.0))
    level.visits = [paid_visit(t) for t in (100.0, 120.0, 130.0, 159.5)]  # 159.5 + 1: after
    level.visits += [paid_visit(50.0), Visit(started=150, clicked=150.0, result="processing")]
    level.visits.append(Visit(started=140, reference="ORD-X", clicked=140.0, outcome=2.0,
                              result="rejected"))  # fmt: skip
    level.cpu = {"web": 3.0, "machine": 60.0}
    figures = sale_day_stats.summarize(level)
    assert figures["paid"] == 3 and figures["paid_per_min"] == pytest.approx(3.0)
    assert figures["not_paid"] == 1 and figures["no_outcome"] == 1
    assert figures["cpu_ms"]["web"] == pytest.approx(1000.0)
    assert figures["busy_cores"] == pytest.approx(1.0)
    assert "ORD-X" in figures["references"]


def test_page_p95_leaves_out_waiting_pages_and_the_payment_page_calls() -> None:
    level = Level(8, window=(0.0, 10.0))
    level.hits = [Hit("home", 1.0, 0.1, 200) for _ in range(19)]
    level.hits += [Hit("home", 1.0, 9.0, 200, waiting=True), Hit("status", 1.0, 5.0, 200)]
    level.hits += [Hit("pay", 2.0, 0.5, 503), Hit("cart", 3.0, 1.0, 0), Hit("cart", 20.0, 9, 500)]
    figures = sale_day_stats.summarize(level)
    assert figures["page_p95"] == pytest.approx(0.1)
    assert figures["step_p95"]["status"] == pytest.approx(5.0)
    assert figures["errors"] == {"pay": 1, "cart": 1}  # the last one came after the window
    assert figures["5xx"] == 1
    assert figures["requests_per_second"] == pytest.approx(2.3)


def test_the_queue_figures_count_the_visitors_who_waited() -> None:
    level = Level(8, window=(0.0, 10.0))
    level.visits = [Visit(started=1.0, waited=w) for w in (0.0, 0.0, 2.0, 4.0)]
    level.visits.append(Visit(started=11.0, waited=30.0))  # arrived after the window
    figures = sale_day_stats.queue_figures(level)
    assert figures == {"visitors": 4, "waited": 2, "wait_p50": 4.0, "wait_p95": 4.0}


def levels(*figures: tuple[int, float, float]) -> list[dict[str, Any]]:
    return [{"shoppers": n, "paid_per_min": paid, "page_p95": p95, "roles": []}
            for n, paid, p95 in figures]  # fmt: skip


def test_the_knee_is_the_best_level_whose_pages_answer_in_time() -> None:
    found = sale_day_stats.knee(levels((8, 300, 0.1), (16, 500, 0.2), (32, 560, 0.4)))
    assert found["shoppers"] == 16


def test_without_a_level_in_time_the_knee_is_the_best_level() -> None:
    assert sale_day_stats.knee(levels((8, 300, 0.5), (16, 500, 0.6)))["shoppers"] == 16


def test_throughput_stops_growing_short_of_five_percent_more() -> None:
    assert not sale_day_stats.saturated(300, 0)
    assert not sale_day_stats.saturated(530, 500)
    assert sale_day_stats.saturated(520, 500)
    assert sale_day_stats.saturated(400, 500)


def test_levels_rise_until_saturation_then_twice_and_four_times_the_knee() -> None:
    rates = {8: (300, 0.1), 16: (500, 0.2), 32: (510, 0.5), 64: (505, 0.9), 128: (400, 2.0)}
    asked = []

    def measure(n: int) -> dict[str, Any]:
        asked.append(n)
        return levels((n, *rates[n]))[0]

    done = sale_day.beyond_knee(measure, sale_day.rising(measure, [8, 16, 32, 64, 128]))
    assert asked == [8, 16, 32, 64]  # 32: 510 < 1.05 x 500; 32 = 2x the knee's, run already
    assert [f["roles"] for f in done] == [
        ["rising"], ["rising", "knee"], ["rising", "2x knee"], ["4x knee"],
    ]  # fmt: skip


def test_an_order_is_charged_twice_when_two_payments_took_money() -> None:
    payments = [{"external_reference": "A", "status": "approved"},
                {"external_reference": "A", "status": "authorized"},
                {"external_reference": "B", "status": "approved"},
                {"external_reference": "B", "status": "rejected"},
                {"external_reference": "C", "status": "approved"},
                {"external_reference": "C", "status": "approved"}]  # fmt: skip
    assert sale_day_stats.charged_twice(["A", "B", "A"], payments) == 1


# --- The flash rush ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "location", "page", "kind"),
    [
        (302, "/pedidos/ORD-7K2QF/pagar/", "", "order"),
        (302, "/carrito/", "", "to cart"),
        (200, "", "<li>De Taza &quot;Lupe&quot; solo quedan 0 piezas.</li>", "sold out"),
        (409, "", 'De Taza "Lupe" solo quedan 0 piezas.', "sold out"),
        (200, "", "<form>the details form</form>", "other"),
        (429, "", "", "refused"),
        (502, "", "", "5xx"),
    ],
)
def test_each_answer_of_the_rush_is_told_apart(
    status: int, location: str, page: str, kind: str
) -> None:
    messages = ['De Taza "Lupe" solo quedan 0 piezas.']
    assert sale_day_rush.answer_kind(status, location, page, messages) == kind


def test_the_rush_times_how_long_those_left_out_waited() -> None:
    answers = [{"kind": "order", "seconds": 0.2, "told": 0.2}] * 2
    answers += [{"kind": "sold out", "seconds": 0.3, "told": 0.5}] * 7
    answers += [{"kind": "no answer", "seconds": 60.0, "told": 60.0}]
    figures = sale_day_rush.rush_figures(answers)
    assert figures["sold_out"] == 7 and figures["no_answer"] == 1 and figures["5xx"] == 0
    assert figures["told_p50"] == 0.5 and figures["told_max"] == 60.0
    assert figures["answer_max"] == 0.3  # unanswered ones are not answer times


def test_the_provider_s_counts_of_limited_creates_are_read() -> None:
    seen = {
        "per_second": 50,
        "burst": 10,
        "families": {"payments.create": 10},
        "seen": {"payments.create": {"accepted": 400, "refused": 37, "busiest_second": 19}},
    }
    figures = sale_day_rush.limit_seen(seen)  # fmt: skip
    assert (figures["burst"], figures["refused"], figures["busiest_second"]) == (10, 37, 19)
    assert sale_day_rush.limit_seen({})["burst"] == sale_day_rush.DEFAULT_BURST


# --- CPU from /proc ---------------------------------------------------------------------------

ME = 100


def stat_line(pid: int, comm: str, ppid: int, pgrp: int, utime: int, stime: int) -> str:
    fields = ["S", ppid, pgrp, pgrp, 0, -1, 0, 0, 0, 0, 0, utime, stime, 7, 9, 20, 0, 1, 0, 555]
    return f"{pid} ({comm}) " + " ".join(str(f) for f in fields) + " 0 0\n"


def fake_proc(root: Path, table: list[tuple[int, str, int, int, int, int, str]]) -> Path:
    for pid, comm, ppid, pgrp, utime, stime, command in table:
        (root / str(pid)).mkdir(exist_ok=True)
        (root / str(pid) / "stat").write_text(stat_line(pid, comm, ppid, pgrp, utime, stime))
        (root / str(pid) / "cmdline").write_bytes(command.replace(" ", "\0").encode())
    (root / "stat").write_text("cpu  1000 0 500 8000 100 0 0 0 0 0\ncpu0 1 1 1 1\n")
    return root


PROCESSES = [
    (ME, "python", 1, ME, 50, 10, "python -m bench.sale_day"),
    (200, "python", ME, 200, 100, 0, "python -m gunicorn -c config/gunicorn.py config.wsgi"),
    (201, "python", 200, 200, 300, 100, "python -m gunicorn -c config/gunicorn.py config.wsgi"),
    (300, "python", ME, 300, 10, 0, "python -m celery -A config worker -n writes@%h -Q x"),
    (310, "python", ME, 310, 10, 0, "python -m celery -A config worker -n shop@%h -Q shop"),
    (320, "python", ME, 320, 10, 0, "python -m celery -A config beat --loglevel=INFO"),
    (400, "python", ME, 400, 10, 0, "python -m sandbox.manage runsandbox --port 1"),
    (500, "postgres", 1, 500, 10, 0, "postgres: 15/main: checkpointer"),
    (501, "postgres", 500, 500, 40, 0, "postgres: 15/main: postgres shop_bench 127.0.0.1 idle"),
    (502, "postgres", 500, 500, 40, 0, "postgres: postgres shop_bench_sandbox [local] SELECT"),
    (600, "redis-server", 1, 600, 20, 0, "redis-server 127.0.0.1:6379"),
    (700, "python", 1, 700, 999, 0, "python -m gunicorn someone.else.wsgi"),
    (701, "b) (x", 1, 701, 5, 0, "odd name"),
]


def test_stat_lines_are_read_whatever_the_command_name() -> None:
    stat = sale_day_cpu.parse_stat(701, stat_line(701, "b) (x", 1, 701, 5, 3))
    assert (stat.comm, stat.ppid, stat.pgrp, stat.ticks, stat.started) == ("b) (x", 1, 701, 8, 555)


def test_the_services_are_the_process_groups_this_process_started(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, PROCESSES)
    found = sale_day_cpu.leaders(ME, proc)
    assert found == {200: "web", 300: "writes", 310: "worker", 320: "beat", 400: "sandbox"}


def test_each_process_counts_in_its_group(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, PROCESSES)
    meter = sale_day_cpu.Meter(sale_day_cpu.leaders(ME, proc), ME, ("shop_bench",), proc)
    reading = meter.read()
    by_pid = {pid: group for (pid, _), (group, _) in reading.items()}
    assert by_pid == {ME: "load", 200: "web", 201: "web", 300: "writes", 310: "worker",
                      320: "beat", 400: "sandbox", 500: "pg_others", 501: "pg_ours",
                      502: "pg_others", 600: "redis"}  # fmt: skip
    assert reading[(201, 555)] == ("web", 400)
    assert meter.peaks == {"pg_ours": 1, "pg_others": 2}


def test_a_process_that_ends_keeps_what_it_spent_and_a_new_one_counts_whole() -> None:
    first = {(1, 5): ("web", 100), (2, 5): ("pg_ours", 50), (3, 5): ("redis", 7)}
    # 2 ended after a last reading at 80; 4 was born during the window.
    last = {(1, 5): ("web", 300), (2, 5): ("pg_ours", 80), (3, 5): ("redis", 7),
            (4, 9): ("pg_ours", 20)}  # fmt: skip
    seconds = sale_day_cpu.spent(first, last)
    tick = sale_day_cpu.TICKS
    assert seconds["web"] == pytest.approx(200 / tick)
    assert seconds["pg_ours"] == pytest.approx(50 / tick)
    assert seconds["redis"] == 0


def test_the_machine_s_cpu_beyond_the_groups_is_other(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, [])
    assert sale_day_cpu.machine_busy(proc) == pytest.approx(1500 / sale_day_cpu.TICKS)
    seconds = sale_day_cpu.with_machine({"web": 1.0, "pg_ours": 0.5, "other": 0.0}, 2.0)
    assert seconds["other"] == pytest.approx(0.5) and seconds["machine"] == 2.0


def test_cpu_per_paid_order_in_milliseconds() -> None:
    each = sale_day_cpu.per_order({"web": 2.0, "pg_ours": 1.0, "pg_others": 0.5}, 100)
    assert each["web"] == pytest.approx(20.0) and each["postgres"] == pytest.approx(15.0)
    assert each["total"] == pytest.approx(35.0)
    assert sale_day_cpu.per_order({"web": 2.0}, 0)["total"] == 0


def test_the_shop_s_cpu_is_its_processes_its_database_and_redis() -> None:
    """The shop's own CPU a paid order leaves out the provider's emulator, the load generator,
    other databases and the rest of the machine."""
    seconds = {"web": 2.0, "writes": 0.5, "reads": 0.5, "worker": 1.0, "beat": 0.1,
               "pg_ours": 1.0, "redis": 0.1, "sandbox": 3.0, "load": 3.0, "pg_others": 1.0,
               "other": 1.0}  # fmt: skip
    assert sale_day_cpu.per_order(seconds, 100)["shop"] == pytest.approx(52.0)


def test_a_level_says_the_pace_the_shop_chose_and_its_transactions_per_order() -> None:
    level = Level(8, window=(100.0, 160.0))
    level.visits = [paid_visit(t) for t in (110.0, 120.0)]
    level.shop = {"transactions": 90, "pace_mean": 6.5, "pace_min": 4.0, "pace_max": 9.0}
    figures = sale_day_stats.summarize(level)
    assert figures["transactions_per_order"] == pytest.approx(45.0)
    assert figures["pace"] == {"mean": 6.5, "min": 4.0, "max": 9.0}
