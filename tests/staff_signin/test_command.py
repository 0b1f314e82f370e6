"""`manage.py staff_second_factor open|reset|status`: an enrolment window of 24 h (or the
rollout's `--all --days 7`), a reset that removes the devices, the list of accounts that need
one; each recorded with who and why, none printing a secret; bad input refused, changing
nothing."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from staff_signin.devices import recovery_codes_replace
from staff_signin.models import EnrolmentWindow, SignInEvent
from tests.helpers.staff import TEST_SECRET, authenticator
from tests.staff_signin.conftest import PASSWORD
from tests.staff_signin.helpers import password

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("staff_second_factor", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def newcomer(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("nuevo", password=PASSWORD, is_staff=True)


def test_open_lets_the_account_enrol_for_24_hours(newcomer: Any) -> None:
    said = run("open", "nuevo", "--by", "lupita", "--reason", "new clerk")
    window = EnrolmentWindow.objects.get(user=newcomer)
    left = window.closes_at - timezone.now()
    assert timedelta(hours=23, minutes=59) < left <= timedelta(hours=24)
    assert (window.opened_by, window.reason) == ("lupita", "new clerk")
    event = SignInEvent.objects.get(user=newcomer, kind="window_opened")
    assert event.message.startswith("lupita: new clerk")
    assert "nuevo" in said
    answer = password(Client(), "nuevo", PASSWORD)
    assert answer.status_code == 302 and "/sign-in/enrol/" in answer.url
    with time_machine.travel(timezone.now() + timedelta(hours=24, minutes=1)):
        assert password(Client(), "nuevo", PASSWORD).status_code == 200  # refused: closed


def test_without_by_the_operating_systems_user_is_recorded(newcomer: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "root-ops")
    run("open", "nuevo", "--reason", "lost phone")
    assert EnrolmentWindow.objects.get(user=newcomer).opened_by == "root-ops"


def test_open_all_is_the_rollout_window(newcomer: Any, django_user_model: Any) -> None:
    """Every active staff account without a second factor gets a window of 7 days; after it,
    those that did not enrol are refused."""
    enrolled = django_user_model.objects.create_user("ya", password=PASSWORD, is_staff=True)
    authenticator(enrolled)
    django_user_model.objects.create_user("cliente", password=PASSWORD)  # not staff
    said = run("open", "--all", "--days", "7", "--by", "ops", "--reason", "rollout")
    assert list(EnrolmentWindow.objects.values_list("user__username", flat=True)) == ["nuevo"]
    window = EnrolmentWindow.objects.get()
    assert timedelta(days=6, hours=23) < window.closes_at - timezone.now() <= timedelta(days=7)
    assert "nuevo" in said and "ya" not in said.split(":")[-1]
    with time_machine.travel(timezone.now() + timedelta(days=6)):
        assert "/sign-in/enrol/" in password(Client(), "nuevo", PASSWORD).url
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        assert password(Client(), "nuevo", PASSWORD).status_code == 200


def test_reset_removes_the_devices_and_is_recorded(newcomer: Any) -> None:
    authenticator(newcomer)
    recovery_codes_replace(user=newcomer)
    said = run("reset", "nuevo", "--by", "ops", "--reason", "lost phone")
    assert not TOTPDevice.objects.filter(user=newcomer).exists()
    assert not StaticDevice.objects.filter(user=newcomer).exists()
    assert SignInEvent.objects.get(user=newcomer, kind="reset").message == "ops: lost phone"
    assert "2 device(s) removed" in said
    assert "open nuevo" in said


def test_status_lists_who_needs_a_device_or_new_codes(
    newcomer: Any, django_user_model: Any
) -> None:
    low = django_user_model.objects.create_user("pocos", password=PASSWORD, is_staff=True)
    authenticator(low)
    codes = recovery_codes_replace(user=low)
    fine = django_user_model.objects.create_user("bien", password=PASSWORD, is_staff=True)
    authenticator(fine)
    recovery_codes_replace(user=fine)
    from django_otp.plugins.otp_static.models import StaticToken

    StaticToken.objects.filter(token__in=codes[:8]).delete()
    said = run("status")
    assert "nuevo\tsecond factor: NO\trecovery codes left: 0" in said
    assert "pocos\tsecond factor: yes\trecovery codes left: 2" in said
    assert "bien" not in said
    assert "recovery codes left: 10" in run("status", "bien")
    assert TEST_SECRET not in said


def test_no_secret_is_printed(newcomer: Any) -> None:
    device = authenticator(newcomer)
    codes = recovery_codes_replace(user=newcomer)
    printed = run("status", "nuevo") + run("open", "nuevo") + run("reset", "nuevo")
    assert device.key not in printed and TEST_SECRET not in printed
    assert not any(code in printed for code in codes)


@pytest.mark.parametrize(
    "args",
    [("open",), ("open", "nadie"), ("reset", "cliente"), ("open", "nuevo", "--days", "0"),
     ("open", "nuevo", "--all"), ("open", "nuevo", "--days", "1", "--hours", "3")],
)  # fmt: skip
def test_bad_input_is_refused_and_changes_nothing(
    newcomer: Any, django_user_model: Any, args: tuple[str, ...]
) -> None:
    django_user_model.objects.create_user("cliente", password=PASSWORD)
    with pytest.raises(CommandError):
        run(*args)
    assert not EnrolmentWindow.objects.exists()
    assert not SignInEvent.objects.exists()
