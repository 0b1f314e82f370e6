"""The sign-in's own pages, in the admin's look: the password page (Django's, its outcome
recorded and followed by the second step), the code page, the enrolment page and the page that
makes new recovery codes. Thin: the rules are in `devices`, `windows`, `guessing`, `session`."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlencode

import segno
from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django_otp import login as otp_login
from django_otp.models import Device
from django_ratelimit.exceptions import Ratelimited

from core.error_pages import ratelimited
from core.ratelimits import client_address
from staff_signin import guessing, words
from staff_signin.devices import (
    Checked,
    code_check,
    enrolment_confirm,
    enrolment_device,
    has_second_factor,
    recovery_codes_left,
    recovery_codes_replace,
)
from staff_signin.forms import AuthenticatorCodeForm, CodeForm
from staff_signin.ledger import sign_in_record
from staff_signin.models import SignInEventKind as Kind
from staff_signin.session import Pending, pending_clear, pending_get, pending_set, verified_mark
from staff_signin.windows import open_window, window_use

CODES_LEFT_KEY = "staff_signin_codes_left"


def safe_next(request: HttpRequest, site_name: str = "admin") -> str:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if wanted and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return reverse(f"{site_name}:index")


def _with_next(url: str, request: HttpRequest) -> str:
    return f"{url}?{urlencode({'next': safe_next(request)})}"


class PasswordStep(LoginView):
    """Django's admin login form, whose success is not a sign-in yet: the account waits for its
    code (or enrols, in an open window); an account with neither is refused."""

    def form_valid(self, form: Any) -> HttpResponse:
        user = form.get_user()
        request = self.request
        sign_in_record(kind=Kind.PASSWORD_ACCEPTED, request=request, user=user,
                       username=request.POST.get("username", ""))  # fmt: skip
        if has_second_factor(user):
            pending_set(request, user)
            return HttpResponseRedirect(_with_next(reverse("admin:staff_signin_code"), request))
        if open_window(user) is not None:
            pending_set(request, user)
            return HttpResponseRedirect(_with_next(reverse("admin:staff_signin_enrol"), request))
        sign_in_record(kind=Kind.NO_SECOND_FACTOR, request=request, user=user,
                       username=request.POST.get("username", ""))  # fmt: skip
        form.add_error(None, words.NO_SECOND_FACTOR)
        return super().form_invalid(form)

    def form_invalid(self, form: Any) -> HttpResponse:
        typed = self.request.POST.get("username", "")
        account = get_user_model().objects.filter(username=typed.strip()).first()
        sign_in_record(kind=Kind.PASSWORD_REFUSED, request=self.request, user=account,
                       username=typed)  # fmt: skip
        return super().form_invalid(form)


def too_many(request: HttpRequest, user: Any) -> HttpResponse:
    """The shop's 429 page, recorded."""
    sign_in_record(kind=Kind.RATE_LIMITED, request=request, user=user)
    return ratelimited(request, Ratelimited())


def signed_in(request: HttpRequest, pending: Pending, device: Device) -> None:
    """The second step passed: the session is logged in (its key changed) and verified."""
    auth.login(request, pending.user, backend=pending.backend)
    otp_login(request, device)
    verified_mark(request)
    pending_clear(request)
    request.session[CODES_LEFT_KEY] = recovery_codes_left(pending.user)
    guessing.clear_account(user_id=pending.user.pk)


def refused(request: HttpRequest, form: CodeForm, user: Any, checked: Checked) -> None:
    guessing.count_refused(user_id=user.pk, address=client_address(request))
    waiting = checked.wait_until is not None
    sign_in_record(kind=Kind.CODE_REFUSED, request=request, user=user)
    error = words.CODE_WAIT % {"seconds": checked.wait_seconds} if waiting else words.CODE_WRONG
    form.add_error("code", error)


def _page(request: HttpRequest, site: Any, template: str, title: str, **context: Any) -> Any:
    return TemplateResponse(
        request,
        f"admin/staff_signin/{template}",
        {**site.each_context(request), "title": title, "next": safe_next(request), **context},
    )


def _back_to_password(request: HttpRequest, text: Any = None) -> HttpResponse:
    if text is not None:
        messages.warning(request, text)
    return HttpResponseRedirect(_with_next(reverse("admin:login"), request))


