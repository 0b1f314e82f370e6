from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from core import error_pages
from core.api import SchemaView
from dashboard.admin_index import INDEX_TEMPLATE, with_owner_dashboard

admin.site.site_header = format_lazy("{} · {}", settings.SHOP_NAME, _("staff"))
admin.site.site_title = format_lazy("{} · {}", settings.SHOP_NAME, _("staff"))
admin.site.index_title = _("Orders, payments and subscriptions")
# The home page: the owner's dashboard, then the list of models.
admin.site.index_template = INDEX_TEMPLATE
admin.site.index = with_owner_dashboard(admin.site.index)  # type: ignore[method-assign]
# admin.site is the shop's StaffAdminSite (staff_signin): every page needs a session verified
# with a second factor; its password page keeps the login rate limits.

handler403 = error_pages.permission_denied
handler404 = error_pages.page_not_found
handler500 = error_pages.server_error

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("webhooks/", include("webhooks.urls")),
    path("", include("monitoring.urls")),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("", include("books.urls")),
    path("", include("checkout.urls")),
]
