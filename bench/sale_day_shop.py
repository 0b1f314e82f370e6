"""The sale day's shoppers: new visitors in a closed loop, each a browser as plain HTTP
(`bench.brownout.Shopper`) whose every request to the shop is timed by step, which waits in the
shop's admission queue when a page says so, and which follows the cart's redirect as a browser
does. One level: `shoppers` loops for a warm-up and a measured window. See README.md."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from bench import brownout, sale_day_cpu, sale_day_probe
from tools.shopper import OrderNotPlaced

STEPS = ("home", "product", "cart_add", "cart", "details", "order", "pay_page", "pay", "status")
PAGES = STEPS[:7]  # the storefront's pages ("page p95"); the payment page's JSON calls after
ROUTES = (
    ("GET", r"/", "home"), ("GET", r"/productos/[^/]+/", "product"),
    ("POST", r"/carrito/agregar/[^/]+/", "cart_add"), ("GET", r"/carrito/", "cart"),
    ("GET", r"/checkout/", "details"), ("POST", r"/checkout/", "order"),
    ("GET", r"/pedidos/[^/]+/pagar/", "pay_page"), ("POST", r"/pedidos/[^/]+/pagos/", "pay"),
    ("GET", r"/pedidos/[^/]+/estado-pago/", "status"),
)  # fmt: skip
QUEUE_HEADER = "X-Shop-Queue-Position"  # the admission queue's waiting page
QUEUE_WAIT = (0.2, 30.0, 1.0)  # seconds a waiting page's Refresh is kept within; without one
GIVE_UP = 60.0  # seconds in the queue after which a visitor let in before leaves, once stopped
STAGGER = 1.0  # seconds over which a level's shoppers start
ERROR_PAUSE = 0.5  # seconds a shopper whose order failed waits before the next
PAY_PATH, STATUS_PATH = "/pedidos/{}/pagos/", "/pedidos/{}/estado-pago/"


def step_of(method: str, path: str) -> str:
    """The step of the shop's request `method path` ("other" when none)."""
    for wanted, pattern, step in ROUTES:
        if method.upper() == wanted and re.fullmatch(pattern, path):
            return step
    return "other"


def refresh_seconds(value: str | None) -> float:
    """Seconds a `Refresh` header ("5", "5; url=...") asks to wait, kept within bounds."""
    low, high, default = QUEUE_WAIT
    found = re.match(r"\s*(\d+(?:\.\d+)?)", value or "")
    return min(high, max(low, float(found[1]))) if found else default


def queue_wait(response: requests.Response) -> float | None:
    """Seconds to wait before asking again when the answer is the admission queue's waiting
    page; None when the shopper was let in."""
    if QUEUE_HEADER not in response.headers or response.status_code >= 500:
        return None
    return refresh_seconds(response.headers.get("Refresh"))


@dataclass(frozen=True)
class Hit:
    """One answer of the shop (`status` 0: none came), `waiting`: a waiting page."""

    step: str
    started: float
    seconds: float
    status: int
    waiting: bool = False


@dataclass
class Visit:
    """One visitor's order, from the home page to its outcome."""

    started: float
    reference: str = ""
    clicked: float | None = None  # when "pay" was pressed (time.monotonic())
    outcome: float | None = None  # seconds from the click to the final result (None: none)
    result: str = ""
    polls: int = 0
    requests: int = 0
    waited: float = 0.0  # seconds in the admission queue
    admitted: bool = False  # let in by the shop (a page that was not the waiting page)
    error: str = ""

    @property
    def ended(self) -> float | None:
        """When its final result was known (None: never)."""
        if self.clicked is None or self.outcome is None:
            return None
        return self.clicked + self.outcome


class Stopped(Exception):
    """The level ended while this visitor was still waiting to be let in: it leaves."""


class TimedSession(requests.Session):
    """A browser's session that times every request to `shop` into `hits`, asks again after
    the admission queue's waiting pages (the same request, with its cookies), and follows the
    redirect after adding to the cart. Once `stop` is set, a visitor never let in leaves (one
    let in goes on: it holds a place in the shop until its order is placed)."""

    def __init__(self, shop: str, hits: list[Hit], stop: threading.Event, visit: Visit) -> None:
        super().__init__()
        self.shop, self.hits, self.stop, self.visit = shop, hits, stop, visit

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:
        if not url.startswith(self.shop):
            return super().request(method, url, *args, **kwargs)
        step = step_of(method, urlsplit(url).path)
        if step == "pay" and self.visit.clicked is None:
            self.visit.clicked = time.monotonic()
        queued_since = None
        while True:
            started, response = self._timed(step, method, url, *args, **kwargs)
            wait = queue_wait(response)
            if wait is None:
                break
            queued_since = queued_since or started
            ended = self.stop.wait(wait)
            if ended and (not self.visit.admitted or time.monotonic() - queued_since > GIVE_UP):
                raise Stopped()
        if queued_since is not None:
            self.visit.waited += time.monotonic() - queued_since
        if step == "cart_add" and response.status_code == 302:
            self.get(urljoin(url, response.headers.get("Location", "")), timeout=30)
        return response

    def _timed(
        self, step: str, method: str, url: str, *args: Any, **kwargs: Any
    ) -> tuple[float, requests.Response]:
        """The request, timed into `hits`; when it was sent, and its answer."""
        if self.stop.is_set() and not self.visit.admitted:
            raise Stopped()
        started = time.monotonic()
        self.visit.requests += 1
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException:
            self.hits.append(Hit(step, started, time.monotonic() - started, 0))
            raise
        waiting = queue_wait(response) is not None
        self.visit.admitted = self.visit.admitted or not waiting
        self.hits.append(Hit(step, started, time.monotonic() - started, response.status_code,
                             waiting))  # fmt: skip
        return started, response


