"""Browser security of the shop, end to end: its Content-Security-Policy as Chromium enforces it
through whole purchases (3-D Secure included), the policy every shopper page sends, and the PCI
scope of a checkout whose card form lives only in the provider's iframe (SAQ A)."""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit

import pytest
from playwright.sync_api import expect

from core.security import origin_of
from tests.e2e.helpers import Shop, Shopper, card_numbers_in, expect_paid_order_page, expect_refused
from tests.helpers.provider import DECLINED, THREE_DS, VISA
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

REPORT_PATH = "/csp-report/"

# Installed in every document of the context (every navigation, every frame, the provider's
# included) before its own scripts run: it announces itself, then hands each violation to Python.
WATCH_VIOLATIONS = """
(() => {
  const send = (what) => { if (window.__cspWatch) window.__cspWatch(what); };
  document.addEventListener("securitypolicyviolation", (event) => {
    send({
      kind: "violation",
      directive: event.effectiveDirective,
      blocked: event.blockedURI,
      document: event.documentURI,
      source: event.sourceFile,
      line: event.lineNumber,
      disposition: event.disposition,
    });
  }, true);
  document.addEventListener("DOMContentLoaded", () => send({kind: "watching"}));
})();
"""


@dataclass
class CspWatch:
    """What a browser context saw: violations (from any document or frame), the documents the
    watcher ran in, and the violation reports it sent to the shop."""

    violations: list[dict[str, Any]] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)
    reports: list[Any] = field(default_factory=list)


def watch_csp(context: Any, shop: Shop) -> CspWatch:
    watch = CspWatch()

    def receive(source: dict[str, Any], what: dict[str, Any]) -> None:
        if what.get("kind") == "violation":
            watch.violations.append({**what, "frame": source["frame"].url})
        else:
            watch.watched.append(source["frame"].url)

    def request(request: Any) -> None:
        if request.url.startswith(f"{shop.url}{REPORT_PATH}"):
            watch.reports.append(request)

    context.expose_binding("__cspWatch", receive)
    context.add_init_script(WATCH_VIOLATIONS)
    context.on("request", request)
    return watch


def csp_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "csp"]


def provider_origin(shop: Shop) -> str:
    return origin_of(shop.api.base_url)


# --- 1. No violation through whole purchases --------------------------------------------------


@pytest.mark.parametrize("card", [THREE_DS, VISA], ids=["three-d-secure", "approved"])
def test_a_whole_purchase_violates_no_policy(
    page: Any, shop: Shop, caplog: pytest.LogCaptureFixture, card: str
) -> None:
    """Given the shop's CSP, when a shopper buys from the home page to the paid order (the
    provider's card form and, for 4000 0000 0000 3220, its 3-D Secure modal included), no
    document or frame raises a violation and no report reaches /csp-report/."""
    caplog.set_level(logging.INFO, logger="csp")
    watch = watch_csp(page.context, shop)
    shopper = Shopper(page, shop)

    shopper.reach_payment_page()
    shopper.type_card(card)
    shopper.pay()
    if card == THREE_DS:
        shopper.wait_for_challenge()
        shopper.answer_challenge("123456")
    expect_paid_order_page(shopper)

    # The watcher ran in every kind of document of the walk: each shop page, the card form
    # and (with 3-D Secure) the bank's page, both on the provider's origin.
    provider = provider_origin(shop)
    wait_until(lambda: re.search(rf"/pedidos/{shopper.reference}/$", " ".join(watch.watched)))
    watched_paths = {urlsplit(url).path for url in watch.watched if url.startswith(shop.url)}
    assert {"/", "/carrito/", "/checkout/", f"/pedidos/{shopper.reference}/pagar/"} <= (
        watched_paths
    ), watch.watched
    in_provider_frames = [url for url in watch.watched if url.startswith(f"{provider}/")]
    assert len(in_provider_frames) >= (2 if card == THREE_DS else 1), watch.watched

    assert watch.violations == []
    assert [request.url for request in watch.reports] == []
    assert csp_logs(caplog) == []


# --- 2. The policy of every shopper page ------------------------------------------------------


def parse_policy(header: str) -> dict[str, list[str]]:
    """{directive: [sources]} of a Content-Security-Policy header."""
    policy: dict[str, list[str]] = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            policy[words[0].lower()] = words[1:]
    return policy


