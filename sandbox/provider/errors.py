"""The provider's error answers: `{error_code, message, detail: [...]}` and every code used.

Codes from the spec: CL1501, CL2200, CL2290, AI1300, CL2204, BR1301, BR1302, AI1899.
Codes the spec leaves "not shown" (DESIGN.md sandbox contract): CL2201, CL2202, CL2203,
CL2205, CL2206. The rest are this sandbox's own, for answers the spec does not cover
(CL1429: over the sandbox's rate limit, whose existence the spec leaves "not shown").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger(__name__)

UNAUTHORIZED = "CL1501"
RATE_LIMITED = "CL1429"
INVALID_REQUEST = "CL2100"
BODY_TOO_LARGE = "CL2101"
UNSUPPORTED_MEDIA_TYPE = "CL2102"
METHOD_NOT_ALLOWED = "CL2103"
INVALID_CARD = "CL2200"
TOKEN_UNKNOWN_OR_EXPIRED = "CL2201"
TOKEN_ALREADY_USED = "CL2202"
AMOUNT_NOT_ACCEPTED = "CL2203"
SUBSCRIPTION_STATUS_NOT_ALLOWED = "CL2204"
CAPTURE_ABOVE_AUTHORIZED = "CL2205"
TRANSITION_NOT_ALLOWED = "CL2206"
REFUND_ABOVE_BALANCE = "CL2207"
IDEMPOTENCY_KEY_REUSED = "CL2208"
IDEMPOTENCY_KEY_IN_PROGRESS = "CL2209"
INSTALLMENTS_NOT_AVAILABLE = "CL2210"
CURRENCY_NOT_SUPPORTED = "CL2211"
METHOD_NOT_ACCEPTED = "CL2290"
TOKENIZATION_FAILED = "AI1300"
NOT_FOUND = "BR1301"
SUBSCRIPTION_NOT_FOUND = "BR1302"
INTERNAL_ERROR = "AI1899"


def internal_error_code(path: str) -> str:
    """A server-side failure is AI1300 when tokenizing a card, AI1899 everywhere else."""
    return TOKENIZATION_FAILED if path.rstrip("/").endswith("/card_tokens") else INTERNAL_ERROR


class ApiError(Exception):
    """An error answer of the provider API."""

    def __init__(
        self,
        http_status: int,
        error_code: str,
        message: str,
        detail: Iterable[str] = (),
    ) -> None:
        super().__init__(f"{error_code} {message}")
        self.http_status = http_status
        self.error_code = error_code
        self.message = message
        self.detail = list(detail)

    def body(self) -> dict[str, Any]:
        return {"error_code": self.error_code, "message": self.message, "detail": self.detail}


def unauthorized() -> ApiError:
    return ApiError(
        401, UNAUTHORIZED, "Unauthorized", ["missing, invalid or out-of-scope credentials"]
    )


def invalid_request(*detail: str, message: str = "Invalid request") -> ApiError:
    return ApiError(400, INVALID_REQUEST, message, detail)


def payment_not_found() -> ApiError:
    return ApiError(404, NOT_FOUND, "Not Found", ["payment not found"])


def transition_not_allowed(current: str, wanted: str) -> ApiError:
    return ApiError(
        409,
        TRANSITION_NOT_ALLOWED,
        "Transition not allowed",
        [f"a payment in status '{current}' cannot become '{wanted}'"],
    )


def error_response(error: ApiError) -> JsonResponse:
    return JsonResponse(error.body(), status=error.http_status)


def flatten_validation_errors(errors: Any, prefix: str = "") -> list[str]:
    """DRF's nested error structure as readable `field: message` lines."""
    if isinstance(errors, dict):
        lines: list[str] = []
        for key, value in errors.items():
            name = "body" if key == "non_field_errors" else str(key)
            lines += flatten_validation_errors(
                value, f"{prefix}{name}" if not prefix else f"{prefix}.{name}"
            )
        return lines
    if isinstance(errors, list):
        lines = []
        for index, value in enumerate(errors):
            if isinstance(value, dict | list):
                lines += flatten_validation_errors(value, f"{prefix}[{index}]")
            else:
                lines.append(f"{prefix}: {value}" if prefix else str(value))
        return lines
    return [f"{prefix}: {errors}" if prefix else str(errors)]


def to_api_error(exc: Exception) -> ApiError | None:
    """Translate a DRF or Django exception into the provider's error answer."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, drf_exceptions.ValidationError):
        return invalid_request(*flatten_validation_errors(exc.detail))
    if isinstance(exc, drf_exceptions.ParseError):
        return invalid_request(str(exc.detail), message="Malformed JSON")
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return ApiError(
            415,
            UNSUPPORTED_MEDIA_TYPE,
            "Unsupported media type",
            ["send Content-Type: application/json"],
        )
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return ApiError(405, METHOD_NOT_ALLOWED, "Method not allowed", [str(exc.detail)])
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return unauthorized()
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return unauthorized()
    if isinstance(exc, Http404 | drf_exceptions.NotFound):
        return ApiError(404, NOT_FOUND, "Not Found", ["resource not found"])
    if isinstance(exc, drf_exceptions.APIException):
        return ApiError(exc.status_code, INVALID_REQUEST, "Invalid request", [str(exc.detail)])
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    error = to_api_error(exc)
    if error is None:
        logger.exception("unhandled error in %s", context.get("view").__class__.__name__)
        request = context.get("request")
        code = internal_error_code(request.path if request is not None else "")
        error = ApiError(500, code, "Internal error.", [])
    return Response(error.body(), status=error.http_status)


def not_found_view(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return error_response(ApiError(404, NOT_FOUND, "Not Found", [f"no resource at {request.path}"]))


def server_error_view(request: HttpRequest) -> JsonResponse:
    return error_response(ApiError(500, internal_error_code(request.path), "Internal error.", []))
