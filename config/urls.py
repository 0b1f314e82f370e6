from django.conf import settings
from django.contrib import admin
from django.urls import include, path

admin.site.site_header = f"{settings.SHOP_NAME} · staff"
admin.site.site_title = f"{settings.SHOP_NAME} staff"
admin.site.index_title = "Payments, orders and subscriptions"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("checkout.urls")),
]