def nonce_of(policy: dict[str, list[str]]) -> str:
    nonces = [
        s[len("'nonce-") : -1] for s in policy.get("script-src", []) if s.startswith("'nonce-")
    ]
    return nonces[0] if len(nonces) == 1 else ""


def policy_problems(header: str | None, provider: str) -> list[str]:
    """Where a shopper page's header departs from the shop's strict policy."""
    if not header:
        return ["no Content-Security-Policy header"]
    policy = parse_policy(header)
    nonce = nonce_of(policy)
    expected = {
        "frame-ancestors": ["'none'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-src": [provider],
    }
    problems = [
        f"{name}: {policy.get(name)} instead of {sources}"
        for name, sources in expected.items()
        if policy.get(name) != sources
    ]
    if not re.fullmatch(r"[A-Za-z0-9+/_=-]{16,}", nonce):
        problems.append(f"script-src has no single, long nonce: {policy.get('script-src')}")
    script_src = sorted(policy.get("script-src", []))
    if script_src != sorted(["'self'", f"'nonce-{nonce}'", provider]):
        problems.append(f"script-src: {script_src}")
    if "'unsafe-inline'" in policy.get("script-src", []):
        problems.append("script-src allows 'unsafe-inline'")
    # Finer script directives would override script-src: there must be none.
    for name in ("script-src-elem", "script-src-attr"):
        if name in policy:
            problems.append(f"{name}: {policy[name]}")
    if not policy.get("report-uri") and not policy.get("report-to"):
        problems.append("violations are not reported")
    return problems


SHOPPER_PAGES = {
    "home": re.compile(r"^/$"),
    "product": re.compile(r"^/productos/[\w-]+/$"),
    "cart": re.compile(r"^/carrito/$"),
    "checkout": re.compile(r"^/checkout/$"),
    "pay": re.compile(r"^/pedidos/ORD-[0-9A-Z]{5}/pagar/$"),
    "order": re.compile(r"^/pedidos/ORD-[0-9A-Z]{5}/$"),
}


def page_name(url: str) -> str:
    path = urlsplit(url).path
    return next((name for name, pattern in SHOPPER_PAGES.items() if pattern.match(path)), "")


def test_every_shopper_page_sends_a_strict_policy(page: Any, shop: Shop) -> None:
    """Given a purchase, every shopper page is served with the strict policy (a fresh nonce,
    framing by nobody, no plugins, no <base>, frames and scripts only from the shop and the
    provider, nothing inline), and every <script> of the payment page carries its nonce."""
    provider = provider_origin(shop)
    documents: list[Any] = []

    def response(response: Any) -> None:
        request = response.request
        if request.resource_type == "document" and response.url.startswith(f"{shop.url}/"):
            documents.append(response)

    page.on("response", response)
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.card_frame.locator("#cc-number").wait_for()
    scripts = page.locator("script").evaluate_all(
        "(scripts) => scripts.map((s) => ({src: s.src, nonce: s.nonce}))"
    )
    [pay_response] = [r for r in documents if r.status == 200 and page_name(r.url) == "pay"]
    pay_header = pay_response.all_headers().get("content-security-policy")
    shopper.type_card(VISA)
    shopper.pay()
    expect_paid_order_page(shopper)

    headers = {
        page_name(r.url): r.all_headers().get("content-security-policy")
        for r in documents
        if r.status == 200 and page_name(r.url)
    }
    assert sorted(headers) == sorted(SHOPPER_PAGES)
    problems = {name: policy_problems(header, provider) for name, header in headers.items()}
    assert problems == {name: [] for name in SHOPPER_PAGES}
    nonces = [nonce_of(parse_policy(header or "")) for header in headers.values()]
    assert len(set(nonces)) == len(nonces), headers

    # Two requests of the same page get two nonces.
    for url in (f"{shop.url}/", page.url):
        first, second = (page.request.get(url) for _ in range(2))
        assert first.status == second.status == 200, url
        policies = [
            parse_policy(r.headers.get("content-security-policy", "")) for r in (first, second)
        ]
        assert nonce_of(policies[0]) and nonce_of(policies[1]), url
        assert nonce_of(policies[0]) != nonce_of(policies[1]), url

    pay_nonce = nonce_of(parse_policy(pay_header or ""))
    assert {urlsplit(s["src"]).path for s in scripts} >= {"/static/js/payment.js"}, scripts
    assert any(s["src"].startswith(f"{provider}/") for s in scripts), scripts
    assert [s["nonce"] for s in scripts] == [pay_nonce] * len(scripts), (pay_nonce, scripts)


def test_an_injected_inline_script_is_blocked_and_reported(
    page: Any, shop: Shop, caplog: pytest.LogCaptureFixture
) -> None:
    """Given a shop page, when an inline <script> is injected into its DOM, it does not run,
    the browser POSTs a violation report to /csp-report/ and the shop logs it ("csp")."""
    caplog.set_level(logging.INFO, logger="csp")
    watch = watch_csp(page.context, shop)
    Shopper(page, shop).open_home()

    with page.expect_response(
        lambda r: r.url == f"{shop.url}{REPORT_PATH}" and r.request.method == "POST"
    ) as answer:
        ran = page.evaluate(
            """() => {
              const script = document.createElement("script");
              script.textContent = "window.__injected = true;";
              document.body.appendChild(script);
              return window.__injected === true;
            }"""
        )

    assert ran is False
    assert answer.value.status == 204
    report = json.loads(answer.value.request.post_data or "{}")["csp-report"]
    assert report["blocked-uri"] == "inline", report
    assert report["effective-directive"].startswith("script-src"), report
    assert report["document-uri"] == f"{shop.url}/", report
    [logged] = wait_until(lambda: csp_logs(caplog), timeout=10)
    assert re.search(r"script-src\S* blocked inline on /$", logged), logged
    # The page's own violation event reaches the test through a binding, in its own time (the
    # browser's events are only dispatched while Playwright is called: wait in the page).
    deadline = time.monotonic() + 10
    while not watch.violations and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert [(v["directive"], v["blocked"]) for v in watch.violations] == [
        ("script-src-elem", "inline")
    ]
    assert page.evaluate("() => window.__injected") is None


# --- 3. PCI scope: card data only in the provider's iframe ------------------------------------

LIST_FIELDS = """() => Array.from(document.querySelectorAll("input, select, textarea"), (el) => ({
  tag: el.tagName.toLowerCase(), type: el.type || "", name: el.name || "", id: el.id || "",
  placeholder: el.getAttribute("placeholder") || "",
  autocomplete: el.getAttribute("autocomplete") || "",
  inputmode: el.getAttribute("inputmode") || "",
  maxlength: el.maxLength === undefined ? -1 : el.maxLength,
  value: el.value || "",
}))"""

CARD_NAMING = re.compile(r"card|cvv|cvc|(?<![a-z])cc[-_]|(?<![a-z])pan(?![a-z])|expir", re.I)
NUMERIC = {"numeric", "tel", "decimal"}


def card_field_reasons(field: dict[str, Any]) -> list[str]:
    """Why a form field looks like it takes card data (none: it does not)."""
    reasons = []
    if any(token.startswith("cc-") for token in field["autocomplete"].lower().split()):
        reasons.append(f"autocomplete={field['autocomplete']}")
    for attribute in ("name", "id", "placeholder"):
        if CARD_NAMING.search(field[attribute]):
            reasons.append(f"{attribute}={field[attribute]}")
    if card_numbers_in(field["value"]):
        reasons.append("its value is a card number")
    numeric = field["inputmode"] in NUMERIC or field["type"] in ("tel", "number")
    if numeric and 13 <= field["maxlength"] <= 19:
        reasons.append(f"numeric with maxlength={field['maxlength']}")
    return reasons


def card_fields(frame: Any) -> list[dict[str, Any]]:
    return [
        {**field, "reasons": reasons}
        for field in frame.evaluate(LIST_FIELDS)
        if (reasons := card_field_reasons(field))
    ]


def card_fields_on_shop_origin(page: Any, shop: Shop, where: str) -> list[dict[str, Any]]:
    """Card-looking fields in every frame of the page whose origin is the shop's (about:blank
    and srcdoc frames inherit it), each named with where it was found."""
    found = []
    shop_frames = 0
    for frame in page.frames:
        if frame.evaluate("() => location.origin") != shop.url:
            continue
        shop_frames += 1
        found += [{**f, "page": where, "frame": frame.url} for f in card_fields(frame)]
    assert shop_frames >= 1, [frame.url for frame in page.frames]
    return found


@dataclass
class SentRequest:
    url: str
    method: str
    body: str
    request: Any

    def everything(self) -> str:
        """URL, every header (cookies included) and body, as one text."""
        return " ".join([self.url, repr(self.request.all_headers()), self.body])


def json_objects(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value, *(o for v in value.values() for o in json_objects(v))]
    if isinstance(value, list):
        return [o for v in value for o in json_objects(v)]
    return []


CARD_KEY = re.compile(r"cvv|cvc|csc|security.?code|card.?number|^number$|^pan$|expir", re.I)


def scalars(body: str) -> list[tuple[str, str]]:
    """(key, value) of every scalar in a JSON body (at any depth), or of every form field."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return parse_qsl(body)
    return [
        (str(key), str(value))
        for obj in json_objects(parsed)
        for key, value in obj.items()
        if not isinstance(value, dict | list)
    ]


def carries_cvv(body: str, cvv: str) -> bool:
    return any(value == cvv for _, value in scalars(body))


def card_keys(body: str) -> list[str]:
    """Keys of a JSON body that name card data (a card token does not)."""
    try:
        json.loads(body)
    except ValueError:
        return []
    return [key for key, _ in scalars(body) if CARD_KEY.search(key)]


CARDS = [(DECLINED, "847"), (THREE_DS, "593"), (VISA, "716")]


def test_card_data_stays_in_the_provider_iframe(page: Any, shop: Shop) -> None:
    """Given a purchase paid after a declined card and a failed 3-D Secure challenge, no page of
    the shop's origin (in any of its frames) has a card field, and no request to the shop's
    origin carries a card number or a security code: card data only goes to the provider."""
    provider = provider_origin(shop)
    sent: list[SentRequest] = []

    def record(request: Any) -> None:
        body = request.post_data_buffer
        sent.append(
            SentRequest(
                request.url,
                request.method,
                body.decode("utf-8", "replace") if body else "",
                request,
            )
        )

    page.context.on("request", record)
    shopper = Shopper(page, shop)
    found: list[dict[str, Any]] = []

    shopper.open_home()
    found += card_fields_on_shop_origin(page, shop, "home")
    shopper.open_product()
    found += card_fields_on_shop_origin(page, shop, "product")
    shopper.add_to_cart()
    found += card_fields_on_shop_origin(page, shop, "cart")
    shopper.go_to_checkout()
    shopper.fill_details()
    found += card_fields_on_shop_origin(page, shop, "checkout")
    shopper.submit_details()
    shopper.card_frame.locator("#cc-number").wait_for()
    found += card_fields_on_shop_origin(page, shop, "pay")

    # The detector does see the provider's card form, in a frame of the provider's origin.
    [card_frame] = [f for f in page.frames if f.url.startswith(f"{provider}/")]
    assert card_frame.evaluate("() => location.origin") == provider
    assert {f["id"] for f in card_fields(card_frame)} >= {"cc-number", "cc-exp", "cc-csc"}

    declined, three_ds, approved = CARDS
    shopper.type_card(declined[0], cvv=declined[1])
    found += card_fields_on_shop_origin(page, shop, "pay, card typed")
    shopper.pay()
    expect_refused(shopper)

    shopper.type_card(three_ds[0], cvv=three_ds[1])
    shopper.pay()
    shopper.wait_for_challenge()
    found += card_fields_on_shop_origin(page, shop, "pay, 3-D Secure modal")
    shopper.answer_challenge("000000")
    expect_refused(shopper)
    expect(page.locator("#threeds-dialog")).to_be_hidden()

    shopper.type_card(approved[0], cvv=approved[1])
    shopper.pay()
    expect_paid_order_page(shopper)
    found += card_fields_on_shop_origin(page, shop, "order")

    assert found == []

    to_shop = [r for r in sent if origin_of(r.url) == shop.url]
    to_provider = [r for r in sent if origin_of(r.url) == provider]
    attempts = [r for r in to_shop if r.method == "POST" and r.url.endswith("/pagos/")]
    assert len(attempts) == 3, [r.url for r in to_shop]
    assert all("cookie" in attempt.request.all_headers() for attempt in attempts)
    # The recording sees the iframe's requests: every number and code went to the provider.
    for number, cvv in CARDS:
        assert any(number in r.body and carries_cvv(r.body, cvv) for r in to_provider), number

    leaks = []
    for request in to_shop:
        everything = request.everything()
        for text in (everything, unquote_plus(everything)):
            leaks += [(request.url, n) for n in card_numbers_in(text)]
        leaks += [(request.url, f"cvv {cvv}") for _, cvv in CARDS if carries_cvv(request.body, cvv)]
        leaks += [(request.url, f"key {key}") for key in card_keys(request.body)]
    assert leaks == []
