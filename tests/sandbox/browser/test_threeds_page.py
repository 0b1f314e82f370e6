"""The 3-D Secure challenge page, in a modal iframe of a merchant page and stand-alone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.provider import THREE_DS, Api
from tests.helpers.sandbox import SandboxProcess
from tests.helpers.servers import StaticSite, WebhookReceiver


def start_challenge(
    api: Api,
    page: Any,
    site: StaticSite,
    receiver: WebhookReceiver,
    return_origin_site: StaticSite | None = None,
    **fields: Any,
) -> tuple[dict, Any]:
    """A pending payment opened in the merchant page's modal; the challenge frame."""
    return_site = return_origin_site or site
    payment = api.create_payment(
        THREE_DS, webhook_url=receiver.url, return_url=return_site.url("/checkout"), **fields
    )
    assert payment["status"] == "pending"
    page.goto(site.url("/checkout"))
    page.evaluate(
        "([url, id]) => openChallenge(url, id)", [payment["pending_action"]["url"], payment["id"]]
    )
    return payment, page.frame_locator("#challenge")


def update_notified(receiver: WebhookReceiver, payment_id: str) -> None:
    bodies = receiver.wait_for(2)
    assert {"id": payment_id, "origin": "payments-api", "event_type": "UPDATE"} in bodies


def test_the_page_shows_the_purchase_and_asks_for_a_one_time_code(
    api: Api, browser_page: Any, merchant_site: StaticSite, receiver: WebhookReceiver
) -> None:
    """Merchant name, amount and masked card; an OTP input and both buttons."""
    _, challenge = start_challenge(api, browser_page, merchant_site, receiver)

    summary = challenge.locator(".summary").inner_text()
    assert "Tienda Tlali" in summary
    assert "$250.00 MXN" in summary
    assert "•••• 3220" in summary and "4000000000003220" not in summary
    assert challenge.locator("#code").get_attribute("autocomplete") == "one-time-code"
    assert challenge.get_by_role("button", name="Verify").is_visible()
    assert challenge.get_by_role("button", name="Cancel").is_visible()


def test_the_right_code_approves_and_tells_the_page(
    api: Api,
    browser_page: Any,
    merchant_site: StaticSite,
    receiver: WebhookReceiver,
    sandbox: SandboxProcess,
) -> None:
    """123456: approved, webhook UPDATE, and `{paymentId}` posted from the sandbox origin."""
    payment, challenge = start_challenge(api, browser_page, merchant_site, receiver)

    challenge.locator("#code").fill("123456")
    challenge.get_by_role("button", name="Verify").click()

    browser_page.wait_for_function("window.__threeds.length === 1")
    assert browser_page.evaluate("window.__threeds") == [payment["id"]]
    messages = browser_page.evaluate("window.__messages")
    assert {"origin": sandbox.base_url, "data": f'{{"paymentId":"{payment["id"]}"}}'} in messages
    assert api.payment(payment["id"])["status"] == "approved"
    update_notified(receiver, payment["id"])


@pytest.mark.parametrize(("action", "code"), [("Verify", "000000"), ("Cancel", "")])
def test_a_wrong_code_or_cancel_rejects(
    api: Api,
    browser_page: Any,
    merchant_site: StaticSite,
    receiver: WebhookReceiver,
    action: str,
    code: str,
) -> None:
    """A wrong code, or Cancel: rejected RE-3DS01, webhook UPDATE, and the page is told."""
    payment, challenge = start_challenge(api, browser_page, merchant_site, receiver)

    challenge.locator("#code").fill(code)
    challenge.get_by_role("button", name=action).click()

    browser_page.wait_for_function("window.__threeds.length === 1")
    after = api.payment(payment["id"])
    assert (after["status"], after["status_detail"]["code"]) == ("rejected", "RE-3DS01")
    assert "failed" in challenge.locator("#result").inner_text()
    update_notified(receiver, payment["id"])


def test_manual_capture_passes_to_authorized(
    api: Api, browser_page: Any, merchant_site: StaticSite, receiver: WebhookReceiver
) -> None:
    """With manual capture, a passed challenge leaves the payment authorized."""
    payment, challenge = start_challenge(
        api, browser_page, merchant_site, receiver, capture_method="manual"
    )
    challenge.locator("#code").fill("123456")
    challenge.get_by_role("button", name="Verify").click()

    browser_page.wait_for_function("window.__threeds.length === 1")
    assert api.payment(payment["id"])["status_detail"]["code"] == "AU-CAP01"


