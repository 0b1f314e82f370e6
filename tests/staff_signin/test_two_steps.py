"""The two steps of a staff sign-in (the password page, then the code page) and what they
leave: a session logged in only after the code, with a new key; a code used once in its
step; recovery codes used once, mailed, and asked to be renewed when few are left; the
guessing limits (per account, per address, the device's growing delay in the database, the
managers' mail at the tenth wrong code within the hour); signing out; the ledger's rows."""

from __future__ import annotations

from typing import Any

import pytest
import time_machine
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_otp.plugins.otp_static.models import StaticToken

from staff_signin.devices import recovery_codes_replace
from staff_signin.models import SignInEvent
from staff_signin.views import CODES_LEFT_KEY
from tests.helpers.metrics import TOKEN, scrape, value
from tests.helpers.staff import authenticator, current_code
from tests.staff_signin.conftest import PASSWORD
from tests.staff_signin.helpers import code, kinds, logged_in_as, password

pytestmark = pytest.mark.django_db

INDEX = reverse("admin:index")
MAIL_TASK = "staff_signin.tasks.sign_in_mail_task"


def wrong(device: Any) -> str:
    right = current_code(device, fresh=False)
    return "000000" if right != "000000" else "111111"


def test_the_password_alone_logs_nobody_in_and_the_code_does_with_a_new_session_key(
    member: Any,
) -> None:
    """Given the right password, then the browser is not logged in and the admin refuses it;
    given the code its app shows, then it is logged in, under a new session key, verified."""
    client = Client()
    answer = password(client, "marta", PASSWORD)
    assert answer.status_code == 302 and answer.url.startswith(reverse("admin:staff_signin_code"))
    assert logged_in_as(client) is None
    assert client.get(INDEX).status_code == 302
    key_before = client.session.session_key

    answer = code(client, current_code(authenticator(member)))

    assert answer.status_code == 302 and answer.url == INDEX
    assert logged_in_as(client) == str(member.pk)
    assert client.session.session_key != key_before
    assert client.session["otp_device_id"] == authenticator(member).persistent_id
    assert client.get(INDEX).status_code == 200
    assert kinds(member) == ["password_accepted", "code_accepted"]


def test_a_code_already_used_in_its_step_is_refused(member: Any) -> None:
    """Given a code that signed one browser in, when a second browser sends it within the same
    30 s step, then it is refused."""
    first, second = Client(), Client()
    password(first, "marta", PASSWORD)
    password(second, "marta", PASSWORD)
    used = current_code(authenticator(member))
    with time_machine.travel(timezone.now(), tick=False):
        assert code(first, used).status_code == 302
        refused = code(second, used)
    assert refused.status_code == 200
    assert "already used" in refused.content.decode() or "ya se us" in refused.content.decode()
    assert logged_in_as(second) is None
    assert kinds(member)[-1] == "code_refused"


def test_the_wrong_password_is_recorded_with_the_name_as_typed(member: Any) -> None:
    client = Client(HTTP_USER_AGENT="Navegador/1.0", HTTP_X_REQUEST_ID="req-12345678")
    assert password(client, "Marta ", "no-es").status_code == 200
    [row] = SignInEvent.objects.filter(kind="password_refused")
    assert (row.username, row.address, row.user_agent) == ("Marta ", "127.0.0.1", "Navegador/1.0")
    assert row.request_id == "req-12345678"


