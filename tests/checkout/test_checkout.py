"""The checkout: the customer details form, and turning a cart into an order."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from checkout.forms import MEXICAN_STATES, CheckoutForm
from checkout.models import Order, OrderItem, Product
from tests.checkout.helpers import REFERENCE_RE, header_cart_count
from tests.helpers.html import html
from tests.helpers.shop import (
    CUSTOMER,
    add_to_cart,
    cart_of,
    error_messages,
    keep_session,
    place_order,
    shopper,
)

pytestmark = pytest.mark.django_db
FIELDS = set(CUSTOMER)


def form_with(**changes: str) -> CheckoutForm:
    return CheckoutForm({**CUSTOMER, **changes})


# --- The form -------------------------------------------------------------------------------


def test_form_accepts_the_customer() -> None:
    """A complete, well-formed set of details is valid and comes back cleaned."""
    form = form_with()
    assert form.is_valid(), form.errors
    assert form.cleaned_data["phone"] == "5512345678"
    assert form.cleaned_data["country"] == "MX"


def test_form_requires_every_field() -> None:
    """Every field is required: an empty post has an error on each one."""
    form = CheckoutForm({})
    assert not form.is_valid()
    assert set(form.errors) == FIELDS
    assert all(e.code == "required" for errors in form.errors.as_data().values() for e in errors)


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_form_refuses_a_blank_field(name: str) -> None:
    """A field left blank (or only spaces) is an error on that field alone."""
    form = form_with(**{name: "   "})
    assert not form.is_valid()
    assert set(form.errors) == {name}


@pytest.mark.parametrize(
    "email", ["ana", "ana@", "@example.com", "ana@example", "ana example@x.mx"]
)
def test_form_refuses_a_malformed_email(email: str) -> None:
    """An email that is not an address is refused."""
    form = form_with(email=email)
    assert not form.is_valid()
    assert set(form.errors) == {"email"}


@pytest.mark.parametrize(
    "phone",
    [
        "5512345678",
        "55 1234 5678",
        "+52 55 1234 5678",
        "+525512345678",
        "525512345678",
        "(55) 1234-5678",
        "55-1234-5678",
        " 55 1234 5678 ",
    ],
)
def test_form_normalises_the_phone(phone: str) -> None:
    """A 10-digit Mexican phone is accepted with +52, spaces, dashes or brackets, kept bare."""
    form = form_with(phone=phone)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["phone"] == "5512345678"


@pytest.mark.parametrize(
    "phone",
    [
        "551234567",
        "55123456789",
        "+52 55 1234 567",
        "+52 1 55 1234 5678",
        "+1 555 123 4567",
        "55 1234 567a",
        "teléfono",
        "5512.345678",
    ],
)
def test_form_refuses_a_phone_of_the_wrong_length(phone: str) -> None:
    """A phone that is not 10 digits (after an optional +52) is refused."""
    form = form_with(phone=phone)
    assert not form.is_valid()
    assert set(form.errors) == {"phone"}


@pytest.mark.parametrize("code", ["7200", "720001", "72 00", "7200a", "ABCDE", "-7200"])
def test_form_refuses_a_postal_code_that_is_not_5_digits(code: str) -> None:
    """A postal code is exactly 5 digits."""
    form = form_with(postal_code=code)
    assert not form.is_valid()
    assert set(form.errors) == {"postal_code"}


def test_form_keeps_a_postal_code_with_leading_zero() -> None:
    """A postal code with a leading zero is kept as text, zero included."""
    form = form_with(postal_code="01000")
    assert form.is_valid(), form.errors
    assert form.cleaned_data["postal_code"] == "01000"


def test_form_offers_the_32_mexican_states() -> None:
    """The state is one of the 32 Mexican states (plus the empty choice)."""
    assert len(MEXICAN_STATES) == len(set(MEXICAN_STATES)) == 32
    choices = [value for value, _ in CheckoutForm().fields["state"].choices]
    assert choices[0] == ""
    assert choices[1:] == MEXICAN_STATES
    for state in ("Ciudad de México", "Nuevo León", "Yucatán", "Zacatecas"):
        assert form_with(state=state).is_valid()


@pytest.mark.parametrize("state", ["Texas", "CDMX", "puebla", "Puebla ", "—"])
def test_form_refuses_a_state_not_in_the_list(state: str) -> None:
    """A state outside the list (or spelt differently) is refused."""
    form = form_with(state=state)
    assert not form.is_valid()
    assert set(form.errors) == {"state"}


@pytest.mark.parametrize("country", ["US", "mx", "MEX", "CA"])
def test_form_accepts_mexico_only(country: str) -> None:
    """The only country is MX."""
    form = form_with(country=country)
    assert not form.is_valid()
    assert set(form.errors) == {"country"}


def test_form_strips_spaces() -> None:
    """Text fields come back without surrounding spaces."""
    form = form_with(first_name="  Ana ", city=" Puebla  ")
    assert form.is_valid(), form.errors
    assert (form.cleaned_data["first_name"], form.cleaned_data["city"]) == ("Ana", "Puebla")


# --- The checkout page ----------------------------------------------------------------------


def test_checkout_with_an_empty_cart_goes_to_the_cart(client: Client) -> None:
    """With nothing in the cart, GET and POST of the checkout redirect to the cart."""
    for response in (
        client.get(reverse("checkout:checkout")),
        client.post(reverse("checkout:checkout"), CUSTOMER),
    ):
        assert response.status_code == 302
        assert response["Location"] == reverse("checkout:cart")
    assert Order.objects.count() == 0


def test_checkout_page_shows_the_form_and_summary(client: Client, make_product) -> None:
    """The checkout page has every field of the form and the cart's total."""
    product = make_product(price="1250.00", stock=5)
    add_to_cart(client, product, 2)
    response = client.get(reverse("checkout:checkout"))
    assert response.status_code == 200
    page = html(response)
    form = page.one("form", cls="details")
    for name in FIELDS:
        assert form.find(name=name) is not None, name
    state = form.one("select", name="state")
    assert len(state.find_all("option")) == 33
    assert page.one("aside", cls="summary").one("p", cls="total").one("strong").text == (
        "$2,500.00 MXN"
    )


