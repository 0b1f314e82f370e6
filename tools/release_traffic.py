"""The traffic `make release-check` keeps on the shop while it upgrades (tools/release_check.py):
shoppers who order, pay (3-D Secure included) and wait for the outcome as the payment page does,
a staff member reading the admin and refunding, and the provider's notifications sent again.
Every answer of the shop is counted by phase: a 5xx, or no answer at all, is a failure.

It speaks to the shop over HTTP only, and reads the shop's database with plain SQL on columns
every release has: it runs unchanged against the release before and the new one."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
import requests

from tools.admin_sign_in import admin_sign_in
from tools.shopper import CARDS, CUSTOMER, answer_challenge, card_token
from tools.soak import ADMIN, WEBHOOK_TOKEN

ADMIN_PAGES = ("/admin/", "/admin/checkout/order/", "/admin/payments/payment/",
               "/admin/webhooks/webhookevent/")  # fmt: skip


@dataclass
class Failure:
    phase: str
    what: str


@dataclass
class Counts:
    """What the traffic met, by phase."""

    answers: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    orders: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    refunds: int = 0
    notifications: int = 0


class Traffic:
    """Shoppers, a staff member and notifications, in threads, until `stop()`."""

    def __init__(self, shop: str, sandbox: str, database_url: str, shoppers: int = 6) -> None:
        self.shop, self.sandbox, self.database_url = shop, sandbox, database_url
        self.shoppers, self.phase, self.counts = shoppers, "start", Counts()
        self._stop, self._lock = threading.Event(), threading.Lock()
        self._threads: list[threading.Thread] = []

    # ---- what every thread shares -------------------------------------------------------------
    def session(self) -> requests.Session:
        """A browser's session whose every answer from the shop is counted."""
        http = requests.Session()
        http.hooks["response"].append(self._answered)
        return http

    def _answered(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        if not response.url.startswith(self.shop):
            return
        with self._lock:
            self.counts.answers[self.phase] += 1
            if response.status_code >= 500:
                path = response.request.path_url.split("?")[0]
                self._failed(f"{response.status_code} {response.request.method} {path}")

    def _failed(self, what: str) -> None:
        self.counts.failures.append(Failure(self.phase, f"{time.strftime('%H:%M:%S')} {what}"))

    def unanswered(self, error: Exception) -> None:
        with self._lock:
            self.counts.answers[self.phase] += 1
            self._failed(f"no answer: {type(error).__name__}: {error}")

    def start(self) -> None:
        loops = [self._shopper] * self.shoppers + [self._staff, self._notifier]
        for number, loop in enumerate(loops):
            thread = threading.Thread(target=self._forever, args=(loop, number), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 180) -> None:
        """No new flow starts; the flows under way finish (their outcome awaited)."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _forever(self, loop: Any, number: int) -> None:
        rng = random.Random(number)
        while not self._stop.is_set():
            try:
                loop(rng)
            except requests.RequestException as exc:
                self.unanswered(exc)
                time.sleep(1)
            except (ValueError, KeyError) as exc:  # an answer that was not what a page expects
                with self._lock:
                    self._failed(f"unexpected answer: {type(exc).__name__}: {exc}")
                time.sleep(1)

    # ---- a shopper ------------------------------------------------------------------------------
    def _shopper(self, rng: random.Random) -> None:
        http = self.session()
        home = _through_the_queue(http, f"{self.shop}/")
        home.raise_for_status()
        slugs = sorted({part.split("/")[0] for part in home.text.split('href="/productos/')[1:]})
        slug = rng.choice(slugs)
        http.get(f"{self.shop}/productos/{slug}/", timeout=30)
        added = http.post(f"{self.shop}/carrito/agregar/{slug}/",
                          {"quantity": 1, "csrfmiddlewaretoken": _csrf(http)},
                          allow_redirects=False, timeout=30)  # fmt: skip
        if added.status_code != 302:
            return
        http.get(f"{self.shop}/checkout/", timeout=30)
        placed = http.post(f"{self.shop}/checkout/", {**CUSTOMER, "csrfmiddlewaretoken":
                           _csrf(http)}, allow_redirects=False, timeout=30)  # fmt: skip
        location = placed.headers.get("Location", "")
        if placed.status_code != 302 or "/pedidos/" not in location:
            return
        reference = location.split("/pedidos/")[1].split("/")[0]
        with self._lock:
            self.counts.orders.append(reference)
        http.get(f"{self.shop}{location}" if location.startswith("/") else location, timeout=30)
        numbers = [card for card, weight in CARDS for _ in range(weight)]
        outcome = self._pay(http, reference, rng.choice(numbers), rng)
        with self._lock:
            self.counts.outcomes[outcome] += 1

    def _pay(self, http: requests.Session, reference: str, card: str, rng: random.Random) -> str:
        body = {"card_token": card_token(self.sandbox, card), "attempt_id": uuid.uuid4().hex,
                "session_id": "release", "user_agent": "release-check"}  # fmt: skip
        answer = http.post(f"{self.shop}/pedidos/{reference}/pagos/", json=body, timeout=90,
                           headers={"X-CSRFToken": _csrf(http)})  # fmt: skip
        status = f"{self.shop}/pedidos/{reference}/estado-pago/"
        deadline = time.monotonic() + 120
        while answer.status_code in (200, 202) and time.monotonic() < deadline:
            outcome = answer.json()
            result = str(outcome.get("result"))
            if result == "pending" and outcome.get("three_ds_url"):
                answer_challenge(outcome["three_ds_url"], rng)
                payment = {"payment_id": outcome.get("payment_id")}
                return self._follow(http, status, payment, "3-D Secure, then ", deadline)
            if result not in ("processing", "unknown", "pending"):
                return result
            time.sleep(0.5)
            answer = http.get(status, timeout=30)
        return f"unfinished ({answer.status_code})"

    def _follow(self, http: requests.Session, status: str, params: dict[str, Any], prefix: str,
                deadline: float) -> str:  # fmt: skip
        while time.monotonic() < deadline:
            answer = http.get(status, params=params, timeout=30)
            if answer.status_code == 200:
                result = str(answer.json().get("result"))
                if result not in ("processing", "unknown", "pending"):
                    return prefix + result
            time.sleep(0.5)
        return prefix + "unfinished"

    # ---- staff and notifications ----------------------------------------------------------------
    def _staff(self, rng: random.Random) -> None:
        http = self.session()
        admin_sign_in(http, self.shop, *ADMIN)
        while not self._stop.is_set():
            for page in ADMIN_PAGES:
                answer = http.get(f"{self.shop}{page}", timeout=30)
                if "/admin/login/" in answer.url:
                    # The new release asks for the second factor: sign in again, with a code.
                    admin_sign_in(http, self.shop, *ADMIN)
            approved = self._approved()
            if approved:
                pk, amount = rng.choice(approved)
                http.get(f"{self.shop}/admin/payments/payment/{pk}/change/", timeout=30)
                if rng.random() < 0.5 and self._refund(http, pk, rng.choice(["50.00", amount])):
                    with self._lock:
                        self.counts.refunds += 1
            self._stop.wait(2)

    def _refund(self, http: requests.Session, pk: int, amount: str) -> bool:
        url = f"{self.shop}/admin/payments/payment/{pk}/refund/"
        if http.get(url, timeout=30).status_code != 200:
            return False
        done = http.post(url, {"amount": amount, "reason": "release check",
                               "csrfmiddlewaretoken": _csrf(http)}, timeout=60)  # fmt: skip
        return done.status_code == 200

    def _notifier(self, rng: random.Random) -> None:
        """The provider's notification of a payment sent again, as a provider retrying does."""
        http = self.session()
        while not self._stop.is_set():
            for provider_id in self._provider_ids(rng):
                http.post(f"{self.shop}/webhooks/payments/{WEBHOOK_TOKEN}/", timeout=30,
                          json={"id": provider_id, "origin": "payments-api",
                                "event_type": "UPDATE"})  # fmt: skip
                with self._lock:
                    self.counts.notifications += 1
            self._stop.wait(1)

    def _approved(self) -> list[tuple[int, str]]:
        with psycopg.connect(self.database_url) as conn:
            rows = conn.execute(
                "SELECT id, amount::text FROM payments_payment WHERE status = 'approved'"
                " AND refunded_amount = 0 ORDER BY id DESC LIMIT 50"
            ).fetchall()
        return [(int(pk), str(amount)) for pk, amount in rows]

    def _provider_ids(self, rng: random.Random) -> list[str]:
        with psycopg.connect(self.database_url) as conn:
            rows = conn.execute(
                "SELECT provider_id FROM payments_payment WHERE provider_id IS NOT NULL"
                " ORDER BY id DESC LIMIT 50"
            ).fetchall()
        return [row[0] for row in rng.sample(rows, min(3, len(rows)))]


def _through_the_queue(http: requests.Session, url: str, patience: float = 120) -> Any:
    """The page, once the sale day's queue lets this shopper in: a waiting page (its position
    in `X-Shop-Queue-Position`) is asked again after its `Refresh`, as a browser does."""
    deadline = time.monotonic() + patience
    while True:
        page = http.get(url, timeout=30)
        if "X-Shop-Queue-Position" not in page.headers or time.monotonic() > deadline:
            return page
        time.sleep(float(page.headers.get("Refresh", "2").split(";")[0]))


def _csrf(http: requests.Session) -> str:
    return http.cookies.get("csrftoken", "")
