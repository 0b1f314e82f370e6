"""The SDK's card element in a real browser, mounted by a merchant page on another origin."""

from __future__ import annotations

import re
import time
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
)
from tests.helpers.sandbox import SandboxProcess
from tests.helpers.servers import StaticSite
from tests.sandbox.browser.helpers import fill_card, open_merchant


def frame_at(page: Any, origin: str) -> Any:
    """The page's frame showing `origin`, once it has navigated there (not about:blank)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for frame in page.frames:
            if frame.url.startswith(origin):
                frame.wait_for_load_state()
                return frame
        page.wait_for_timeout(50)  # Playwright learns of new frames while it is called
    raise AssertionError(f"no frame at {origin}")


# Added by a test after the SDK's own listeners: when it has seen a message, they have handled
# it (listeners run in the order they were added, each followed by its promise callbacks).
RECORD_SEEN = """() => {
  window.__seen = [];
  window.addEventListener("message", (event) => window.__seen.push(event.data));
}"""


def all_text_seen_by_the_page(page: Any) -> str:
    return " ".join(m["data"] for m in page.evaluate("window.__messages")) + " ".join(
        str(c) for c in page.evaluate("window.__changes")
    )


@pytest.mark.parametrize(
    ("number", "brand"),
    [
        (VISA, "visa"),
        (MASTER, "master"),
        (AMEX, "amex"),
        (THREE_DS, "visa"),
        (DECLINED, "visa"),
        (INSUFFICIENT_FUNDS, "visa"),
        (PROVIDER_ERROR, "visa"),
    ],
)
def test_each_test_card_tokenizes(
    api: Api, browser_page: Any, merchant_site: StaticSite, number: str, brand: str
) -> None:
    """Typed into the iframe, each test card becomes a token; the page never sees the number."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, " ".join(re.findall(".{1,4}", number)))

    result = browser_page.evaluate("tokenize()")

    assert result["ok"], result
    token = result["token"]
    assert re.fullmatch(r"[0-9a-f-]{36}", token["id"])
    assert token["payment_method_id"] == brand
    assert token["card"]["last_digits"] == number[-4:]
    assert token["card"]["bin"] == number[:6]
    assert number not in all_text_seen_by_the_page(browser_page)
    assert browser_page.evaluate("window.__changes.at(-1)") == {
        "complete": True,
        "brand": brand,
        "bin": number[:6],
        "error": None,
    }
    # The token is a real one: the merchant's server can pay with it.
    payment = api.post(
        "/payments",
        {"amount": 100, "currency": "MXN", "payment_method": {"token": token["id"]}},
    )
    assert payment.status_code == (500 if number == PROVIDER_ERROR else 201), payment.text


def test_the_number_is_grouped_and_the_brand_shown(
    browser_page: Any, merchant_site: StaticSite
) -> None:
    """The number is grouped as typed (4-6-5 for Amex), with the brand's logo and CVV hint."""
    frame = open_merchant(browser_page, merchant_site)

    frame.locator("#cc-number").fill(AMEX)

    assert frame.locator("#cc-number").input_value() == "3782 822463 10005"
    assert frame.locator("#brand-logo").get_attribute("alt") == "American Express"
    assert frame.locator("#cc-csc-hint").inner_text() == "4 digits on the front of the card"
    frame.locator("#cc-number").fill(VISA)
    assert frame.locator("#cc-number").input_value() == "4242 4242 4242 4242"
    assert frame.locator("#cc-csc-hint").inner_text() == "3 digits on the back of the card"


def test_fields_are_labelled_autofillable_inputs(
    browser_page: Any, merchant_site: StaticSite
) -> None:
    """Each field is a labelled <input> with the standard autocomplete value and keyboard."""
    frame = open_merchant(browser_page, merchant_site)
    expected = {"cc-number": "numeric", "cc-exp": "numeric", "cc-csc": "numeric", "cc-name": None}
    for field_id, inputmode in expected.items():
        field = frame.locator(f"#{field_id}")
        assert field.get_attribute("autocomplete") == field_id
        assert field.get_attribute("inputmode") == inputmode
        assert frame.locator(f"label[for={field_id}]").count() == 1