def test_a_completed_challenge_cannot_be_replayed(
    api: Api, browser_page: Any, merchant_site: StaticSite, receiver: WebhookReceiver
) -> None:
    """After completion, posting the form again is refused with a clear message, no change."""
    payment, challenge = start_challenge(api, browser_page, merchant_site, receiver)
    challenge.locator("#code").fill("000000")
    challenge.get_by_role("button", name="Verify").click()
    browser_page.wait_for_function("window.__threeds.length === 1")
    before = api.payment(payment["id"])

    url = payment["pending_action"]["url"]
    replay = api.session.post(url, data={"action": "submit", "code": "123456"}, timeout=10)
    reopened = api.session.get(url, timeout=10)

    assert replay.status_code == 409
    assert "already over" in replay.text
    assert reopened.status_code == 410
    assert api.payment(payment["id"]) == before


def test_the_message_goes_only_to_the_return_urls_origin(
    api: Api,
    browser_page: Any,
    merchant_site: StaticSite,
    foreign_site: StaticSite,
    receiver: WebhookReceiver,
) -> None:
    """A page on another origin than the payment's return_url is not told the payment id."""
    payment, challenge = start_challenge(
        api, browser_page, merchant_site, receiver, return_origin_site=foreign_site
    )
    challenge.locator("#code").fill("123456")
    challenge.get_by_role("button", name="Verify").click()
    challenge.locator("#result").wait_for()
    # The page's message (if any) went first; one posted after it by the same frame to any
    # origin arrives after it would have.
    frame = browser_page.locator("#challenge").element_handle().content_frame()
    frame.evaluate("() => window.parent.postMessage({fence: true}, '*')")
    browser_page.wait_for_function("window.__messages.some((m) => m.data.includes('fence'))")

    assert browser_page.evaluate("window.__threeds") == []
    assert payment["id"] not in str(browser_page.evaluate("window.__messages"))


def test_stand_alone_it_offers_the_way_back(
    api: Api, browser_page: Any, merchant_site: StaticSite, receiver: WebhookReceiver
) -> None:
    """Opened as a page of its own, the challenge ends with a link back to the store."""
    payment = api.create_payment(THREE_DS, return_url=merchant_site.url("/checkout"))
    browser_page.goto(payment["pending_action"]["url"])

    browser_page.locator("#code").fill("123456")
    browser_page.get_by_role("button", name="Verify").click()

    back = browser_page.get_by_role("link", name="Return to the store")
    assert back.is_visible()
    assert back.get_attribute("href") == merchant_site.url("/checkout")
    assert api.payment(payment["id"])["status"] == "approved"


def test_spanish_browsers_get_the_page_in_spanish(
    api: Api, playwright_browser: Any, merchant_site: StaticSite
) -> None:
    """The page speaks the shopper's language (Accept-Language)."""
    payment = api.create_payment(THREE_DS)
    context = playwright_browser.new_context(locale="es-MX")
    try:
        page = context.new_page()
        page.goto(payment["pending_action"]["url"])
        assert page.locator("h1").inner_text() == "Confirma tu compra"
        assert page.get_by_role("button", name="Verificar").is_visible()
    finally:
        context.close()


def test_an_unknown_challenge_is_a_clear_404(api: Api, sandbox: SandboxProcess) -> None:
    """A made-up challenge link: 404 with a readable page."""
    response = api.session.get(f"{sandbox.base_url}/3ds/not-a-real-challenge", timeout=10)
    assert response.status_code == 404
    assert "not valid" in response.text


def test_an_expired_challenge_cannot_be_completed(api: Api) -> None:
    """After 30 minutes the challenge is over: the payment is cancelled (CA-3DS01), the page
    says so, and a late code changes nothing."""
    payment = api.create_payment(THREE_DS)
    url = payment["pending_action"]["url"]
    api.post("/_sandbox/clock", {"advance_seconds": 31 * 60})

    page = api.session.get(url, timeout=10)
    late = api.session.post(url, data={"action": "submit", "code": "123456"}, timeout=10)

    assert page.status_code == 410 and "already over" in page.text
    assert late.status_code == 409
    after = api.payment(payment["id"])
    assert (after["status"], after["status_detail"]["code"]) == ("cancelled", "CA-3DS01")
    assert after["pending_action"] == {}