def test_checkout_shows_the_errors_of_an_invalid_post(client: Client, make_product) -> None:
    """An invalid post re-renders the form with errors on the fields and creates nothing."""
    product = make_product(stock=5)
    add_to_cart(client, product, 1)
    response = client.post(
        reverse("checkout:checkout"), {**CUSTOMER, "phone": "123", "postal_code": "1"}
    )
    assert response.status_code == 200
    assert set(response.context["form"].errors) == {"phone", "postal_code"}
    page = html(response)
    assert page.one("div", id="id_phone_error").text
    assert page.one("div", id="id_postal_code_error").text
    assert len(page.find_all("div", cls="invalid")) == 2
    assert Order.objects.count() == 0
    assert Product.objects.get(pk=product.pk).stock == 5
    assert cart_of(client) == {str(product.pk): 1}


def test_checkout_creates_the_order(client: Client, make_product) -> None:
    """A valid post creates the order: reference, items at their price, total, customer, stock."""
    taza = make_product("taza", price="289.00", stock=10, name="Taza")
    olla = make_product("olla", price="1450.00", stock=3, name="Olla")
    order = place_order(
        client, (taza, 2), (olla, 1), customer={**CUSTOMER, "phone": "+52 55 1234 5678"}
    )
    assert REFERENCE_RE.match(order.reference)
    assert order.status == "awaiting_payment"
    assert order.total == Decimal("2028.00")
    assert order.currency == "MXN"
    assert order.language == "es"
    assert list(order.mails.values_list("kind", flat=True)) == ["received"]  # due, not sent
    items = [(i.product_id, i.name, i.unit_price, i.quantity) for i in order.items.all()]
    assert sorted(items) == sorted(
        [(taza.pk, "Taza", Decimal("289.00"), 2), (olla.pk, "Olla", Decimal("1450.00"), 1)]
    )
    expected = {**CUSTOMER, "phone": "5512345678"}
    assert {name: getattr(order, name) for name in expected} == expected
    assert Product.objects.get(pk=taza.pk).stock == 8
    assert Product.objects.get(pk=olla.pk).stock == 2


