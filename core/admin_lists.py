"""Admin lists that cost the same on a year of rows as on a day's: a count that stops at
ADMIN_LIST_COUNT_LIMIT rows ("more than 1000 orders"), date ranges instead of the date
hierarchy (whose SELECT DISTINCT reads the whole table), sorts that end on the primary key in
the same direction as the column (so that an index on `(column, id)` serves them), and searches
routed by the term's shape to exact, indexed lookups instead of `LIKE '%…%'` over every column,
and dates asked by the list's address (the old date hierarchy's `created_at__year=2026&
created_at__month=3&created_at__day=14`, `created_at__date=2026-03-14`) turned into ranges of the
column, which its index serves, where Django reads `EXTRACT(…)` of every row; a date no range
can say (`created_at__week_day=2`) or no date at all (`created_at__month=13`) is refused with a
message, and the list shows every date.

Each admin keeps its own lookups (`search`); this module only reads the term's shape. An admin
whose rows staff only read (the ledgers, the notifications, the payments) is a `ReadOnlyAdmin`."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from enum import Enum
from math import ceil
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.views.main import ChangeList
from django.core.paginator import Paginator
from django.db import models
from django.db.models import OrderBy, Q, QuerySet
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest
from django.utils import timezone
from django.utils.dateparse import parse_date
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.errors import Refusal

# A provider payment (or subscription) id: a UUID, with or without its dashes.
PROVIDER_ID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)
LAST_FOUR = re.compile(r"\d{4}")


class Shape(Enum):
    EMAIL = "email"
    LAST_FOUR = "last_four"
    PROVIDER_ID = "provider_id"
    OTHER = "other"  # a reference, or an id of a format the shop does not know


@dataclass(frozen=True)
class SearchTerm:
    """What staff typed in the search box, stripped."""

    text: str

    @property
    def shape(self) -> Shape:
        if "@" in self.text:
            return Shape.EMAIL
        if LAST_FOUR.fullmatch(self.text):
            return Shape.LAST_FOUR
        if PROVIDER_ID.fullmatch(self.text):
            return Shape.PROVIDER_ID
        return Shape.OTHER

    @property
    def spellings(self) -> list[str]:
        """The term as typed, in capitals and in lower case (references are stored in
        capitals, provider ids in lower case): matched exactly, each by an index."""
        return list(dict.fromkeys([self.text, self.text.upper(), self.text.lower()]))


def count_limit() -> int:
    return int(settings.ADMIN_LIST_COUNT_LIMIT)


class BoundedPaginator(Paginator):
    """Counts at most `limit` + 1 rows: `more` says there are more than `limit`, and the pages
    stop at the limit (narrowing the list by a filter or a search reaches the others)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit = count_limit()

    @cached_property
    def count(self) -> int:
        # In the list's own order: the count walks the index that serves the page, as far as
        # the row after the limit, whatever the rows' spread over the table (unordered, the
        # planner may scan the table from its oldest rows for a state only recent rows have).
        return self.object_list.values("pk")[: self.limit + 1].count()

    @property
    def more(self) -> bool:
        return self.count > self.limit

    @cached_property
    def num_pages(self) -> int:
        if self.count == 0 and not self.allow_empty_first_page:
            return 0
        hits = max(1, min(self.count, self.limit) - self.orphans)
        return ceil(hits / self.per_page)


class DateRangeFilter(admin.DateFieldListFilter):
    """Today, the last 7 days, this month, the last 30 days, this year (in the staff member's
    time zone): ranges on the column, which its index serves, where the date hierarchy lists
    the distinct days of the whole table first."""

    def __init__(self, field: Any, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        super().__init__(field, request, *args, **kwargs)
        since, until = self.lookup_kwarg_since, self.lookup_kwarg_until
        today = _today()
        tomorrow = today + datetime.timedelta(days=1)
        self.links = (
            (_("Any date"), {}),
            (_("Today"), {since: today, until: tomorrow}),
            (_("Last 7 days"), {since: today - datetime.timedelta(days=6), until: tomorrow}),
            (_("This month"), {since: today.replace(day=1), until: tomorrow}),
            (_("Last 30 days"), {since: today - datetime.timedelta(days=29), until: tomorrow}),
            (_("This year"), {since: today.replace(month=1, day=1), until: tomorrow}),
        )


def _today() -> datetime.datetime:
    return timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)


def _ascending(field: Any) -> bool:
    if isinstance(field, OrderBy):
        return not field.descending
    return isinstance(field, str) and not field.startswith("-")


# --- Dates asked by the list's address -----------------------------------------------------------

