"""What every JSON endpoint of the shop shares (Django REST framework): one error shape, a JSON
parser with a size limit, and the base view of the shopper's endpoints.

Every error answers `{"error": code, "message": text}`, plus `"fields"` (what is wrong with each
member at fault) when the body did not validate: the same shape as the webhook receiver's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import inline_serializer
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions, serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from core.parsers import bounded_json_parser


class ServiceUnavailable(exceptions.APIException):
    """Something the endpoint needs is down for a moment; `Retry-After` says when to try again."""

    status_code = 503
    default_detail = _("This service is unavailable for a moment. Please try again.")
    default_code = "unavailable"
    retry_after = 30


class TooManyRequests(exceptions.APIException):
    status_code = 429
    default_detail = _("Too many attempts. Please wait a few minutes before trying again.")
    default_code = "too_many_attempts"


class Conflict(exceptions.APIException):
    status_code = 409
    default_detail = _("This cannot be done in the current state.")
    default_code = "conflict"


def _fields(detail: object) -> dict[str, str]:
    """The first message of each member at fault."""
    if not isinstance(detail, Mapping):
        return {}
    fields = {}
    for name, errors in detail.items():
        first = errors[0] if isinstance(errors, list) and errors else errors
        fields[str(name)] = str(first)
    return fields


def error_body(exc: exceptions.APIException, view: object = None) -> dict[str, object]:
    if isinstance(exc, exceptions.ValidationError):
        fields = _fields(exc.detail)
        template = getattr(view, "invalid_message", None) or _(
            "The request is not valid: %(fields)s."
        )
        return {
            "error": "invalid",
            "message": str(template) % {"fields": ", ".join(fields)},
            "fields": fields,
        }
    codes = exc.get_codes()
    return {
        "error": codes if isinstance(codes, str) else exc.default_code,
        "message": str(exc.detail),
    }


def json_object(request: Request) -> dict[str, Any]:
    """The request's body, which must be a JSON object (400 `invalid_body` otherwise)."""
    data = request.data
    if not isinstance(data, dict):
        raise exceptions.ParseError(_("The body must be a JSON object."), code="invalid_body")
    return data


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (status, `Allow`, rollback of the atomic request), with the shop's body;
    `Retry-After` where the exception says when. Anything else is a server error for Django."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    response.data = error_body(exc, context.get("view"))
    retry_after = getattr(exc, "retry_after", None)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


ERROR = inline_serializer(
    "Error",
    fields={
        "error": serializers.CharField(help_text="What went wrong, as a stable code."),
        "message": serializers.CharField(help_text="For people, in the request's language."),
        "fields": serializers.DictField(
            child=serializers.CharField(),
            required=False,
            help_text="When the body is not valid: what is wrong with each member at fault.",
        ),
    },
)


class JSONOnly(DefaultContentNegotiation):
    """These endpoints answer JSON whatever the `Accept` header asks (no 406)."""

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


class CsrfByMiddleware:
    """Django's CSRF middleware checks the view, as every page of the shop: DRF marks its views
    exempt and checks CSRF only for logged-in users, but a shopper's unsafe request without the
    session's token must be refused with 403 before the view. An endpoint that browsers or
    machines call on their own sets `csrf_exempt`."""

    csrf_exempt: ClassVar[bool] = False

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Callable[..., Any]:
        view = super().as_view(**initkwargs)  # type: ignore[misc]
        view.csrf_exempt = cls.csrf_exempt
        return view


class SchemaView(CsrfByMiddleware, SpectacularAPIView):
    """The OpenAPI document of these endpoints (`/api/schema/`)."""


class JSONAPIView(CsrfByMiddleware, APIView):
    """A JSON endpoint of the shop: no DRF authentication (shoppers are anonymous; the admin
    has its own pages), the methods it defines and no others (OPTIONS and HEAD are refused too,
    with the `Allow` header), answers in JSON whatever `Accept` says, and CSRF as above."""

    authentication_classes: ClassVar[list[type]] = []
    permission_classes: ClassVar[list[type]] = []
    parser_classes: ClassVar[list[type[BaseParser]]] = bounded_json_parser(4096)
    content_negotiation_class = JSONOnly

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.http_method_names = [m for m in ("get", "post") if hasattr(self, m)]
