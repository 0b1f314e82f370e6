"""Every page of the admin (the owner's dashboard, every list and object page, the staff-action
pages, the sign-in's own pages for a signed-in member) needs a session verified with a second
factor, within its shift: a browser logged in on a password alone, or verified too long ago, or
whose device was reset, gets no page, only the way to the password page."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse
from django_otp import DEVICE_ID_SESSION_KEY

from staff_signin.session import VERIFIED_AT_KEY
from staff_signin.windows import second_factor_reset
from tests.helpers.staff import sign_in_staff

pytestmark = pytest.mark.django_db

# The sign-in itself: open before the second step.
SIGN_IN = {"login", "logout", "staff_signin_code", "staff_signin_enrol"}
_GROUP = re.compile(r"\(\?P<(\w+)>([^)]*)\)")


def admin_urls() -> list[str]:
    """Every named URL of the admin site, with 1 for its ids and the first of its choices."""
    found: list[str] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix)
                continue
            assert isinstance(entry, URLPattern)
            if not entry.name or entry.name in SIGN_IN:
                continue
            pattern = entry.pattern
            kwargs: dict[str, str] = {}
            converters = getattr(pattern, "converters", {})
            for key in converters:
                kwargs[key] = "1"
            for key, choices in _GROUP.findall(str(pattern)):
                kwargs[key] = choices.split("|")[0]
            found.append(reverse(f"admin:{entry.name}", kwargs=kwargs))

    urls, _, _ = admin.site.urls
    walk(urls, "")
    return sorted(set(found))


def test_the_walk_covers_the_dashboard_the_lists_and_the_staff_actions() -> None:
    urls = admin_urls()
    assert "/admin/" in urls
    assert "/admin/payments/payment/1/refund/" in urls
    assert "/admin/checkout/order/1/change/" in urls
    assert "/admin/staff_signin/signinevent/" in urls
    assert "/admin/sign-in/recovery-codes/" in urls
    assert len(urls) > 60
    # django-otp's own device pages (anybody's secrets) are not in the shop's admin
    assert not [url for url in urls if "/otp_" in url]


def _password_only(client: Client, user: Any) -> None:
    client.force_login(user)


def _shift_over(client: Client, user: Any) -> None:
    sign_in_staff(client, user)
    session = client.session
    session[VERIFIED_AT_KEY] = time.time() - 8 * 3600 - 60
    session.save()


def _device_reset(client: Client, user: Any) -> None:
    sign_in_staff(client, user)
    second_factor_reset(user=user, by="ops", reason="lost phone")


def _foreign_device(client: Client, user: Any) -> None:
    """Verified with a device that is somebody else's."""
    from django.contrib.auth import get_user_model

    other = get_user_model().objects.create_user("otra", is_staff=True)
    sign_in_staff(Client(), other)
    client.force_login(user)
    session = client.session
    from django_otp.plugins.otp_totp.models import TOTPDevice

    session[DEVICE_ID_SESSION_KEY] = TOTPDevice.objects.get(user=other).persistent_id
    session[VERIFIED_AT_KEY] = time.time()
    session.save()


@pytest.mark.parametrize(
    "session", [_password_only, _shift_over, _device_reset, _foreign_device],
    ids=["password only", "shift over", "device reset", "another's device"],
)  # fmt: skip
def test_no_admin_page_opens_without_a_verified_session(admin_user: Any, session: Any) -> None:
    client = Client()
    session(client, admin_user)
    opened = {}
    for url in admin_urls():
        for method in ("get", "post"):
            answer = getattr(client, method)(url)
            location = answer.get("Location", "")
            if not (answer.status_code in (302, 405) and (
                answer.status_code == 405 or location.startswith(reverse("admin:login"))
            )):  # fmt: skip
                opened[f"{method.upper()} {url}"] = answer.status_code
    assert not opened


def test_a_verified_session_opens_them(admin_client: Client) -> None:
    """The walk's control: the same session, verified, gets the pages."""
    assert admin_client.get("/admin/").status_code == 200
    assert admin_client.get("/admin/staff_signin/signinevent/").status_code == 200
    assert admin_client.get("/admin/sign-in/recovery-codes/").status_code == 200


def test_the_sign_in_ledger_is_the_owners_and_read_only(
    admin_client: Client, django_user_model: Any
) -> None:
    """The owner (a superuser) reads the list; other staff, even with every model permission
    of the ledger, do not see it; nobody adds, changes or deletes a row."""
    from django.contrib.auth.models import Permission

    from staff_signin.models import SignInEvent

    event = SignInEvent.objects.create(kind="password_refused", username="nadie")
    listing = reverse("admin:staff_signin_signinevent_changelist")
    assert admin_client.get(listing).status_code == 200
    assert admin_client.get(reverse("admin:staff_signin_signinevent_add")).status_code == 403
    change = reverse("admin:staff_signin_signinevent_change", args=[event.pk])
    assert admin_client.post(change, {"username": "otro"}).status_code == 403
    delete = reverse("admin:staff_signin_signinevent_delete", args=[event.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    clerk = django_user_model.objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.set(Permission.objects.filter(codename__endswith="signinevent"))
    browser = sign_in_staff(Client(), clerk)
    assert browser.get(listing).status_code == 403
    assert SignInEvent.objects.get().username == "nadie"
