"""Fixtures and helpers of the storefront tests: products, shoppers, orders, HTML queries."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from checkout.models import Order, Product
from payments.models import Payment
from tests.factories import OrderFactory, PaymentFactory, ProductFactory
from tests.support import clear_cache

REFERENCE_RE = re.compile(r"^ORD-[0-9A-HJKMNP-TV-Z]{5}$")

CUSTOMER: dict[str, str] = {
    "first_name": "Ana",
    "last_name": "Pérez",
    "email": "ana@example.com",
    "phone": "55 1234 5678",
    "street": "Avenida Juárez",
    "number": "12",
    "colony": "Centro",
    "city": "Puebla",
    "state": "Puebla",
    "postal_code": "72000",
    "country": "MX",
}


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Every test starts and ends with an empty cache (the payment methods catalogue)."""
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def make_product(db: None) -> Callable[..., Product]:
    """Create a product; slugs default to a unique value."""

    def make(slug: str | None = None, *, price: str = "289.00", **fields: Any) -> Product:
        return ProductFactory(**({"slug": slug} if slug else {}), price=Decimal(price), **fields)

    return make


# --- Shoppers -------------------------------------------------------------------------------


def shopper(**defaults: Any) -> Client:
    """A browser of its own (own cookies, own session), on a host the provider accepts in URLs."""
    defaults.setdefault("SERVER_NAME", "localhost")
    return Client(**defaults)


def add_to_cart(client: Client, product: Product, quantity: int | str = 1) -> HttpResponse:
    return client.post(
        reverse("checkout:cart_add", kwargs={"slug": product.slug}), {"quantity": quantity}
    )


def cart_of(client: Client) -> dict[str, int]:
    return dict(client.session.get("cart") or {})


def place_order(
    client: Client, *lines: tuple[Product, int], customer: dict[str, str] | None = None
) -> Order:
    """Fill the cart and post the checkout form through the views; the placed order."""
    for product, quantity in lines:
        response = add_to_cart(client, product, quantity)
        assert response.status_code == 302
        assert response["Location"] == reverse("checkout:cart"), error_messages(response)
    response = client.post(reverse("checkout:checkout"), customer or CUSTOMER)
    assert response.status_code == 302, response.context and response.context["form"].errors
    reference = response["Location"].rstrip("/").split("/")[-2]
    assert response["Location"] == reverse("checkout:pay", kwargs={"reference": reference})
    return Order.objects.get(reference=reference)


def make_order(
    *lines: tuple[Product, int], status: str = "awaiting_payment", **fields: Any
) -> Order:
    """An order written straight to the database (stock taken as checkout would)."""
    return OrderFactory(lines=lines, status=status, **fields)


def own(client: Client, order: Order) -> Client:
    """Make `order` one that this browser session placed."""
    session = client.session
    session["orders"] = [*session.get("orders", []), order.reference]
    session.save()
    return client


def make_payment(order: Order, status: str, **fields: Any) -> Payment:
    """A payment row for the order, created straight in the database, later than any before."""
    return PaymentFactory(order=order, status=status, **fields)


def error_messages(response: HttpResponse) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "error"]


def all_messages(response: HttpResponse) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


# --- A small HTML tree to query by id, class and tag ----------------------------------------

VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr",
}  # fmt: skip


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        parts = [c if isinstance(c, str) else c.text for c in self.children]
        return " ".join(" ".join(parts).split())

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(
        self, tag: str | None = None, *, id: str | None = None, cls: str | None = None, **attrs: str
    ) -> list[Node]:
        found = []
        for node in self.iter():
            if tag and node.tag != tag:
                continue
            if id and node.attrs.get("id") != id:
                continue
            if cls and cls not in node.classes:
                continue
            if any(node.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            found.append(node)
        return found

    def find(self, tag: str | None = None, **kwargs: Any) -> Node | None:
        found = self.find_all(tag, **kwargs)
        return found[0] if found else None

    def one(self, tag: str | None = None, **kwargs: Any) -> Node:
        found = self.find_all(tag, **kwargs)
        assert len(found) == 1, f"expected one {tag} {kwargs}, found {len(found)}"
        return found[0]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def html(response: HttpResponse | str) -> Node:
    """The page as a tree of nodes."""
    text = response if isinstance(response, str) else response.content.decode()
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def header_cart_count(response: HttpResponse) -> int:
    return int(html(response).one("a", cls="cart-link").one("span", cls="count").text)


def open_challenge(provider: Any, order: Order) -> Any:
    """Pay `order` with the 3-D Secure test card through the payment page's service: the
    outcome, pending, with its challenge's address (the challenge is left open)."""
    from checkout.services import order_pay
    from tests.support import THREE_DS

    pending = order_pay(
        order=order,
        card_token=provider.card_token(THREE_DS)["id"],
        attempt_id="a" * 32,
        prevention_data={},
        return_url="",
    )
    assert pending.result == "pending", pending
    return pending
