"""The shop's own answers to a page that does not exist (404), a server error (500) and a database
that cannot be reached (503 with `Retry-After`), in the shop's look and the visitor's language.

Django turns an exception raised by a view, or by a middleware (the session's or the user's,
which read the database), into a response through `handler500`, which it calls while that
exception is being handled: `server_error` reads it there. The pages need nothing from the
database (no session, no user, no messages), so they render while it is away.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django_guid import get_guid
from rest_framework import exceptions
from rest_framework.views import APIView

from core.api import ServiceUnavailable, error_body
from core.db_errors import database_unavailable


class ServerError(exceptions.APIException):
    status_code = 500
    default_detail = gettext_lazy("Something went wrong on our side. Please try again in a moment.")
    default_code = "server_error"


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: the shop's page, linking back to the products and the shopper's orders."""
    return render(request, "404.html", {"shop_name": settings.SHOP_NAME}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: 503 with `Retry-After` when the exception being handled says the database
    cannot be reached (database_unavailable), else the shop's 500. Each in JSON, in the shape of
    the shop's JSON errors, for its JSON endpoints; a page otherwise (the admin's included)."""
    if database_unavailable(sys.exc_info()[1]):
        response = _answer(request, ServiceUnavailable(), "503.html")
        response["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
    else:
        response = _answer(request, ServerError(), "500.html")
    add_never_cache_headers(response)
    return response


def _answer(request: HttpRequest, error: exceptions.APIException, template: str) -> HttpResponse:
    if _answers_json(request):
        return JsonResponse(error_body(error), status=error.status_code)
    context = {"shop_name": settings.SHOP_NAME, "request_id": get_guid()}
    return render(request, template, context, status=error.status_code)


def _answers_json(request: HttpRequest) -> bool:
    """A JSON endpoint of the shop (a DRF view) was asked, or the client asked for JSON."""
    match = getattr(request, "resolver_match", None)
    if match is None:  # the error came before the view was chosen
        try:
            match = resolve(request.path_info)
        except Resolver404:
            match = None
    view_class = getattr(match.func, "cls", None) if match else None
    if isinstance(view_class, type) and issubclass(view_class, APIView):
        return True
    return request.headers.get("Accept", "").startswith("application/json")


def ratelimited(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The answer to a request over its rate limit: 429 with a readable message."""
    message = _("Too many attempts. Please wait a few minutes before trying again.")
    if request.headers.get("Accept", "").startswith("application/json"):
        return JsonResponse({"error": "too_many_attempts", "message": message}, status=429)
    return render(
        request,
        "429.html",
        {"message": message, "shop_name": settings.SHOP_NAME},
        status=429,
    )


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A refusal (403), readable: in the staff admin on the admin's own page with the reason
    the refusing view gave; on the shop, the shop's page."""
    reason = str(exception) or _("You do not have the permission for this.")
    if (
        request.path.startswith("/admin/")
        and getattr(request, "user", None)
        and request.user.is_staff
    ):
        from django.contrib import admin

        context = {
            **admin.site.each_context(request),
            "title": _("You cannot do this"),
            "reason": reason,
        }
        return render(request, "admin/forbidden.html", context, status=403)
    return render(
        request, "403.html", {"reason": reason, "shop_name": settings.SHOP_NAME}, status=403
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A request refused by the CSRF check (CSRF_FAILURE_VIEW), on the shop's own 403 page:
    Django's default speaks to the visitor as usted and of DEBUG. For a shopper this is almost
    always a page left open too long (its token gone with the session) or a second tab."""
    message = _(
        "This page was open for too long, or in another tab, so it could not be sent. Reload "
        "the page and try again."
    )
    return permission_denied(request, PermissionDenied(message))