class SaleShopper(brownout.Shopper):
    """A new visitor (an address and a browser session of its own): the home page, a product,
    the cart, the details form, the pay page, a card token, "pay", the status until final."""

    def __init__(self, urls: dict[str, str], hits: list[Hit], stop: threading.Event) -> None:
        super().__init__(urls["shop"], urls["sandbox"])
        self.visit = Visit(started=time.monotonic())
        timed = TimedSession(self.shop, hits, stop, self.visit)
        timed.headers.update(self.http.headers)  # the address of its own
        self.http.close()
        self.http = timed

    def buy(self, slug: str, timeout: float) -> Visit:
        """One order, paid; what happened."""
        try:
            self.http.get(f"{self.shop}/", timeout=30).raise_for_status()
            self.visit.reference = self.place_order(slug)
            paths = (p.format(self.visit.reference) for p in (PAY_PATH, STATUS_PATH))
            self.click_pay(*paths, timeout)
        except Stopped:
            self.visit.error = "stopped"
        except (requests.RequestException, OrderNotPlaced, ValueError, KeyError) as exc:
            self.visit.error = error_label(exc)
        finally:
            self.http.close()
        self.visit.outcome, self.visit.result = self.final, self.result
        self.visit.polls = self.polls
        return self.visit


def error_label(exc: Exception) -> str:
    """Why a visit ended without its order: the step and the status refused, or the error."""
    response = getattr(exc, "response", None)
    if isinstance(exc, requests.HTTPError) and response is not None:
        method = response.request.method if response.request else "GET"
        return f"{response.status_code} at {step_of(method or 'GET', urlsplit(response.url).path)}"
    if isinstance(exc, OrderNotPlaced):
        return f"order not placed ({exc.status})"
    return type(exc).__name__


@dataclass
class Level:
    """What a level recorded: every answer, every visit, its window and its CPU seconds."""

    shoppers: int
    window: tuple[float, float] = (0.0, 0.0)
    hits: list[Hit] = field(default_factory=list)
    visits: list[Visit] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # seconds spent in the window
    peaks: dict[str, int] = field(default_factory=dict)  # PostgreSQL processes at most
    shop: dict[str, Any] = field(default_factory=dict)  # the pace and transactions (a Probe's)


def run_level(
    urls: dict[str, str], shoppers: int, slugs: list[str], timing: tuple[float, float, float],
    meter: Callable[[], sale_day_cpu.Meter],
    probe: Callable[[], sale_day_probe.Probe] = sale_day_probe.Probe,
) -> Level:  # fmt: skip
    """`shoppers` closed loops for `timing` = (warm-up, window, outcome timeout) seconds; the
    CPU measured over the window by a new `meter()`, the shop's pace and transactions by a new
    `probe()`. New orders stop at the window's end; the visitors let in go on until their
    outcome (or the timeout); those in the queue leave."""
    warmup, seconds, timeout = timing
    level, stop = Level(shoppers), threading.Event()

    def loop(index: int) -> None:
        stop.wait(index * STAGGER / shoppers)
        n = index
        while not stop.is_set():
            visit = SaleShopper(urls, level.hits, stop).buy(slugs[n % len(slugs)], timeout)
            level.visits.append(visit)
            n += shoppers
            if visit.error and visit.error != "stopped":
                stop.wait(ERROR_PAUSE)

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(shoppers)]
    for thread in threads:
        thread.start()
    time.sleep(warmup)
    cpu, shop, start = meter(), probe(), time.monotonic()
    cpu.begin()
    shop.begin()
    time.sleep(seconds)
    level.cpu, level.window, level.peaks = cpu.end(), (start, time.monotonic()), cpu.peaks
    level.shop = shop.end()
    stop.set()
    for thread in threads:
        thread.join(timeout + 60)
    return level
