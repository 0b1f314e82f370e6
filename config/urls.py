from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django_ratelimit.decorators import ratelimit

from config import views
from config.ratelimits import login_rate_per_address, login_rate_per_user, login_username
from config.security import csp_report

admin.site.site_header = f"{settings.SHOP_NAME} · staff"
admin.site.site_title = f"{settings.SHOP_NAME} staff"
admin.site.index_title = "Payments, orders and subscriptions"
# Password guessing: login POSTs are limited per client address and per username (429 beyond).
_login = ratelimit(key=login_username, rate=login_rate_per_user, method="POST", block=True)(
    admin.site.login
)
admin.site.login = ratelimit(  # type: ignore[method-assign]
    key="ip", rate=login_rate_per_address, method="POST", block=True
)(_login)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("webhooks/", include("webhooks.urls")),
    path("csp-report/", csp_report, name="csp_report"),
    path("healthz", views.healthz, name="healthz"),
    path("healthz/deps", views.healthz_deps, name="healthz_deps"),
    path("readyz", views.readyz, name="readyz"),
    path("", include("checkout.urls")),
]
