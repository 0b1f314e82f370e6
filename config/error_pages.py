"""The shop's own answers to a page that does not exist (404) and a server error (500), in the
shop's look and the visitor's language.

The pages need nothing from the database (no session, no user, no messages), so they render
whatever failed.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext_lazy as _
from django_guid import get_guid
from rest_framework import exceptions
from rest_framework.views import APIView

from config.api import error_body


class ServerError(exceptions.APIException):
    status_code = 500
    default_detail = _("Something went wrong on our side. Please try again in a moment.")
    default_code = "server_error"


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: the shop's page, linking back to the products and the shopper's orders."""
    return render(request, "404.html", {"shop_name": settings.SHOP_NAME}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: the shop's 500, in JSON, in the shape of the shop's JSON errors, for its
    JSON endpoints; a page otherwise (the admin's included)."""
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
