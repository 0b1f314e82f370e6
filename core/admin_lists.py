"""Admin lists that cost the same on a year of rows as on a day's: a count that stops at
ADMIN_LIST_COUNT_LIMIT rows ("more than 1000 orders"), date ranges instead of the date
hierarchy (whose SELECT DISTINCT reads the whole table), sorts that end on the primary key in
the same direction as the column (so that an index on `(column, id)` serves them), and searches
routed by the term's shape to exact, indexed lookups instead of `LIKE '%…%'` over every column.

Each admin keeps its own lookups (`search`); this module only reads the term's shape."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from enum import Enum
from math import ceil
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.views.main import ChangeList
from django.core.paginator import Paginator
from django.db.models import OrderBy, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

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
    "SearchTerm",
    "Shape",
    "count_limit",
    "recent_values",
]
