"""Staff sign in with a password and a second factor, in Chromium against the live shop: enrol
in a window an operator opened, then sign in; a wrong code told in the staff member's language;
the sixth wrong code in a row answered with the 429 page; a recovery code that works once; a
reset that ends a signed-in session at its next click; an account with no device and no window
refused; a session older than a shift asked to sign in again. Each checks what the database
then holds (ledger, devices, sessions), and the new pages have no serious or critical axe
finding."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pyotp
import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core import mail
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
from playwright.sync_api import expect

from staff_signin.devices import recovery_codes_replace
from staff_signin.models import EnrolmentWindow, SignInEvent
from tests.e2e.helpers import Shop, log_in, open_page, type_code, type_password, violations
from tests.helpers.cache import clear_cache
from tests.helpers.staff import authenticator, current_code
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "una-clave-larga-2026"
WRONG = {
    "es-MX": "Ese código no es correcto, o ya se usó.",
    "en-US": "That code is not right, or it was already used.",
}


@pytest.fixture
def signin_shop(live_server: Any, settings: Any, worker: Any) -> Iterator[Shop]:
    """The live shop with the demo accounts (each with its authenticator), an empty cache (no
    guessing counted) and a Celery worker (the sign-in's mails are tasks)."""
    settings.SHOP_BASE_URL = live_server.url
    settings.MANAGERS = [("Dueña", "duena@tienda.example")]
    clear_cache()
    call_command("seed_demo", verbosity=0)
    yield Shop(url=live_server.url, api=None)  # type: ignore[arg-type]
    clear_cache()


def staff(username: str, **flags: Any) -> Any:
    return get_user_model().objects.create_user(
        username=username, email=f"{username}@tienda.example", password=PASSWORD,
        is_staff=True, **flags,
    )  # fmt: skip


def kinds(user: Any) -> list[str]:
    return list(SignInEvent.objects.filter(user=user).order_by("id").values_list("kind", flat=True))


def signed_in_sessions(user: Any) -> list[dict[str, Any]]:
    alive = Session.objects.filter(expire_date__gt=timezone.now())
    decoded = [session.get_decoded() for session in alive]
    return [data for data in decoded if data.get("_auth_user_id") == str(user.pk)]


def assert_accessible(page: Any) -> None:
    found = violations(page)
    assert not found, [(v["id"], v["impact"], v["targets"]) for v in found]


def code_page_url(shop: Shop) -> re.Pattern[str]:
    return re.compile(re.escape(f"{shop.url}{reverse('admin:staff_signin_code')}"))


def not_now(device: TOTPDevice) -> str:
    """A six-digit code the device does not take now."""
    totp = pyotp.TOTP(__import__("base64").b32encode(device.bin_key).decode())
    taken = {totp.at(timezone.now() + timedelta(seconds=s)) for s in (-30, 0, 30)}
    return next(c for c in ("000000", "111111", "222222", "333333") if c not in taken)


def test_enrol_from_an_open_window_then_sign_in(e2e_browser: Any, signin_shop: Shop) -> None:
    """Given a new staff account and a window its operator opened, when the staff member signs
    in with the password, scans the secret, confirms with a first code and keeps the recovery
    codes, then the admin opens; signed out, the account signs in with its app's code."""
    user = staff("nueva")
    call_command("staff_second_factor", "open", "nueva", "--by", "ops", "--reason", "new staff")
    page = open_page(e2e_browser)

    type_password(page, signin_shop, "nueva", PASSWORD)
    page.wait_for_url(re.compile(re.escape(reverse("admin:staff_signin_enrol"))))
    expect(page.locator("#enrol-qr svg")).to_be_visible()
    assert page.locator("#id_code").get_attribute("autocomplete") == "one-time-code"
    assert page.locator("#id_code").get_attribute("inputmode") == "numeric"
    assert_accessible(page)
    secret = page.locator("#enrol-secret").inner_text().replace(" ", "")
    type_code(page, pyotp.TOTP(secret).now())

    expect(page.locator("#recovery-codes li")).to_have_count(10)
    codes = page.locator("#recovery-codes li").all_inner_texts()
    assert page.locator("#recovery-codes-download").get_attribute("download")
    assert_accessible(page)
    page.locator("#continue").click()
    page.wait_for_url(f"{signin_shop.url}{reverse('admin:index')}")

    device = TOTPDevice.objects.get(user=user)
    assert device.confirmed
    tokens = StaticToken.objects.filter(device__user=user).values_list("token", flat=True)
    assert sorted(tokens) == sorted(codes)
    window = EnrolmentWindow.objects.get(user=user)
    assert window.used_at is not None and window.opened_by == "ops" and window.reason == "new staff"
    assert kinds(user) == ["window_opened", "password_accepted", "enrolled"]
    assert len(signed_in_sessions(user)) == 1

    page.locator("#logout-form [type=submit]").click()
    wait_until(lambda: not signed_in_sessions(user))
    type_password(page, signin_shop, "nueva", PASSWORD)
    page.wait_for_url(code_page_url(signin_shop))
    type_code(page, current_code(device))
    page.wait_for_url(f"{signin_shop.url}{reverse('admin:index')}")
    assert kinds(user)[3:] == ["signed_out", "password_accepted", "code_accepted"]
    assert len(signed_in_sessions(user)) == 1


@pytest.mark.parametrize("locale", ["es-MX", "en-US"])
def test_a_wrong_code_is_told_in_the_staff_members_language(
    e2e_browser: Any, signin_shop: Shop, locale: str
) -> None:
    """Given the admin's password accepted, when a wrong code is typed, then the code page says
    so in the browser's language, the ledger records it with the address, browser and request
    id, the device counts the failure, and nobody is signed in."""
    admin = get_user_model().objects.get(username="admin")
    device = authenticator(admin)
    page = open_page(e2e_browser, locale=locale)
    type_password(page, signin_shop, "admin", "tienda-demo-2026")
    page.wait_for_url(code_page_url(signin_shop))
    assert_accessible(page)

    type_code(page, not_now(device))

    expect(page.locator(".errornote")).to_contain_text(WRONG[locale])
    assert_accessible(page)
    refused = SignInEvent.objects.get(user=admin, kind="code_refused")
    assert refused.address == "127.0.0.1"
    assert "Chrome" in refused.user_agent
    assert refused.request_id
    device.refresh_from_db()
    assert device.throttling_failure_count == 1
    assert not signed_in_sessions(admin)


def test_the_sixth_wrong_code_in_a_row_gets_the_429_page(
    e2e_browser: Any, signin_shop: Shop
) -> None:
    """Given five wrong codes in a row, when a sixth is sent, then it is the shop's 429 page
    (in Spanish), recorded, and nobody is signed in."""
    admin = get_user_model().objects.get(username="admin")
    device = authenticator(admin)
    page = open_page(e2e_browser)
    type_password(page, signin_shop, "admin", "tienda-demo-2026")
    page.wait_for_url(code_page_url(signin_shop))
    for _ in range(5):
        type_code(page, not_now(device))
        expect(page.locator(".errornote")).to_be_visible()

    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        type_code(page, not_now(device))

    assert answer.value.status == 429
    expect(page.locator("body")).to_contain_text("Demasiados intentos")
    assert kinds(admin) == ["password_accepted"] + ["code_refused"] * 5 + ["rate_limited"]
    assert not signed_in_sessions(admin)


def test_a_recovery_code_works_once(e2e_browser: Any, signin_shop: Shop) -> None:
    """Given an account's ten recovery codes, when one signs in, then the admin opens, the code
    is gone, the use is recorded and mailed to the staff member and the managers; typed again,
    it is refused."""
    admin = get_user_model().objects.get(username="admin")
    codes = recovery_codes_replace(user=admin)
    page = open_page(e2e_browser)
    type_password(page, signin_shop, "admin", "tienda-demo-2026")
    page.wait_for_url(code_page_url(signin_shop))
    type_code(page, codes[0])
    page.wait_for_url(f"{signin_shop.url}{reverse('admin:index')}")

    left = set(StaticToken.objects.filter(device__user=admin).values_list("token", flat=True))
    assert codes[0] not in left and len(left) == 9
    assert kinds(admin)[-1] == "recovery_code_used"
    wait_until(lambda: len(mail.outbox) == 1)
    assert set(mail.outbox[0].to) == {"admin@tienda.example", "duena@tienda.example"}
    assert codes[0] not in mail.outbox[0].body
    page.goto(f"{signin_shop.url}{reverse('admin:staff_signin_recovery_codes')}")
    expect(page.locator("#code-form")).to_be_visible()
    assert_accessible(page)

    page.locator("#logout-form [type=submit]").click()
    wait_until(lambda: not signed_in_sessions(admin))
    type_password(page, signin_shop, "admin", "tienda-demo-2026")
    page.wait_for_url(code_page_url(signin_shop))
    type_code(page, codes[0])
    expect(page.locator(".errornote")).to_contain_text(WRONG["es-MX"])
    assert kinds(admin)[-1] == "code_refused"
    assert not signed_in_sessions(admin)


def test_a_reset_ends_a_signed_in_session_at_its_next_click(
    e2e_browser: Any, signin_shop: Shop
) -> None:
    """Given the admin signed in, when an operator resets the account's second factor (a lost
    phone), then the next click lands on the password page, and the account has no device."""
    admin = get_user_model().objects.get(username="admin")
    page = log_in(e2e_browser, signin_shop, "admin", "tienda-demo-2026")

    call_command("staff_second_factor", "reset", "admin", "--by", "ops", "--reason", "lost phone")
    page.locator("#content-main a[href$='/admin/checkout/order/']").first.click()

    page.wait_for_url(re.compile(re.escape(f"{signin_shop.url}{reverse('admin:login')}")))
    expect(page.locator("#login-form")).to_be_visible()
    assert not TOTPDevice.objects.filter(user=admin).exists()
    assert not StaticToken.objects.filter(device__user=admin).exists()
    reset = SignInEvent.objects.get(user=admin, kind="reset")
    assert reset.message == "ops: lost phone"
    assert all("otp_device_id" not in data for data in signed_in_sessions(admin))


def test_an_account_with_no_device_and_no_window_is_refused(
    e2e_browser: Any, signin_shop: Shop
) -> None:
    """Given a staff account with no second factor and no enrolment window, when its right
    password is typed, then the password page says it cannot sign in, and nothing is made."""
    user = staff("sinfactor", is_superuser=True)
    page = open_page(e2e_browser, locale="en-US")

    type_password(page, signin_shop, "sinfactor", PASSWORD)

    expect(page.locator(".errornote")).to_contain_text("has no second factor yet")
    assert page.url.startswith(f"{signin_shop.url}{reverse('admin:login')}")
    assert_accessible(page)
    page.goto(f"{signin_shop.url}{reverse('admin:staff_signin_enrol')}")
    expect(page.locator("#login-form")).to_be_visible()
    assert kinds(user) == ["password_accepted", "no_second_factor"]
    assert not TOTPDevice.objects.filter(user=user).exists()
    assert not signed_in_sessions(user)


def test_a_session_older_than_a_shift_signs_in_again(e2e_browser: Any, signin_shop: Shop) -> None:
    """Given the admin signed in, when 8 hours and a minute have passed, then the next page is
    the password page; the old session has ended, and signing in again opens a new one."""
    admin = get_user_model().objects.get(username="admin")
    page = log_in(e2e_browser, signin_shop, "admin", "tienda-demo-2026")
    [before] = Session.objects.filter(expire_date__gt=timezone.now())
    assert before.expire_date - timezone.now() <= timedelta(hours=8)

    with time_machine.travel(timezone.now() + timedelta(hours=8, minutes=1), tick=True):
        page.goto(f"{signin_shop.url}{reverse('admin:checkout_order_changelist')}")
        page.wait_for_url(re.compile(re.escape(f"{signin_shop.url}{reverse('admin:login')}")))
        assert not signed_in_sessions(admin)

        type_password(page, signin_shop, "admin", "tienda-demo-2026")
        page.wait_for_url(code_page_url(signin_shop))
        type_code(page, current_code(authenticator(admin)))
        page.wait_for_url(f"{signin_shop.url}{reverse('admin:index')}")
        [after] = signed_in_sessions(admin)
        assert after["staff_signin_verified_at"] > before.get_decoded()["staff_signin_verified_at"]
    assert kinds(admin)[-2:] == ["password_accepted", "code_accepted"]
