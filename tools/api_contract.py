"""The shop's OpenAPI document as its contract: Schemathesis with every check and every phase
(the stateful one following the document's links), against a running shop, as a shopper's
browser that placed an order, so that the order's operations (a payment attempt, its outcome)
are reached past their 403 and 404.

    .venv/bin/python -m tools.api_contract --url http://127.0.0.1:8000 [--max-time 120]
        [--webhook-token TOKEN] [-- more schemathesis run options]

It places an order through the shop's pages as a browser does (`tools.shopper.Shopper`: the
product page, the cart, the checkout form: the API places no order), then writes a
schemathesis.toml that gives Schemathesis what the document's security schemes name (that
browser's session cookie, its CSRF cookie and header) and the order's reference (and the
webhook token, when given), and runs `schemathesis run <url>/api/schema/ -c all`. Its exit
status is Schemathesis': 0 when no check failed.

Run against `make demo`, the shop's own limits answer most attempts 429 after the first few
(8 a session in 10 minutes): start the demo with `SHOP_PAY_ATTEMPTS_PER_SESSION=1000/m
SHOP_PAY_ATTEMPTS_PER_ADDRESS=1000/m SHOP_STATUS_CHECKS_PER_SESSION=1000/m` for a run that
goes further. tests/core/test_api_contract.py runs it in `make test`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import requests

from tools.shopper import OrderNotPlaced, Shopper

SESSION_COOKIE = "sessionid"
CSRF_COOKIE = "csrftoken"
PRODUCT_LINK = re.compile(r'href="/productos/([^/"]+)/"')


@dataclass(frozen=True)
class ShopperAccess:
    """What the order's operations ask of a client: the session that placed the order, its
    CSRF pair, and the order's reference."""

    session: str
    csrf: str
    reference: str


def products(url: str) -> list[str]:
    """The slugs of the products the shop's home page lists, in its order."""
    home = requests.get(f"{url}/", timeout=30)
    home.raise_for_status()
    return list(dict.fromkeys(PRODUCT_LINK.findall(home.text)))


def place_order(url: str, product: str | None = None) -> ShopperAccess:
    """An order placed through the shop's pages (of `product`, else of the first product
    listed that is not sold out), and the browser's session and CSRF token."""
    for slug in [product] if product else products(url):
        shopper = Shopper(url)
        try:
            reference = shopper.place_order(slug)
        except OrderNotPlaced:
            continue
        return ShopperAccess(
            session=shopper.http.cookies.get(SESSION_COOKIE, ""),
            csrf=shopper.http.cookies.get(CSRF_COOKIE, ""),
            reference=reference,
        )
    raise SystemExit(f"no order could be placed at {url}: seed the shop first (make seed)")


def config(access: ShopperAccess, webhook_token: str = "") -> str:
    """schemathesis.toml: the shopper's session and CSRF pair for the document's security
    schemes, and the values of the path parameters a client cannot guess."""
    parameters = {"path.reference": access.reference}
    if webhook_token:
        parameters["path.token"] = webhook_token
    lines = [
        "[auth.openapi.browserSession]",
        f"api_key = {json.dumps(access.session)}",
        "[auth.openapi.csrfCookie]",
        f"api_key = {json.dumps(access.csrf)}",
        "[auth.openapi.csrfHeader]",
        f"api_key = {json.dumps(access.csrf)}",
        # A body over the operation's byte limit is refused 413 before it is read, whatever it
        # holds, as the document says: a rejection like a 400. A body valid by the document can
        # be over it too (its objects take properties they do not name), so both checks take it.
        "[checks.negative_data_rejection]",
        'expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", '
        '"422", "428", "429", "5xx"]',
        "[checks.positive_data_acceptance]",
        'expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]',
        "[parameters]",
        *(f"{json.dumps(name)} = {json.dumps(value)}" for name, value in parameters.items()),
        # Monthly installments depend on the order's total and the card's BIN, which no schema
        # can say: a body valid by the document may ask for a plan this order cannot have, and
        # is refused 400 `installments_not_available`, as the document says.
        "[[operations]]",
        'include-operation-id = "pay_attempt"',
        "checks.positive_data_acceptance.expected-statuses = "
        '["2xx", "3xx", "400", "401", "403", "404", "409", "413", "429", "5xx"]',
    ]
    return "\n".join(lines) + "\n"


def command(url: str, config_file: Path, max_time: int, extra: list[str]) -> list[str]:
    schemathesis = str(Path(sys.executable).with_name("schemathesis"))
    return [
        schemathesis, "--config-file", str(config_file), "--no-color", "run",
        f"{url}/api/schema/", "--checks", "all", "--max-time", str(max_time), *extra,
    ]  # fmt: skip


@dataclass(frozen=True)
class Ran:
    """How Schemathesis ended (its exit status) and what it printed."""

    returncode: int
    output: str


def run(
    url: str,
    *,
    max_time: int = 120,
    webhook_token: str = "",
    product: str | None = None,
    extra: list[str] | None = None,
) -> Ran:
    """Place an order, then run Schemathesis as that shopper; its output is printed as it
    comes, and kept."""
    url = url.rstrip("/")
    access = place_order(url, product)
    print(f"Order {access.reference} placed; Schemathesis runs as the browser that placed it.")
    printed: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        config_file = Path(folder) / "schemathesis.toml"
        config_file.write_text(config(access, webhook_token))
        argv = command(url, config_file, max_time, extra or [])
        with subprocess.Popen(  # noqa: S603 (our own command)
            argv, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as schemathesis:
            assert schemathesis.stdout is not None
            for line in schemathesis.stdout:
                print(line, end="", flush=True)
                printed.append(line)
    return Ran(schemathesis.returncode, "".join(printed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running shop")
    parser.add_argument("--max-time", type=int, default=120, help="Schemathesis' budget (s)")
    parser.add_argument("--webhook-token", default="", help="PAYMENTS_WEBHOOK_TOKEN, if known")
    parser.add_argument("--product", default=None, help="the product ordered (its slug)")
    parser.add_argument("extra", nargs="*", help="more `schemathesis run` options, after --")
    args = parser.parse_args(argv)
    done = run(
        args.url,
        max_time=args.max_time,
        webhook_token=args.webhook_token,
        product=args.product,
        extra=args.extra,
    )
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
