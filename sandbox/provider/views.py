"""The provider API at the spec's paths. Views parse, call one service, and answer."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sandbox.provider import payments, subscriptions, tokens
from sandbox.provider.auth import require_scope
from sandbox.provider.errors import NOT_FOUND, ApiError, flatten_validation_errors, invalid_request
from sandbox.provider.idempotency import idempotent
from sandbox.provider.models import PaymentMethod, SandboxState
from sandbox.provider.representations import (
    card_token_json,
    payment_json,
    payment_method_json,
    refund_json,
    subscription_json,
)
from sandbox.provider.serializers import (
    CardTokenRequestSerializer,
    PaymentCreateSerializer,
    PaymentUpdateSerializer,
    RefundCreateSerializer,
)

_COUNTRY = re.compile(r"^[A-Za-z]{2}$")


def base_url(request: HttpRequest) -> str:
    return settings.SANDBOX_PUBLIC_URL or request.build_absolute_uri("/").rstrip("/")


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ProviderView(APIView):
    """A provider endpoint: the secret token everywhere, the public key only where allowed."""

    allow_public = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        require_scope(request, allow_public=self.allow_public)
        super().initial(request, *args, **kwargs)


class CardTokensView(ProviderView):
    allow_public = True

    @idempotent
    def post(self, request: Request) -> Response:
        # Any unusable body here is invalid card data (CL2200), which the SDK shows the shopper.
        try:
            data = validated(CardTokenRequestSerializer, request.data)
        except serializers.ValidationError as exc:
            raise tokens.invalid_card(*flatten_validation_errors(exc.detail)) from None
        except ParseError as exc:
            raise tokens.invalid_card(f"body: {exc.detail}") from None
        token = tokens.card_token_create(card=data["card"])
        return Response(card_token_json(token), status=201)


class PaymentMethodsView(ProviderView):
    allow_public = True

    def get(self, request: Request) -> Response:
        country = request.query_params.get("country", "MX")
        if not _COUNTRY.match(country):
            raise invalid_request("country: must be an ISO 3166-1 alpha-2 code, e.g. MX.")
        methods = PaymentMethod.objects.filter(country=country.upper())
        url = base_url(request)
        listed = [payment_method_json(method, url) for method in methods]
        if not listed:
            raise ApiError(
                404, NOT_FOUND, "Not Found", [f"no payment methods for country {country.upper()}"]
            )
        return Response(listed)


class PaymentsView(ProviderView):
    @idempotent
    def post(self, request: Request) -> Response:
        data = validated(PaymentCreateSerializer, request.data)
        payment = payments.payment_create(data=data)
        return Response(payment_json(payment, base_url(request)), status=201)


class PaymentDetailView(ProviderView):
    def get(self, request: Request, payment_id: str) -> Response:
        payment = payments.payment_get(payment_id=payment_id)
        return Response(payment_json(payment, base_url(request)))

    @idempotent
    def patch(self, request: Request, payment_id: str) -> Response:
        data = validated(PaymentUpdateSerializer, request.data)
        payment = payments.payment_update(
            payment_id=payment_id, status=data["status"], paid_amount=data.get("paid_amount")
        )
        return Response(payment_json(payment, base_url(request)))


class RefundsView(ProviderView):
    @idempotent
    def post(self, request: Request) -> Response:
        data = validated(RefundCreateSerializer, request.data)
        refund = payments.refund_create(
            payment_id=data["payment_id"], amount=data.get("amount"), reason=data.get("reason", "")
        )
        return Response(refund_json(refund), status=201)


class SubscriptionView(ProviderView):
    def get(self, request: Request, subscription_id: str) -> Response:
        """Reading a subscription (the spec leaves it "not shown"; the shop imports by id)."""
        subscription = subscriptions.subscription_get(subscription_id=subscription_id)
        return Response(subscription_json(subscription))

    @idempotent
    def put(self, request: Request, subscription_id: str) -> Response:
        subscription = subscriptions.subscription_deactivate(
            subscription_id=subscription_id, body=request.data
        )
        return Response(subscription_json(subscription), status=201)


def healthz(request: HttpRequest) -> JsonResponse:
    SandboxState.objects.exists()
    return JsonResponse({"status": "ok"})
