"""The payment page's JSON calls: one payment attempt, and where the latest attempt stands.
Thin: parse, count, call one rule, answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from checkout.installments import InstallmentsRefused, check_installments
from checkout.models import Order
from checkout.orders.limits import (
    LimitsUnavailable,
    order_attempts_exceeded,
    payment_attempts_exceeded,
    status_checks_exceeded,
)
from checkout.orders.rules import CheckoutError
from checkout.ownership import own_order
from checkout.paying.rules import PaymentOutcome, order_check_payment, order_pay
from checkout.serializers import PaymentAttemptSerializer, PaymentOutcomeSerializer
from core.api import (
    ERROR,
    Conflict,
    JSONAPIView,
    TooManyRequests,
    json_object,
)

SHOPPER = [{"browserSession": [], "csrfCookie": [], "csrfHeader": []}]
REFERENCE = OpenApiParameter(
    "reference",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    pattern=r"^ORD-[0-9A-HJKMNP-TV-Z]{5}$",
    description="The order's reference. Any other value, and an order of another browser "
    "session, answers 404.",
    examples=[OpenApiExample("An order", value="ORD-7K2QX")],
)
PAYMENT_ID = OpenApiParameter(
    "payment_id",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    description="The provider's id of one of the order's attempts (its first 64 characters). "
    "Absent or empty: the latest attempt.",
)
# What the payment page sends: the card form's token (the provider's, single use) and the SDK's
# device data; the `attempt_id` is new for each attempt the shopper makes.
ATTEMPT_EXAMPLES = [
    OpenApiExample(
        "Paid in full",
        value={
            "card_token": "63b66188-6482-407c-add8-45a1177b5c90",
            "attempt_id": "4f0c2b9e8d7a46e1b3c5d7f9a1b2c3d4",
            "session_id": "sdk-session-5b1e",
            "user_agent": "Mozilla/5.0 (X11; Linux x86_64)",
            "installments": 1,
        },
        request_only=True,
    ),
    OpenApiExample(
        "In three interest-free monthly payments",
        value={
            "card_token": "9a7d3c21-0b4e-4f6a-8c2d-5e1f7a9b3c4d",
            "attempt_id": "0d1e2f3a4b5c4d6e8f9a0b1c2d3e4f5a",
            "installments": 3,
            "card_bin": "415231",
        },
        request_only=True,
    ),
]
NOT_FOUND = OpenApiResponse(ERROR, "No such order, or not one this browser session placed.")
# Answered by the project's error handler (core/error_pages.py), whatever the endpoint.
UNAVAILABLE = OpenApiResponse(
    ERROR,
    "The shop's database cannot be reached for a moment (`unavailable`): ask again after the "
    "seconds of the `Retry-After` header.",
)
# Django's own pages, answered before the view: the CSRF check, and a multipart body that it
# cannot read while looking for the CSRF token.
CSRF_FAILURE = {
    (403, "text/html"): OpenApiResponse(
        OpenApiTypes.STR, "No CSRF cookie or no matching `X-CSRFToken` header."
    ),
    (400, "text/html"): OpenApiResponse(OpenApiTypes.STR, "A multipart body that cannot be read."),
}


class TooManyAttempts(TooManyRequests):
    default_detail = _(
        "Too many payment attempts from this browser. Please wait a few minutes before trying "
        "again."
    )


class InstallmentsNotOffered(APIException):
    status_code = 400
    default_code = "installments_not_available"


# Outcomes the page must ask for again (GET the status) until they are known.
FOLLOW = ("processing", "unknown")


def _answer(order: Order, outcome: PaymentOutcome, *, status: int = 200) -> Response:
    paid = outcome.result in ("approved", "authorized")
    redirect = reverse("checkout:order", kwargs={"reference": order.reference}) if paid else ""
    return Response({**outcome.as_json(), "redirect": redirect}, status=status)


class PayAttemptView(JSONAPIView):
    invalid_message = _("The payment request is incomplete: %(fields)s.")

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Callable[..., Any]:
        return sensitive_post_parameters()(super().as_view(**initkwargs))

    @extend_schema(
        operation_id="pay_attempt",
        summary="Pay the order with one attempt",
        description="Stores one attempt to pay the order and queues its payment's creation: "
        "answered at once, `202` with the result `processing` (or `unknown` while an earlier "
        "attempt is still being confirmed); then ask the status endpoint until the result is "
        "known. No provider call is made in this request. The same `attempt_id` never pays "
        "twice: a repeated attempt answers that attempt's outcome again (`200` once known). "
        "Checked in this order: CSRF (403), method (405), the order belongs to this browser "
        "session (404), attempts per session and per client address (429; every request that "
        "gets this far counts; while Redis is down, per order in the database), the body (400, "
        "413, 415), the order can still be paid (409). Only a valid body changes anything.",
        parameters=[REFERENCE],
        request=PaymentAttemptSerializer,
        examples=ATTEMPT_EXAMPLES,
        responses={
            202: PaymentOutcomeSerializer,
            200: PaymentOutcomeSerializer,
            (400, "application/json"): OpenApiResponse(
                ERROR,
                "The body is not valid (`invalid`, `fields` says why; `invalid_body`), or it asks "
                "for monthly installments the order cannot have (`installments_not_available`): "
                "an order under `SHOP_INSTALLMENTS_MIN_TOTAL`, a plan not offered, or a card whose "
                "BIN has none.",
            ),
            404: NOT_FOUND,
            409: OpenApiResponse(ERROR, "The order cannot be paid any more."),
            413: OpenApiResponse(ERROR, "The body is over 4096 bytes."),
            415: ERROR,
            429: OpenApiResponse(ERROR, "Too many payment attempts (session, address or order)."),
            503: UNAVAILABLE,
            **CSRF_FAILURE,
        },
        auth=SHOPPER,
        tags=["checkout"],
    )
    @sensitive_variables("serializer", "attempt")
    def post(self, request: Request, reference: str) -> Response:
        order = own_order(request, reference, items=False)
        try:
            exceeded = payment_attempts_exceeded(request._request)
        except LimitsUnavailable:
            exceeded = order_attempts_exceeded(order)  # counted by the order in the database
        if exceeded:
            raise TooManyAttempts()
        serializer = PaymentAttemptSerializer(data=json_object(request))
        serializer.is_valid(raise_exception=True)
        attempt: dict[str, Any] = serializer.validated_data
        try:
            check_installments(
                total=order.total,
                installments=attempt["installments"],
                card_bin=attempt["card_bin"],
            )
        except InstallmentsRefused as exc:
            raise InstallmentsNotOffered(exc.message) from exc
        try:
            outcome = order_pay(
                order=order,
                card_token=attempt["card_token"],
                attempt_id=attempt["attempt_id"],
                installments=attempt["installments"],
                prevention_data={
                    "session_id": attempt["session_id"],
                    "device_finger_print_token": attempt["session_id"],
                    "user_agent": attempt["user_agent"],
                    "website": settings.SHOP_BASE_URL,
                },
                return_url=request.build_absolute_uri(
                    reverse("checkout:order", kwargs={"reference": order.reference})
                ),
            )
        except CheckoutError as exc:
            raise Conflict(exc.message) from exc
        return _answer(order, outcome, status=202 if outcome.result in FOLLOW else 200)


STATUS = {
    "parameters": [REFERENCE, PAYMENT_ID],
    "responses": {
        200: PaymentOutcomeSerializer,
        404: NOT_FOUND,
        503: UNAVAILABLE,
        **CSRF_FAILURE,
    },
    "tags": ["checkout"],
}


class PaymentStatusView(JSONAPIView):
    """The outcome of the latest attempt (or of `payment_id`), from the shop's own records.
    While it waits for the bank (3-D Secure), a read of it from the provider is queued (one at a
    time, within the session's rate of checks)."""

    @extend_schema(
        operation_id="payment_status",
        summary="The outcome of the latest attempt, or of one attempt",
        # The session is not a credential the endpoint asks for: without it (or with another
        # one) no order is this browser's, and the answer is 404, as for any other session.
        auth=[{"browserSession": []}, {}],
        **STATUS,
    )
    def get(self, request: Request, reference: str) -> Response:
        order = own_order(request, reference, items=False)
        payment_id = request.query_params.get("payment_id", "")[:64]
        refresh = not status_checks_exceeded(request._request)
        return _answer(
            order, order_check_payment(order=order, payment_id=payment_id, refresh=refresh)
        )

    @extend_schema(
        operation_id="payment_status_post",
        summary="The same as GET, CSRF-protected; the body is ignored",
        request=None,
        auth=SHOPPER,
        **STATUS,
    )
    def post(self, request: Request, reference: str) -> Response:
        return self.get(request, reference)
