"""Two parts of the sale day beyond its levels: the provider limiting its creates (the sandbox's
`/_sandbox/rate_limits`), and a flash rush: many shoppers ordering the last few items at the
same instant. See README.md."""

from __future__ import annotations

import html
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from typing import Any
from urllib.parse import urljoin

import requests

from bench import runtime, sale_day_cpu, sale_day_shop, sale_day_stats
from tools.shopper import CUSTOMER

RATE_LIMITS = "/_sandbox/rate_limits"
# Creates a second: under what the shop itself serves on two cores (9 new shoppers a second,
# SHOP_ADMISSION_PER_SECOND), so that the limit binds and its 429s are met; the burst is the
# sandbox's default, a second's worth.
LIMIT, LIMITED_SHOPPERS, DEFAULT_BURST = 5, 64, 5
RUSH_STOCK = 10
RUSH_QUEUE_SECONDS = 20.0  # how long a rush's shopper waits to be let in before leaving
RUSH_TIMEOUT = 60.0  # seconds: a "continue" unanswered this long has no answer
WON = r"/pedidos/[^/]+/pagar/"


def limited_provider(
    urls: dict[str, str], slugs: list[str], timing: tuple[float, float, float],
    cpu: Callable[[], sale_day_cpu.Meter],
) -> dict[str, Any]:  # fmt: skip
    """`LIMITED_SHOPPERS` shoppers while the provider takes `LIMIT` creates a second; skipped
    (`skipped` says why) when the sandbox has no rate limits."""
    control = urls["sandbox"] + RATE_LIMITS
    body = {"families": {"payments.create": LIMIT}}
    asked = requests.post(control, json=body, auth=runtime.SECRET, timeout=30)
    if asked.status_code == 404:
        print(f"  limited provider: skipped (the sandbox answers 404 to POST {RATE_LIMITS})")
        return {"skipped": f"POST {RATE_LIMITS} answered 404"}
    asked.raise_for_status()
    try:
        runtime.settle()
        level = sale_day_shop.run_level(urls, LIMITED_SHOPPERS, slugs, timing, cpu)
        seen = requests.get(control, auth=runtime.SECRET, timeout=30).json()
    finally:
        requests.delete(control, auth=runtime.SECRET, timeout=30)
    figures = sale_day_stats.summarize(level)
    figures["limit"] = limit_seen(seen)
    busiest = figures["limit"]["busiest_second"]
    print(f"  limited provider ({LIMIT} creates/s), {LIMITED_SHOPPERS} shoppers: "
          f"{figures['paid_per_min']:.0f} paid/min, click -> outcome p95 "
          f"{figures['outcome_p95']:.2f} s, busiest second {busiest}")  # fmt: skip
    return figures


def limit_seen(seen: dict[str, Any]) -> dict[str, Any]:
    """The sandbox's counts of the limited creates (`GET /_sandbox/rate_limits`)."""
    creates = (seen.get("seen") or {}).get("payments.create") or {}
    burst = seen.get("burst")
    return {
        "per_second": LIMIT,
        "burst": burst if isinstance(burst, int | float) else DEFAULT_BURST,
        "accepted": creates.get("accepted", 0), "refused": creates.get("refused", 0),
        "busiest_second": creates.get("busiest_second", 0), "answer": seen,
    }  # fmt: skip


def sold_out_messages(product: Any) -> list[str]:
    """What the shop tells a shopper whose order finds the product gone, in both languages."""
    from django.utils import translation
    from django.utils.translation import gettext, ngettext

    said = []
    for language in ("es", "en"):
        with translation.override(language):
            name = product.display_name
            left = "Only %(count)s of %(name)s left."
            said.append(ngettext(left, left, 0) % {"count": 0, "name": name})
            said.append(gettext("%(name)s is sold out.") % {"name": name})
    return said


def answer_kind(status: int, location: str, page: str, messages: list[str]) -> str:
    """What a "continue" answered: `order` (sent to pay), `to cart` (sent back to the cart,
    where the shop says why), `sold out` (the out-of-stock message on the page answered),
    `refused` (429), `5xx`, or `other`."""
    if status >= 500:
        return "5xx"
    if status in (301, 302, 303):
        return "order" if re.search(WON, location) else "to cart" if "/carrito/" in location else (
            "other")  # fmt: skip
    if status == 429:
        return "refused"
    text = html.unescape(page)
    return "sold out" if any(message in text for message in messages) else "other"


def prepare(shopper: sale_day_shop.SaleShopper, slug: str) -> bool:
    """The product in the cart, the details form open (its CSRF token in the cookies), through
    the admission queue; False when the shopper left the queue or a page failed."""
    shop = shopper.shop
    try:
        shopper.http.get(f"{shop}/productos/{slug}/", timeout=RUSH_TIMEOUT).raise_for_status()
        added = shopper.http.post(
            f"{shop}/carrito/agregar/{slug}/", {"quantity": 1, "csrfmiddlewaretoken":
            shopper._csrf()}, allow_redirects=False, timeout=RUSH_TIMEOUT,
        )  # fmt: skip
        shopper.http.get(f"{shop}/checkout/", timeout=RUSH_TIMEOUT).raise_for_status()
    except (requests.RequestException, sale_day_shop.Stopped):
        return False
    return added.status_code == 302