# The parts of a date that the date hierarchy writes in the address, each under the one before.
DATE_PARTS = ("year", "month", "day")
# Comparisons of the column itself, which its index serves: left to Django.
COLUMN_LOOKUPS = frozenset({"exact", "gt", "gte", "lt", "lte", "range", "in", "isnull"})
# Comparisons of a whole year or day (`created_at__date__lt=2026-03-14`): a bound of the column.
PERIOD_COMPARISONS = frozenset({"exact", "gt", "gte", "lt", "lte"})
NOT_A_DATE = _("“%(asked)s” is not a date: the list shows every date.")
NOT_A_RANGE = _(
    "The list does not filter by “%(asked)s”, which would read every row: choose a year, a "
    "year and a month, a day or a date range. The list shows every date."
)


class DateRefused(Refusal):
    """Dates of the address that the list does not filter by; `message` says why."""


def _number(value: str) -> int:
    if not re.fullmatch(r"[0-9]{1,4}", value):
        raise DateRefused(NOT_A_DATE)
    return int(value)


def _period(parts: dict[str, str]) -> tuple[datetime.date, datetime.date]:
    """The year, month or day that the date hierarchy's parts name: its first day, and the
    first day after it."""
    year, month, day = (_number(parts[part]) if part in parts else 1 for part in DATE_PARTS)
    try:
        start = datetime.date(year, month, day)
        if "day" in parts:
            return start, start + datetime.timedelta(days=1)
        if "month" in parts:
            return start, datetime.date(year + month // 12, month % 12 + 1, 1)
        return start, datetime.date(year + 1, 1, 1)
    except (ValueError, OverflowError):  # 31 February; past 9999
        raise DateRefused(NOT_A_DATE) from None


def _day(value: str) -> tuple[datetime.date, datetime.date]:
    """The day written `2026-03-14` (as Django reads a date), and the day after it."""
    try:
        day = parse_date(value)
        if day is not None:
            return day, day + datetime.timedelta(days=1)
    except (ValueError, OverflowError):
        pass
    raise DateRefused(NOT_A_DATE)


@dataclass
class DatesAsked:
    """What the address asks of one date column: the date hierarchy's parts (`year`, `month`,
    `day`), comparisons of a whole year or day (`year__gte`, `date`, `date__lt`), and lookups
    that no range of the column says (`month` alone, `week_day`, `hour`, `month__gt`…)."""

    column: models.DateField
    keys: dict[str, str] = field(default_factory=dict)  # as written in the address
    parts: dict[str, str] = field(default_factory=dict)
    periods: list[tuple[str, str, str]] = field(default_factory=list)  # (year|date, lookup, value)
    unranged: bool = False

    def add(self, lookups: list[str], key: str, value: str) -> None:
        self.keys[key] = value
        head, rest = lookups[0], lookups[1:]
        if head in DATE_PARTS and rest in ([], ["exact"]):
            self.parts[head] = value
        elif head in ("year", "date") and len(rest) <= 1 and set(rest) <= PERIOD_COMPARISONS:
            self.periods.append((head, rest[0] if rest else "exact", value))
        else:
            self.unranged = True

    @property
    def address(self) -> str:
        return "&".join(f"{key}={value}" for key, value in self.keys.items())

    def ranges(self) -> Q:
        """The rows asked for, as ranges of the column (its index serves them), in the current
        time zone (the shop's, settings.TIME_ZONE), as Django's EXTRACT reads it; DateRefused
        when the address asks what no range says, or a date that is none."""
        if self.unranged or set(self.parts) != set(DATE_PARTS[: len(self.parts)]):
            raise DateRefused(NOT_A_RANGE)  # a lookup no range says; a day of every month
        ranges = self.between(*_period(self.parts), "exact") if self.parts else Q()
        for unit, lookup, value in self.periods:
            period = _period({"year": value}) if unit == "year" else _day(value)
            ranges &= self.between(*period, lookup)
        return ranges

    def between(self, start: datetime.date, end: datetime.date, lookup: str) -> Q:
        """The rows of the period [start, end) (`exact`), or after or before it."""
        since, until = {
            "exact": (start, end),
            "gte": (start, None),
            "gt": (end, None),
            "lt": (None, start),
            "lte": (None, end),
        }[lookup]
        name = self.column.name
        bounds = [(f"{name}__gte", since), (f"{name}__lt", until)]
        return Q(*((key, self.bound(day)) for key, day in bounds if day is not None))

    def bound(self, day: datetime.date) -> datetime.date:
        """The column's value at the start of `day`: its first instant in the current time
        zone (on a day whose midnight a clock change skips, the instant of the change)."""
        if not isinstance(self.column, models.DateTimeField):
            return day
        midnight = datetime.datetime.combine(day, datetime.time())
        return timezone.make_aware(midnight) if settings.USE_TZ else midnight


def dates_asked(model: type[models.Model], lookups: dict[str, Any]) -> list[DatesAsked]:
    """The dates that `lookups` (the address's, as the list's filters left them) ask of the
    model's date columns beyond comparing the column itself; taken out of `lookups`."""
    columns = {
        column.name: column
        for column in model._meta.concrete_fields
        if isinstance(column, models.DateField)
    }
    asked: dict[str, DatesAsked] = {}
    for key in list(lookups):
        name, _sep, rest = key.partition(LOOKUP_SEP)
        if name not in columns or rest in ("", *COLUMN_LOOKUPS):
            continue
        values = lookups.pop(key)
        value = values[-1] if isinstance(values, list) and values else values
        asked.setdefault(name, DatesAsked(columns[name])).add(
            rest.split(LOOKUP_SEP), key, str(value)
        )
    return list(asked.values())


class BoundedChangeList(ChangeList):
    """Django ends an ordering on a column that is not unique with `-pk`, whatever the
    column's direction: `ORDER BY total ASC, id DESC` is served by no index. Here the primary
    key follows the column's direction."""

    def get_ordering_field(self, field_name: Any) -> Any:
        """Only the columns of `sortable_by` (each served by an index) sort, also when the
        page's address asks for another (`?o=` written by hand)."""
        if self.sortable_by is not None and field_name not in self.sortable_by:
            return None
        return super().get_ordering_field(field_name)

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[Any]:
        ordering = list(super().get_ordering(request, queryset))
        if len(ordering) > 1 and ordering[-1] == "-pk" and _ascending(ordering[-2]):
            ordering[-1] = "pk"
        return ordering

    def get_filters(self, request: HttpRequest) -> tuple[Any, ...]:
        specs, has_filters, lookups, duplicates, active = super().get_filters(request)
        self.dates_filter = self.dated(request, lookups)
        return specs, has_filters, lookups, duplicates, active

    def dated(self, request: HttpRequest, lookups: dict[str, Any]) -> Q:
        """The dates of the address (`created_at__year=…&created_at__month=…`) as ranges of
        their columns, taken out of `lookups`; those refused are said in a message (as Django
        says a search it cannot read) and dropped from the page's links: the list shows every
        date."""
        ranges = Q()
        for dates in dates_asked(self.model, lookups):
            try:
                ranges &= dates.ranges()
            except DateRefused as refused:
                text = refused.message % {"asked": dates.address}
                messages.error(request, text, fail_silently=True)
                for key in dates.keys:
                    self.params.pop(key, None)
                    self.filter_params.pop(key, None)
        return ranges

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        queryset = super().get_queryset(request, exclude_parameters)
        return queryset.filter(self.dates_filter)


class BoundedListAdmin(admin.ModelAdmin):
    """An admin whose list stays fast at any size (see the module's docstring). Subclasses
    name their sortable columns (`sortable_by`, each served by an index) and search with
    `search` (exact lookups by the term's shape)."""

    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    paginator = BoundedPaginator

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return BoundedChangeList

    def action_checkbox(self, obj: Any) -> str:
        """Django's checkbox of a row, written at once rather than through the form widget's
        templates (a third of a list page's time, rendered for each of its rows)."""
        label = format_html(gettext("Select this object for an action - {}"), str(obj))
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
            helpers.ACTION_CHECKBOX_NAME,
            str(obj.pk),
            label,
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        text = search_term.strip()
        if not text:
            return queryset, False
        return self.search(queryset, SearchTerm(text)), False

    def search(self, queryset: QuerySet[Any], term: SearchTerm) -> QuerySet[Any]:
        """The rows the term names exactly (by its shape); each admin says how."""
        raise NotImplementedError


class ReadOnlyAdmin:
    """An admin (or inline) whose rows staff only read: the shop writes them (its services, its
    ledgers, its tasks), so nobody adds, changes or deletes one here. Put it first among the
    bases; an admin that lets some add overrides `has_add_permission`."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def recent_values(queryset: QuerySet[Any], field: str, *, limit: int | None = None) -> list[Any]:
    """`field` of the most recent rows of `queryset` (newest first, at most the count limit
    and one): the rows a search looks up first in another table, to filter by their values
    rather than join the two tables whole."""
    rows = queryset.order_by("-created_at", "-pk").values_list(field, flat=True)
    return list(rows[: (limit or count_limit()) + 1])


__all__ = [
    "BoundedChangeList",
    "BoundedListAdmin",
    "BoundedPaginator",
    "DateRangeFilter",
    "DateRefused",
    "DatesAsked",
    "SearchTerm",
    "Shape",
    "count_limit",
    "dates_asked",
    "recent_values",
]