def test_a_bad_number_is_cl2200_shown_in_the_form(
    browser_page: Any, merchant_site: StaticSite
) -> None:
    """A number that fails Luhn: the form says so next to the field and the SDK rejects CL2200."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, "4242 4242 4242 4241")

    result = browser_page.evaluate("tokenize()")

    assert result == {
        "ok": False,
        "error": {"code": "CL2200", "message": "This card number is not valid."},
    }
    assert frame.locator("#cc-number-error").inner_text() == "This card number is not valid."
    assert frame.locator("#cc-number").get_attribute("aria-invalid") == "true"


def test_a_card_no_method_accepts_is_cl2290(browser_page: Any, merchant_site: StaticSite) -> None:
    """A Luhn-valid card of no accepted brand: CL2290, with the message in the form."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, "6011 1111 1111 1117")

    result = browser_page.evaluate("tokenize()")

    assert result["ok"] is False
    assert result["error"]["code"] == "CL2290"
    assert "not accepted" in frame.locator("#cc-number-error").inner_text()


def test_the_providers_cl2290_is_shown_to_the_shopper(
    api: Api, browser_page: Any, merchant_site: StaticSite
) -> None:
    """A method deactivated after the form loaded: the provider's CL2290 is shown in the form."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, VISA)
    api.request("PATCH", "/_sandbox/payment_methods/visa", {"status": "deactive"})

    result = browser_page.evaluate("tokenize()")

    assert result["error"]["code"] == "CL2290"
    assert (
        frame.locator("#form-error").inner_text() == "This card is not accepted. Use another card."
    )


def test_the_providers_cl2200_is_shown_to_the_shopper(
    browser_page: Any, merchant_site: StaticSite, sandbox: SandboxProcess
) -> None:
    """When the provider answers CL2200, the form shows it and marks the field it names."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, VISA)
    browser_page.route(
        f"{sandbox.base_url}/card_tokens",
        lambda route: route.fulfill(
            status=400,
            content_type="application/json",
            body='{"error_code":"CL2200","message":"Invalid card data","detail":["card.cvv: bad"]}',
        ),
    )

    result = browser_page.evaluate("tokenize()")

    assert result["error"]["code"] == "CL2200"
    assert frame.locator("#form-error").inner_text() == "Check the card details and try again."
    assert frame.locator("#cc-csc").get_attribute("aria-invalid") == "true"


def test_ai1300_reaches_the_page_only(
    api: Api, browser_page: Any, merchant_site: StaticSite
) -> None:
    """A tokenization failure (AI1300) is reported to the page for logging, not shown."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, VISA)
    api.post("/_sandbox/faults", {"path": "/card_tokens", "status": 500, "error_code": "AI1300"})

    result = browser_page.evaluate("tokenize()")

    assert result["error"]["code"] == "AI1300"
    assert frame.locator("#form-error").inner_text() == ""


def test_dark_theme_and_spanish_render(browser_page: Any, merchant_site: StaticSite) -> None:
    """theme dark and locale es: dark styles and Spanish labels and messages."""
    frame = open_merchant(browser_page, merchant_site, "?theme=dark&locale=es")

    assert "theme-dark" in frame.locator("body").get_attribute("class")
    assert frame.locator("label[for=cc-number]").inner_text() == "Número de tarjeta"
    background = frame.locator("body").evaluate("b => getComputedStyle(b).backgroundColor")
    assert background == "rgb(18, 21, 27)"
    fill_card(frame, "4242 4242 4242 4241")
    assert (
        browser_page.evaluate("tokenize()")["error"]["message"]
        == "El número de tarjeta no es válido."
    )


@pytest.mark.parametrize(
    ("browser_locale", "label"),
    [
        ("es-MX", "Número de tarjeta"),
        ("es-ES", "Número de tarjeta"),
        ("en-GB", "Card number"),
        ("fr-FR", "Card number"),
    ],
)
def test_the_locale_defaults_to_the_browsers_language(
    playwright_browser: Any, merchant_site: StaticSite, browser_locale: str, label: str
) -> None:
    """Without a locale option: Spanish for any Spanish browser, English otherwise."""
    context = playwright_browser.new_context(locale=browser_locale)
    try:
        frame = open_merchant(context.new_page(), merchant_site)
        assert frame.locator("label[for=cc-number]").inner_text() == label
    finally:
        context.close()


def test_the_page_cannot_read_the_card_inputs(browser_page: Any, merchant_site: StaticSite) -> None:
    """The iframe is cross-origin: the merchant page cannot reach its document."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, VISA)

    reachable = browser_page.evaluate("""() => {
        const frame = document.querySelector('#card-element iframe');
        try { return frame.contentDocument !== null || !!frame.contentWindow.document; }
        catch (error) { return false; }
    }""")

    assert reachable is False
    assert VISA[:12] not in browser_page.content()


