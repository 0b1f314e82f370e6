"""GET /payment_methods: the catalogue's shape (spec "Payment method catalogue entry"), its
country parameter (default MX), the logos it points at, and deactivated methods."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from tests.helpers.provider import AMEX, MASTER, VISA, Api, assert_error, decimal_json

METHODS = {"amex", "visa", "master", "cashpay"}
CARD_METHODS = {"amex": AMEX, "visa": VISA, "master": MASTER}
ENTRY_FIELDS = {"id", "logo", "name", "status", "type", "validations"}
CARD_LENGTHS = {"amex": 15, "visa": 16, "master": 16}
CVV = {"amex": (4, "front"), "visa": (3, "back"), "master": (3, "back")}


def listed(api: Api, **params: str) -> list[dict[str, Any]]:
    response = api.get("/payment_methods", auth="public", params=params or None)
    assert response.status_code == 200, response.text
    methods = decimal_json(response)
    assert isinstance(methods, list)
    return methods


def by_id(methods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {method["id"]: method for method in methods}


def metadata(method: dict[str, Any], name: str) -> dict[str, Any]:
    found = [v["metadata"] for v in method["validations"] if v["name"] == name]
    assert len(found) == 1, (method["id"], name, method["validations"])
    return found[0]


@pytest.mark.parametrize("params", [{}, {"country": "MX"}], ids=["default", "country_MX"])
def test_mexico_lists_the_four_methods(api: Api, params: dict[str, str]) -> None:
    """Without a country (default MX) and with country=MX the four methods are listed."""
    # Given the seeded catalogue
    # When it is listed
    methods = listed(api, **params)

    # Then amex, visa, master and cashpay are there, each with the entry fields, all active
    assert {m["id"] for m in methods} == METHODS
    assert len(methods) == len(METHODS)
    for method in methods:
        assert set(method) == ENTRY_FIELDS, method
        assert isinstance(method["name"], str) and method["name"]
        assert method["status"] == "active"
        assert isinstance(method["validations"], list)
        for item in method["validations"]:
            assert set(item) == {"name", "metadata"}, item
            assert isinstance(item["metadata"], dict)


def test_default_country_is_mexico(api: Api) -> None:
    """The list without a country is the list for MX."""
    # Given the seeded catalogue
    # When it is listed without and with country=MX
    # Then both are the same
    assert listed(api) == listed(api, country="MX")


@pytest.mark.parametrize("method_id", sorted(CARD_METHODS))
def test_a_card_method_carries_its_four_validations(api: Api, method_id: str) -> None:
    """A card method has bin, card_number, cvv and accepted_amount validations as specified."""
    # Given the seeded catalogue
    # When it is listed
    method = by_id(listed(api))[method_id]

    # Then the card method has exactly the four card validations, each with its metadata
    assert method["type"] in ("credit_card", "debit_card")
    assert {v["name"] for v in method["validations"]} == {
        "bin",
        "card_number",
        "cvv",
        "accepted_amount",
    }
    bin_rule = metadata(method, "bin")
    assert set(bin_rule) == {"pattern", "exclusion_pattern", "installment_pattern"}
    assert isinstance(bin_rule["pattern"], str)
    assert bin_rule["exclusion_pattern"] is None or isinstance(bin_rule["exclusion_pattern"], str)
    assert isinstance(bin_rule["installment_pattern"], str)
    assert metadata(method, "card_number") == {
        "algorithm": "luhn",
        "length": CARD_LENGTHS[method_id],
    }
    length, location = CVV[method_id]
    assert metadata(method, "cvv") == {
        "card_location": location,
        "length": length,
        "type": "mandatory",
    }
    amounts = metadata(method, "accepted_amount")
    assert set(amounts) == {"min", "max"}
    assert isinstance(amounts["min"], Decimal) and isinstance(amounts["max"], Decimal)
    assert amounts["min"] == Decimal("10.00")
    assert amounts["min"] < amounts["max"]


@pytest.mark.parametrize("method_id", sorted(CARD_METHODS))
def test_the_bin_patterns_describe_the_test_cards(api: Api, method_id: str) -> None:
    """Each card method's BIN pattern is a regular expression its test card matches."""
    # Given the listed card method and its DESIGN.md test card
    method = by_id(listed(api))[method_id]
    number = CARD_METHODS[method_id]
    bin_rule = metadata(method, "bin")

    # When its patterns are read as regular expressions
    pattern = re.compile(bin_rule["pattern"])
    exclusion = bin_rule["exclusion_pattern"]

    # Then the test card matches the pattern, is not excluded, and has the listed length
    assert pattern.match(number)
    assert exclusion is None or not re.match(exclusion, number)
    re.compile(bin_rule["installment_pattern"])
    assert len(number) == metadata(method, "card_number")["length"]
    others = [n for m, n in CARD_METHODS.items() if m != method_id]
    assert not any(pattern.match(n) for n in others)


def test_visa_lists_its_excluded_bins(api: Api) -> None:
    """Visa's exclusion pattern covers the BINs 491182 and 491731."""
    # Given the listed visa method
    exclusion = metadata(by_id(listed(api))["visa"], "bin")["exclusion_pattern"]

    # When its exclusion pattern is read
    # Then it matches the excluded BINs and not other visa numbers
    assert exclusion is not None
    assert re.match(exclusion, "4911820000000000")
    assert re.match(exclusion, "4917310000000000")
    assert not re.match(exclusion, VISA)


