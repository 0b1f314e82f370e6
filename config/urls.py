from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django_ratelimit.decorators import ratelimit

from core import error_pages
from core.api import SchemaView
from core.ratelimits import login_rate_per_address, login_rate_per_user, login_username
from dashboard.admin_index import INDEX_TEMPLATE, with_owner_dashboard

admin.site.site_header = format_lazy("{} · {}", settings.SHOP_NAME, _("staff"))
admin.site.site_title = format_lazy("{} · {}", settings.SHOP_NAME, _("staff"))
admin.site.index_title = _("Orders, payments and subscriptions")
# The home page: the owner's dashboard, then the list of models.
admin.site.index_template = INDEX_TEMPLATE
admin.site.index = with_owner_dashboard(admin.site.index)  # type: ignore[method-assign]
# Password guessing: login POSTs are limited per client address and per username (429 beyond).
_login = ratelimit(key=login_username, rate=login_rate_per_user, method="POST", block=True)(
    admin.site.login
)
admin.site.login = ratelimit(  # type: ignore[method-assign]
    key="ip", rate=login_rate_per_address, method="POST", block=True
)(_login)

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
