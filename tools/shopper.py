"""A shopper's browser as plain HTTP against a running shop and its sandbox, for the soak, the
release check and the benchmarks: the product page, the cart, the order form and the JSON pay
attempt with the CSRF token the pages give it, the status the payment page asks for, a test
card's single-use token made with the public key, and the 3-D Secure page answered."""

from __future__ import annotations

import json
import random
import re
import time
import uuid
from typing import Any

import requests

PUBLIC_KEY = "pk_sandbox_demo"
CUSTOMER = {
    "first_name": "Lucía", "last_name": "Soak", "email": "lucia@example.com",
    "phone": "55 1234 5678", "street": "Avenida Juárez", "number": "12", "colony": "Centro",
    "city": "Puebla", "state": "Puebla", "postal_code": "72000", "country": "MX",
}  # fmt: skip
# Test cards and how often shoppers use them: approved, 3-D Secure, declined.
CARDS = [("4242424242424242", 6), ("4000000000003220", 2), ("4000000000000002", 2)]
# The challenge codes the sandbox's 3-D Secure page passes and fails.
CHALLENGE_CODES = {"123456": "passed", "000000": "failed"}


class OrderNotPlaced(Exception):
    """The storefront did not take the order; `status` is the status code it answered."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


# The outcomes the payment page asks for again until they are known.
FOLLOW = ("processing", "unknown")


class Shopper:
    """A shopper's browser as plain HTTP: the product page, the cart, the order form and the
    JSON pay attempt, with the CSRF token the pages give it."""

    def __init__(self, shop: str) -> None:
        self.shop, self.http = shop, requests.Session()

    def _csrf(self) -> str:
        return self.http.cookies.get("csrftoken", "")

    def place_order(self, slug: str) -> str:
        """Put one item of the product in the cart and place the order; its reference."""
        self.http.get(f"{self.shop}/productos/{slug}/", timeout=30).raise_for_status()
        added = self.http.post(
            f"{self.shop}/carrito/agregar/{slug}/",
            {"quantity": 1, "csrfmiddlewaretoken": self._csrf()},
            allow_redirects=False,
            timeout=30,
        )
        if added.status_code != 302:
            raise OrderNotPlaced(f"not added to the cart ({added.status_code})", added.status_code)
        self.http.get(f"{self.shop}/checkout/", timeout=30).raise_for_status()
        placed = self.http.post(
            f"{self.shop}/checkout/",
            {**CUSTOMER, "csrfmiddlewaretoken": self._csrf()},
            allow_redirects=False,
            timeout=30,
        )
        found = re.search(r"/pedidos/([^/]+)/", placed.headers.get("Location", ""))
        if placed.status_code != 302 or found is None:
            raise OrderNotPlaced(f"order not placed ({placed.status_code})", placed.status_code)
        return found.group(1)

    def attempt(self, reference: str, card_token: str) -> requests.Response:
        """One payment attempt of the order, as the payment page posts it."""
        body = {"card_token": card_token, "attempt_id": uuid.uuid4().hex,
                "session_id": "shopper-http", "user_agent": "shopper-http"}  # fmt: skip
        return self.http.post(
            f"{self.shop}/pedidos/{reference}/pagos/",
            data=json.dumps(body),
            headers={"Content-Type": "application/json", "X-CSRFToken": self._csrf()},
            timeout=90,
        )

    def outcome(self, reference: str, payment_id: str = "") -> dict[str, Any]:
        """Where the order's latest attempt (or `payment_id`) stands, as the page asks it."""
        return self.http.get(
            f"{self.shop}/pedidos/{reference}/estado-pago/",
            params={"payment_id": payment_id} if payment_id else None,
            timeout=30,
        ).json()

    def pay(
        self,
        reference: str,
        card_token: str,
        *,
        wait: float = 120,
        follow: tuple[str, ...] = FOLLOW,
    ) -> requests.Response:
        """One attempt, then (taken: 202) the status asked for as the payment page does while
        the result is one of `follow`, for up to `wait` seconds; the answer holding the
        outcome."""
        answer = self.attempt(reference, card_token)
        deadline = time.monotonic() + wait
        while answer.status_code in (200, 202) and answer.json().get("result") in follow:
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
            answer = self.http.get(f"{self.shop}/pedidos/{reference}/estado-pago/", timeout=30)
        return answer


def card_token(sandbox: str, card: str) -> str:
    """A single-use token of a test card, as the provider's card form makes it."""
    return str(requests.post(
        f"{sandbox}/card_tokens", auth=None, timeout=30,
        headers={"Authorization": f"Bearer {PUBLIC_KEY}"},
        json={"card": {"number": card, "exp_month": "12", "exp_year": "2031", "cvv": "123",
                       "holder_name": "LUCIA SOAK"}},
    ).json()["id"])  # fmt: skip


def answer_challenge(url: str, rng: random.Random) -> str:
    """The 3-D Secure page answered with a code that passes or fails it; the code."""
    code = rng.choice(list(CHALLENGE_CODES))
    requests.post(url, data={"action": "submit", "code": code}, timeout=30).raise_for_status()
    return code


def challenge_outcome(shopper: Shopper, reference: str, payment_id: str) -> str:
    """Passed or failed, as the payment page learns it after the challenge (it asks where the
    payment stands, and the shop reads the provider while it is pending); undecided after 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = shopper.outcome(reference, payment_id).get("result")
        if result in ("approved", "authorized"):
            return "passed"
        if result == "rejected":
            return "failed"
        time.sleep(0.5)
    return "undecided"
