"""The accountant's exports in the admin: asked on a form (what, which days, CSV or XLSX),
made by a task, their progress shown (the list asks how far they are every two seconds) and
offered for download when ready, to staff with the “Can export the books” permission only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET

from books.forms import ExportForm
from books.models import BooksExport, ExportState
from core.admin_lists import BoundedListAdmin, ReadOnlyAdmin, SearchTerm
from core.task_queue import queue_on_commit

EXPORT = "books.export_books"
EXPORT_TASK = "books.tasks.books_export_task"
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
# How often an open list asks how far its exports are (milliseconds).
REFRESH_MS = 2000
PAGE_LIMIT = 50


@admin.register(BooksExport)
class BooksExportAdmin(ReadOnlyAdmin, BoundedListAdmin):
    list_display = ["__str__", "format", "created_at", "requested_by", "progress", "download"]
    sortable_by: list[str] = []
    change_list_template = "admin/books/booksexport/change_list.html"

    def search(self, queryset: Any, term: SearchTerm) -> Any:
        return queryset.none()

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("content").select_related("requested_by")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm(EXPORT)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(EXPORT)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(EXPORT)

    @admin.display(description=gettext_lazy("progress"))
    def progress(self, obj: BooksExport) -> str:
        if obj.state == ExportState.FAILED:
            return _("Failed")
        return format_html(
            '<progress max="100" value="{}" data-export="{}" aria-label="{}"></progress> '
            "<span>{}%</span>",
            obj.percent,
            obj.pk,
            _("Progress of %(export)s") % {"export": obj},
            obj.percent,
        )

    @admin.display(description=gettext_lazy("file"))
    def download(self, obj: BooksExport) -> str:
        if obj.state != ExportState.READY:
            return "—"
        return format_html(
            '<a class="export-download" id="export-download-{}" href="{}">{}</a>',
            obj.pk,
            reverse("admin:books_booksexport_download", args=[obj.pk]),
            obj.filename,
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        pending = list(
            self.get_queryset(request)
            .filter(state__in=[ExportState.QUEUED, ExportState.RUNNING])
            .values_list("pk", flat=True)[:PAGE_LIMIT]
        )
        status = reverse("admin:books_booksexport_status")
        context = {
            "status_url": f"{status}?ids={','.join(map(str, pending))}" if pending else None,
            "refresh_ms": REFRESH_MS,
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    def status_view(self, request: HttpRequest) -> JsonResponse:
        """How far the exports a page shows (`?ids=1,2`) are, and how many are still open."""
        if not request.user.has_perm(EXPORT):
            raise PermissionDenied(_("Exports need the “Can export the books” permission."))
        ids = [int(i) for i in request.GET.get("ids", "").split(",")[:PAGE_LIMIT] if i.isdigit()]
        exports = list(BooksExport.objects.filter(pk__in=ids).defer("content"))
        return JsonResponse(
            {
                "open": sum(e.state in (ExportState.QUEUED, ExportState.RUNNING) for e in exports),
                "exports": [{"id": e.pk, "percent": e.percent} for e in exports],
            }
        )

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path(
                "<int:pk>/download/",
                wrap(require_GET(self.download_view)),
                name="books_booksexport_download",
            ),
            path("status/", wrap(require_GET(self.status_view)), name="books_booksexport_status"),
            *super().get_urls(),
        ]

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The export's form; a valid one is recorded and queued, and the list shows its
        progress."""
        if not request.user.has_perm(EXPORT):
            raise PermissionDenied(_("Exports need the “Can export the books” permission."))
        form = ExportForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            export = BooksExport.objects.create(requested_by=request.user, **form.cleaned_data)
            queue_on_commit(EXPORT_TASK, export.pk)
            self.message_user(
                request,
                _("The export of %(export)s is being made: it will be offered here when ready.")
                % {"export": export},
            )
            return HttpResponseRedirect(reverse("admin:books_booksexport_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Export the books"),
            "form": form,
        }
        status = 400 if request.method == "POST" else 200
        return TemplateResponse(request, "admin/books/export_form.html", context, status=status)

    def download_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        if not request.user.has_perm(EXPORT):
            raise PermissionDenied(_("Exports need the “Can export the books” permission."))
        export = get_object_or_404(BooksExport, pk=pk)
        if export.state != ExportState.READY or export.content is None:
            raise Http404
        response = HttpResponse(bytes(export.content), content_type=CONTENT_TYPES[export.format])
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        response["Cache-Control"] = "private, no-store"
        return response