def code_view(request: HttpRequest, site: Any) -> HttpResponse:
    """The second step: a code from the authenticator app, or a recovery code."""
    pending = pending_get(request)
    if pending is None:
        return _back_to_password(request, words.SIGN_IN_AGAIN)
    if not has_second_factor(pending.user):
        return _back_to_password(request)
    form = CodeForm(request.POST or None)
    if request.method == "POST":
        if guessing.over_limit(user_id=pending.user.pk, address=client_address(request)):
            return too_many(request, pending.user)
        if form.is_valid():
            checked = code_check(user=pending.user, code=form.cleaned_data["code"])
            if checked.device is not None:
                signed_in(request, pending, checked.device)
                kind = Kind.RECOVERY_CODE_USED if checked.recovery else Kind.CODE_ACCEPTED
                sign_in_record(kind=kind, request=request, user=pending.user)
                return HttpResponseRedirect(safe_next(request))
            refused(request, form, pending.user, checked)
    return _page(request, site, "code.html", _("Your code"), form=form, account=pending.user)


def _grouped(secret: bytes) -> str:
    text = base64.b32encode(secret).decode().rstrip("=")
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


def enrol_view(request: HttpRequest, site: Any) -> HttpResponse:
    """Enrolment, in a window an operator opened: the QR code and the secret, confirmed by a
    first code, then the recovery codes, shown once, before the admin opens."""
    pending = pending_get(request)
    if pending is None:
        return _back_to_password(request, words.SIGN_IN_AGAIN)
    user = pending.user
    if has_second_factor(user):
        return HttpResponseRedirect(_with_next(reverse("admin:staff_signin_code"), request))
    if open_window(user) is None:
        return _back_to_password(request, words.NO_SECOND_FACTOR)
    device = enrolment_device(user)
    form = AuthenticatorCodeForm(request.POST or None)
    if request.method == "POST":
        if guessing.over_limit(user_id=user.pk, address=client_address(request)):
            return too_many(request, user)
        if form.is_valid():
            checked, codes = enrolment_confirm(user=user, code=form.cleaned_data["code"])
            if checked.device is not None:
                window_use(user=user)
                signed_in(request, pending, checked.device)
                sign_in_record(kind=Kind.ENROLLED, request=request, user=user)
                return recovery_codes_page(request, site, codes, enrolled=True)
            refused(request, form, user, checked)
    qr = segno.make(device.config_url, error="m")
    return _page(
        request, site, "enrol.html", _("Set up your authenticator app"), form=form,
        account=user, qr_svg=qr.svg_inline(scale=4, title=_("QR code of your account's secret")),
        secret=_grouped(device.bin_key),
    )  # fmt: skip


def recovery_codes_page(
    request: HttpRequest, site: Any, codes: list[str], *, enrolled: bool = False
) -> HttpResponse:
    """The recovery codes, shown this once (and offered as a text file)."""
    request.session[CODES_LEFT_KEY] = len(codes)
    text = "\n".join([str(_("Recovery codes of %(shop)s") % {"shop": settings.SHOP_NAME}),
                      "", *codes, ""])  # fmt: skip
    download = "data:text/plain;charset=utf-8;base64," + base64.b64encode(text.encode()).decode()
    response = _page(
        request, site, "recovery_codes.html", _("Your recovery codes"), codes=codes,
        download=download, enrolled=enrolled,
    )  # fmt: skip
    response["Cache-Control"] = "no-store"
    return response


def new_codes_view(request: HttpRequest, site: Any) -> HttpResponse:
    """New recovery codes in place of the old ones, for a fresh code from the app."""
    user = request.user
    form = AuthenticatorCodeForm(request.POST or None)
    if request.method == "POST":
        if guessing.over_limit(user_id=user.pk, address=client_address(request)):
            return too_many(request, user)
        if form.is_valid():
            code = form.cleaned_data["code"]
            checked = code_check(user=user, code=code) if code.isdigit() else Checked(None)
            if checked.device is not None and not checked.recovery:
                codes = recovery_codes_replace(user=user)
                sign_in_record(kind=Kind.RECOVERY_CODES_MADE, request=request, user=user)
                return recovery_codes_page(request, site, codes)
            refused(request, form, user, checked)
    return _page(request, site, "new_codes.html", _("New recovery codes"), form=form,
                 codes_left=recovery_codes_left(user))  # fmt: skip