def test_messages_never_carry_the_card_number(browser_page: Any, merchant_site: StaticSite) -> None:
    """Every message the page receives while typing and tokenizing: no number, no CVV."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, AMEX, cvv="9876")
    frame.locator("#cc-name").press("Tab")
    assert browser_page.evaluate("tokenize()")["ok"]

    seen = all_text_seen_by_the_page(browser_page)
    assert browser_page.evaluate("window.__messages.length") >= 3
    assert AMEX not in seen
    assert AMEX[6:11] not in seen  # the digits between the BIN and the last four
    assert '"9876"' not in seen and "'9876'" not in seen


def test_forged_answers_from_other_windows_are_ignored(
    browser_page: Any, merchant_site: StaticSite, foreign_site: StaticSite, sandbox: SandboxProcess
) -> None:
    """While a tokenization is pending, forged `token` answers posted from the page itself,
    from a frame on another origin, and from another card frame on the provider's origin are
    all ignored; the real answer wins."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, VISA)
    held: list[Any] = []
    browser_page.route(f"{sandbox.base_url}/card_tokens", lambda route: held.append(route))
    browser_page.evaluate("mountSecond()")
    browser_page.wait_for_function("document.querySelector('#second-element iframe') !== null")
    browser_page.evaluate(f"""() => {{
        const frame = document.createElement('iframe');
        frame.id = 'foreign'; frame.src = '{foreign_site.url("/")}';
        document.body.appendChild(frame);
    }}""")
    browser_page.wait_for_function("window.frames.length === 3")
    browser_page.evaluate(
        "() => { window.__result = null; tokenize().then(r => window.__result = r); }"
    )
    browser_page.wait_for_function("Object.keys(card._pending).length === 1")
    browser_page.evaluate(RECORD_SEEN)
    forged = browser_page.evaluate("""() => ({source: 'checkout-card', frame: card._frameId,
        type: 'token', requestId: Object.keys(card._pending)[0],
        token: {id: 'forged', card: {}, payment_method_id: 'visa'}})""")

    browser_page.evaluate("f => window.postMessage(f, '*')", forged)
    foreign = frame_at(browser_page, foreign_site.origin)
    foreign.evaluate("f => parent.postMessage(f, '*')", forged)
    second_id = browser_page.evaluate("card2._frameId")
    second = frame_at(browser_page, sandbox.base_url + "/sdk/v1/card")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the second card frame, by its own frame id
        found = [f for f in browser_page.frames if f"frame={second_id}" in f.url]
        if found:
            second = found[0]
            break
        browser_page.wait_for_timeout(50)
    assert f"frame={second_id}" in second.url
    second.evaluate("f => parent.postMessage(f, '*')", forged)
    browser_page.wait_for_function(
        "window.__seen.filter((m) => m && m.token && m.token.id === 'forged').length === 3"
    )

    assert browser_page.evaluate("window.__result") is None  # nothing forged was taken
    assert len(held) == 1
    held[0].continue_()
    browser_page.wait_for_function("window.__result !== null")
    result = browser_page.evaluate("window.__result")
    assert result["ok"] and result["token"]["id"] != "forged"


