from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps
from django.utils.translation import gettext_lazy as _


class StaffSignInConfig(AppConfig):
    """The sign-in ledger, the enrolment windows, the sign-in pages and the operator's
    command."""

    default = True
    name = "staff_signin"
    verbose_name = _("Staff sign-in")

    def ready(self) -> None:
        from staff_signin import metrics  # noqa: F401  (the counters, on /metrics)


class StaffAdminConfig(admin_apps.AdminConfig):
    """Django's admin, whose one site is the shop's (`StaffAdminSite`): every page needs a
    session verified with a second factor."""

    default = False
    default_site = "staff_signin.site.StaffAdminSite"

    def ready(self) -> None:
        super().ready()  # autodiscover: every app's admin registered on the shop's site
        from django.contrib import admin
        from django_otp.plugins.otp_static.models import StaticDevice
        from django_otp.plugins.otp_totp.models import TOTPDevice

        # django-otp's own admin pages show and create anybody's devices (their secrets and QR
        # codes): staff enrol themselves only, in a window an operator opened.
        for model in (TOTPDevice, StaticDevice):
            if admin.site.is_registered(model):
                admin.site.unregister(model)