def test_checkout_references_are_unique_and_well_formed(make_product) -> None:
    """Orders get distinct references ORD- + 5 characters without I, L, O or U."""
    product = make_product(stock=50)
    references = {place_order(shopper(), (product, 1)).reference for _ in range(8)}
    assert len(references) == 8
    assert all(REFERENCE_RE.match(r) for r in references)


def test_checkout_clears_the_cart_and_remembers_the_order(client: Client, make_product) -> None:
    """After the order the cart is empty and the session remembers the order's reference."""
    product = make_product(stock=5)
    order = place_order(client, (product, 2))
    assert cart_of(client) == {}
    assert client.session["orders"] == [order.reference]
    assert header_cart_count(client.get(reverse("checkout:home"))) == 0
    response = client.get(reverse("checkout:checkout"))
    assert response["Location"] == reverse("checkout:cart")


def test_order_keeps_the_price_at_order_time(client: Client, make_product) -> None:
    """Changing a product's price afterwards changes neither the order's items nor its total."""
    product = make_product(price="289.00", stock=5)
    order = place_order(client, (product, 2))
    Product.objects.filter(pk=product.pk).update(price=Decimal("999.00"))
    order.refresh_from_db()
    item = OrderItem.objects.get(order=order)
    assert item.unit_price == Decimal("289.00")
    assert item.line_total == Decimal("578.00")
    assert order.total == Decimal("578.00")
    page = html(client.get(reverse("checkout:order", args=[order.reference])))
    assert page.one("tfoot").text.split()[-2:] == ["$578.00", "MXN"]
    assert "$999.00" not in page.one("table", cls="lines").text


def test_checkout_refuses_stock_raced_away(client: Client, make_product) -> None:
    """If the stock fell below the cart's quantity meanwhile: said at once in the answer (409,
    the cart's page with the message), no order, stock as is."""
    product = make_product(stock=5)
    other = make_product(stock=5)
    add_to_cart(client, product, 3)
    add_to_cart(client, other, 1)
    Product.objects.filter(pk=product.pk).update(stock=2)
    response = client.post(reverse("checkout:checkout"), CUSTOMER)
    assert response.status_code == 409
    assert error_messages(response) == [f"De {product.name} solo quedan 2 piezas."]
    assert f"De {product.name} solo quedan 2 piezas." in response.content.decode()
    assert Order.objects.count() == 0
    assert OrderItem.objects.count() == 0
    assert Product.objects.get(pk=product.pk).stock == 2
    assert Product.objects.get(pk=other.pk).stock == 5
    assert cart_of(client) == {str(product.pk): 3, str(other.pk): 1}


def test_checkout_refuses_a_product_withdrawn_meanwhile(client: Client, make_product) -> None:
    """A product made inactive after it was put in the cart stops the order."""
    product = make_product(stock=5)
    add_to_cart(client, product, 1)
    Product.objects.filter(pk=product.pk).update(active=False)
    response = client.post(reverse("checkout:checkout"), CUSTOMER)
    assert response.status_code == 409
    assert len(error_messages(response)) == 1
    assert Order.objects.count() == 0
    assert Product.objects.get(pk=product.pk).stock == 5


def test_checkout_records_the_shoppers_language(make_product) -> None:
    """An order placed in English remembers it (for its confirmation email)."""
    product = make_product(stock=5)
    order = place_order(Client(HTTP_ACCEPT_LANGUAGE="en"), (product, 1))
    assert order.language == "en"


