"""The sign-in ledger in the admin, for the owner: read only, newest first, filtered by what
happened; bounded like every list of the admin (core.admin_lists)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin_lists import BoundedListAdmin, ReadOnlyAdmin, SearchTerm
from staff_signin.models import SignInEvent


@admin.register(SignInEvent)
class SignInEventAdmin(ReadOnlyAdmin, BoundedListAdmin):
    list_display = [
        "created_at", "kind", "username", "user", "address", "user_agent", "request_id",
        "message",
    ]  # fmt: skip
    list_filter = ["kind"]
    list_select_related = ["user"]
    ordering = ["-created_at", "-id"]
    sortable_by = ["created_at"]
    search_fields = ["username"]
    search_help_text = ""
    actions = None
    list_per_page = 100

    def search(self, queryset: QuerySet[Any], term: SearchTerm) -> QuerySet[Any]:
        return queryset.filter(username=term.text)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser
