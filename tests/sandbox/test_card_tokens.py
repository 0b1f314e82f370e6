"""POST /card_tokens and the card token's life: what a token shows, which card data is refused
(CL2200) or not accepted (CL2290), single use (CL2202), the 15-minute validity (CL2201), and
that neither the full number nor the CVV is ever answered or stored."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.helpers.provider import (
    AMEX,
    DECLINED,
    INSUFFICIENT_FUNDS,
    MASTER,
    PROVIDER_ERROR,
    THREE_DS,
    VISA,
    Api,
    assert_error,
    decimal_json,
)
from tests.helpers.sandbox import SandboxProcess

# Distinct CVVs with a leading zero, so no timestamp, id or amount can equal one by chance.
CVVS = {VISA: "048", MASTER: "067", AMEX: "0426"}
TEST_CARDS = {
    VISA: "visa",
    MASTER: "master",
    AMEX: "amex",
    THREE_DS: "visa",
    DECLINED: "visa",
    INSUFFICIENT_FUNDS: "visa",
    PROVIDER_ERROR: "visa",
}


def cvv_for(number: str) -> str:
    return CVVS.get(number, "048")


def luhn_number(prefix: str, length: int) -> str:
    """A Luhn-valid number of `length` digits starting with `prefix` (zeros in between)."""
    partial = prefix.ljust(length - 1, "0")
    total = 0
    for index, char in enumerate(reversed(partial)):
        digit = int(char)
        if index % 2 == 0:  # these are doubled once the check digit is appended
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return partial + str((10 - total % 10) % 10)


def card(of: str = VISA, /, **fields: Any) -> dict[str, Any]:
    """Valid card data of the test card `of`, with `fields` replaced."""
    return {
        "number": of,
        "exp_month": "12",
        "exp_year": "2031",
        "cvv": cvv_for(of),
        "holder_name": "Ana Pérez",
        **fields,
    }


def without(field: str, number: str = VISA) -> dict[str, Any]:
    data = card(number)
    del data[field]
    return data


def tokenize(api: Api, body: Any = None, **kwargs: Any) -> Any:
    return api.post("/card_tokens", body, auth="public", **kwargs)


def pay(api: Api, token: str, amount: str = "250.00") -> Any:
    body = {"amount": Decimal(amount), "currency": "MXN", "payment_method": {"token": token}}
    return api.post("/payments", body)


def leaves(value: Any) -> Iterator[tuple[str, Any]]:
    """(key, leaf) pairs of a JSON-like value; JSON kept inside strings is opened too."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key), None
            yield from leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves(item)
    else:
        yield "", value
        if isinstance(value, str) and value[:1] in ("{", "["):
            try:
                yield from leaves(json.loads(value))
            except ValueError:
                pass


def assert_no_card_secrets(value: Any, numbers: list[str], cvvs: list[str]) -> None:
    for key, leaf in leaves(value):
        assert "cvv" not in key.lower() and "security_code" not in key.lower(), key
        if leaf is None:
            continue
        text = str(leaf)
        for number in numbers:
            assert number not in text.replace(" ", ""), f"full card number stored in {text!r}"
        if isinstance(leaf, str):
            assert leaf not in cvvs, f"a CVV is kept: {leaf!r}"


# --- What a token shows --------------------------------------------------------------------


@pytest.mark.parametrize("number", list(TEST_CARDS))
def test_each_test_card_tokenizes(api: Api, number: str) -> None:
    """Each DESIGN.md test card gives a 201 token with its masked card, method and expiry."""
    # Given a test card with a future expiry and a CVV of the right length
    # When it is tokenized with the public key
    response = tokenize(api, {"card": card(number)})

    # Then the token shows the masked card, the method and a 15-minute validity
    assert response.status_code == 201, response.text
    token = decimal_json(response)
    assert uuid.UUID(token["id"])
    assert token["card"] == {
        "bin": number[:6],
        "last_digits": number[-4:],
        "exp_month": "12",
        "exp_year": "2031",
        "issuer": token["card"]["issuer"],
        "name": "Ana Pérez",
        "country": "MX",
    }
    assert isinstance(token["card"]["issuer"], str) and token["card"]["issuer"]
    assert token["payment_method_id"] == TEST_CARDS[number]
    created = datetime.fromisoformat(token["created_at"])
    expires = datetime.fromisoformat(token["expires_at"])
    assert expires - created == timedelta(minutes=15)


@pytest.mark.parametrize(
    ("typed", "number"),
    [
        ("4242 4242 4242 4242", VISA),
        ("5555 5555 5555 4444", MASTER),
        ("3782 822463 10005", AMEX),
        (" 4242424242424242 ", VISA),
    ],
)
def test_spaces_in_the_number_are_accepted(api: Api, typed: str, number: str) -> None:
    """A number typed in groups separated by spaces tokenizes like the plain digits."""
    # Given a card number as people type it
    # When it is tokenized
    response = tokenize(api, {"card": card(number, number=typed)})

    # Then it is the same card
    assert response.status_code == 201, response.text
    assert response.json()["card"]["bin"] == number[:6]
    assert response.json()["card"]["last_digits"] == number[-4:]


@pytest.mark.parametrize("number", [VISA, MASTER, AMEX, THREE_DS])
def test_the_answer_has_neither_the_full_number_nor_the_cvv(api: Api, number: str) -> None:
    """The token answer never carries the full card number or the CVV."""
    # Given a card tokenized with its CVV, its number typed with and without spaces
    for typed in (number, " ".join([number[:4], number[4:10], number[10:]])):
        # When the token comes back
        response = tokenize(api, {"card": card(number, number=typed)})
        assert response.status_code == 201, response.text

        # Then neither the number nor the CVV is anywhere in it
        assert number not in response.text.replace(" ", "")
        assert typed not in response.text
        assert_no_card_secrets(response.json(), [number], [cvv_for(number)])


# --- Invalid card data: CL2200 -------------------------------------------------------------


INVALID_CARDS: dict[str, Any] = {
    "luhn_failure": {"card": card(number="4242424242424241")},
    "luhn_failure_amex": {"card": card(AMEX, number="378282246310006")},
    "too_short": {"card": card(number="4242")},
    "letters": {"card": card(number="4242abcd42424242")},
    "empty_number": {"card": card(number="")},
    "visa_13_digits": {"card": card(number=luhn_number("4242", 13))},
    "visa_19_digits": {"card": card(number=luhn_number("4242", 19))},
    "master_15_digits": {"card": card(MASTER, number=luhn_number("5555", 15))},
    "amex_16_digits": {"card": card(AMEX, number=luhn_number("3782", 16))},
    "amex_14_digits": {"card": card(AMEX, number=luhn_number("3782", 14))},
    "visa_cvv_4_digits": {"card": card(VISA, cvv="1234")},
    "visa_cvv_2_digits": {"card": card(VISA, cvv="12")},
    "master_cvv_4_digits": {"card": card(MASTER, cvv="1234")},
    "amex_cvv_3_digits": {"card": card(AMEX, cvv="123")},
    "amex_cvv_5_digits": {"card": card(AMEX, cvv="12345")},
    "cvv_not_digits": {"card": card(VISA, cvv="12a")},
    "cvv_empty": {"card": card(VISA, cvv="")},
    "cvv_missing": {"card": without("cvv")},
    "cvv_missing_amex": {"card": without("cvv", AMEX)},
    "expired_last_year_4_digits": {"card": card(exp_month="01", exp_year="2020")},
    "expired_2_digit_year": {"card": card(exp_month="06", exp_year="21")},
    "month_13": {"card": card(exp_month="13")},
    "month_00": {"card": card(exp_month="00")},
    "month_not_digits": {"card": card(exp_month="1a")},
    "year_3_digits": {"card": card(exp_year="203")},
    "number_as_integer": {"card": card(number=4242424242424242)},
    "exp_month_as_integer": {"card": card(exp_month=12)},
    "exp_year_as_integer": {"card": card(exp_year=2031)},
    "cvv_as_integer": {"card": card(cvv=123)},
    "holder_name_as_integer": {"card": card(holder_name=7)},
    "holder_name_null": {"card": card(holder_name=None)},
    "number_as_list": {"card": card(number=["4242424242424242"])},
    "missing_number": {"card": without("number")},
    "missing_exp_month": {"card": without("exp_month")},
    "missing_exp_year": {"card": without("exp_year")},
    "missing_holder_name": {"card": without("holder_name")},
    "holder_name_empty": {"card": card(holder_name="")},
    "holder_name_blank": {"card": card(holder_name="   ")},
    "missing_card": {},
    "card_not_object": {"card": "4242424242424242"},
    "card_null": {"card": None},
    "body_is_list": [card()],
    "body_is_string": "4242424242424242",
    "body_is_number": 4242,
    "body_is_null": None,
}


@pytest.mark.parametrize("body", list(INVALID_CARDS.values()), ids=list(INVALID_CARDS))
def test_invalid_card_data_is_cl2200(api: Api, body: Any) -> None:
    """Card data that cannot be a valid card is refused with 400 CL2200."""
    # Given card data with one thing wrong
    # When it is tokenized
    raw = "null" if body is None else None
    response = tokenize(api, body, raw=raw)

    # Then it is refused as invalid card data
    assert_error(response, 400, "CL2200")


