"""The session cart: adding, changing and removing lines, totals, and the routes' guards."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client
from django.urls import reverse

from checkout.cart import MAX_PER_LINE, Cart, CartError
from tests.checkout.helpers import all_messages, header_cart_count
from tests.helpers.html import html
from tests.helpers.shop import add_to_cart, cart_of, error_messages

pytestmark = pytest.mark.django_db


def update(client: Client, product, quantity) -> object:
    return client.post(reverse("checkout:cart_update", args=[product.slug]), {"quantity": quantity})


def flush_messages(client: Client) -> None:
    """Show a page, which displays (and so uses up) the messages waiting for this browser."""
    client.get(reverse("checkout:cart"))


def remove(client: Client, product) -> object:
    return client.post(reverse("checkout:cart_remove", args=[product.slug]))


# --- Adding ---------------------------------------------------------------------------------


def test_add_puts_the_quantity_in_the_cart(client: Client, make_product) -> None:
    """Adding 2 stores the product id and quantity in the session and goes to the cart."""
    product = make_product(stock=5)
    response = add_to_cart(client, product, 2)
    assert response.status_code == 302
    assert response["Location"] == reverse("checkout:cart")
    assert cart_of(client) == {str(product.pk): 2}
    assert [level for level, _ in all_messages(response)] == ["success"]


def test_adding_twice_adds_up(client: Client, make_product) -> None:
    """Adding the same product again adds to the quantity already in the cart."""
    product = make_product(stock=5)
    add_to_cart(client, product, 2)
    add_to_cart(client, product, 1)
    assert cart_of(client) == {str(product.pk): 3}


def test_cart_stores_no_prices(client: Client, make_product) -> None:
    """The session holds ids and quantities only: a price change shows up in the cart."""
    product = make_product(price="100.00")
    add_to_cart(client, product, 2)
    product.price = Decimal("120.00")
    product.save()
    assert client.get(reverse("checkout:cart")).context["total"] == Decimal("240.00")


@pytest.mark.parametrize("quantity", ["0", "-1", "-5", "abc", "", "1.5", "100"])
def test_add_refuses_a_bad_quantity(client: Client, make_product, quantity: str) -> None:
    """0, negative, non-numeric, decimal or out-of-range quantities: an error, cart unchanged."""
    product = make_product(stock=50)
    add_to_cart(client, product, 1)
    response = add_to_cart(client, product, quantity)
    assert response.status_code == 302
    assert response["Location"] == reverse("checkout:product", args=[product.slug])
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {str(product.pk): 1}


def test_cart_errors_are_shown_on_the_next_page(client: Client, make_product) -> None:
    """A refused change is shown once as an error message on the page it redirects to."""
    product = make_product(stock=1)
    response = add_to_cart(client, product, 0)
    page = html(client.get(response["Location"]))
    assert len(page.one("div", cls="messages").find_all("p", cls="error")) == 1
    assert not html(client.get(response["Location"])).find_all("div", cls="messages")


def test_add_refuses_more_than_the_stock(client: Client, make_product) -> None:
    """Asking for more than the stock is an error and leaves the cart as it was."""
    product = make_product(stock=3)
    response = add_to_cart(client, product, 4)
    assert response["Location"] == reverse("checkout:product", args=[product.slug])
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {}


def test_add_refuses_more_than_the_stock_in_total(client: Client, make_product) -> None:
    """What is already in the cart counts: 2 + 2 of a product with 3 in stock is refused."""
    product = make_product(stock=3)
    add_to_cart(client, product, 2)
    response = add_to_cart(client, product, 2)
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {str(product.pk): 2}


def test_add_accepts_exactly_the_stock(client: Client, make_product) -> None:
    """The whole stock can be ordered."""
    product = make_product(stock=3)
    add_to_cart(client, product, 3)
    assert cart_of(client) == {str(product.pk): 3}


def test_add_refuses_more_than_20_per_line(client: Client, make_product) -> None:
    """At most 20 of a product per order, even with more in stock."""
    product = make_product(stock=50)
    response = add_to_cart(client, product, MAX_PER_LINE + 1)
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {}
    add_to_cart(client, product, 15)
    flush_messages(client)
    response = add_to_cart(client, product, 6)
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {str(product.pk): 15}
    add_to_cart(client, product, 5)
    assert cart_of(client) == {str(product.pk): MAX_PER_LINE}


def test_add_refuses_a_sold_out_product(client: Client, make_product) -> None:
    """A sold-out product cannot be added."""
    product = make_product(stock=0)
    response = add_to_cart(client, product, 1)
    assert response["Location"] == reverse("checkout:product", args=[product.slug])
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {}


def test_add_refuses_an_inactive_product(client: Client, make_product) -> None:
    """A product no longer sold cannot be added, even by posting to its address."""
    product = make_product(stock=10, active=False)
    response = add_to_cart(client, product, 1)
    assert response.status_code == 302
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {}


def test_add_of_an_unknown_product_is_404(client: Client) -> None:
    """Posting to the address of a product that does not exist is a 404."""
    response = client.post(reverse("checkout:cart_add", args=["no-existe"]), {"quantity": 1})
    assert response.status_code == 404
    assert cart_of(client) == {}


# --- Changing and removing ------------------------------------------------------------------


def test_update_sets_the_quantity(client: Client, make_product) -> None:
    """Updating a line sets its quantity exactly (not added)."""
    product = make_product(stock=10)
    add_to_cart(client, product, 2)
    response = update(client, product, 5)
    assert response["Location"] == reverse("checkout:cart")
    assert cart_of(client) == {str(product.pk): 5}


def test_update_to_zero_removes_the_line(client: Client, make_product) -> None:
    """Updating a line to 0 removes it from the cart."""
    keep = make_product(stock=10)
    product = make_product(stock=10)
    add_to_cart(client, keep, 1)
    add_to_cart(client, product, 2)
    update(client, product, 0)
    assert cart_of(client) == {str(keep.pk): 1}


@pytest.mark.parametrize("quantity", ["-1", "abc", "", "100"])
def test_update_refuses_a_bad_quantity(client: Client, make_product, quantity: str) -> None:
    """A negative, non-numeric or out-of-range quantity: an error, cart unchanged."""
    product = make_product(stock=10)
    add_to_cart(client, product, 2)
    response = update(client, product, quantity)
    assert response["Location"] == reverse("checkout:cart")
    assert len(error_messages(response)) == 1
    assert cart_of(client) == {str(product.pk): 2}


def test_update_refuses_more_than_the_stock(client: Client, make_product) -> None:
    """Updating above the stock (or above 20) is an error and leaves the line as it was."""
    product = make_product(stock=4)
    big = make_product(stock=99)
    add_to_cart(client, product, 2)
    add_to_cart(client, big, 2)
    assert len(error_messages(update(client, product, 5))) == 1
    flush_messages(client)
    assert len(error_messages(update(client, big, 21))) == 1
    assert cart_of(client) == {str(product.pk): 2, str(big.pk): 2}


def test_remove_takes_the_line_out(client: Client, make_product) -> None:
    """Removing a product takes its line out of the cart; removing it again is harmless."""
    product = make_product()
    add_to_cart(client, product, 2)
    response = remove(client, product)
    assert response.status_code == 302
    assert response["Location"] == reverse("checkout:cart")
    assert cart_of(client) == {}
    assert remove(client, product).status_code == 302


# --- Totals and pages -----------------------------------------------------------------------


def test_cart_totals_are_exact_decimals(client: Client, make_product) -> None:
    """Line totals and the cart total are exact Decimal sums (19.99 x 3 + 0.01 = 59.98)."""
    a = make_product("a", price="19.99", stock=10)
    b = make_product("b", price="0.01", stock=10)
    add_to_cart(client, a, 3)
    add_to_cart(client, b, 1)
    response = client.get(reverse("checkout:cart"))
    assert response.status_code == 200
    total = response.context["total"]
    assert isinstance(total, Decimal)
    assert total == Decimal("59.98")
    assert sorted(line.total for line in response.context["lines"]) == [
        Decimal("0.01"),
        Decimal("59.97"),
    ]
    page = html(response)
    assert page.one("tfoot").text.split()[-2:] == ["$59.98", "MXN"]
    assert len(page.one("tbody").find_all("tr")) == 2


def test_cart_total_of_tenths_is_exact(make_product) -> None:
    """Ten lines of $0.10 add up to exactly $1.00 (no float drift)."""
    session = SessionStore()
    cart = Cart(session)
    for i in range(10):
        cart.add(make_product(f"p{i}", price="0.10", stock=5), 1)
    assert cart.total() == Decimal("1.00")
    assert cart.count == 10


def test_empty_cart_page(client: Client) -> None:
    """The empty cart page has no lines table and no checkout button; its total is 0.00."""
    response = client.get(reverse("checkout:cart"))
    assert response.status_code == 200
    assert response.context["total"] == Decimal("0.00")
    page = html(response)
    assert not page.find_all("table", cls="lines")
    assert not page.find_all("a", href=reverse("checkout:checkout"))


def test_cart_page_links_to_checkout_and_has_forms_per_line(client: Client, make_product) -> None:
    """Each line has an update form and a remove form; the page links to checkout."""
    product = make_product("taza", stock=10)
    add_to_cart(client, product, 2)
    page = html(client.get(reverse("checkout:cart")))
    update_form = page.one("form", action=reverse("checkout:cart_update", args=["taza"]))
    assert update_form.one("input", id="qty-taza").attrs["value"] == "2"
    page.one("form", action=reverse("checkout:cart_remove", args=["taza"]))
    page.one("a", href=reverse("checkout:checkout"))


def test_cart_flags_a_line_above_the_current_stock(client: Client, make_product) -> None:
    """A line above the stock left (sold meanwhile) is flagged on the cart page."""
    product = make_product(stock=5)
    add_to_cart(client, product, 4)
    product.stock = 2
    product.save()
    row = html(client.get(reverse("checkout:cart"))).one("tbody").one("tr")
    assert row.find_all("p", cls="error")


def test_cart_count_in_the_header(client: Client, make_product) -> None:
    """The header shows the number of items in the cart on every page."""
    a = make_product(stock=10)
    b = make_product(stock=10)
    assert header_cart_count(client.get(reverse("checkout:home"))) == 0
    add_to_cart(client, a, 2)
    add_to_cart(client, b, 3)
    assert header_cart_count(client.get(reverse("checkout:home"))) == 5
    assert header_cart_count(client.get(reverse("checkout:cart"))) == 5
    assert header_cart_count(client.get(reverse("checkout:product", args=[a.slug]))) == 5


def test_carts_are_per_session(make_product) -> None:
    """Each browser has its own cart."""
    product = make_product(stock=10)
    first, second = Client(), Client()
    add_to_cart(first, product, 2)
    assert header_cart_count(second.get(reverse("checkout:home"))) == 0


def test_cart_ignores_products_deleted_meanwhile(make_product) -> None:
    """A cart line whose product no longer exists is left out of lines and totals."""
    keep = make_product(price="10.00")
    gone = make_product(price="20.00")
    session = SessionStore()
    cart = Cart(session)
    cart.add(keep, 1)
    cart.add(gone, 1)
    gone.delete()
    assert [line.product for line in cart.lines()] == [keep]
    assert cart.total() == Decimal("10.00")


def test_cart_set_negative_is_refused(make_product) -> None:
    """Cart.set refuses a negative quantity; Cart.add refuses less than 1."""
    product = make_product(stock=10)
    cart = Cart(SessionStore())
    with pytest.raises(CartError):
        cart.set(product, -1)
    with pytest.raises(CartError):
        cart.add(product, 0)
    assert not cart


# --- Guards ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cart_add", "cart_update", "cart_remove"])
def test_post_only_routes_refuse_get(client: Client, make_product, name: str) -> None:
    """The cart's change routes answer GET with 405 and change nothing."""
    product = make_product()
    response = client.get(reverse(f"checkout:{name}", args=[product.slug]), {"quantity": 1})
    assert response.status_code == 405
    assert cart_of(client) == {}