def test_the_frame_ignores_requests_from_other_origins(
    browser_page: Any, merchant_site: StaticSite, foreign_site: StaticSite, sandbox: SandboxProcess
) -> None:
    """A tokenize request posted to the card frame by a foreign frame makes no card token."""
    frame = open_merchant(browser_page, merchant_site)
    fill_card(frame, VISA)
    requests_made: list[str] = []
    browser_page.on(
        "request", lambda r: requests_made.append(r.url) if "/card_tokens" in r.url else None
    )
    browser_page.evaluate(f"""() => {{
        const frame = document.createElement('iframe');
        frame.src = '{foreign_site.url("/")}';
        document.body.appendChild(frame);
    }}""")
    browser_page.wait_for_function("window.frames.length === 2")
    foreign = frame_at(browser_page, foreign_site.origin)
    request = browser_page.evaluate("""() => ({source: 'checkout-sdk', frame: card._frameId,
        type: 'tokenize', requestId: 'forged-request'})""")

    card_frame = frame_at(browser_page, sandbox.base_url + "/sdk/v1/card")
    # The frame's own listener came first: once the recorder has the request, it has refused
    # it or started a token, whose fetch is counted here as it starts.
    card_frame.evaluate(
        """() => {
          window.__seen = []; window.__fetched = [];
          const fetch = window.fetch;
          window.fetch = (...args) => {
            window.__fetched.push(String(args[0]));
            return fetch(...args);
          };
          window.addEventListener("message", (event) => window.__seen.push(event.data));
        }"""
    )
    foreign.evaluate("r => parent.frames[0].postMessage(r, '*')", request)
    card_frame.wait_for_function("window.__seen.some((m) => m && m.requestId === 'forged-request')")

    assert card_frame.evaluate("window.__fetched") == []
    assert card_frame.evaluate("document.body.getAttribute('aria-busy')") is None
    assert requests_made == []
    assert "forged-request" not in all_text_seen_by_the_page(browser_page)
    assert browser_page.evaluate("tokenize()")["ok"]  # the real parent still can
    assert len(requests_made) == 1


def test_prevention_data_is_stable_for_the_page(
    browser_page: Any, merchant_site: StaticSite
) -> None:
    """preventionData(): the same session id for the page session, and the user agent."""
    open_merchant(browser_page, merchant_site)

    first = browser_page.evaluate("sdk.preventionData()")
    second = browser_page.evaluate("new CheckoutSDK('x').preventionData()")

    assert first["session_id"] == second["session_id"]
    assert re.fullmatch(r"sess_[0-9a-f]{32}", first["session_id"])
    assert first["user_agent"] == browser_page.evaluate("navigator.userAgent")


def test_the_sdk_is_small_plain_javascript(sandbox: SandboxProcess, api: Api) -> None:
    """checkout.js is served as JavaScript and stays under 15 KB unminified."""
    response = api.session.get(f"{sandbox.base_url}/sdk/v1/checkout.js", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/javascript")
    assert len(response.content) < 15 * 1024


def test_the_card_frame_is_framed_only_by_its_parent(sandbox: SandboxProcess, api: Api) -> None:
    """The card frame's CSP names the mounting origin in frame-ancestors; a bad origin or key
    is refused."""
    url = f"{sandbox.base_url}/sdk/v1/card"
    params = {"key": "pk_test_suite_public", "origin": "http://shop.example:8000", "frame": "abc"}
    response = api.session.get(url, params=params, timeout=10)
    assert response.status_code == 200
    assert "frame-ancestors http://shop.example:8000" in response.headers["Content-Security-Policy"]
    for bad in (
        {"origin": "javascript:alert(1)"},
        {"origin": "http://x/path"},
        {"key": "nope"},
        {"frame": "<script>"},
    ):
        assert api.session.get(url, params={**params, **bad}, timeout=10).status_code == 400