def test_a_recovery_code_signs_in_once_and_is_mailed(
    member: Any, settings: Any, run_queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Given ten recovery codes, when one signs in, then it is gone, the use is recorded and
    mailed (to the member and the managers, without the code); a second use is refused."""
    settings.MANAGERS = [("Dueña", "duena@tienda.example")]
    codes = recovery_codes_replace(user=member)
    client = Client()
    password(client, "marta", PASSWORD)
    with django_capture_on_commit_callbacks(execute=True):
        assert code(client, codes[3].upper()).status_code == 302
    assert logged_in_as(client) == str(member.pk)
    assert StaticToken.objects.filter(device__user=member).count() == 9
    assert kinds(member)[-1] == "recovery_code_used"
    assert MAIL_TASK in run_queued()
    [sent] = mail.outbox
    assert set(sent.to) == {"marta@tienda.example", "duena@tienda.example"}
    assert codes[3] not in sent.body

    again = Client()
    password(again, "marta", PASSWORD)
    assert code(again, codes[3]).status_code == 200
    assert logged_in_as(again) is None


def test_at_two_recovery_codes_left_a_banner_asks_for_new_ones_which_need_a_fresh_code(
    member: Any,
) -> None:
    codes = recovery_codes_replace(user=member)
    StaticToken.objects.filter(token__in=codes[:7]).delete()
    client = Client()
    password(client, "marta", PASSWORD)
    code(client, codes[7])  # two left after this one
    assert client.session[CODES_LEFT_KEY] == 2
    page = client.get(INDEX).content.decode()
    assert 'id="recovery-codes-low"' in page

    new_codes = reverse("admin:staff_signin_recovery_codes")
    refused = client.post(new_codes, {"code": codes[8]})  # a recovery code does not do
    assert refused.status_code == 200 and 'id="recovery-codes"' not in refused.content.decode()
    made = client.post(new_codes, {"code": current_code(authenticator(member))})
    assert made.status_code == 200
    shown = made.content.decode()
    tokens = list(StaticToken.objects.filter(device__user=member).values_list("token", flat=True))
    assert len(tokens) == 10 and all(token in shown for token in tokens)
    assert codes[8] not in tokens
    assert 'id="recovery-codes-low"' not in client.get(INDEX).content.decode()
    assert kinds(member)[-2:] == ["code_refused", "recovery_codes_made"]


def test_each_wrong_code_makes_the_device_wait_longer_in_the_database(member: Any) -> None:
    """django-otp's throttling: after wrong codes, even the right one is refused until the
    device's delay (1, 2, 4 s...) has passed; it is in the device's row, not in the cache."""
    device = authenticator(member)
    client = Client()
    password(client, "marta", PASSWORD)
    with time_machine.travel(timezone.now(), tick=False) as clock:
        code(client, wrong(device))
        code(client, wrong(device))
        device.refresh_from_db()
        assert device.throttling_failure_count == 1  # the second came within the delay
        held = code(client, current_code(device, fresh=False))
        assert held.status_code == 200 and logged_in_as(client) is None
        clock.shift(2)
        assert code(client, current_code(device, fresh=False)).status_code == 302
    device.refresh_from_db()
    assert device.throttling_failure_count == 0


def test_the_sixth_wrong_code_for_an_account_gets_429_from_any_address(
    member: Any, settings: Any
) -> None:
    settings.ADMIN_LOGIN_RATE_PER_USER = "100/m"  # the password page's own limit, not tested here
    device = authenticator(member)
    for n in range(5):
        client = Client(REMOTE_ADDR=f"198.51.100.{n + 1}")
        password(client, "marta", PASSWORD)
        with time_machine.travel(timezone.now() + timezone.timedelta(minutes=n), tick=False):
            assert code(client, wrong(device)).status_code == 200
    client = Client(REMOTE_ADDR="198.51.100.99")
    password(client, "marta", PASSWORD)
    answer = code(client, current_code(device))
    assert answer.status_code == 429
    assert logged_in_as(client) is None
    assert kinds(member)[-1] == "rate_limited"


def test_wrong_codes_from_one_address_are_limited_across_accounts(
    member: Any, django_user_model: Any, settings: Any
) -> None:
    settings.STAFF_SIGNIN_CODES_PER_ADDRESS = "3/15m"
    others = []
    for n in range(3):
        other = django_user_model.objects.create_user(f"otro{n}", password=PASSWORD, is_staff=True)
        authenticator(other)
        others.append(other)
        client = Client(REMOTE_ADDR="203.0.113.5")
        password(client, f"otro{n}", PASSWORD)
        assert code(client, wrong(authenticator(other))).status_code == 200
    client = Client(REMOTE_ADDR="203.0.113.5")
    password(client, "marta", PASSWORD)
    assert code(client, current_code(authenticator(member))).status_code == 429
    elsewhere = Client(REMOTE_ADDR="203.0.113.6")
    password(elsewhere, "marta", PASSWORD)
    assert code(elsewhere, current_code(authenticator(member))).status_code == 302


def test_the_tenth_wrong_code_within_an_hour_mails_the_managers_once(
    member: Any, settings: Any, run_queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.MANAGERS = [("Dueña", "duena@tienda.example")]
    settings.STAFF_SIGNIN_CODES_PER_USER = "100/h"
    settings.ADMIN_LOGIN_RATE_PER_USER = "100/m"
    device = authenticator(member)
    start = timezone.now()
    for n in range(11):
        client = Client(REMOTE_ADDR=f"198.51.100.{n + 1}")
        # each try after the device's delay (2^(n-1) s), within the hour
        with (
            time_machine.travel(start + timezone.timedelta(seconds=2**n), tick=False),
            django_capture_on_commit_callbacks(execute=True),
        ):
            password(client, "marta", PASSWORD)
            code(client, wrong(device))
        if n == 8:
            assert MAIL_TASK not in run_queued()
    assert run_queued().count(MAIL_TASK) == 1
    [sent] = mail.outbox
    assert sent.to == ["duena@tienda.example"]
    assert "marta" in sent.subject
    assert SignInEvent.objects.filter(user=member, kind="code_refused").count() == 11


def test_signing_out_ends_the_session_and_is_recorded(member: Any) -> None:
    client = Client()
    password(client, "marta", PASSWORD)
    code(client, current_code(authenticator(member)))
    assert client.post(reverse("admin:logout")).status_code == 200
    assert logged_in_as(client) is None
    assert client.get(INDEX).status_code == 302
    assert kinds(member)[-1] == "signed_out"


def test_a_verified_session_lasts_one_shift(member: Any, settings: Any) -> None:
    settings.STAFF_SESSION_HOURS = 8
    client = Client()
    password(client, "marta", PASSWORD)
    code(client, current_code(authenticator(member)))
    assert client.session.get_expiry_age() == 8 * 3600
    with time_machine.travel(timezone.now() + timezone.timedelta(hours=7, minutes=59)):
        assert client.get(INDEX).status_code == 200
    with time_machine.travel(timezone.now() + timezone.timedelta(hours=8, minutes=1)):
        answer = client.get(INDEX)
        assert answer.status_code == 302 and answer.url.startswith(reverse("admin:login"))


def test_the_shoppers_sessions_keep_their_length(client: Client, settings: Any) -> None:
    """Only a verified staff session is cut to a shift."""
    client.get("/")
    assert client.session.get_expiry_age() == settings.SESSION_COOKIE_AGE


def test_each_step_is_counted_on_metrics(member: Any, settings: Any) -> None:
    """The ledger's kinds are counters on /metrics (the alert on guessed codes reads them)."""
    settings.METRICS_TOKEN = TOKEN
    before = scrape(Client())
    client = Client()
    password(client, "marta", "no-es")
    password(client, "marta", PASSWORD)
    code(client, wrong(authenticator(member)))
    after = scrape(Client())

    def delta(kind: str) -> float:
        name = "shop_staff_signin_events_total"
        return value(after, name, kind=kind) - value(before, name, kind=kind)

    assert (delta("password_refused"), delta("password_accepted")) == (1, 1)
    assert (delta("code_refused"), delta("code_accepted")) == (1, 0)
