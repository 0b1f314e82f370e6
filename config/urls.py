from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from config.security import csp_report

admin.site.site_header = f"{settings.SHOP_NAME} · staff"
admin.site.site_title = f"{settings.SHOP_NAME} staff"
admin.site.index_title = "Payments, orders and subscriptions"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("webhooks/", include("webhooks.urls")),
    path("csp-report/", csp_report, name="csp_report"),
    path("", include("checkout.urls")),
]
