"""The shop's one admin site (Django's default site, through `StaffAdminConfig`): every page
needs a session verified with a second factor within the last shift; the password page keeps
its rate limits and leads to the code page; signing out is recorded."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, URLResolver, path, reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django_ratelimit.decorators import ratelimit
from django_ratelimit.exceptions import Ratelimited

from core.ratelimits import login_rate_per_address, login_rate_per_user, login_username
from staff_signin import views
from staff_signin.ledger import sign_in_record
from staff_signin.models import SignInEventKind
from staff_signin.session import within_shift
from staff_signin.windows import RECOVERY_CODES_LOW


class StaffAdminSite(admin.AdminSite):
    """Django's admin site whose every page asks for an active staff account signed in with a
    password and a second factor (a verified session, `is_verified`) less than a shift ago."""

    def has_permission(self, request: HttpRequest) -> bool:
        user = request.user
        verified = getattr(user, "is_verified", None)
        return bool(
            user.is_active
            and user.is_staff
            and verified is not None
            and verified()
            and within_shift(request)
        )

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        context = super().each_context(request)
        left = request.session.get(views.CODES_LEFT_KEY) if hasattr(request, "session") else None
        if isinstance(left, int) and left <= RECOVERY_CODES_LOW and self.has_permission(request):
            context["recovery_codes_low"] = left
        return context

    # --- The pages of the sign-in ------------------------------------------------------------

    def get_urls(self) -> list[URLResolver | URLPattern]:
        signin = [
            path("sign-in/code/", self._unsigned(views.code_view), name="staff_signin_code"),
            path("sign-in/enrol/", self._unsigned(views.enrol_view), name="staff_signin_enrol"),
            path(
                "sign-in/recovery-codes/",
                self.admin_view(lambda request: views.new_codes_view(request, self)),
                name="staff_signin_recovery_codes",
            ),
        ]
        return [*signin, *super().get_urls()]

    def _unsigned(self, view: Any) -> Any:
        """A page of the sign-in itself, open before the session is verified."""

        @never_cache
        @csrf_protect
        def page(request: HttpRequest) -> HttpResponse:
            request.current_app = self.name
            return view(request, self)

        return page

    @method_decorator(never_cache)
    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """The password page: limited per client address and per username (429 beyond,
        recorded), then the code page."""
        try:
            return self._limited_password_page(request, extra_context)
        except Ratelimited:
            sign_in_record(kind=SignInEventKind.RATE_LIMITED, request=request,
                           username=request.POST.get("username", ""))  # fmt: skip
            raise

    @property
    def _limited_password_page(self) -> Any:
        by_user = ratelimit(
            group="admin-login-user", key=login_username, rate=login_rate_per_user,
            method="POST", block=True,
        )(self._password_page)  # fmt: skip
        return ratelimit(
            group="admin-login-address", key="ip", rate=login_rate_per_address, method="POST",
            block=True,
        )(by_user)  # fmt: skip

    def _password_page(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if request.method == "GET" and self.has_permission(request):
            return HttpResponseRedirect(reverse("admin:index", current_app=self.name))
        context = {
            **self.each_context(request),
            "title": _("Log in"),
            "subtitle": None,
            "app_path": request.get_full_path(),
            "username": request.user.get_username(),
        }
        if REDIRECT_FIELD_NAME not in request.GET and REDIRECT_FIELD_NAME not in request.POST:
            context[REDIRECT_FIELD_NAME] = reverse("admin:index", current_app=self.name)
        context.update(extra_context or {})
        request.current_app = self.name
        return views.PasswordStep.as_view(
            extra_context=context,
            authentication_form=self.login_form or AdminAuthenticationForm,
            template_name=self.login_template or "admin/login.html",
        )(request)

    def logout(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """Signing out ends the session (recorded)."""
        if request.method == "POST" and request.user.is_authenticated:
            sign_in_record(kind=SignInEventKind.SIGNED_OUT, request=request, user=request.user)
        return super().logout(request, extra_context)