@pytest.mark.parametrize(
    "raw",
    ['{"card": {"number": "4242424242424242",', "not json", "{'card': {}}", ""],
    ids=["truncated", "not_json", "single_quotes", "empty_body"],
)
def test_malformed_json_is_cl2200(api: Api, raw: str) -> None:
    """A body that is not a JSON object of card data is refused with 400 CL2200."""
    # Given a body that is not valid JSON (or no body at all)
    # When it is sent to POST /card_tokens
    response = tokenize(api, raw=raw)

    # Then it is refused as invalid card data
    assert_error(response, 400, "CL2200")


def test_a_card_expiring_this_month_is_still_valid(api: Api) -> None:
    """A card is valid until the end of its expiry month; the month before is expired."""
    # Given the sandbox's current month and the month before it
    now = datetime.fromisoformat(api.get("/_sandbox/clock").json()["now"])
    previous = (now.replace(day=1) - timedelta(days=1)).date()

    # When a card expiring this month and one that expired last month are tokenized
    current = tokenize(api, {"card": card(exp_month=f"{now.month:02d}", exp_year=str(now.year))})
    expired = tokenize(
        api, {"card": card(exp_month=f"{previous.month:02d}", exp_year=str(previous.year))}
    )

    # Then the first is accepted and the second refused
    assert current.status_code == 201, current.text
    assert_error(expired, 400, "CL2200")


# --- Card of a method not accepted: CL2290 -------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [
        "6011111111111117",
        "3530111333300000",
        luhn_number("491182", 16),
        luhn_number("491731", 16),
        luhn_number("4917319", 16),
    ],
    ids=["discover", "jcb", "excluded_bin_491182", "excluded_bin_491731", "excluded_longer"],
)
def test_a_card_no_method_accepts_is_cl2290(api: Api, number: str) -> None:
    """A Luhn-valid card no catalogue entry accepts (or whose BIN is excluded) is CL2290."""
    # Given a Luhn-valid card number outside every accepted BIN range, or in visa's exclusions
    # When it is tokenized
    response = tokenize(api, {"card": card(number)})

    # Then it is refused as a method not accepted
    assert_error(response, 400, "CL2290")


def test_a_bin_next_to_an_excluded_one_is_accepted(api: Api) -> None:
    """The visa exclusion covers only its BINs: a neighbouring BIN tokenizes as visa."""
    # Given a Luhn-valid visa number whose BIN is next to an excluded one
    number = luhn_number("491183", 16)

    # When it is tokenized
    response = tokenize(api, {"card": card(number)})

    # Then it is a visa token
    assert response.status_code == 201, response.text
    assert response.json()["payment_method_id"] == "visa"


def test_a_card_of_a_deactivated_method_is_cl2290(api: Api) -> None:
    """Once visa is deactivated, visa cards are refused with CL2290; other methods still work."""
    # Given the visa method deactivated through the control endpoint
    changed = api.patch("/_sandbox/payment_methods/visa", {"status": "deactive"})
    assert changed.status_code == 200, changed.text

    # When a visa card and a mastercard are tokenized
    visa = tokenize(api, {"card": card(VISA)})
    master = tokenize(api, {"card": card(MASTER)})

    # Then only the visa card is refused
    assert_error(visa, 400, "CL2290")
    assert master.status_code == 201, master.text


# --- Single use and expiry -----------------------------------------------------------------


def test_a_token_pays_only_once(api: Api) -> None:
    """A second payment with the same card token is refused with 400 CL2202."""
    # Given a token that has paid once
    token = api.card_token(VISA)["id"]
    first = pay(api, token)
    assert first.status_code == 201, first.text

    # When it is used again
    second = pay(api, token)

    # Then it is refused and only the first payment exists
    assert_error(second, 400, "CL2202")
    assert [p["id"] for p in api.payments()] == [first.json()["id"]]


def test_a_token_expires_after_15_minutes(api: Api) -> None:
    """A token unused for 15 minutes can no longer pay: 400 CL2201."""
    # Given a fresh token and the sandbox clock moved 15 minutes and 1 second on
    token = api.card_token(VISA)["id"]
    advanced = api.post("/_sandbox/clock", {"advance_seconds": 901})
    assert advanced.status_code == 200, advanced.text

    # When it is used to pay
    response = pay(api, token)

    # Then it is refused as expired and no payment is made
    assert_error(response, 400, "CL2201")
    assert api.payments() == []