def test_checkout_rejects_other_methods(client: Client) -> None:
    """The checkout answers GET and POST only."""
    assert client.put(reverse("checkout:checkout")).status_code == 405


def test_checkout_post_needs_the_csrf_token(make_product) -> None:
    """Without the CSRF token the checkout post is refused (403) and no order is made."""
    product = make_product(stock=5)
    browser = Client(enforce_csrf_checks=True)
    session = browser.session
    session["cart"] = {str(product.pk): 1}
    keep_session(browser, session)
    assert browser.post(reverse("checkout:checkout"), CUSTOMER).status_code == 403
    assert Order.objects.count() == 0


# --- Who can see an order -------------------------------------------------------------------


def test_order_and_pay_pages_belong_to_the_session(client: Client, make_product) -> None:
    """The order page is the placing session's; another browser gets 404 on order and pay pages."""
    product = make_product(stock=5)
    order = place_order(client, (product, 1))
    response = client.get(reverse("checkout:order", args=[order.reference]))
    assert response.status_code == 200
    assert html(response).one("p", id="order-status").classes >= {"status-awaiting_payment"}
    stranger = Client()
    assert stranger.get(reverse("checkout:order", args=[order.reference])).status_code == 404
    assert stranger.get(reverse("checkout:pay", args=[order.reference])).status_code == 404
    url = reverse("checkout:payment_status", args=[order.reference])
    assert stranger.get(url).status_code == 404


def test_unknown_order_is_404(client: Client) -> None:
    """An order reference that does not exist is a 404."""
    assert client.get(reverse("checkout:order", args=["ORD-00000"])).status_code == 404
    assert client.get(reverse("checkout:pay", args=["ORD-00000"])).status_code == 404


def test_order_page_of_an_unpaid_order_links_to_payment(client: Client, make_product) -> None:
    """An unpaid order's page has a link to its payment page and shows its items."""
    product = make_product(price="289.00", stock=5, name="Taza")
    order = place_order(client, (product, 2))
    page = html(client.get(reverse("checkout:order", args=[order.reference])))
    page.one("a", href=reverse("checkout:pay", args=[order.reference]))
    row = page.one("tbody").one("tr")
    assert [td.text for td in row.find_all("td")] == ["Taza", "$289.00", "2", "$578.00"]


def test_every_field_is_described_by_its_hint_and_errors_on_the_page(
    client: Client, make_product
) -> None:
    """A screen reader hears each field's hint and errors: every id a field's aria-describedby
    names is an element of the page, holding that hint or error (and the field is marked
    invalid)."""
    add_to_cart(client, make_product(stock=5), 1)
    empty = html(client.get(reverse("checkout:checkout")))
    invalid = html(
        client.post(reverse("checkout:checkout"), {**CUSTOMER, "phone": "123", "email": "x"})
    )

    described = 0
    for page in (empty, invalid):
        for field in page.find_all("input") + page.find_all("select"):
            for target in field.attrs.get("aria-describedby", "").split():
                assert page.one(id=target).text, target
                described += 1
    phone = invalid.one("input", id="id_phone")
    assert phone.attrs["aria-describedby"].split() == ["id_phone_helptext", "id_phone_error"]
    assert phone.attrs["aria-invalid"] == "true"
    assert described >= 4


@pytest.mark.parametrize("code", ["abc", "123", "1234567"])
def test_a_malformed_postal_code_is_said_plainly(code: str) -> None:
    """Whatever is wrong with it, a postal code is refused with the one readable message (not
    Django's "at least 5 characters (it has 3)")."""
    from django.utils import translation

    with translation.override("en"):
        form = CheckoutForm({**CUSTOMER, "postal_code": code})
        assert not form.is_valid()
        assert form.errors["postal_code"] == ["A Mexican postal code has 5 digits."]