def press(shopper: sale_day_shop.SaleShopper, messages: list[str]) -> dict[str, Any]:
    """The "continue" of the filled details form: what it answered, and when the shopper knew
    (`told`: after the page it was sent to, when sent back to the cart)."""
    body = {**CUSTOMER, "csrfmiddlewaretoken": shopper._csrf()}
    url, started = f"{shopper.shop}/checkout/", time.monotonic()
    try:
        answer = shopper.http.post(url, body, allow_redirects=False, timeout=RUSH_TIMEOUT)
    except (requests.RequestException, sale_day_shop.Stopped):
        return {"kind": "no answer", "status": 0, "seconds": RUSH_TIMEOUT, "told": RUSH_TIMEOUT}
    seconds, location = time.monotonic() - started, answer.headers.get("Location", "")
    kind = answer_kind(answer.status_code, location, answer.text, messages)
    if kind == "to cart":  # a browser follows it: the cart page says why
        kind = cart_says(shopper, urljoin(url, location), messages)
    told = time.monotonic() - started if kind != "no answer" else RUSH_TIMEOUT
    return {"kind": kind, "status": answer.status_code, "seconds": seconds, "told": told}


def cart_says(shopper: sale_day_shop.SaleShopper, url: str, messages: list[str]) -> str:
    """The cart page a shopper was sent back to: `sold out` when it tells why."""
    try:
        page = shopper.http.get(url, timeout=RUSH_TIMEOUT)
    except (requests.RequestException, sale_day_shop.Stopped):
        return "no answer"
    kind = answer_kind(page.status_code, "", page.text, messages)
    return kind if kind in ("sold out", "5xx") else "sent to the cart, no message"


def rush_at_once(
    shoppers: list[sale_day_shop.SaleShopper], slug: str, messages: list[str],
    stop: threading.Event,
) -> list[dict[str, Any]]:  # fmt: skip
    """A thread a shopper: all arrive at once and get ready (those still in the admission
    queue after `RUSH_QUEUE_SECONDS` leave it); then those ready open their connection and
    press "continue" at once. Their answers (`ready` False: left the queue, or failed)."""
    count = len(shoppers)
    prepared, gate, answers = threading.Barrier(count), threading.Barrier(count), [{}] * count
    done = threading.Semaphore(0)

    def one(index: int) -> None:
        shopper = shoppers[index]
        ready = prepare(shopper, slug)
        done.release()
        with suppress(threading.BrokenBarrierError):
            prepared.wait(timeout=RUSH_TIMEOUT * 5)
            if ready:  # connected before the rush (kept alive for a few seconds)
                with suppress(requests.RequestException):
                    shopper.http.get(f"{shopper.shop}/bench/bare/", timeout=RUSH_TIMEOUT)
            gate.wait(timeout=RUSH_TIMEOUT)
        answers[index] = {**(press(shopper, messages) if ready else {}), "ready": ready}

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + RUSH_QUEUE_SECONDS
    for _ in range(count):
        if not done.acquire(timeout=max(0.0, deadline - time.monotonic())):
            break
    stop.set()  # who is still waiting to be let in leaves the queue
    for thread in threads:
        thread.join(RUSH_TIMEOUT * 8)
    return answers


def flash_rush(urls: dict[str, str], slug: str, count: int) -> dict[str, Any]:
    """`count` shoppers put the product `slug` (its stock set to `RUSH_STOCK`) in their cart,
    fill the details form and press "continue" at once; what they were answered, and what the
    shop sold."""
    from django.utils import timezone

    from checkout.admission.rules import pace_set
    from checkout.models import OrderItem, Product

    Product.objects.filter(slug=slug).update(stock=RUSH_STOCK, active=True)
    product, since = Product.objects.get(slug=slug), timezone.now()
    hits: list[sale_day_shop.Hit] = []
    stop = threading.Event()
    shoppers = [sale_day_shop.SaleShopper(urls, hits, stop) for _ in range(count)]
    # The carts were filled earlier in the day, through the doors then open (an operator's
    # `manage.py admission --per-second`): the rush is at "continue", within their stays.
    pace_set(100_000)
    try:
        answers = rush_at_once(shoppers, slug, sold_out_messages(product), stop)
    finally:
        pace_set(None)
    product.refresh_from_db()
    items = OrderItem.objects.filter(product=product, order__created_at__gte=since)
    sold = sum(items.values_list("quantity", flat=True))
    figures = rush_figures([a for a in answers if a.get("ready")])
    figures.update(
        shoppers=count, ready=sum(1 for a in answers if a.get("ready")), stock=RUSH_STOCK,
        stock_after=product.stock, orders=items.values("order").distinct().count(),
        oversold=max(0, sold - RUSH_STOCK), waiting_pages=sum(1 for h in hits if h.waiting),
        left_queue=sum(1 for s in shoppers if not s.visit.admitted),
    )  # fmt: skip
    print(f"  flash rush: {figures['ready']} of {count} shoppers ready for {RUSH_STOCK} items: "
          f"{figures['orders']} orders, stock after {product.stock}, answers "
          f"{figures['kinds']}", flush=True)  # fmt: skip
    return figures


def rush_figures(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The answers by kind, their times, and the time until the shoppers who did not get the
    product were told (`told_*`)."""
    told = [a["told"] for a in answers if a["kind"] != "order"]
    seconds = [a["seconds"] for a in answers if a["kind"] != "no answer"]
    kinds = Counter(a["kind"] for a in answers)
    return {
        "kinds": dict(kinds), "sold_out": kinds["sold out"], "5xx": kinds["5xx"],
        "no_answer": kinds["no answer"],
        "answer_p50": runtime.percentile(seconds, 0.5),
        "answer_p95": runtime.percentile(seconds, 0.95), "answer_max": max(seconds, default=0.0),
        "told_p50": runtime.percentile(told, 0.5), "told_p95": runtime.percentile(told, 0.95),
        "told_max": max(told, default=0.0),
    }  # fmt: skip
