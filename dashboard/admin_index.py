"""The admin's home page with the owner's dashboard above the list of models: the site's own
index view, given the dashboard (dashboard.figures) as the user may see it."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse

from dashboard.chart import sales_chart
from dashboard.figures import owner_dashboard

INDEX_TEMPLATE = "admin/owner_index.html"

IndexView = Callable[..., HttpResponse]


def with_owner_dashboard(index: IndexView) -> IndexView:
    """`index` (AdminSite.index) with the dashboard and its chart in the template's context."""

    @wraps(index)
    def view(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        dashboard = owner_dashboard(user=request.user)
        context = {
            "owner_dashboard": dashboard,
            "sales_chart": sales_chart(dashboard.sales.days) if dashboard.sales else None,
            **(extra_context or {}),
        }
        return index(request, context)

    return view