def test_amounts_are_json_numbers_with_two_decimals(api: Api) -> None:
    """accepted_amount min and max are JSON numbers (not strings) written with two decimals."""
    # Given the catalogue as raw JSON
    response = api.get("/payment_methods", auth="public")
    assert response.status_code == 200, response.text

    # When its accepted_amount bounds are read both as floats and as exact decimals
    as_floats = json.loads(response.text)
    as_decimals = decimal_json(response)

    # Then they are numbers, exact to the cent, and amex's maximum is 150000.00
    for raw, exact in zip(as_floats, as_decimals, strict=True):
        raw_amounts = metadata(raw, "accepted_amount")
        exact_amounts = metadata(exact, "accepted_amount")
        for bound in ("min", "max"):
            assert isinstance(raw_amounts[bound], int | float), raw_amounts
            assert not isinstance(raw_amounts[bound], bool)
            assert exact_amounts[bound].as_tuple().exponent == -2, exact_amounts
    assert metadata(by_id(as_decimals)["amex"], "accepted_amount")["max"] == Decimal("150000.00")


def test_cashpay_is_a_ticket_with_only_accepted_amount(api: Api) -> None:
    """The cash method is of type ticket and carries only the accepted_amount validation."""
    # Given the seeded catalogue
    # When it is listed
    cashpay = by_id(listed(api))["cashpay"]

    # Then cashpay has type ticket and one validation, accepted_amount
    assert cashpay["type"] == "ticket"
    assert [v["name"] for v in cashpay["validations"]] == ["accepted_amount"]
    amounts = metadata(cashpay, "accepted_amount")
    assert set(amounts) == {"min", "max"}
    assert isinstance(amounts["min"], Decimal) and isinstance(amounts["max"], Decimal)
    assert Decimal("0") < amounts["min"] < amounts["max"]


@pytest.mark.parametrize("country", ["mx", "Mx", "mX"])
def test_the_country_code_is_case_insensitive(api: Api, country: str) -> None:
    """A lower-case or mixed-case country code lists the same methods as MX."""
    # Given the seeded catalogue
    # When it is listed with the country in another letter case
    # Then the list is the one for MX
    assert listed(api, country=country) == listed(api, country="MX")


@pytest.mark.parametrize("country", ["US", "us", "ZZ", "BR"])
def test_a_country_without_methods_is_404_br1301(api: Api, country: str) -> None:
    """A well-formed country code the catalogue has no methods for is 404 BR1301."""
    # Given a country the sandbox has no methods for
    # When the catalogue is asked for it
    response = api.get("/payment_methods", auth="public", params={"country": country})

    # Then it is not found
    assert_error(response, 404, "BR1301")


@pytest.mark.parametrize("country", ["MEX", "1", "M", "12", "M X", "M1", "ÑX"])
def test_a_malformed_country_is_400_cl2100(api: Api, country: str) -> None:
    """A country that is not an ISO 3166-1 alpha-2 code is 400 CL2100."""
    # Given a malformed country code
    # When the catalogue is asked for it
    response = api.get("/payment_methods", auth="public", params={"country": country})

    # Then it is an invalid request
    assert_error(response, 400, "CL2100")


def test_each_logo_is_served_as_svg(api: Api) -> None:
    """Every logo URL of the catalogue is an absolute URL on the sandbox serving an SVG image."""
    # Given the listed methods
    methods = listed(api)
    sandbox = urlsplit(api.base_url)

    for method in methods:
        # When its logo URL is fetched, as a browser would (no credentials)
        logo = urlsplit(method["logo"])
        response = requests.get(method["logo"], timeout=10)

        # Then it is on the sandbox's origin and an SVG image
        assert (logo.scheme, logo.netloc) == (sandbox.scheme, sandbox.netloc), method["logo"]
        assert response.status_code == 200, (method["logo"], response.status_code)
        assert response.headers["Content-Type"].startswith("image/svg+xml"), response.headers
        assert b"<svg" in response.content


def test_a_deactivated_method_shows_deactive(api: Api) -> None:
    """A method deactivated in the sandbox is still listed, with status deactive."""
    # Given master deactivated through the control endpoint
    changed = api.patch("/_sandbox/payment_methods/master", {"status": "deactive"})
    assert changed.status_code == 200, changed.text

    # When the catalogue is listed
    methods = by_id(listed(api))

    # Then master is deactive and the others active
    assert methods["master"]["status"] == "deactive"
    assert {m["status"] for i, m in methods.items() if i != "master"} == {"active"}


def test_a_reactivated_method_shows_active(api: Api) -> None:
    """A deactivated method made active again is listed as active and takes cards again."""
    # Given visa deactivated then activated again
    for status in ("deactive", "active"):
        changed = api.patch("/_sandbox/payment_methods/visa", {"status": status})
        assert changed.status_code == 200, changed.text

    # When the catalogue is listed and a visa card tokenized
    methods = by_id(listed(api))
    token = api.card_token(VISA)

    # Then visa is active and takes the card
    assert methods["visa"]["status"] == "active"
    assert token["payment_method_id"] == "visa"


@pytest.mark.parametrize(
    "body",
    [{"status": "inactive"}, {"status": 1}, {}, [], "deactive"],
    ids=["unknown_status", "number", "missing", "list", "string"],
)
def test_a_bad_method_status_change_is_400_and_changes_nothing(api: Api, body: Any) -> None:
    """The control endpoint refuses a status other than active/deactive and changes nothing."""
    # Given the seeded catalogue
    before = listed(api)

    # When visa is set to a status that does not exist
    response = api.patch("/_sandbox/payment_methods/visa", body)

    # Then it is an invalid request and the catalogue is as it was
    assert_error(response, 400, "CL2100")
    assert listed(api) == before
