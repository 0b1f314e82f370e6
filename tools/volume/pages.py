"""Every admin page staff use on orders, payments, notifications and subscriptions, with real
values from the database: each list as it opens, by each of its filters' choices, by date (the
old date hierarchy's year, month and day of each date column, as saved links still ask them),
searched, sorted by each sortable column; the home page (the owner's dashboard), an order's
page and a payment's (`bench/volume.py` measures them; the tests open them on a fill)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.apps import apps
from django.contrib import admin
from django.db.models import Model
from django.test import RequestFactory
from django.utils import timezone

from checkout.models import Order
from core.admin_lists import DateRangeFilter
from payments.models import Payment, Subscription
from webhooks.models import WebhookEvent


def _searches() -> tuple[dict[str, str], dict[type[Model], list[str]]]:
    """Values to search for (from the database), and which list searches which."""
    paid = Payment.objects.filter(status="approved").exclude(card_last_digits="").first()
    subscription = Subscription.objects.first()
    values = {
        "reference": paid.external_reference if paid else "",
        "email": paid.customer_email if paid else "",
        "provider id": (paid.provider_id or "") if paid else "",
        "last four": paid.card_last_digits if paid else "",
        "subscriber": subscription.customer_email if subscription else "",
    }
    lists: dict[type[Model], list[str]] = {
        # books' "Facturas por emitir" (the model named, not imported: nothing imports books).
        apps.get_model("books", "FacturaToIssue"): ["reference"],
        Order: ["reference", "email"],
        Payment: ["reference", "email", "provider id", "last four"],
        WebhookEvent: ["provider id", "reference"],
        Subscription: ["subscriber"],
    }
    return values, lists


def _date_fields(model_admin: Any) -> list[str]:
    """The list's date columns: its date hierarchy's, and those of its date range filters."""
    fields = [model_admin.date_hierarchy] if model_admin.date_hierarchy else []
    for entry in model_admin.list_filter:
        if isinstance(entry, tuple | list) and issubclass(entry[1], DateRangeFilter):
            fields.append(entry[0])
    return list(dict.fromkeys(fields))


def _dated(model: type[Model], field: str, name: str, base: str) -> list[tuple[str, str]]:
    """The old date hierarchy's addresses (`?created_at__year=…&created_at__month=…&
    created_at__day=…`) of a day in the middle of the rows' dates (the day of the first row
    from there, in the shop's time zone: a day with rows): its year, its month, the day. Not
    the latest day, whose rows come first in the list's order whatever reads them."""
    dates = model.objects.order_by(field).values_list(field, flat=True)
    first, last = dates.first(), dates.reverse().first()
    if first is None or last is None:
        return []
    middle = dates.filter(**{f"{field}__gte": first + (last - first) / 2}).first()
    day = timezone.localtime(middle or last)
    parts = [("year", day.year), ("month", day.month), ("day", day.day)]
    found = []
    for depth in range(1, 4):
        query = urlencode({f"{field}__{part}": value for part, value in parts[:depth]})
        found.append((f"{name} by {parts[depth - 1][0]}", f"{base}?{query}"))
    return found


def _list_pages(model: type[Model], user: Any, values: dict[str, str], words: list[str]) -> list:
    meta = model._meta
    base = f"/admin/{meta.app_label}/{meta.model_name}/"
    request = RequestFactory().get(base)
    request.user = user
    model_admin = admin.site._registry[model]
    changelist = model_admin.get_changelist_instance(request)
    name = str(meta.verbose_name_plural)
    found = [(f"{name}: list", base)]
    for spec in changelist.get_filters(request)[0]:
        for choice in list(spec.choices(changelist))[1:]:  # the first is "All"
            found.append((f"{name}: filter {choice['display']}", base + choice["query_string"]))
    for field in _date_fields(model_admin):
        found += _dated(model, field, f"{name}: dated", base)
    for word in words:
        found.append((f"{name}: search {word}", f"{base}?{urlencode({'q': values[word]})}"))
    for index, column in enumerate(changelist.list_display):
        if changelist.get_ordering_field(column) is not None:
            found.append((f"{name}: sorted by {column}", f"{base}?o={index}"))
    return found


def admin_pages(user: Any) -> list[tuple[str, str]]:
    """(label, path) of every page, for `user` (a superuser sees every filter)."""
    values, lists = _searches()
    found = [("home page (the owner's dashboard)", "/admin/")]
    for model, words in lists.items():
        found += _list_pages(model, user, values, words)
    order = Order.objects.filter(reference=values["reference"]).first()
    payment = Payment.objects.filter(external_reference=values["reference"]).first()
    if order is not None and payment is not None:
        found.append(("order page", f"/admin/checkout/order/{order.pk}/change/"))
        found.append(("payment page", f"/admin/payments/payment/{payment.pk}/change/"))
    return found