def test_a_token_still_pays_just_before_15_minutes(api: Api) -> None:
    """A token is still good 14 minutes 59 seconds after it was made."""
    # Given a fresh token and the sandbox clock moved 899 seconds on
    token = api.card_token(VISA)["id"]
    advanced = api.post("/_sandbox/clock", {"advance_seconds": 899})
    assert advanced.status_code == 200, advanced.text

    # When it is used to pay
    response = pay(api, token)

    # Then the payment is made
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("token", [str(uuid.uuid4()), "tok_unknown"], ids=["uuid", "not_uuid"])
def test_an_unknown_token_is_cl2201(api: Api, token: str) -> None:
    """A token id the sandbox never issued is refused with 400 CL2201."""
    # Given a token id that was never issued
    # When a payment uses it
    response = pay(api, token)

    # Then it is refused as unknown and no payment is made
    assert_error(response, 400, "CL2201")
    assert api.payments() == []


# --- Nothing secret is kept ----------------------------------------------------------------


def _sqlite_rows(path: Any) -> Iterator[dict[str, Any]]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        for table in tables:
            cursor = connection.execute(f'SELECT * FROM "{table}"')
            columns = [f"{table}.{d[0]}" for d in cursor.description]
            for row in cursor:
                yield dict(zip(columns, row, strict=True))
    finally:
        connection.close()


def _postgres_rows(database_url: str) -> Iterator[dict[str, Any]]:
    import psycopg

    with psycopg.connect(database_url) as connection:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
            )
        ]
        for table in tables:
            for (row,) in connection.execute(f'SELECT row_to_json(t)::text FROM "{table}" t'):
                yield {f"{table}.{key}": value for key, value in json.loads(row).items()}


def database_rows(sandbox: SandboxProcess) -> list[dict[str, Any]]:
    """Every row of every table of the sandbox's database, column names prefixed by table."""
    if sandbox.database_url:
        return list(_postgres_rows(sandbox.database_url))
    return list(_sqlite_rows(sandbox.var_dir / "sandbox.sqlite3"))


def test_the_database_keeps_no_full_number_and_no_cvv(api: Api, sandbox: SandboxProcess) -> None:
    """After tokenizing and paying with every test card, no table holds a full number or CVV."""
    # Given every test card tokenized (one with an Idempotency-Key, whose answer is kept) and
    # used to pay
    for index, number in enumerate(TEST_CARDS):
        spaced = " ".join([number[:4], number[4:8], number[8:12], number[12:]])
        headers = {"Idempotency-Key": f"card-{index}-{uuid.uuid4()}"} if index == 0 else None
        tokenized = tokenize(api, {"card": card(number, number=spaced)}, headers=headers)
        assert tokenized.status_code == 201, tokenized.text
        paid = pay(api, tokenized.json()["id"])
        assert paid.status_code in (201, 500), paid.text
    manual = api.card_token(MASTER, cvv=CVVS[MASTER])["id"]
    body = {
        "amount": Decimal("120.00"),
        "currency": "MXN",
        "capture_method": "manual",
        "payment_method": {"token": manual},
    }
    authorized = api.post("/payments", body, headers={"Idempotency-Key": str(uuid.uuid4())})
    assert authorized.status_code == 201, authorized.text

    # When the whole database is read
    rows = database_rows(sandbox)

    # Then the tokens and payments are there, but no full number and no CVV
    assert rows, "the sandbox database is empty"
    numbers = list(TEST_CARDS)
    cvvs = sorted(set(CVVS.values()))
    token_id = authorized.json()["payment_method"]["token"]
    assert any(token_id in str(row) or token_id.replace("-", "") in str(row) for row in rows)
    for row in rows:
        assert_no_card_secrets(row, numbers, cvvs)
    if not sandbox.database_url:
        # Also the raw files, which hold deleted rows and the write-ahead log.
        for suffix in ("", "-wal"):
            path = sandbox.var_dir / f"sandbox.sqlite3{suffix}"
            if path.exists():
                raw = path.read_bytes()
                for number in numbers:
                    assert number.encode() not in raw, f"{number} in {path.name}"


def test_the_log_has_no_full_number(api: Api, sandbox: SandboxProcess) -> None:
    """The sandbox's log never shows a full card number, even of a refused card."""
    # Given good and refused cards sent to POST /card_tokens
    for number in (VISA, AMEX, "4242424242424241", luhn_number("491182", 16)):
        tokenize(api, {"card": card(number)})

    # When its log is read
    log = sandbox.log()

    # Then no full number is in it
    for number in (VISA, AMEX, "4242424242424241", luhn_number("491182", 16)):
        assert number not in log