@pytest.mark.parametrize("name", ["cart_add", "cart_update", "cart_remove"])
def test_cart_posts_need_the_csrf_token(make_product, name: str) -> None:
    """Without the CSRF token a cart change is refused (403) and the cart is unchanged."""
    product = make_product(stock=10)
    browser = Client(enforce_csrf_checks=True)
    browser.get(reverse("checkout:product", args=[product.slug]))
    token = browser.cookies["csrftoken"].value
    url = reverse("checkout:cart_add", args=[product.slug])
    assert browser.post(url, {"quantity": 1, "csrfmiddlewaretoken": token}).status_code == 302
    response = browser.post(reverse(f"checkout:{name}", args=[product.slug]), {"quantity": 3})
    assert response.status_code == 403
    assert cart_of(browser) == {str(product.pk): 1}


def test_cart_add_with_the_csrf_token_works(make_product) -> None:
    """With the token from the product page's form, the same client can add to the cart."""
    product = make_product(stock=10)
    browser = Client(enforce_csrf_checks=True)
    page = html(browser.get(reverse("checkout:product", args=[product.slug])))
    token = page.one("form", cls="add").one("input", name="csrfmiddlewaretoken").attrs["value"]
    response = browser.post(
        reverse("checkout:cart_add", args=[product.slug]),
        {"quantity": 2, "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert cart_of(browser) == {str(product.pk): 2}


@pytest.mark.parametrize(
    ("quantity", "said"),
    [
        ("100000", "Puedes pedir como máximo 20 de cada producto."),
        ("21", "Puedes pedir como máximo 20 de cada producto."),
        ("dos", "Elige cuántos quieres, con un número entero."),
        ("-3", "Elige cuántos quieres, con un número entero."),
        ("0", "Elige una cantidad de al menos 1."),
    ],
)
def test_adding_an_impossible_quantity_says_what_is_wrong(
    client: Client, make_product, quantity: str, said: str
) -> None:
    """The message names the real problem (the cart's limit is 20 a line), not another one."""
    product = make_product(stock=50)

    response = add_to_cart(client, product, quantity)

    assert error_messages(response) == [said]
    assert cart_of(client) == {}


def test_the_cart_offers_the_real_limit_per_line(client: Client, make_product) -> None:
    product = make_product(stock=50)
    add_to_cart(client, product, 2)

    page = html(client.get(reverse("checkout:cart")))

    assert page.one("input", name="quantity").attrs["max"] == "20"
    flush_messages(client)
    assert error_messages(update(client, product, 100)) == [
        "Puedes pedir como máximo 20 de cada producto."
    ]
